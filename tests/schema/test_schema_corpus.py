"""The tool-schema corpus (tests/corpus): every schema is accepted and validates its sample arguments.

``jsonschema`` (Draft 2020-12) is the oracle for every verdict; both twins run
this file (``make test``).
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from dsh_codegen.schema import assert_supported_json_schema, compile_validator
from tests.corpus import corpus

CASES = corpus()


def test_corpus_is_large_and_named_uniquely() -> None:
    assert len(CASES) >= 100
    assert len({name for name, *_ in CASES}) == len(CASES)
    assert {name.split("/")[0] for name, *_ in CASES} == {"pydantic", "zod", "mcp"}


@pytest.mark.parametrize(("name", "schema", "valid", "invalid"), CASES, ids=[case[0] for case in CASES])
def test_corpus_case(name: str, schema: dict[str, Any], valid: list[Any], invalid: list[Any]) -> None:
    assert_supported_json_schema(schema)
    oracle = jsonschema.Draft202012Validator(schema)
    validator = compile_validator(schema)
    for args in valid:
        assert oracle.is_valid(args), (name, args)
        assert validator.is_valid(args), (name, args, validator.violations(args))
        assert validator.violations(args) == []
        assert validator.validate_args(args) == []
    for args in invalid:
        assert not oracle.is_valid(args), (name, args)
        assert not validator.is_valid(args), (name, args)
        found = validator.violations(args)
        assert found, (name, args)
        assert all(str(v).startswith(('"value', "missing required property")) for v in found), found
