"""A Griffe extension for the documentation site (``mkdocs.yml``): Sphinx roles become code spans.

The package's docstrings name other objects the Sphinx way (``:class:`ToolRegistry```,
``:func:`~dsh_codegen.schema.compile_validator```); Markdown would show the role itself. This
rewrites each role to a plain code span of the name as a reader writes it (the last dotted part
when the target starts with ``~``), before mkdocstrings renders the docstring.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|attr|data|exc|mod|obj|const):`(~?)([^`]+)`")


def _plain(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx cross-reference roles of every docstring as code spans."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        docstring = obj.docstring
        if docstring is not None and ":`" in docstring.value:
            docstring.value = _ROLE.sub(_plain, docstring.value)
