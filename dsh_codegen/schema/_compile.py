"""Selects the dialect-check twin: ``dsh_codegen._compile_c`` (``_compile_py`` compiled by Cython) or ``_compile_py``.

Both twins are one source (setup.py compiles ``_compile_py.py`` itself, with the C
declarations of ``dsh_codegen/_compile_c.pxd``), so they give the same programs
and the same messages. Type checkers see the Python twin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_codegen._backend import load_compiled

__all__ = [
    "ANNOTATION_KEYWORDS",
    "assert_object_json_schema",
    "assert_supported_json_schema",
    "compile_program",
    "schema_violations",
]

_c = load_compiled("_compile_c")
if TYPE_CHECKING or _c is None:
    from dsh_codegen.schema._compile_py import (
        ANNOTATION_KEYWORDS,
        assert_object_json_schema,
        assert_supported_json_schema,
        compile_program,
        schema_violations,
    )
else:
    ANNOTATION_KEYWORDS = _c.ANNOTATION_KEYWORDS
    assert_object_json_schema = _c.assert_object_json_schema
    assert_supported_json_schema = _c.assert_supported_json_schema
    compile_program = _c.compile_program
    schema_violations = _c.schema_violations
