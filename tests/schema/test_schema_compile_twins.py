"""The two twins of the dialect check (``schema/_dialect_check.py`` and its mirror ``_ext/_dialect_check_c.pyx``) agree.

Imports both directly, so it does not depend on the active twin and runs once
(in the compiled pass): the same names, the same tables and messages (both from
``_dialect_rules``), the same node tables for accepted schemas, the same
violations, in the same order, for rejected ones.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _shared_helpers import require_compiled_twin

from dsh_codegen.schema import _dialect_check, _dialect_rules
from dsh_codegen.schema._errors import JsonSchemaError
from dsh_codegen.schema._program import Node
from tests.corpus import corpus

pytestmark = pytest.mark.once


def _compiled() -> ModuleType:
    return require_compiled_twin("_dialect_check_c")


def _table(twin: Any, schema: Any, formats: bool = False) -> tuple[bool, bool, list[dict[str, Any]]]:
    program = twin.compile_program(schema, formats)
    # every field by name: the compiled twin's nodes are CompiledNode (C members, no __dict__)
    fields = Node.__annotations__
    return program.dialect, program.recursive, [{f: getattr(node, f) for f in fields} for node in program.nodes]


def _violations(twin: Any, schema: Any) -> list[tuple[Any, str, str]]:
    return [(v.path, v.keyword, v.message) for v in twin.schema_violations(schema)]


#: What only the compiled mirror imports: _schema_c's loops over a node's keys and over the properties.
_ONLY_COMPILED = {"fill_props", "str_keys"}
_ROOT = Path(__file__).resolve().parents[2]
_SOURCES = (_ROOT / "dsh_codegen" / "schema" / "_dialect_check.py", _ROOT / "_ext" / "_dialect_check_c.pyx")


def _names(module: ModuleType) -> set[str]:
    # "annotations" is the __future__ import's feature object, which Cython does not bind
    return {name for name in vars(module) if not name.startswith("__") and name != "annotations"}


def test_twins_export_the_same_names() -> None:
    compiled = _compiled()
    assert type(compiled.compile_program).__name__ == "cython_function_or_method"
    assert compiled.__all__ == _dialect_check.__all__
    assert _names(compiled) - _ONLY_COMPILED == _names(_dialect_check)
    # the tables are the shared module's objects, and the errors its classes
    for name in ("ANNOTATION_KEYWORDS", "REJECTED", "SCHEMA_URIS", "Text", "JsonSchemaError", "Violation"):
        assert getattr(compiled, name) is getattr(_dialect_check, name), name
    assert compiled.ANNOTATION_KEYWORDS is _dialect_rules.ANNOTATION_KEYWORDS


@pytest.mark.parametrize("source", _SOURCES, ids=lambda path: path.name)
def test_each_twin_takes_every_message_from_the_shared_module(source: Path) -> None:
    # A message literal in one twin would be a copy the other twin could miss.
    text = source.read_text(encoding="utf-8")
    reports = re.findall(r"_report\((?:[^()]|\([^()]*\))*\)", text)
    assert len(reports) > 40
    literal = [call for call in reports if re.search(r", f?[\"'][^\"']*[\"']\)$", call)]
    assert literal == []


def test_the_compiled_twin_runs_on_its_c_declarations() -> None:
    """``_ext/_dialect_check_c.pyx``'s declarations reached the build: ``_Checker`` is a final extension type with
    typed fields, and the hot functions take ``CompiledNode``s only (the pure twin is none of this)."""
    compiled = _compiled()
    checker = compiled._Checker({"type": "string"}, False)
    with pytest.raises(TypeError):
        checker.nodes = ()  # a C field typed list
    with pytest.raises(TypeError):
        type("Sub", (compiled._Checker,), {})  # final
    with pytest.raises(TypeError, match="CompiledNode"):
        compiled._check_pattern(checker, "^a", {}, Node(), 0, None, [])
    node = require_compiled_twin("_schema_c").CompiledNode()
    compiled._check_pattern(checker, "^a", {}, node, 0, None, [])
    assert [code for code, _check in node.str_checks] == [compiled.V_PATTERN]
    # the pure twin's checker stays a plain slotted class
    pure = _dialect_check._Checker({"type": "string"}, False)
    pure.nodes = ()  # type: ignore[assignment]
    type("Sub", (_dialect_check._Checker,), {})


@pytest.mark.parametrize("formats", [False, True])
def test_same_tables_for_the_corpus(formats: bool) -> None:
    compiled = _compiled()
    cases = corpus()
    assert len(cases) >= 100
    for name, schema, _valid, _invalid in cases:
        assert _table(compiled, schema, formats) == _table(_dialect_check, schema, formats), name


def _self_containing() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["me"] = schema
    return schema


def _deep(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": 3}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


REJECTED: list[Any] = [
    {"type": "object", "requried": ["a"]},
    {"type": "strin"},
    {"type": ["string", "string"]},
    {"not": {"type": "string"}, "if": {}, "then": {}, "patternProperties": {}},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
    {"$ref": "https://example.com/schema"},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"type": "string", "pattern": "\\p{L}+"},
    {"type": "number", "exclusiveMinimum": True, "multipleOf": 0},
    {"type": "string", "minimum": 1, "maxLength": -1, "minLength": 2.5},
    {"type": "object", "properties": {"a": {}}, "required": ["a", "b"], "additionalProperties": False},
    {"enum": [], "const": float("nan")},
    {"type": "integer", "enum": ["x"]},
    {"properties": {"x": {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x"}}},
    {"anyOf": [], "oneOf": "x", "allOf": [{"type": 3}]},
    {"x-vendor": {1, 2}, "default": -0.0},
    {1: "not a str key"},
    [{"type": "string"}],
    _self_containing(),
    _deep(2_000),
    {"items": _deep(2_000) | {"minItems": "two"}},
]


@pytest.mark.parametrize("index", range(len(REJECTED)))
def test_same_violations_for_rejected_schemas(index: int) -> None:
    compiled = _compiled()
    schema = REJECTED[index]
    expected = _violations(_dialect_check, schema)
    assert _violations(compiled, schema) == expected
    if expected:
        with pytest.raises(JsonSchemaError) as pure_error:
            _dialect_check.compile_program(schema)
        with pytest.raises(JsonSchemaError) as compiled_error:
            compiled.compile_program(schema)
        assert str(compiled_error.value) == str(pure_error.value)
    else:  # the deep schema is accepted: then the tables must agree
        assert _table(compiled, schema) == _table(_dialect_check, schema)
