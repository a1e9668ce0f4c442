"""validate_args and the validator are total: no input makes them raise or run user code."""

from __future__ import annotations

import math
from collections import OrderedDict, UserDict
from decimal import Decimal
from enum import IntEnum
from typing import Any

import pytest

from dsh_codegen.schema import compile_validator, validate_args, validate_json_schema_value

SPEC: Any = {
    "path": {"type": "string", "required": True},
    "n": {"type": "integer"},
    "color": {"type": "string", "enum": ["red", "green"]},
    "blob": {"type": "json"},
    "items": {"type": "array", "items": {"type": "object", "additionalProperties": True}},
}


class Boom(Exception):
    pass


class Hostile:
    """Every hook raises: any call into it would surface as Boom."""

    def __eq__(self, other: object) -> bool:
        raise Boom("eq")

    def __hash__(self) -> int:
        raise Boom("hash")

    def __str__(self) -> str:
        raise Boom("str")

    def __repr__(self) -> str:
        raise Boom("repr")

    def __getattr__(self, name: str) -> Any:
        raise Boom(name)

    def __iter__(self) -> Any:
        raise Boom("iter")

    def __len__(self) -> int:
        raise Boom("len")


class CollidingKey:
    """A dict key whose hash equals that of "path" and whose __eq__ raises once armed."""

    armed = False

    def __hash__(self) -> int:
        return hash("path")

    def __eq__(self, other: object) -> bool:
        if CollidingKey.armed:
            raise Boom("eq")
        return self is other


def colliding(**extra: Any) -> dict[Any, Any]:
    value: dict[Any, Any] = {CollidingKey(): 1}
    value.update(extra)
    return value


class LyingClass:
    """``isinstance`` consults ``__class__``; this one raises when read (once armed)."""

    armed = False

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        if LyingClass.armed:
            raise Boom("__class__")
        return LyingClass


class RaisingDict(dict):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise Boom("iter")

    def items(self) -> Any:
        raise Boom("items")

    def __getitem__(self, key: object) -> Any:
        raise Boom("getitem")

    def keys(self) -> Any:
        raise Boom("keys")


