"""The authoring DSL (guarantees 85-91, docs/guarantees.md) and its static typing under mypy --strict."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from _shared_helpers import REPO, run_mypy

from dsh_codegen.schema import (
    JsonSchemaError,
    ParameterSchemaSpec,
    ValueSchemaSpec,
    assert_supported_json_schema,
    parameter_schema_spec_to_json_schema,
    validate_args,
    value_schema_spec_to_json_schema,
)


def rejected(spec: Any, *, parameters: bool = False) -> list[str]:
    convert: Any = parameter_schema_spec_to_json_schema if parameters else value_schema_spec_to_json_schema
    with pytest.raises(JsonSchemaError) as info:
        convert(spec)
    assert info.value.code == "UNSUPPORTED_SCHEMA"
    return [str(v) for v in info.value.violations]


def test_parameter_spec_compiles_to_an_open_object() -> None:
    spec: ParameterSchemaSpec = {
        "path": {"type": "string", "description": "Absolute path.", "required": True},
        "limit": {"type": "integer", "default": 10},
    }
    schema = parameter_schema_spec_to_json_schema(spec)
    assert schema == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Absolute path."},
            "limit": {"type": "integer", "default": 10},
        },
        "required": ["path"],
    }
    assert "additionalProperties" not in schema
    assert_supported_json_schema(schema)


def test_required_omitted_when_none() -> None:
    assert parameter_schema_spec_to_json_schema({"a": {"type": "boolean"}}) == {
        "type": "object",
        "properties": {"a": {"type": "boolean"}},
    }
    assert parameter_schema_spec_to_json_schema({}) == {"type": "object", "properties": {}}


def test_nested_objects_declare_additional_properties_and_own_required() -> None:
    spec: ValueSchemaSpec = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "host": {"type": "string", "required": True},
            "port": {"type": "integer"},
            "tls": {
                "type": "object",
                "additionalProperties": True,
                "properties": {"ca": {"type": "string", "required": True}},
            },
        },
    }
    assert value_schema_spec_to_json_schema(spec) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "host": {"type": "string"},
            "port": {"type": "integer"},
            "tls": {
                "type": "object",
                "additionalProperties": True,
                "properties": {"ca": {"type": "string"}},
                "required": ["ca"],
            },
        },
        "required": ["host"],
    }
    assert rejected({"type": "object", "properties": {}}) == [
        "spec must declare additionalProperties: true or false (DSL objects are explicit)"
    ]
    assert rejected({"type": "object", "additionalProperties": "no"}) == ["spec.additionalProperties must be a boolean"]


def test_json_type_is_annotation_only() -> None:
    spec: ValueSchemaSpec = {
        "type": "json",
        "description": "anything",
        "title": "T",
        "default": [1],
        "examples": [{"a": 1}],
    }
    assert value_schema_spec_to_json_schema(spec) == {
        "description": "anything",
        "title": "T",
        "default": [1],
        "examples": [{"a": 1}],
    }


def test_one_of() -> None:
    spec: ValueSchemaSpec = {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "json"}}],
        "description": "d",
    }
    assert value_schema_spec_to_json_schema(spec) == {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {}}],
        "description": "d",
    }
    assert rejected({"oneOf": [{"type": "string"}]}) == ["spec.oneOf must be an array of at least two schema specs"]
    assert rejected({"oneOf": [{"type": "string"}, {"type": "null"}], "type": "string"}) == [
        "spec cannot declare both type and oneOf"
    ]


def test_enum_and_const_match_the_type() -> None:
    assert value_schema_spec_to_json_schema({"type": "integer", "enum": [1, 2], "const": 2}) == {
        "type": "integer",
        "enum": [1, 2],
        "const": 2,
    }
    assert rejected({"type": "number", "enum": ["a"]}) == ["spec.enum must be a non-empty array of number values"]
    assert rejected({"type": "integer", "const": 1.5}) == ["spec.const must be an integer value"]
    assert rejected({"type": "string", "enum": ["a"], "const": "b"}) == [
        "spec.const must be one of spec.enum when both are declared"
    ]
    assert rejected({"type": "boolean", "enum": [1]}) == ["spec.enum must be a non-empty array of boolean values"]


def test_required_rules() -> None:
    assert rejected({"a": {"type": "string", "required": False}}, parameters=True) == [
        "spec.a.required must be true (omit it for an optional property)"
    ]
    assert rejected({"a": {"type": "string", "required": "yes"}}, parameters=True) == [
        "spec.a.required must be true (omit it for an optional property)"
    ]
    assert rejected({"type": "array", "items": {"type": "string", "required": True}}) == [
        "spec.items.required is only allowed on object properties"
    ]
    assert rejected({"type": "string", "required": True}) == ["spec.required is only allowed on object properties"]


def test_unknown_keys_types_and_shapes() -> None:
    assert rejected({"type": "boolean", "pattern": "x"}) == [
        'spec.pattern is not a supported DSL key for type "boolean" '
        "(allowed: type, enum, const, description, title, default, examples)"
    ]
    assert rejected({"type": "date"}) == [
        "spec.type must be one of string/number/integer/boolean/null/array/object/json"
    ]
    assert rejected({"description": "x"}) == [
        "spec must declare a type (string/number/integer/boolean/null/array/object/json) or oneOf"
    ]
    assert rejected("string") == ["spec must be a schema spec object"]
    assert rejected({1: {"type": "string"}}, parameters=True) == [
        "spec must be a mapping of property name to property spec"
    ]
    assert rejected(
        {"type": "object", "additionalProperties": True, "properties": {"a": {"type": "string"}, "b": 3}}
    ) == ["spec.properties.b must be a schema spec object"]
    assert rejected({"type": "string", "enum": {"a"}}) == ["spec.enum must be a non-empty array of string values"]
    assert rejected({"type": "string", "description": 3, "default": float("nan")}) == [
        "spec.description must be a string",
        "spec.default annotation must be lossless JSON data",
    ]


def test_cyclic_specs_are_rejected() -> None:
    spec: dict[str, Any] = {"type": "array"}
    spec["items"] = spec
    assert rejected(spec) == ["spec.items is circular"]
    obj: dict[str, Any] = {"type": "object", "additionalProperties": True, "properties": {}}
    obj["properties"]["me"] = obj
    assert rejected(obj) == ["spec.properties.me is circular"]


def test_sibling_reuse_is_fine() -> None:
    shared: Any = {"type": "string"}
    schema = parameter_schema_spec_to_json_schema({"a": shared, "b": shared})
    assert schema["properties"] == {"a": {"type": "string"}, "b": {"type": "string"}}


GOOD = """
from dsh_codegen.schema import ParameterSchemaSpec, ValueSchemaSpec

