"""The tool-schema dialect check: what is still rejected (guarantees 102-110, docs/guarantees.md).

The tool-schema dialect (docs/schema.md) supersedes the seed's narrower subset: the
old rows about type arrays, anyOf, pattern, $ref, keywords without type and
required names on open objects now apply only to what the dialect still rejects.
"""

from __future__ import annotations

from typing import Any

import pytest

from dsh_codegen.schema import (
    JsonSchemaError,
    assert_object_json_schema,
    assert_supported_json_schema,
    compile_validator,
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
        True,
        False,
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
        # the dialect beyond the seed's subset
        {"type": ["string", "null"]},
        {"oneOf": [{}]},
        {"type": "string", "oneOf": [{"minLength": 1}, {"maxLength": 0}]},
        {"anyOf": [{}, {}], "allOf": [{"type": "string"}]},
        {"type": "string", "pattern": "^a", "maxLength": 3, "minLength": 1, "format": "email"},
        {"$ref": "#/$defs/a", "$defs": {"a": {"type": "integer", "minimum": 0}}},
        {"minimum": 5},
        {"properties": {"a": {}}, "required": ["a", "b"]},
        {"type": "object", "properties": {"a": {}}, "required": ["missing"]},
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"enum": [1, "a", None, [1], {"a": 1}]},
        {"const": {"a": [1, 2]}},
        {"type": "object", "enum": [{}]},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:x", "x-vendor": {"a": 1}},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "definitions": {"a": {}}},
        {
            "type": "array",
            "prefixItems": [{"type": "string"}],
            "items": False,
            "contains": {"type": "string"},
            "minContains": 1,
            "maxContains": 2,
        },
        {
            "type": "object",
            "dependentRequired": {"a": ["b"]},
            "propertyNames": {"maxLength": 3},
            "minProperties": 1,
            "maxProperties": 2.0,
        },
        {"$anchor": "top", "type": "object", "properties": {"self": {"$ref": "#top"}}},
    ],
)
def test_accepts_the_dialect(schema: Any) -> None:
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
            {"type": ["string", "string"]},
            [
                "schema.type must be a non-empty array of distinct type names (object/array/string/number/integer/boolean/null)"
            ],
        ),
        (
            {"type": []},
            [
                "schema.type must be a non-empty array of distinct type names (object/array/string/number/integer/boolean/null)"
            ],
        ),
        ({"oneOf": []}, ["schema.oneOf must be a non-empty array of schemas"]),
        ({"oneOf": {}}, ["schema.oneOf must be a non-empty array of schemas"]),
        ({"anyOf": [{}, 3]}, ["schema.anyOf[1] must be a schema object"]),
        ({"not": {}}, ["schema.not is not supported: negation is outside the tool-schema dialect"]),
        (
            {"if": {}, "then": {}, "else": {}},
            [
                "schema.if is not supported: conditional schemas are outside the tool-schema dialect",
                "schema.then is not supported: conditional schemas are outside the tool-schema dialect",
                "schema.else is not supported: conditional schemas are outside the tool-schema dialect",
            ],
        ),
        (
            {"type": "object", "patternProperties": {"^a": {}}},
            [
                "schema.patternProperties is not supported: patternProperties is outside the tool-schema dialect (use propertyNames)"
            ],
        ),
        ({"requried": ["a"]}, ["schema.requried is not a supported keyword"]),
        ({"Type": "string"}, ["schema.Type is not a supported keyword"]),
        ({"type": "strin"}, ["schema.type must be one of object/array/string/number/integer/boolean/null"]),
        (
            {"$ref": "https://example.com/s.json"},
            ['schema.$ref "https://example.com/s.json" is a remote reference (only local references are supported)'],
        ),
        ({"$ref": "#/$defs/missing"}, ['schema.$ref "#/$defs/missing" does not resolve']),
        ({"$ref": "#"}, ["schema.$ref loops back to itself without descending into the value"]),
        # through a combinator: its branches see the same value, so this loop descends into nothing either
        ({"allOf": [{"$ref": "#"}]}, ["schema.allOf[0].$ref loops back to itself without descending into the value"]),
        (
            {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "string"}]}}, "$ref": "#/$defs/a"},
            ["schema.$defs.a.anyOf[0].$ref loops back to itself without descending into the value"],
        ),
        (
            {"type": "number", "exclusiveMaximum": True},
            ["schema.exclusiveMaximum must be a number (draft-04's boolean form is not supported)"],
        ),
        (
            {"type": "string", "pattern": "\\p{L}"},
            ['schema.pattern "\\\\p{L}" Unicode property escapes (\\p{...}) are not supported'],
        ),
        ({"type": "object", "items": {}}, ['schema.items is not supported on type "object"']),
        ({"type": "array", "properties": {}}, ['schema.properties is not supported on type "array"']),
        ({"type": "string", "minimum": 1}, ['schema.minimum is not supported on type "string"']),
        ({"type": ["string", "null"], "items": {}}, ['schema.items is not supported on type "string"/"null"']),
        ({"type": "object", "properties": []}, ["schema.properties must be an object of schemas"]),
        ({"type": "object", "required": "a"}, ["schema.required must be an array of strings"]),
        ({"type": "object", "required": [1]}, ["schema.required must be an array of strings"]),
        (
            {"type": "object", "properties": {"a": {}}, "required": ["missing"], "additionalProperties": False},
            ['schema.required names "missing" which is not in properties'],
        ),
        ({"type": "object", "additionalProperties": 1}, ["schema.additionalProperties must be a boolean or a schema"]),
        ({"type": "number", "enum": ["a"]}, ["schema.enum must be a non-empty array of number values"]),
        ({"type": "string", "enum": []}, ["schema.enum must be a non-empty array"]),
        ({"type": "integer", "enum": [True]}, ["schema.enum must be a non-empty array of integer values"]),
        ({"type": "number", "enum": [float("nan")]}, ["schema.enum must hold lossless JSON values"]),
        ({"enum": [-0.0]}, ["schema.enum must hold lossless JSON values"]),
        ({"type": "string", "maxLength": 2.5}, ["schema.maxLength must be a non-negative integer"]),
        ({"type": "number", "multipleOf": 0}, ["schema.multipleOf must be a number greater than 0"]),
        (
            {"type": "array", "items": [{}]},
            ["schema.items must be a schema (the array form is draft-07's; use prefixItems)"],
        ),
        (
            {"properties": {"a": {"$id": "urn:a"}}},
            [
                "schema.properties.a.$id is not supported: a nested $id starts another schema resource (only the root may declare one)"
            ],
        ),
        (
            {"$schema": "https://example.com/meta"},
            ["schema.$schema must be the 2020-12, 2019-09 or draft-07 meta-schema URI"],
        ),
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
            [
                'schema.properties.a.properties["b c"].type must be one of object/array/string/number/integer/boolean/null'
            ],
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
            "a": {"type": "string", "minLenght": 1},
            "b": {"type": "array", "items": {"type": "bogus"}},
            "c": {"oneOf": [{"not": {"type": "null"}}]},
        },
        "required": ["a", "zz"],
        "additionalProperties": False,
    }
    assert messages(schema) == [
        'schema.required names "zz" which is not in properties',
        "schema.description must be a string",
        "schema.properties.a.minLenght is not a supported keyword",
        "schema.properties.b.items.type must be one of object/array/string/number/integer/boolean/null",
        "schema.properties.c.oneOf[0].not is not supported: negation is outside the tool-schema dialect",
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


def test_object_root_through_a_root_ref() -> None:
    assert_object_json_schema({"$ref": "#/$defs/M", "$defs": {"M": {"type": "object", "properties": {}}}})
    with pytest.raises(JsonSchemaError) as info:
        assert_object_json_schema({"$ref": "#/$defs/M", "$defs": {"M": {"type": "string"}}})
    assert [str(v) for v in info.value.violations] == [
        'schema.type must be "object" (structured output is object-rooted)'
    ]


def test_object_root_through_a_root_ref_to_an_anchor() -> None:
    # The root $ref is resolved as validation resolves it: an $anchor name counts like a pointer.
    assert_object_json_schema({"$defs": {"A": {"$anchor": "args", "type": "object"}}, "$ref": "#args"})
    with pytest.raises(JsonSchemaError) as info:
        assert_object_json_schema({"$defs": {"A": {"$anchor": "args", "type": "string"}}, "$ref": "#args"})
    assert [str(v) for v in info.value.violations] == [
        'schema.type must be "object" (structured output is object-rooted)'
    ]


@pytest.mark.parametrize("schema", [True, False])
def test_a_boolean_root_is_not_an_object_schema(schema: bool) -> None:
    assert_supported_json_schema(schema)  # a schema, but not an object schema
    with pytest.raises(JsonSchemaError) as info:
        assert_object_json_schema(schema)
    assert [str(v) for v in info.value.violations] == [
        'schema.type must be "object" (structured output is object-rooted)'
    ]


def test_dependent_required_names_must_be_unique() -> None:
    # JSON Schema 2020-12: each array of dependentRequired holds unique strings.
    assert messages({"dependentRequired": {"a": ["b", "c", "b"], "d": ["e"]}}) == [
        'schema.dependentRequired.a must be an array of unique strings ("b" is listed twice)'
    ]
    assert messages({"properties": {"p": {"dependentRequired": {"x y": ["z", "z"]}}}}) == [
        'schema.properties.p.dependentRequired["x y"] must be an array of unique strings ("z" is listed twice)'
    ]
    assert_supported_json_schema({"dependentRequired": {"a": ["b", "c"]}})
