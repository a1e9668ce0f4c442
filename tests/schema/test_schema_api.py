"""Public names, the twin in use, and details of the value predicates."""

from __future__ import annotations

import sys
from typing import Any

import pytest

import dsh_codegen
from dsh_codegen import schema
from dsh_codegen.schema import CompiledValidator, Violation, compile_validator
from dsh_codegen.schema._program import int_is_lossless, new_violation

PUBLIC = {
    "ANNOTATION_KEYWORDS",
    "CompiledValidator",
    "JsonSchema",
    "JsonSchemaError",
    "JsonSchemaNode",
    "JsonSchemaObject",
    "JsonValue",
    "ParameterSchemaSpec",
    "PropertySchemaSpec",
    "ToolArgsError",
    "ValueSchemaSpec",
    "Violation",
    "assert_object_json_schema",
    "assert_supported_json_schema",
    "compile_validator",
    "parameter_schema_spec_to_json_schema",
    "relax_strict_arguments",
    "validate_args",
    "validate_json_schema_value",
    "value_schema_spec_to_json_schema",
}


def test_public_names() -> None:
    assert set(schema.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(dsh_codegen, name) is getattr(schema, name)


def test_the_selected_twin_is_the_backend() -> None:
    if dsh_codegen.backend() == "compiled":
        from dsh_codegen import _schema_c

        assert CompiledValidator is _schema_c.CompiledValidator
    else:
        from dsh_codegen.schema import _validator_py

        assert CompiledValidator is _validator_py.CompiledValidator
    assert isinstance(compile_validator({}), CompiledValidator)


def test_validator_needs_a_program() -> None:
    with pytest.raises(TypeError):
        CompiledValidator({"type": "string"})  # type: ignore[arg-type]


def test_fast_violation_equals_the_constructed_one() -> None:
    made = new_violation(("a", 1), "type", "m")
    assert made == Violation(("a", 1), "type", "m")
    assert hash(made) == hash(Violation(("a", 1), "type", "m"))
    assert str(made) == "m"
    with pytest.raises(AttributeError):
        made.path = ()  # type: ignore[misc]


def test_int_digit_limit() -> None:
    limit = sys.get_int_max_str_digits()
    assert limit > 0
    assert int_is_lossless(10 ** (limit - 1))
    assert int_is_lossless(-(10**limit - 1))
    assert not int_is_lossless(10**limit)
    assert not int_is_lossless(-(10**limit))
    validator = compile_validator({"type": "integer"})
    assert validator.is_valid(10**limit - 1)
    assert [str(v) for v in validator.violations(10**limit)] == ['"value" must be a lossless JSON value']
    try:
        sys.set_int_max_str_digits(0)
        assert validator.is_valid(10**limit)
    finally:
        sys.set_int_max_str_digits(limit)


def test_huge_shared_reference_dag_is_valid() -> None:
    # more than a million containers through sharing: the compiled twin switches to its
    # cycle-checking walk and still accepts it
    value: Any = [0]
    for _ in range(20):
        value = [value, value]
    assert compile_validator({}).is_valid(value)
    assert compile_validator({"type": "array"}).is_valid(value)


def test_validators_are_reusable_and_independent() -> None:
    a = compile_validator({"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": False})
    b = compile_validator({"type": "object", "properties": {"x": {"type": "integer"}}})
    for _ in range(3):
        assert a.is_valid({"x": "s"}) and not a.is_valid({"x": 1}) and not a.is_valid({"y": "s"})
        assert b.is_valid({"x": 1, "y": None}) and not b.is_valid({"x": "s"})


def test_frozen_schemas_compile() -> None:
    snapshot = getattr(dsh_codegen, "snapshot_json", None)
    if snapshot is None:
        pytest.skip("dsh_codegen.snapshot_json has not landed yet")
    schema = snapshot(
        {
            "type": "object",
            "properties": {"a": {"type": "string", "enum": ["x", "y"]}, "b": {"oneOf": [{"type": "null"}, {}]}},
            "required": ["a"],
            "additionalProperties": False,
        }
    )
    validator = compile_validator(schema)
    assert validator.is_valid({"a": "x", "b": [1]})
    assert [str(v) for v in validator.violations({"a": "z"})] == ['"value.a" must be one of ["x","y"]']


def test_path_must_be_a_str() -> None:
    with pytest.raises(TypeError):
        compile_validator({"type": "string"}).violations(1, 3)  # type: ignore[arg-type]


def test_validators_are_initialized_once() -> None:
    from dsh_codegen.schema._validator import compile_program

    validator = compile_validator({"type": "string"})
    with pytest.raises(TypeError):
        validator.__init__(compile_program({"type": "integer"}))  # type: ignore[misc]
    assert validator.is_valid("s")


def test_every_public_name_resolves_lazily_from_its_home_module() -> None:
    import importlib

    import dsh_codegen.schema as schema

    assert sorted(schema._HOME) == sorted(schema.__all__)
    for name in schema.__all__:
        home = importlib.import_module(f"dsh_codegen.schema.{schema._HOME[name]}")
        assert getattr(schema, name) is getattr(home, name), name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        schema.nope  # noqa: B018
