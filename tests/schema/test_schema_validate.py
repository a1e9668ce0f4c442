"""Validation semantics and messages (guarantees 92-98 and 111, docs/guarantees.md) through the selected twin."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import pytest

import dsh_codegen
from dsh_codegen.schema import (
    ToolArgsError,
    Violation,
    compile_validator,
    validate_args,
    validate_json_schema_value,
)


def texts(schema: Any, value: Any, path: str = "value") -> list[str]:
    validator = compile_validator(schema)
    found = validator.violations(value, path)
    assert validator.is_valid(value) is (found == [])
    assert [v.message for v in found] == [str(v) for v in found]
    return [v.message for v in found]


def args_texts(spec: Any, args: Any) -> list[str]:
    return [str(v) for v in validate_args(spec, args)]


S = {"type": "string"}
N = {"type": "number"}
I = {"type": "integer"}  # noqa: E741 (one letter per type, as S, N, B, Z)
B = {"type": "boolean"}
Z = {"type": "null"}


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (S, 1, ['"value" must be a string']),
        (N, "1", ['"value" must be a number']),
        (N, True, ['"value" must be a number']),
        (I, False, ['"value" must be an integer']),
        (I, 1.5, ['"value" must be an integer']),
        (B, 0, ['"value" must be a boolean']),
        (Z, 0, ['"value" must be null']),
        ({"type": "object"}, [], ['"value" must be an object']),
        ({"type": "array"}, {}, ['"value" must be an array']),
        (N, math.nan, ['"value" must be a finite JSON number']),
        (N, math.inf, ['"value" must be a finite JSON number']),
        (I, -math.inf, ['"value" must be a finite JSON number']),
        (N, -0.0, ['"value" must be a finite JSON number']),
        (I, -0.0, ['"value" must be a finite JSON number']),
        ({"type": "string", "enum": ["red", "green"]}, "blue", ['"value" must be one of ["red","green"]']),
        ({"type": "string", "const": "a"}, "b", ['"value" must be "a"']),
        ({"type": "number", "enum": [1, 2.5]}, 3, ['"value" must be one of [1,2.5]']),
        ({"type": "string", "enum": ["é", "\ud800"]}, "x", ['"value" must be one of ["é","\\ud800"]']),
        (
            {"oneOf": [{"type": "number"}, {"type": "integer"}]},
            3,
            ['"value" must match exactly one oneOf branch (matched 2)'],
        ),
        (
            {"oneOf": [{"type": "string"}, {"type": "null"}]},
            3,
            ['"value" must match exactly one oneOf branch (matched 0)'],
        ),
        ({}, math.nan, ['"value" must be a lossless JSON value']),
        ({}, {1: 2}, ['"value" must be a lossless JSON object']),
        ({}, OrderedDict(), ['"value" must be a lossless JSON object']),
        ({"type": "object"}, OrderedDict(), ['"value" must be a lossless JSON object']),
        ({"type": "object"}, {1: "x"}, ['"value" must be a lossless JSON object']),
        ({}, type("L", (list,), {})(), ['"value" must be a dense lossless JSON array']),
        ({"type": "array"}, type("L", (list,), {})(), ['"value" must be a dense lossless JSON array']),
        ({}, {1, 2}, ['"value" must be a lossless JSON value']),
        ({}, [1, {"a": [object()]}], ['"value[1].a[0]" must be a lossless JSON value']),
        ({"type": "array"}, [1, math.inf], ['"value[1]" must be a lossless JSON value']),
        ({"type": "object"}, {"x": {"y": -0.0}}, ['"value.x.y" must be a lossless JSON value']),
    ],
)
def test_messages(schema: Any, value: Any, expected: list[str]) -> None:
    assert texts(schema, value) == expected


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (I, 1.0),
        (I, 10**40),
        (N, 10**40),
        (N, 1),
        ({"type": "integer", "enum": [1, 2]}, 1.0),
        ({"type": "number", "const": 1}, 1.0),
        ({"type": "number", "enum": [1.0]}, 1),
        ({"type": "boolean", "enum": [True]}, True),
        ({"type": "null", "const": None}, None),
        ({}, {"a": [1, None, {"b": "c"}], "d": (1, 2)}),
        ({"type": "array", "items": S}, ("a", "b")),
        ({"type": "object", "properties": {"a": S}}, {"b": 1, "a": "x"}),
    ],
)
def test_accepts(schema: Any, value: Any) -> None:
    assert texts(schema, value) == []


def test_bool_is_never_a_number_even_in_an_enum() -> None:
    assert texts({"type": "integer", "enum": [1]}, True) == ['"value" must be an integer']
    assert texts({"type": "boolean", "enum": [True]}, 1) == ['"value" must be a boolean']


def test_violation_is_frozen_with_path_and_keyword() -> None:
    (v,) = compile_validator({"type": "object", "properties": {"a": {"type": "array", "items": S}}}).violations(
        {"a": ["x", 2]}
    )
    assert v == Violation(("a", 1), "type", '"value.a[1]" must be a string')
    with pytest.raises(AttributeError):
        v.message = "x"  # type: ignore[misc]


def test_path_rendering_and_custom_root() -> None:
    schema = {"type": "object", "properties": {"a b": {"type": "object", "properties": {"$c_1": S}}}}
    assert texts(schema, {"a b": {"$c_1": 2}}) == ['"value[\\"a b\\"].$c_1" must be a string']
    assert texts(schema, {"a b": {"$c_1": 2}}, path="output") == ['"output[\\"a b\\"].$c_1" must be a string']
    assert texts(S, 1, path="out") == ['"out" must be a string']


EDIT_SPEC: Any = {
    "path": {"type": "string", "required": True},
    "edits": {
        "type": "array",
        "required": True,
        "items": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"old": {"type": "string", "required": True}, "new": {"type": "string", "required": True}},
        },
    },
    "config": {
        "type": "object",
        "additionalProperties": True,
        "properties": {"host": {"type": "string", "required": True}, "port": {"type": "integer"}},
    },
    "servers": {
        "type": "array",
        "items": {
            "type": "object",
            "additionalProperties": True,
            "properties": {"host": {"type": "string", "required": True}},
        },
    },
    "tags": {"type": "array"},
    "bag": {"type": "object", "additionalProperties": True},
    "color": {"type": "string", "enum": ["red", "green"]},
}


def test_validate_args_root_and_nested_paths() -> None:
    for bad in (None, "x", [], 3, (1,)):
        assert args_texts(EDIT_SPEC, bad) == ['"arguments" must be an object']
    assert args_texts(EDIT_SPEC, {"edits": []}) == ['missing required property "path"']
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [], "config": {}}) == [
        'missing required property "config.host"'
    ]
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [], "servers": [{"host": "a"}, {}]}) == [
        'missing required property "servers[1].host"'
    ]
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [{"old": "a", "new": 1}]}) == [
        '"edits[0].new" must be a string'
    ]
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [], "config": {"host": 1}}) == [
        '"config.host" must be a string'
    ]
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [], "color": "blue"}) == [
        '"color" must be one of ["red","green"]'
    ]


def test_container_only_checks() -> None:
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [], "bag": 1}) == ['"bag" must be an object']
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [], "tags": "x"}) == ['"tags" must be an array']
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [], "tags": [1, "x", None, {"a": []}]}) == []
    assert args_texts({"tags": {"type": "array", "items": {"type": "string"}}}, {"tags": ["a", 1]}) == [
        '"tags[1]" must be a string'
    ]


def test_open_root_and_closed_objects() -> None:
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [], "extra": 1}) == []
    assert args_texts(EDIT_SPEC, {"path": "p", "edits": [{"old": "a", "new": "b", "x": 1}]}) == [
        '"edits[0].x" is not a declared property (additionalProperties: false)'
    ]
    closed_empty = {"opts": {"type": "object", "additionalProperties": False}}
    assert args_texts(closed_empty, {"opts": {}}) == []
    assert args_texts(closed_empty, {"opts": {"b": 1}}) == [
        '"opts.b" is not a declared property (additionalProperties: false)'
    ]


def test_defaults_are_never_applied() -> None:
    spec: Any = {"n": {"type": "integer", "default": 3}}
    args: dict[str, Any] = {}
    assert validate_args(spec, args) == []
    assert args == {}


def test_violation_order() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "a": {"type": "string"},
            "b": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["y"],
            },
            "c": {"type": "array", "items": {"type": "boolean"}},
            "r1": {"type": "null"},
            "r2": {"type": "null"},
        },
        "required": ["r2", "r1"],
    }
    value = {"zz": 1, "c": [True, 1, 0], "b": {"q": 1, "x": "s"}, "a": 1, "yy": 2}
    assert texts(schema, value) == [
        'missing required property "value.r2"',
        'missing required property "value.r1"',
        '"value.a" must be a string',
        'missing required property "value.b.y"',
        '"value.b.x" must be an integer',
        '"value.b.q" is not a declared property (additionalProperties: false)',
        '"value.c[1]" must be a boolean',
        '"value.c[2]" must be a boolean',
        '"value.zz" is not a declared property (additionalProperties: false)',
        '"value.yy" is not a declared property (additionalProperties: false)',
    ]


def test_tool_args_error() -> None:
    violations = validate_args(EDIT_SPEC, {"edits": 1})
    error = ToolArgsError(violations)
    assert error.code == "INVALID_ARGS"
    assert error.name == "ToolArgsError"
    assert str(error) == 'invalid arguments: missing required property "path"; "edits" must be an array'
    assert error.violations == tuple(violations)


def test_validate_json_schema_value_one_shot() -> None:
    assert [str(v) for v in validate_json_schema_value({"type": "string"}, 1)] == ['"value" must be a string']
    assert [str(v) for v in validate_json_schema_value({"type": "string"}, 1, "out")] == ['"out" must be a string']


def test_raw_schema_in_validate_args() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert args_texts(schema, {}) == ['missing required property "a"']
    assert args_texts({}, {"anything": [1]}) == []
    assert args_texts({}, [1]) == ['"arguments" must be an object']


def test_frozen_containers_are_objects_and_arrays() -> None:
    snapshot = getattr(dsh_codegen, "snapshot_json", None)
    if snapshot is None:
        pytest.skip("dsh_codegen.snapshot_json has not landed yet")
    frozen = snapshot({"path": "p", "edits": [{"old": "a", "new": "b"}], "tags": ["x", {"k": [1]}]})
    assert validate_args(EDIT_SPEC, frozen) == []
    bad = snapshot({"edits": [{"old": 1, "new": "b"}]})
    assert args_texts(EDIT_SPEC, bad) == ['missing required property "path"', '"edits[0].old" must be a string']
    assert compile_validator({}).is_valid(frozen)
