"""The compiled twin's dialect report (a C scan over the program's table) against the pure walk.

Every violation code of the dialect through one value, the hand-over to the
Python walk for values only it classifies (not plain JSON, cycles), and the
house-style texts the scan renders from its per-node cache.
"""

from __future__ import annotations

from typing import Any

import pytest
from _shared_helpers import compiled_twin

from dsh_codegen.schema import _validator_py
from dsh_codegen.schema._validator import compile_program
from dsh_codegen.schema._program import Violation

_schema_c = compiled_twin("_schema_c")

pytestmark = [
    pytest.mark.once,
    pytest.mark.skipif(_schema_c is None, reason="the compiled twin is not built"),
]

DIALECT = "https://json-schema.org/draft/2020-12/schema"

EVERY_CODE: dict[str, Any] = {
    "$schema": DIALECT,
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 0, "multipleOf": 2},
        "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "s": {"type": "string", "minLength": 3, "maxLength": 1, "pattern": "^a"},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 4,
            "maxItems": 1,
            "uniqueItems": True,
            "contains": {"const": "z"},
        },
        "o": {
            "type": "object",
            "properties": {"a": {}},
            "additionalProperties": False,
            "minProperties": 3,
            "maxProperties": 0,
            "propertyNames": {"maxLength": 1},
            "dependentRequired": {"a": ["b"]},
        },
        "e": {"enum": [1, "two"]},
        "c": {"const": {"k": [1]}},
        "u": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "u2": {"anyOf": [{"type": "string", "minLength": 5}, {"type": "string", "pattern": "^z"}]},
        "w": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "f": False,
        "t": {"type": ["string", "null"]},
        "opt": {"anyOf": [{"$ref": "#/$defs/m"}, {"type": "null"}]},
        "all": {"allOf": [{"type": "object", "required": ["p"]}, {"required": ["q"]}]},
        "rest": {"type": "object", "additionalProperties": {"type": "integer", "maximum": 3}},
    },
    "required": ["n", "missing"],
    "$defs": {"m": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
}

EVERY_VALUE: dict[str, Any] = {
    "n": -3,
    "x": 5,
    "s": "bb",
    "tags": ["a", "a", 3],
    "o": {"a": 1, "long": 2},
    "e": 3,
    "c": {"k": [2]},
    "u": [1],
    "u2": "ab",
    "w": 2,
    "f": 1,
    "t": 1,
    "opt": {},
    "all": {},
    "rest": {"q": 1, "r": 9, "z": "no"},
}


def both(schema: Any, value: Any, root: str = "value") -> list[Violation]:
    """The compiled twin's violations, checked equal to the pure twin's (both roots)."""
    program = compile_program(schema)
    assert program.dialect
    pure = _validator_py.CompiledValidator(program)
    compiled = _schema_c.CompiledValidator(program)
    found: list[Violation] = compiled.violations(value, root)
    assert found == pure.violations(value, root)
    assert compiled.validate_args(value) == pure.validate_args(value)
    return found


def test_every_dialect_code_reports_like_the_pure_walk() -> None:
    found = both(EVERY_CODE, EVERY_VALUE)
    keywords = {v.keyword for v in found}
    assert keywords >= {
        "required",
        "minimum",
        "multipleOf",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minContains",
        "type",
        "minProperties",
        "maxProperties",
        "propertyNames",
        "dependentRequired",
        "additionalProperties",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "false",
        "maximum",
    }
    messages = [v.message for v in found]
    # the object's own missing names first, then its members in declaration order
    assert messages[:2] == ['missing required property "value.missing"', '"value.n" must be >= 1']
    for text in (
        '"value.s" must be at most 1 character',
        '"value.s" must match pattern "^a"',
        '"value.tags" must not contain duplicates',
        '"value.tags[2]" must be a string',
        'missing required property "value.o.b" (required when "a" is present)',
        '"value.o.long" is not an allowed property name (propertyNames)',
        '"value.u" must be a string or an integer',
        '"value.w" must match exactly one oneOf branch (matched 2)',
        '"value.t" must be a string or null',
        'missing required property "value.opt.id"',
        '"value.rest.r" must be <= 3',
    ):
        assert text in messages, text


def test_unrooted_paths_and_a_custom_root() -> None:
    assert both(EVERY_CODE, EVERY_VALUE, "args.x y")
    program = compile_program(EVERY_CODE)
    args = _schema_c.CompiledValidator(program).validate_args(EVERY_VALUE)
    assert 'missing required property "missing"' in [v.message for v in args]
    assert '"o.long" is not a declared property (additionalProperties: false)' in [v.message for v in args]


def test_the_same_validator_renders_the_same_texts_twice() -> None:
    program = compile_program(EVERY_CODE)
    compiled = _schema_c.CompiledValidator(program)
    first = compiled.violations(EVERY_VALUE)
    assert compiled.violations(EVERY_VALUE) == first  # the second call renders from the per-node cache


@pytest.mark.parametrize(
    "value",
    [
        {"a": float("nan"), "b": {1: 2}, "c": {3}},
        {"a": 10**400, "b": [float("inf")]},
        {"a": -1, "b": {"k": (1, {2: 3})}},
    ],
)
def test_values_only_python_classifies_hand_over_to_the_python_walk(value: Any) -> None:
    schema = {"$schema": DIALECT, "type": "object", "properties": {"a": {"type": "number", "minimum": 0}}}
    assert both(schema, value)


class _LikeA:
    """A key that hashes as ``"a"`` and would answer ``==`` for it: the scan must not ask."""

    asked = 0

    def __hash__(self) -> int:
        return hash("a")

    def __eq__(self, other: object) -> bool:
        if other == "a":
            _LikeA.asked += 1
        return other == "a"


@pytest.mark.parametrize(
    "value",
    [
        {1: "x"},
        {"a": -1, 2: "x"},
        {2: "x", "a": -1},
        {"z": 1, 3: 4, "a": -1},
        {"a": -1, "z": "x", 4: 5},
    ],
)
def test_a_key_that_is_not_a_str_hands_over_wherever_the_member_loop_meets_it(value: Any) -> None:
    # the scan tests an object's keys in its member loop; every place it can meet one
    schema = {"$schema": DIALECT, "type": "object", "properties": {"a": {"type": "number", "minimum": 0}}}
    assert both(schema, value)


def test_the_scan_looks_no_name_up_in_an_object_with_a_key_of_another_type() -> None:
    schema = {"$schema": DIALECT, "type": "object", "properties": {"b": {}, "a": {"type": "integer"}}}
    program = compile_program(schema)
    compiled = _schema_c.CompiledValidator(program)
    _LikeA.asked = 0
    found = compiled.violations({"z": 1, _LikeA(): 2})
    assert _LikeA.asked == 0  # handed to the Python walk before any lookup
    assert found == _validator_py.CompiledValidator(program).violations({"z": 1, _LikeA(): 2})
    assert [v.keyword for v in found] == ["lossless"]


def test_a_cyclic_value_under_a_recursive_schema_reports_like_the_pure_walk() -> None:
    schema = {
        "$schema": DIALECT,
        "$defs": {"t": {"type": "object", "properties": {"kid": {"$ref": "#/$defs/t"}, "n": {"type": "integer"}}}},
        "$ref": "#/$defs/t",
    }
    value: dict[str, Any] = {"n": "x"}
    value["kid"] = value
    found = both(schema, value)
    assert '"value.n" must be an integer' in [v.message for v in found]
