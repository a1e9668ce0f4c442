"""Stack safety: 100,000-deep schemas, specs and values under the default recursion limit."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from dsh_codegen.schema import (
    JsonSchemaError,
    assert_supported_json_schema,
    compile_validator,
    validate_args,
    value_schema_spec_to_json_schema,
)

DEPTH = 100_000


@pytest.fixture(autouse=True)
def default_recursion_limit() -> Any:
    assert sys.getrecursionlimit() <= 10_000
    yield


def deep_array_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def deep_object_schema(depth: int, closed: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"], "additionalProperties": not closed}
    return schema


def deep_oneof_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "null"}
    for _ in range(depth):
        schema = {"oneOf": [{"type": "null"}, {"type": "array", "items": schema}]}
    return schema


def deep_list(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def deep_dict(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def test_deep_array_schema_and_value() -> None:
    schema = deep_array_schema(DEPTH)
    assert_supported_json_schema(schema)
    validator = compile_validator(schema)
    assert validator.is_valid(deep_list(DEPTH, 7))
    assert validator.violations(deep_list(DEPTH, 7)) == []
    (violation,) = validator.violations(deep_list(DEPTH, "x"))
    assert violation.path == (0,) * DEPTH
    assert violation.message == '"value' + "[0]" * DEPTH + '" must be an integer'
    assert not validator.is_valid(deep_list(DEPTH - 1, 7))


def test_deep_object_schema_and_value() -> None:
    schema = deep_object_schema(DEPTH, closed=True)
    validator = compile_validator(schema)
    assert validator.is_valid(deep_dict(DEPTH, "leaf"))
    bad = deep_dict(DEPTH - 1, {"b": 1})
    assert [v.keyword for v in validator.violations(bad)] == ["required", "additionalProperties"]


def test_deep_oneof_chain() -> None:
    schema = deep_oneof_schema(DEPTH)
    assert_supported_json_schema(schema)
    validator = compile_validator(schema)
    assert validator.is_valid(deep_list(DEPTH, None))
    assert validator.is_valid(None)
    assert not validator.is_valid(deep_list(DEPTH, 1))
    assert [str(v) for v in validator.violations(deep_list(DEPTH, 1))] == [
        '"value" must match exactly one oneOf branch (matched 0)'
    ]


def test_deep_unconstrained_values() -> None:
    validator = compile_validator({})
    assert validator.is_valid(deep_list(DEPTH, 1))
    assert validator.is_valid(deep_dict(DEPTH, [1, {"x": None}]))
    (violation,) = validator.violations(deep_dict(DEPTH, float("nan")))
    assert len(violation.path) == DEPTH
    args_validator = {"deep": {"type": "json"}}
    assert validate_args(args_validator, {"deep": deep_list(DEPTH, 0)}) == []


def test_deep_unsupported_schema_reports_the_deep_path() -> None:
    schema: dict[str, Any] = {"type": "bogus"}
    for _ in range(DEPTH):
        schema = {"type": "array", "items": schema}
    with pytest.raises(JsonSchemaError) as info:
        assert_supported_json_schema(schema)
    (violation,) = info.value.violations
    assert violation.path == ("items",) * DEPTH + ("type",)


def test_deep_dsl_spec() -> None:
    spec: Any = {"type": "string"}
    for _ in range(DEPTH):
        spec = {"type": "array", "items": spec}
    schema = value_schema_spec_to_json_schema(spec)
    assert compile_validator(schema).is_valid(deep_list(DEPTH, "s"))
    spec = {"type": "string"}
    for _ in range(DEPTH):
        spec = {"type": "object", "additionalProperties": False, "properties": {"a": {**spec, "required": True}}}
    schema = value_schema_spec_to_json_schema(spec)
    assert compile_validator(schema).is_valid(deep_dict(DEPTH, "s"))
