"""The raw JSON-Schema subset check: CONTRACT.md items 102-110, exact texts and paths."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_codegen.schema import (
    JsonSchemaError,
    assert_object_json_schema,
    assert_supported_json_schema,
    compile_validator,
)

SUBSET = (
    "subset: type, oneOf, properties, required, additionalProperties, items, enum, const, "
    "description, title, default, examples"
)


def messages(schema: Any) -> list[str]:
    with pytest.raises(JsonSchemaError) as info:
        assert_supported_json_schema(schema)
    error = info.value
    assert error.code == "UNSUPPORTED_SCHEMA"
    assert error.name == "JsonSchemaError"
    assert str(error) == "unsupported JSON schema: " + "; ".join(str(v) for v in error.violations)
    return [v.message for v in error.violations]


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"description": "anything", "title": "t", "default": {"a": [1, None]}, "examples": [1, "x"]},
        {"type": "string"},
        {"type": "null"},
        {"type": "integer", "enum": [1, 2.0], "const": 2},
        {"type": "number", "enum": [1, 2.5]},
        {"type": "boolean", "const": False},
        {"type": "array"},
        {"type": "array", "items": {"type": "string"}},
        {"type": "object"},
        {"type": "object", "properties": {}, "additionalProperties": False},
        {"oneOf": [{"type": "string"}, {"type": "null"}], "description": "x"},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]},
    ],
)
def test_accepts_the_subset(schema: Any) -> None:
    assert_supported_json_schema(schema)
    compile_validator(schema)


def test_accepts_sibling_reuse() -> None:
    shared = {"type": "string"}
    schema = {"type": "object", "properties": {"a": shared, "b": shared, "c": {"type": "array", "items": shared}}}
    assert_supported_json_schema(schema)
    validator = compile_validator(schema)
    assert validator.is_valid({"a": "x", "b": "y", "c": ["z"]})
    assert not validator.is_valid({"b": 1})


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ([], ["schema must be a schema object"]),
        ("string", ["schema must be a schema object"]),
        ({1: "x"}, ["schema must be a schema object"]),
        ({"type": "obj"}, ["schema.type must be one of object/array/string/number/integer/boolean/null"]),
        ({"type": 3}, ["schema.type must be one of object/array/string/number/integer/boolean/null"]),
        (
            {"type": ["string", "null"]},
            ["schema.type must be a single type string (type arrays are not supported)"],
        ),
        ({"oneOf": [{}]}, ["schema.oneOf must be an array of at least two schemas"]),
        ({"oneOf": {}}, ["schema.oneOf must be an array of at least two schemas"]),
        (
            {"type": "string", "oneOf": [{}, {}]},
            ["schema cannot declare both type and oneOf"],
        ),
        ({"oneOf": [{}, {}], "items": {}}, ["schema.items is not supported beside oneOf"]),
        ({"oneOf": [{}, {}], "enum": ["a"]}, ["schema.enum is not supported beside oneOf"]),
        ({"anyOf": [{}, {}]}, [f"schema.anyOf is not a supported keyword ({SUBSET})"]),
        (
            {"type": "string", "pattern": "x", "maxLength": 3},
            [
                f"schema.pattern is not a supported keyword ({SUBSET})",
                f"schema.maxLength is not a supported keyword ({SUBSET})",
            ],
        ),
        ({"$ref": "#"}, [f"schema.$ref is not a supported keyword ({SUBSET})"]),
        ({"type": "object", "items": {}}, ['schema.items is not supported on type "object"']),
        ({"type": "array", "properties": {}}, ['schema.properties is not supported on type "array"']),
        ({"type": "object", "enum": [{}]}, ['schema.enum is not supported on type "object"']),
        ({"properties": {}}, ["schema.properties requires type or oneOf"]),
        ({"items": {}}, ["schema.items requires type or oneOf"]),
        ({"type": "object", "properties": []}, ["schema.properties must be an object of schemas"]),
        ({"type": "object", "required": "a"}, ["schema.required must be an array of strings"]),
        ({"type": "object", "required": [1]}, ["schema.required must be an array of strings"]),
        (
            {"type": "object", "properties": {"a": {}}, "required": ["missing"]},
            ['schema.required names "missing" which is not in properties'],
        ),
        ({"type": "object", "additionalProperties": {}}, ["schema.additionalProperties must be a boolean"]),
        ({"type": "number", "enum": ["a"]}, ["schema.enum must be a non-empty array of number values"]),
        ({"type": "string", "enum": []}, ["schema.enum must be a non-empty array of string values"]),
        ({"type": "integer", "enum": [True]}, ["schema.enum must be a non-empty array of integer values"]),
        ({"type": "number", "enum": [float("nan")]}, ["schema.enum must be a non-empty array of number values"]),
        ({"type": "integer", "const": 1.5}, ["schema.const must be an integer value"]),
        ({"type": "string", "const": 1}, ["schema.const must be a string value"]),
        (
            {"type": "string", "enum": ["a"], "const": "b"},
            ["schema.const must be one of schema.enum when both are declared"],
        ),
        ({"description": 1}, ["schema.description must be a string"]),
        ({"title": None}, ["schema.title must be a string"]),
        ({"default": float("nan")}, ["schema.default annotation must be lossless JSON data"]),
        ({"examples": [{1: 2}]}, ["schema.examples annotation must be lossless JSON data"]),
        (
            {"type": "object", "properties": {"a": {"type": "object", "properties": {"b c": {"type": "x"}}}}},
            ['schema.properties.a.properties["b c"].type must be one of object/array/string/number/integer/boolean/null'],
        ),
        (
            {"type": "array", "items": {"oneOf": [{"type": "string"}, 3]}},
            ["schema.items.oneOf[1] must be a schema object"],
        ),
    ],
)
def test_rejections_with_exact_texts(schema: Any, expected: list[str]) -> None:
    assert messages(schema) == expected


def test_every_independent_violation_in_walk_order() -> None:
    schema = {
        "type": "object",
        "description": 5,
        "properties": {
            "a": {"type": "string", "minLength": 1},
            "b": {"type": "array", "items": {"type": "bogus"}},
            "c": {"oneOf": [{"type": "null"}]},
        },
        "required": ["a", "zz"],
    }
    assert messages(schema) == [
        'schema.required names "zz" which is not in properties',
        "schema.description must be a string",
        f"schema.properties.a.minLength is not a supported keyword ({SUBSET})",
        "schema.properties.b.items.type must be one of object/array/string/number/integer/boolean/null",
        "schema.properties.c.oneOf must be an array of at least two schemas",
    ]


def test_violations_carry_paths_and_keywords() -> None:
    with pytest.raises(JsonSchemaError) as info:
        assert_supported_json_schema({"type": "object", "properties": {"a": {"type": "number", "enum": ["x"]}}})
    (violation,) = info.value.violations
    assert violation.path == ("properties", "a", "enum")
    assert violation.keyword == "enum"


def test_cycles_are_reported() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    assert messages(schema) == ["schema.properties.self is circular"]
    branchy: dict[str, Any] = {"oneOf": [{"type": "null"}]}
    branchy["oneOf"].append({"type": "array", "items": branchy})
    assert messages(branchy) == ["schema.oneOf[1].items is circular"]


def test_dict_subclasses_are_not_schemas() -> None:
    from collections import OrderedDict

    assert messages(OrderedDict(type="string")) == ["schema must be a schema object"]


def test_object_root_required() -> None:
    assert_object_json_schema({"type": "object"})
    for schema in ({"type": "string"}, {}, {"oneOf": [{"type": "object"}, {"type": "null"}]}):
        with pytest.raises(JsonSchemaError) as info:
            assert_object_json_schema(schema)
        assert [str(v) for v in info.value.violations] == [
            'schema.type must be "object" (structured output is object-rooted)'
        ]
    with pytest.raises(JsonSchemaError) as info:
        assert_object_json_schema({"type": "array", "items": 1})
    assert [str(v) for v in info.value.violations] == [
        'schema.type must be "object" (structured output is object-rooted)',
        "schema.items must be a schema object",
    ]


def test_error_pickles() -> None:
    import pickle

    with pytest.raises(JsonSchemaError) as info:
        assert_supported_json_schema({"type": 1})
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == str(info.value)
    assert again.violations == info.value.violations