params: ParameterSchemaSpec = {
    "path": {"type": "string", "description": "Absolute path.", "required": True},
    "mode": {"type": "string", "enum": ["a", "b"]},
    "name": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[a-z]", "format": "email"},
    "page": {"type": "integer", "minimum": 1, "exclusiveMaximum": 100, "multipleOf": 1},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5, "uniqueItems": True},
    "limit": {"type": "integer", "default": 10, "const": 3},
    "ratio": {"type": "number", "enum": [1, 2.5]},
    "flags": {"type": "array", "items": {"type": "boolean"}},
    "blob": {"type": "json"},
    "either": {"oneOf": [{"type": "string"}, {"type": "null"}]},
    "config": {
        "type": "object",
        "additionalProperties": False,
        "properties": {"host": {"type": "string", "required": True}},
    },
}
output: ValueSchemaSpec = {"type": "array", "items": {"type": "object", "additionalProperties": True}}
"""

BAD = {
    "unknown_type": 'spec: ValueSchemaSpec = {"type": "date"}',
    "object_without_additional": 'spec: ValueSchemaSpec = {"type": "object", "properties": {}}',
    "enum_of_wrong_type": 'spec: ValueSchemaSpec = {"type": "number", "enum": ["a"]}',
    "const_of_wrong_type": 'spec: ValueSchemaSpec = {"type": "string", "const": 1}',
    "required_false": 'spec: ParameterSchemaSpec = {"a": {"type": "string", "required": False}}',
    "required_in_items": ('spec: ValueSchemaSpec = {"type": "array", "items": {"type": "string", "required": True}}'),
    "unknown_key": 'spec: ValueSchemaSpec = {"type": "boolean", "pattern": "x"}',
    "constraint_of_wrong_type": 'spec: ValueSchemaSpec = {"type": "string", "maxLength": "64"}',
    "description_not_str": 'spec: ValueSchemaSpec = {"type": "string", "description": 3}',
}


def _spec_file(tmp_path: Path, name: str, body: str) -> Path:
    source = tmp_path / f"{name}.py"
    source.write_text(
        "from dsh_codegen.schema import ParameterSchemaSpec, ValueSchemaSpec\n" + textwrap.dedent(body) + "\n"
    )
    return source


@pytest.mark.once
def test_spec_literals_type_check(tmp_path: Path) -> None:
    good = _spec_file(tmp_path, "good", GOOD)
    bad = _spec_file(
        tmp_path, "bad", "\n".join(f"def case_{name}() -> None:\n    {line}" for name, line in BAD.items())
    )
    # One cold mypy run over both files (a start costs more than either check); errors inside the
    # package itself are the package's own check (make typecheck), not this test's.
    result = run_mypy(tmp_path, good, bad, options=["--follow-imports=silent", "--no-incremental"], cwd=REPO)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "good.py:" not in result.stdout, result.stdout
    reported = {line.split(":")[1] for line in result.stdout.splitlines() if line.startswith(str(bad))}
    expected = {str(2 + 2 * index + 1) for index in range(len(BAD))}  # the import line, then two lines per case
    assert reported == expected, (sorted(expected - reported), result.stdout)


def test_constraints_compile_to_json_schema_and_validate() -> None:
    spec = {
        "page": {"type": "integer", "minimum": 1, "required": True},
        "name": {"type": "string", "maxLength": 64, "pattern": "^[a-z]"},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.25},
        "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True, "maxItems": 3},
    }
    assert parameter_schema_spec_to_json_schema(spec)["properties"]["tags"] == {  # type: ignore[arg-type]
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "uniqueItems": True,
        "maxItems": 3,
    }
    assert [
        str(v) for v in validate_args(spec, {"page": 0, "name": "B" * 65, "ratio": 0.3, "tags": ["a", "a", ""]})
    ] == [
        '"page" must be >= 1',
        '"name" must be at most 64 characters',
        '"name" must match pattern "^[a-z]"',
        '"ratio" must be a multiple of 0.25',
        '"tags" must not contain duplicates',
        '"tags[2]" must be at least 1 character',
    ]
    assert validate_args(spec, {"page": 2, "name": "ok", "ratio": 0.75, "tags": ["a"]}) == []


def test_bad_constraints_are_rejected_with_spec_paths() -> None:
    assert rejected({"type": "string", "maxLength": -1, "pattern": "\\cA", "format": 3}) == [
        "spec.maxLength must be a non-negative integer",
        'spec.pattern "\\\\cA" control escapes (\\cX) are not supported',
        "spec.format must be a string",
    ]
    assert rejected({"type": "integer", "minimum": True, "multipleOf": 0}) == [
        "spec.minimum must be a finite number",
        "spec.multipleOf must be a number greater than 0",
    ]
    assert rejected({"type": "array", "uniqueItems": 1, "minItems": 1.5}) == [
        "spec.uniqueItems must be a boolean",
        "spec.minItems must be a non-negative integer",
    ]