class RaisingList(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        raise Boom("iter")

    def __len__(self) -> int:
        raise Boom("len")

    def __getitem__(self, index: object) -> Any:
        raise Boom("getitem")


class RaisingStr(str):
    def __eq__(self, other: object) -> bool:
        raise Boom("eq")

    def __hash__(self) -> int:
        raise Boom("hash")


class Color(IntEnum):
    RED = 1


def cyclic_list() -> list[Any]:
    a: list[Any] = [1]
    a.append(a)
    return a


def cyclic_dict() -> dict[str, Any]:
    d: dict[str, Any] = {"path": "p"}
    d["blob"] = {"again": d}
    return d


COLLIDING_WITH_PATH = colliding(path="p")


@pytest.fixture(autouse=True)
def arm_hostile_hooks() -> Any:
    CollidingKey.armed = LyingClass.armed = True
    yield
    CollidingKey.armed = LyingClass.armed = False


HOSTILE_ARGS = [
    Hostile(),
    RaisingDict(path="p"),
    RaisingList(),
    {"path": Hostile()},
    {"path": RaisingStr("p")},
    {"path": "p", "color": RaisingStr("red")},
    {"path": "p", "n": Color.RED},
    {"path": "p", "n": 1 << 20000},
    {"path": "p", "blob": 1 << 20000},
    {"path": "p", "n": Decimal(1)},
    {"path": "p", "n": math.nan},
    {"path": "p", "blob": [math.inf]},
    colliding(),
    COLLIDING_WITH_PATH,
    {"path": "p", 1: 2},
    OrderedDict(path="p"),
    UserDict(path="p"),
    {"path": "p", "blob": cyclic_list()},
    cyclic_dict(),
    {"path": "p", "items": [cyclic_dict()]},
    {"path": "p", "blob": {"k": Hostile()}},
    {"path": "p", "blob": (Hostile(),)},
    {"path": "p", "items": RaisingList()},
    {"path": "p", "items": [RaisingDict()]},
    {"path": "p", "extra": Hostile()},
    type,
    object(),
    lambda: None,
    LyingClass(),
    {"path": LyingClass()},
    {"path": "p", "n": LyingClass()},
    {"path": "p", "blob": [LyingClass()]},
    {"path": "p", "items": [LyingClass()]},
]


@pytest.mark.parametrize("args", HOSTILE_ARGS, ids=lambda a: type(a).__name__)
def test_validate_args_never_raises(args: Any) -> None:
    violations = validate_args(SPEC, args)
    assert violations, "hostile input must not validate"
    for violation in violations:
        assert isinstance(violation.message, str)
    validator = compile_validator({})
    assert validator.is_valid(args) is False
    assert validator.violations(args)


def test_hostile_messages() -> None:
    def texts(args: Any) -> list[str]:
        return [str(v) for v in validate_args(SPEC, args)]

    assert texts(RaisingDict(path="p")) == ['"arguments" must be a lossless JSON object']
    assert texts({"path": "p", "n": Color.RED}) == ['"n" must be a lossless JSON value']
    assert texts({"path": "p", "n": 1 << 20000}) == ['"n" must be a lossless JSON value']
    assert texts({"path": "p", "n": math.nan}) == ['"n" must be a finite JSON number']
    assert texts({"path": "p", "blob": cyclic_list()}) == ['"blob[1]" must be a lossless JSON value']
    assert texts(COLLIDING_WITH_PATH) == ['"arguments" must be a lossless JSON object']
    assert texts({"path": RaisingStr("p")}) == ['"path" must be a lossless JSON value']
    assert texts({"path": "p", "items": RaisingList()}) == ['"items" must be a dense lossless JSON array']


def test_cycles_under_typed_and_open_schemas() -> None:
    # reported where the cycle closes inside the unconstrained part of the value
    cyc = cyclic_dict()
    assert [str(v) for v in validate_json_schema_value({"type": "object"}, cyc)] == [
        '"value.blob.again.blob" must be a lossless JSON value'
    ]
    assert [str(v) for v in validate_json_schema_value({}, cyc)] == ['"value.blob.again" must be a lossless JSON value']
    a = cyclic_list()
    assert [str(v) for v in validate_json_schema_value({"type": "array"}, a)] == [
        '"value[1][1]" must be a lossless JSON value'
    ]


def test_shared_references_are_fine() -> None:
    shared = {"k": [1, 2]}
    value = {"path": "p", "blob": [shared, shared, {"again": shared}]}
    assert validate_args(SPEC, value) == []


def test_hostile_schema_values_are_rejected_not_raised() -> None:
    from dsh_codegen.schema import JsonSchemaError, assert_supported_json_schema

    for schema in (
        {"type": "integer", "enum": [LyingClass()]},
        {"type": "string", "const": LyingClass()},
        {"type": "object", "properties": LyingClass()},
        {"type": "object", "required": [LyingClass()]},
        {"description": LyingClass(), "default": LyingClass()},
        {"type": LyingClass()},
        LyingClass(),
    ):
        with pytest.raises(JsonSchemaError):
            assert_supported_json_schema(schema)
    from dsh_codegen.schema import parameter_schema_spec_to_json_schema, value_schema_spec_to_json_schema

    for spec in ({"type": "integer", "enum": [LyingClass()]}, {"type": "json", "default": LyingClass()}, LyingClass()):
        with pytest.raises(JsonSchemaError):
            value_schema_spec_to_json_schema(spec)  # type: ignore[arg-type]
    with pytest.raises(JsonSchemaError):
        parameter_schema_spec_to_json_schema({"a": LyingClass()})  # type: ignore[dict-item]


class HostileKey:
    """A dict key that hashes like "type" and raises from __eq__ once armed."""

    def __hash__(self) -> int:
        return hash("type")

    def __eq__(self, other: object) -> bool:
        if CollidingKey.armed:
            raise Boom("eq")
        return self is other


SCHEMA_WITH_HOSTILE_KEY = {HostileKey(): "x", "description": "d"}
SPEC_WITH_HOSTILE_KEY = {HostileKey(): "x", "type": "string"}


def test_hostile_schema_keys_are_rejected_not_raised() -> None:
    from dsh_codegen.schema import JsonSchemaError, assert_supported_json_schema, value_schema_spec_to_json_schema

    with pytest.raises(JsonSchemaError) as info:
        assert_supported_json_schema({"type": "object", "properties": {"a": SCHEMA_WITH_HOSTILE_KEY}})
    assert [str(v) for v in info.value.violations] == ["schema.properties.a must be a schema object"]
    with pytest.raises(JsonSchemaError) as spec_info:
        value_schema_spec_to_json_schema(SPEC_WITH_HOSTILE_KEY)  # type: ignore[arg-type]
    assert [str(v) for v in spec_info.value.violations] == ["spec must be a schema spec object"]


# A dialect program (maxLength) whose root object has no dependentRequired, propertyNames, enum or
# const: the compiled walk tests its keys in the member loop itself, before any lookup.
DIALECT_OBJECT = {
    "type": "object",
    "properties": {"path": {"type": "string", "maxLength": 10}, "n": {"type": "integer"}},
    "required": ["path"],
}


@pytest.mark.parametrize(
    "args",
    [*[a for a in HOSTILE_ARGS if isinstance(a, dict)], {"path": "p", CollidingKey(): 1}, {"n": 1, 2: 3}],
    ids=lambda a: type(a).__name__,
)
def test_a_dialect_object_never_runs_a_value_keys_code(args: Any) -> None:
    validator = compile_validator(DIALECT_OBJECT)
    assert validator.is_valid(args) is False
    assert validator.violations(args)
    assert compile_validator({**DIALECT_OBJECT, "additionalProperties": False}).is_valid(args) is False
