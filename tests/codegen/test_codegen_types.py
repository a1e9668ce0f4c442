"""json_schema_to_ts / json_schema_to_py: the mapping tables, degradation, stack safety."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_codegen.codegen import json_schema_to_py, json_schema_to_ts
from dsh_codegen.codegen._literals import ts_number
from dsh_codegen.codegen._naming import ClassNamer
from dsh_codegen.codegen._py_types import MAX_LIST_NESTING, MAX_UNION_OPERATORS, PyTypes

pytestmark = pytest.mark.once

OBJ = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


@pytest.mark.parametrize(
    ("schema", "ts", "py"),
    [
        ({"type": "string"}, "string", "str"),
        ({"type": "number"}, "number", "float"),
        ({"type": "integer"}, "number", "int"),
        ({"type": "boolean"}, "boolean", "bool"),
        ({"type": "null"}, "null", "None"),
        ({}, "JsonValue", "Any"),
        ({"description": "x", "title": "t", "default": 1, "examples": [1]}, "JsonValue", "Any"),
        ({"const": "a", "enum": ["b"]}, '"a"', 'Literal["a"]'),
        ({"enum": ["a", 1, True, None]}, '"a" | 1 | true | null', 'Literal["a", 1, True, None]'),
        ({"enum": [2.0, 1e-7]}, "2 | 1e-7", "float"),
        ({"type": "integer", "enum": [2.0, 3]}, "2 | 3", "Literal[2, 3]"),
        ({"const": 2**64}, str(2**64), f"Literal[{2**64}]"),
        ({"oneOf": [{"type": "string"}, {"type": "null"}]}, "string | null", "str | None"),
        ({"type": "array"}, "JsonValue[]", "list[Any]"),
        ({"type": "array", "items": {"type": "string"}}, "string[]", "list[str]"),
        ({"type": "array", "items": {"enum": ["a", "b"]}}, '("a" | "b")[]', 'list[Literal["a", "b"]]'),
        ({"type": "array", "items": {"type": "array", "items": {"type": "number"}}}, "number[][]", "list[list[float]]"),
        ({"type": "object"}, "Record<string, JsonValue>", "dict[str, Any]"),
        ({"type": "object", "properties": {}}, "Record<string, JsonValue>", "dict[str, Any]"),
        ({"type": "object", "additionalProperties": False}, "Record<string, never>", "dict[str, Any]"),
        (OBJ, "{\n  a: string;\n} & Record<string, JsonValue>", "dict[str, Any]"),
        ({**OBJ, "additionalProperties": False}, "{\n  a: string;\n}", "dict[str, Any]"),
    ],
)
def test_mapping_table(schema: Any, ts: str, py: str) -> None:
    assert json_schema_to_ts(schema) == ts
    assert json_schema_to_py(schema) == py


@pytest.mark.parametrize(
    "schema",
    [
        None,
        1,
        "string",
        [],
        {"type": ["string", 1]},
        {"type": []},
        {"type": "str"},
        {"anyOf": []},
        {"$ref": "#/x"},
        {"$ref": 1},
        {"$ref": "https://example.com/s.json"},
        {"allOf": []},
        {"not": {}},
        {"if": {}},
        {"patternProperties": {}},
        {"unevaluatedProperties": False},
        {"$dynamicRef": "#a"},
        {"type": "object", "properties": []},
        {"type": "object", "required": "a"},
        {"type": "object", "additionalProperties": 3},
        {"oneOf": []},
        {"oneOf": "x"},
        {"enum": []},
        {"enum": [[1]]},
        {"const": {"a": 1}},
        {"type": "string", "const": 1},
        {"const": float("nan")},
        {"const": -0.0},
        {"const": float("inf")},
        {1: "x"},
        {"enum": [1.5], "type": "integer"},
    ],
)
def test_unsupported_or_malformed_degrades(schema: Any) -> None:
    assert json_schema_to_ts(schema) == "unknown"
    assert json_schema_to_py(schema) == "Any"


def test_indent_counts_levels_and_descriptions_become_jsdoc() -> None:
    schema = {
        "type": "object",
        "properties": {"p": {"type": "string", "description": "  Absolute\n file */ path "}, "q": {"type": "integer"}},
        "required": ["p"],
        "additionalProperties": False,
    }
    assert json_schema_to_ts(schema, 2) == (
        "{\n      /** Absolute file *\\/ path */\n      p: string;\n      q?: number;\n    }"
    )


def test_array_of_union_objects_is_parenthesised() -> None:
    schema = {"type": "array", "items": OBJ}
    assert json_schema_to_ts(schema) == "({\n  a: string;\n} & Record<string, JsonValue>)[]"


def test_exotic_keys_are_quoted() -> None:
    schema = {
        "type": "object",
        "properties": {"my-key": {}, "$ok_1": {}, "1x": {}, "ü": {}},
        "additionalProperties": False,
    }
    assert (
        json_schema_to_ts(schema)
        == '{\n  "my-key"?: JsonValue;\n  $ok_1?: JsonValue;\n  "1x"?: JsonValue;\n  "ü"?: JsonValue;\n}'
    )


def _nest_objects(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"], "additionalProperties": False}
    return schema


def test_objects_deeper_than_16_levels_render_on_one_line() -> None:
    text = json_schema_to_ts(_nest_objects(18))
    lines = text.split("\n")
    assert len(lines) == 2 * 16 + 1
    assert lines[16] == " " * 32 + "a: { a: { a: string } };"


@pytest.mark.parametrize("depth", [100_000])
def test_100000_deep_schemas_render_under_the_default_recursion_limit(depth: int) -> None:
    assert sys.getrecursionlimit() <= 10_000
    arrays: Any = {"type": "string"}
    unions: Any = {"type": "null"}
    for _ in range(depth):
        arrays = {"type": "array", "items": arrays}
        unions = {"oneOf": [{"type": "string"}, unions]}
    objects = _nest_objects(depth)
    assert json_schema_to_ts(arrays) == "string" + "[]" * depth
    assert json_schema_to_py(arrays).count("list[") == MAX_LIST_NESTING
    assert json_schema_to_py(arrays).endswith("list[Any" + "]" * MAX_LIST_NESTING)
    assert json_schema_to_ts(unions).count("|") == depth
    assert json_schema_to_py(unions) == "Any"  # too many operators to compile
    ts_objects = json_schema_to_ts(objects)
    assert ts_objects.count("a: ") == depth
    assert len(ts_objects) < 20 * depth  # linear, thanks to the one-line rule
    assert json_schema_to_py(objects) == "dict[str, Any]"
    types = PyTypes(ClassNamer())
    assert types.type_text(objects, "DeepArgs") == "DeepArgs"
    assert len(types.classes) == depth
    assert max(len(cls.name) for cls in types.classes) <= 120 + len(str(depth))


def test_python_unions_are_capped_where_cpython_can_compile_them() -> None:
    def chain(members: int) -> dict[str, Any]:
        union: dict[str, Any] = {"type": "null"}
        for _ in range(members - 1):
            union = {"oneOf": [{"type": "string"}, union]}
        return union

    at_cap = json_schema_to_py(chain(MAX_UNION_OPERATORS + 1))
    assert at_cap.count(" | ") == MAX_UNION_OPERATORS
    compile(f"x: {at_cap}", "<cap>", "exec")
    assert json_schema_to_py(chain(MAX_UNION_OPERATORS + 2)) == "Any"
    types = PyTypes(ClassNamer())
    schema = {"type": "object", "properties": {"u": chain(MAX_UNION_OPERATORS + 2)}}
    types.type_text(schema, "XArgs")
    assert types.classes[0].text.splitlines()[:2] == ["class XArgs(TypedDict):", "    u: NotRequired[Any]"]


def test_cycles_degrade() -> None:
    node: dict[str, Any] = {"type": "object", "properties": {}}
    node["properties"]["self"] = node
    items: dict[str, Any] = {"type": "array"}
    items["items"] = items
    union: dict[str, Any] = {"oneOf": [{"type": "string"}]}
    union["oneOf"].append(union)
    assert json_schema_to_ts(node) == "{\n  self?: unknown;\n} & Record<string, JsonValue>"
    assert json_schema_to_ts(items) == "unknown[]"
    assert json_schema_to_ts(union) == "string | unknown"
    assert json_schema_to_py(items) == "list[Any]"
    assert json_schema_to_py(union) == "str | Any"
    types = PyTypes(ClassNamer())
    assert types.type_text(node, "NodeArgs") == "NodeArgs"
    assert types.classes[0].text.splitlines()[:2] == ["class NodeArgs(TypedDict):", "    self: NotRequired[Any]"]


def test_shared_non_cyclic_references_render_twice() -> None:
    shared = {"type": "string"}
    schema = {"oneOf": [shared, {"type": "array", "items": shared}]}
    assert json_schema_to_ts(schema) == "string | string[]"


class _Hostile(dict):  # type: ignore[type-arg]
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")

    def keys(self) -> Any:
        raise RuntimeError("keys")


class _BadKey(str):
    def __hash__(self) -> int:
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")


@pytest.mark.parametrize(
    ("schema", "ts", "py"),
    [
        # A dict subclass is read as the dict it is; its raising methods are never called.
        (_Hostile(type="string"), "string", "str"),
        ({_BadKey("x"): 1, "type": "string"}, "unknown", "Any"),
        ({"type": "object", "properties": {_BadKey("k"): {}}}, "unknown", "Any"),
        ({"const": 10**5000}, "unknown", "Any"),
        (object(), "unknown", "Any"),
    ],
)
def test_hostile_inputs_never_raise(schema: Any, ts: str, py: str) -> None:
    assert json_schema_to_ts(schema) == ts
    assert json_schema_to_py(schema) == py


def test_non_integer_indent_is_treated_as_zero() -> None:
    assert json_schema_to_ts(OBJ, indent=-3) == json_schema_to_ts(OBJ)
    assert json_schema_to_ts(OBJ, indent="x") == json_schema_to_ts(OBJ)  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "properties",
                    "items",
                    "oneOf",
                    "enum",
                    "const",
                    "required",
                    "additionalProperties",
                    "description",
                    "x",
                    "a",
                ]
            )
            | st.text(max_size=3),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)
type_names = st.sampled_from(["object", "array", "string", "number", "integer", "boolean", "null"])
schemas = st.recursive(
    st.fixed_dictionaries({"type": type_names})
    | st.just({})
    | st.fixed_dictionaries({"enum": st.lists(json_values, max_size=3)}),
    lambda inner: (
        st.fixed_dictionaries({"type": st.just("array"), "items": inner})
        | st.fixed_dictionaries({"oneOf": st.lists(inner, max_size=3)})
        | st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(st.text(max_size=4), inner, max_size=4)},
            optional={
                "additionalProperties": st.booleans() | json_values,
                "required": st.lists(st.text(max_size=4), max_size=3),
            },
        )
    ),
    max_leaves=20,
)


@given(st.one_of(json_values, schemas))
def test_never_raises_on_arbitrary_input(schema: Any) -> None:
    assert isinstance(json_schema_to_ts(schema), str)
    assert isinstance(json_schema_to_py(schema), str)
    types = PyTypes(ClassNamer())
    assert isinstance(types.type_text(schema, "XArgs"), str)


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (2.0, "2"),
        (1.5, "1.5"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (-3.25, "-3.25"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.1, "0.1"),
        (123.456, "123.456"),
        (-0.5, "-0.5"),
        (2**60, str(2**60)),
        (-7, "-7"),
        (1.2345e-5, "0.000012345"),
    ],
)
def test_typescript_number_text_follows_javascript(number: float, text: str) -> None:
    assert ts_number(number) == text
