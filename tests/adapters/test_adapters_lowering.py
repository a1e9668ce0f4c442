"""Foreign forms of JSON Schema lowered to the dialect: each conversion, its note, and deep schemas."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from dsh_codegen.adapters import lower_json_schema
from dsh_codegen.schema import JsonSchemaError, compile_validator


def notes(schema: Any) -> list[str]:
    return [note.message for note in lower_json_schema(schema).notes]


@pytest.mark.parametrize(
    ("source", "lowered"),
    [
        ({"type": "string", "nullable": True}, {"type": ["string", "null"]}),
        ({"type": ["string", "integer"], "nullable": True}, {"type": ["string", "integer", "null"]}),
        ({"type": "string", "nullable": False}, {"type": "string"}),
        ({"type": "string", "enum": ["a"], "nullable": True}, {"type": ["string", "null"], "enum": ["a", None]}),
        ({"type": "string", "const": "a", "nullable": True}, {"type": ["string", "null"], "enum": ["a", None]}),
        (
            {"$ref": "#/$defs/x", "description": "d", "nullable": True},
            {"anyOf": [{"$ref": "#/$defs/x"}, {"type": "null"}], "description": "d"},
        ),
        (
            {"allOf": [{"type": "integer"}], "nullable": True},
            {"anyOf": [{"allOf": [{"type": "integer"}]}, {"type": "null"}]},
        ),
        ({"type": "number", "minimum": 1, "exclusiveMinimum": True}, {"type": "number", "exclusiveMinimum": 1}),
        ({"type": "number", "maximum": 9, "exclusiveMaximum": False}, {"type": "number", "maximum": 9}),
        ({"type": "object", "dependencies": {"a": ["b"]}}, {"type": "object", "dependentRequired": {"a": ["b"]}}),
        ({"dependencies": {"a": {"required": ["b"]}, "c": True}}, {"dependentRequired": {"a": ["b"]}}),
        ({"type": "array", "items": [{"type": "string"}]}, {"type": "array", "prefixItems": [{"type": "string"}]}),
        (
            {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
            {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
        ),
        ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}, {"type": "object"}),
    ],
)
def test_each_foreign_form(source: dict[str, Any], lowered: dict[str, Any]) -> None:
    result = lower_json_schema(source)
    assert result.schema == lowered
    assert len(result.notes) == 1
    assert result.notes[0].message.startswith("schema.")


def test_dialect_schemas_pass_unchanged_and_the_input_is_not_modified() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": ["string", "null"], "minimum": 1}, "n": {"exclusiveMaximum": 9}},
        "$defs": {"x": {}},
    }
    before = repr(schema)
    result = lower_json_schema(schema)
    assert result.schema == schema and result.notes == ()
    assert result.schema is not schema
    source = {"properties": {"a": {"type": "string", "nullable": True}}}
    lower_json_schema(source)
    assert source == {"properties": {"a": {"type": "string", "nullable": True}}}
    assert repr(schema) == before


def test_nested_positions_and_document_order() -> None:
    schema = {
        "properties": {"a": {"type": "string", "nullable": True}},
        "items": {"anyOf": [{"type": "integer", "nullable": True}]},
        "$defs": {"d": {"minimum": 0, "exclusiveMinimum": True}},
    }
    assert notes(schema) == [
        'schema.properties.a.nullable: OpenAPI nullable: true: type became ["string", "null"]',
        'schema.items.anyOf[0].nullable: OpenAPI nullable: true: type became ["integer", "null"]',
        "schema.$defs.d.exclusiveMinimum: draft-04 exclusiveMinimum: true with minimum became exclusiveMinimum: 0",
    ]


def test_children_of_a_wrapped_node_are_lowered_too() -> None:
    schema = {"allOf": [{"type": "string", "nullable": True}], "nullable": True}
    assert lower_json_schema(schema).schema == {"anyOf": [{"allOf": [{"type": ["string", "null"]}]}, {"type": "null"}]}


def test_a_wrapped_node_keeps_the_dialect_annotations_outside_and_its_discriminator_inside() -> None:
    # The outside keys are the compiler's annotation table: $defs stays where "#/$defs/..." points.
    pet = {"type": "object", "properties": {"kind": {"const": "cat"}}, "required": ["kind"]}
    source = {
        "$defs": {"pet": pet},
        "$comment": "c",
        "oneOf": [{"$ref": "#/$defs/pet"}],
        "discriminator": {"propertyName": "kind"},
        "nullable": True,
    }
    lowered = lower_json_schema(source).schema
    assert lowered == {
        "anyOf": [{"oneOf": [{"$ref": "#/$defs/pet"}], "discriminator": {"propertyName": "kind"}}, {"type": "null"}],
        "$defs": {"pet": pet},
        "$comment": "c",
    }
    validator = compile_validator(lowered)
    assert validator.is_valid(None) and validator.is_valid({"kind": "cat"})
    assert not validator.is_valid({"kind": "dog"})


def test_what_cannot_be_kept_is_an_error_naming_each_construct() -> None:
    with pytest.raises(JsonSchemaError) as caught:
        lower_json_schema(
            {
                "properties": {"n": {"exclusiveMinimum": True}, "m": {"nullable": "yes"}},
                "dependencies": {"a": {"properties": {"b": {}}}},
            }
        )
    assert [v.path for v in caught.value.violations] == [
        ("dependencies", "a"),
        ("properties", "n", "exclusiveMinimum"),
        ("properties", "m", "nullable"),
    ]
    assert caught.value.message.startswith("unsupported JSON schema: schema.dependencies.a is a schema dependency")


def test_lossy_schema_is_an_unsupported_schema() -> None:
    with pytest.raises(JsonSchemaError, match=r"schema.properties.a.default is not lossless JSON"):
        lower_json_schema({"properties": {"a": {"default": float("nan")}}})


def test_100000_deep_schema_under_the_default_recursion_limit() -> None:
    depth = 100_000
    schema: dict[str, Any] = {"type": "string", "nullable": True}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    assert sys.getrecursionlimit() <= 10_000
    result = lower_json_schema(schema)
    node = result.schema
    for _ in range(depth):
        node = node["items"]
    assert node == {"type": ["string", "null"]}
    assert len(result.notes) == 1
