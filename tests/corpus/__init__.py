"""Test corpora shared by the test suites (importable: ``from tests.corpus import corpus``)."""

from tests.corpus.tool_schemas import CorpusCase, corpus

__all__ = ["CorpusCase", "corpus"]
