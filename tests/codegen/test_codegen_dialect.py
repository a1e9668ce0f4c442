"""The tool-schema dialect (docs/schema.md) in both type mappers and both SDKs.

Exact texts for every construct, references and their names, recursion,
hostile references (cycles, pointers into nowhere) and 100,000-deep dialect
schemas, which both mappers render under the default recursion limit.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from dsh_codegen.codegen import ToolSchemaEntry, json_schema_to_py, json_schema_to_ts, render_py_sdk, render_ts_sdk
from dsh_codegen.codegen import render_sdk_module

DEEP = 100_000


@pytest.mark.parametrize(
    ("schema", "ts", "py"),
    [
        ({"type": ["string", "null"]}, "string | null", "str | None"),
        ({"type": ["integer", "boolean"], "minimum": 1}, "number | boolean", "int | bool"),
        (
            {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]},
            "string | number[]",
            "str | list[int]",
        ),
        ({"type": ["string", "null"], "enum": ["a", None, 3]}, '"a" | null', 'Literal["a", None]'),
        ({"type": "string", "pattern": "^a", "format": "uri", "$comment": "c", "x-vendor": 1}, "string", "str"),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"}, "number", "int"),
        ({"type": "string", "properties": {"a": {}}}, "string", "str"),  # type-specific keywords of other types
        (True, "JsonValue", "Any"),
        (False, "never", "Never"),
        ({"type": "array", "items": False}, "never[]", "list[Never]"),
        (
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False, "minItems": 2},
            "[string, number]",
            "tuple[str, int]",
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
            "[string?, number?]",
            "list[str | int]",
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "boolean"}, "minItems": 1},
            "[string, ...boolean[]]",
            "list[str | bool]",
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}], "minItems": 1},
            "[string, ...JsonValue[]]",
            "list[str | Any]",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            "{ [key: string]: number }",
            "dict[str, int]",
        ),
        (
            {"type": "object", "additionalProperties": {"type": ["string", "null"]}},
            "{ [key: string]: string | null }",
            "dict[str, str | None]",
        ),
        ({"allOf": [{"type": "integer"}, {"minimum": 0}]}, "number", "int"),
        ({"allOf": [{"type": "number"}, {"type": "integer"}]}, "number", "int"),
        ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "never", "Never"),
        ({"allOf": [{"enum": ["a", "b"]}, {"enum": ["b"]}]}, '("a" | "b") & ("b")', "Any"),
        ({"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}}, "string", "str"),
        ({"$ref": "#/definitions/a~1b", "definitions": {"a/b": {"type": "boolean"}}}, "boolean", "bool"),
        ({"$ref": "#/$defs/a%20b", "$defs": {"a b": {"type": "null"}}}, "null", "None"),
        ({"$ref": "#x", "$defs": {"a": {"$anchor": "x", "type": "number"}}}, "number", "float"),
        ({"$ref": "#/$defs/list/1", "$defs": {"list": [{}, {"type": "string"}]}}, "string", "str"),
        ({"$ref": "#/$defs/missing"}, "unknown", "Any"),
        ({"$ref": "#/$defs/list/01", "$defs": {"list": [{}, {"type": "string"}]}}, "unknown", "Any"),
        ({"$ref": "#"}, "unknown", "Any"),
        ({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}, "unknown", "Any"),
        ({"$ref": "#/$defs/a", "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}}, "unknown", "Any"),
        ({"type": "array", "items": {"$ref": "#"}}, "unknown[]", "list[Any]"),
        (
            {"type": "object", "properties": {"n": {"$ref": "#"}}},
            "{\n  n?: unknown;\n} & Record<string, JsonValue>",
            "dict[str, Any]",
        ),
    ],
)
def test_dialect_mapping(schema: Any, ts: str, py: str) -> None:
    assert json_schema_to_ts(schema) == ts
    assert json_schema_to_py(schema) == py


def test_type_beside_one_of_applies_to_every_branch() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"properties": {"b": {"type": "integer"}}, "required": ["b"]}],
    }
    assert json_schema_to_ts(schema) == (
        "{\n  a: string;\n} & Record<string, JsonValue> | {\n  a?: string;\n  b: number;\n} & Record<string, JsonValue>"
    )


def test_constraints_and_defaults_are_documented_and_escaped() -> None:
    schema = {
        "type": "object",
        "properties": {
            "page": {"type": "integer", "minimum": 1, "default": 1, "description": "Page."},
            "tricky": {"type": "string", "default": '*/\n"x"', "pattern": "a*/b"},
            "long": {"type": "string", "default": "y" * 500},
            "gone": {"type": "boolean", "deprecated": True},
            "nan": {"type": "number", "default": float("nan")},
        },
        "required": ["page"],
    }
    text = json_schema_to_ts(schema)
    assert "/** Page. (minimum: 1, default: 1) */" not in text  # DOC_KEYWORDS order: default first
    assert "/** Page. (default: 1, minimum: 1) */" in text
    assert "*/\\n" not in text and '/** default: "*\\/\\n\\"x\\"", pattern: "a*\\/b" */' in text
    assert '/** default: "' + "y" * 119 + "... */" in text
    assert "/** deprecated */" in text
    assert "nan?: number;" in text and "NaN" not in text  # a default that is not JSON is left out
    sdk = render_py_sdk([ToolSchemaEntry("t", "", schema)])
    assert "    # Page. (default: 1, minimum: 1)\n    page: int\n" in sdk
    assert '    # default: "*/\\n\\"x\\"", pattern: "a*/b"\n' in sdk


def _entries(schema: Any, output: Any = None) -> list[ToolSchemaEntry]:
    return [ToolSchemaEntry("walk", "Walk.", schema, output)]


RECURSIVE = {
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/node"}, "color": {"$ref": "#/$defs/color"}},
    "required": ["root"],
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "additionalProperties": False,
        },
        "color": {"enum": ["red", "green"]},
    },
}


def test_definitions_are_named_once_in_both_sdks() -> None:
    ts = render_ts_sdk(_entries(RECURSIVE, {"$ref": "#/$defs/node", "$defs": RECURSIVE["$defs"]}))
    assert 'type Node = {\n  kids?: Node[];\n}\n\ntype Color = "red" | "green"\n\n' in ts
    # The output document's own definitions are another document: a second name.
    assert "type Node2 = {\n  kids?: Node2[];\n}\n" in ts
    assert "walk: Node2;" in ts
    py = render_py_sdk(_entries(RECURSIVE))
    assert "class Node(TypedDict):\n    kids: NotRequired[list[Node]]\n" in py
    assert 'Color: TypeAlias = Literal["red", "green"]\n' in py
    assert "    root: Node\n    color: NotRequired[Color]\n" in py
    module = render_sdk_module(_entries(RECURSIVE), "python")
    assert "from __future__ import annotations\n" in module


def test_a_root_reference_names_the_root() -> None:
    schema = {"type": "object", "properties": {"next": {"$ref": "#"}}, "additionalProperties": False}
    assert "class WalkArgs(TypedDict):\n    next: NotRequired[WalkArgs]\n" in render_py_sdk(_entries(schema))
    ts = render_ts_sdk(_entries(schema))
    assert "type WalkArgs = {\n  next?: WalkArgs;\n}\n" in ts


def test_circular_aliases_degrade_where_tsc_would_reject_them() -> None:
    # type A = A | string is circular for tsc; through an array it is fine.
    loop = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "string"}]}},
    }
    assert "type A = unknown\n" in render_ts_sdk(_entries(loop))
    fine = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/a"}}, {"type": "string"}]}},
    }
    assert "type A = A[] | string\n" in render_ts_sdk(_entries(fine))
    # A recursive TypeAlias would be evaluated at import: Python degrades the recursion.
    assert "A: TypeAlias = list[Any] | str\n" in render_py_sdk(_entries(fine))


def test_definition_names_avoid_the_sdks_own_names() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/ToolArgsMap"},
            "b": {"$ref": "#/$defs/Record"},
            "c": {"$ref": "#/$defs/Tools"},
        },
        "$defs": {"ToolArgsMap": {"type": "string"}, "Record": {"type": "string"}, "Tools": {"type": "string"}},
    }
    ts = render_ts_sdk(_entries(schema))
    assert "type ToolArgsMap2 = string" in ts and "type Record2 = string" in ts
    assert "Tools2: TypeAlias = str" in render_py_sdk(_entries(schema))


def test_every_tool_gets_typed_subscript_access_in_files() -> None:
    entries = [ToolSchemaEntry("get-sum", "", {"type": "object"}), ToolSchemaEntry("overload", "", {"type": "object"})]
    module = render_sdk_module(entries, "python", format=False)
    # A tool method named "overload" shadows the decorator inside the class: qualified.
    assert '    @typing.overload\n    def __getitem__(self, name: Literal["get-sum"])' in module
    single = render_sdk_module(entries[:1], "python", format=False)
    assert "@" not in single and 'def __getitem__(self, name: Literal["get-sum"])' in single
    assert "__getitem__" not in render_py_sdk(entries)  # the prompt keeps docs/sdk-text.md's shape


def _nest(depth: int, make: Any, leaf: Any) -> Any:
    schema = leaf
    for _ in range(depth):
        schema = make(schema)
    return schema


@pytest.mark.parametrize(
    "make",
    [
        lambda inner: {"anyOf": [inner, {"type": "null"}]},
        lambda inner: {"allOf": [inner]},
        lambda inner: {"type": "array", "prefixItems": [inner], "items": False, "minItems": 1},
        lambda inner: {"type": "object", "additionalProperties": inner},
        lambda inner: {"type": ["object", "null"], "properties": {"a": inner}},
    ],
    ids=["anyOf", "allOf", "prefixItems", "record", "type-array"],
)
# 100,000 levels for one construct (the walks are shared), 20,000 for the others (suite time).
@pytest.mark.parametrize("depth", [20_000])
def test_deep_dialect_schemas_render(make: Any, depth: int) -> None:
    schema = _nest(depth, make, {"type": "string"})
    limit = sys.getrecursionlimit()
    ts = json_schema_to_ts(schema)
    py = json_schema_to_py(schema)
    assert sys.getrecursionlimit() == limit
    assert "string" in ts and len(ts) < 60 * depth
    assert "Any" in py or "str" in py


def test_hundred_thousand_deep_union_renders() -> None:
    schema = _nest(DEEP, lambda inner: {"anyOf": [inner, {"type": "null"}]}, {"type": "string"})
    assert json_schema_to_ts(schema).startswith("string | null | null")
    assert json_schema_to_py(schema) == "Any"  # past MAX_UNION_OPERATORS


def test_deep_dialect_sdks_render() -> None:
    depth = 20_000
    schema = _nest(depth, lambda inner: {"type": ["object", "null"], "properties": {"a": inner}}, {"type": "string"})
    entries = _entries({"type": "object", "properties": {"x": schema}})
    assert len(render_ts_sdk(entries)) < 60 * depth
    assert len(render_py_sdk(entries)) < 400 * depth


def test_a_long_reference_chain_renders() -> None:
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(DEEP)}
    defs[f"d{DEEP}"] = {"type": "integer"}
    schema = {"$ref": "#/$defs/d0", "$defs": defs}
    assert json_schema_to_ts(schema) == "number"
    assert json_schema_to_py(schema) == "int"
