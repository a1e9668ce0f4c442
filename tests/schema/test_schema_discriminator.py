"""pydantic's ``discriminator`` (OpenAPI's hint for a discriminated union): an annotation beside oneOf/anyOf.

Accepted and ignored by validation where pydantic puts it; shape-checked; rejected
anywhere else with a message naming the keyword and its path.
"""

from __future__ import annotations

from typing import Any

import pytest

from dsh_codegen.schema import JsonSchemaError, assert_supported_json_schema, compile_validator

_CAT = {
    "type": "object",
    "properties": {"pet_type": {"const": "cat"}, "meows": {"type": "integer"}},
    "required": ["pet_type", "meows"],
}
_DOG = {
    "type": "object",
    "properties": {"pet_type": {"const": "dog"}, "barks": {"type": "number"}},
    "required": ["pet_type", "barks"],
}


def _pets(**discriminator: Any) -> dict[str, Any]:
    """What pydantic emits for ``pet: Cat | Dog = Field(discriminator="pet_type")``."""
    return {
        "$defs": {"Cat": _CAT, "Dog": _DOG},
        "type": "object",
        "properties": {
            "pet": {
                "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}],
                "discriminator": discriminator,
            }
        },
        "required": ["pet"],
    }


def _messages(schema: Any) -> list[str]:
    with pytest.raises(JsonSchemaError) as info:
        assert_supported_json_schema(schema)
    return [v.message for v in info.value.violations]


def test_pydantic_discriminated_union_is_accepted_and_validates_as_its_one_of() -> None:
    schema = _pets(propertyName="pet_type", mapping={"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"})
    assert_supported_json_schema(schema)
    validator = compile_validator(schema)
    assert validator.is_valid({"pet": {"pet_type": "cat", "meows": 3}})
    assert validator.is_valid({"pet": {"pet_type": "dog", "barks": 1.5}})
    # the annotation does not validate: the oneOf does (a cat that barks matches neither branch)
    assert not validator.is_valid({"pet": {"pet_type": "cat", "barks": 1.5}})
    assert [v.keyword for v in validator.violations({"pet": {"pet_type": "cat", "barks": 1.5}})] == ["oneOf"]


def test_mapping_is_optional_and_any_of_is_a_place_too() -> None:
    assert_supported_json_schema(_pets(propertyName="pet_type"))
    schema = {"anyOf": [_CAT, _DOG], "discriminator": {"propertyName": "pet_type"}}
    assert compile_validator(schema).is_valid({"pet_type": "dog", "barks": 2})


@pytest.mark.parametrize(
    ("discriminator", "expected"),
    [
        ({}, "must be an object with a string propertyName and an optional mapping"),
        ({"propertyName": 1}, "must be an object with a string propertyName and an optional mapping"),
        (
            {"propertyName": "pet_type", "extra": 1},
            "must be an object with a string propertyName and an optional mapping",
        ),
        ({"propertyName": "pet_type", "mapping": {"cat": 1}}, "mapping must be an object of strings"),
        ({"propertyName": "pet_type", "mapping": ["cat"]}, "mapping must be an object of strings"),
    ],
)
def test_shape_is_checked(discriminator: dict[str, Any], expected: str) -> None:
    assert _messages(_pets(**discriminator)) == [f"schema.properties.pet.discriminator {expected}"]


def test_a_bare_string_is_rejected() -> None:
    schema = {"oneOf": [_CAT, _DOG], "discriminator": "pet_type"}
    assert _messages(schema) == [
        "schema.discriminator must be an object with a string propertyName and an optional mapping"
    ]


def test_rejected_outside_a_union() -> None:
    schema = {"type": "object", "properties": {"pet": {**_CAT, "discriminator": {"propertyName": "pet_type"}}}}
    assert _messages(schema) == [
        "schema.properties.pet.discriminator is only allowed beside oneOf or anyOf (it annotates a discriminated union)"
    ]
