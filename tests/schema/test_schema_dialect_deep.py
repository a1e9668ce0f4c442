"""Recursive dialect schemas and 100,000-deep values, on the running twin (no recursion anywhere)."""

from __future__ import annotations

import sys
from typing import Any

from dsh_codegen.schema import assert_supported_json_schema, compile_validator

DEPTH = 100_000

# pydantic's shape for ``class Node(BaseModel): name: str; child: Optional[Node] = None``
NODE = {
    "$defs": {
        "Node": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}], "default": None},
            },
            "required": ["name"],
            "title": "Node",
        }
    },
    "$ref": "#/$defs/Node",
}


def chain(depth: int, leaf: Any = None) -> dict[str, Any]:
    root: dict[str, Any] = {"name": "n0", "child": None}
    here = root
    for level in range(1, depth):
        nxt: dict[str, Any] = {"name": f"n{level}", "child": None}
        here["child"] = nxt
        here = nxt
    here["child"] = leaf
    return root


def test_a_100000_deep_pydantic_chain_validates() -> None:
    assert sys.getrecursionlimit() <= 10_000
    validator = compile_validator(NODE)
    value = chain(DEPTH)
    assert validator.is_valid(value)
    assert validator.violations(value) == []


def test_a_100000_deep_chain_reports_its_deepest_error_once() -> None:
    validator = compile_validator(NODE)
    value = chain(DEPTH, leaf={"name": 7})
    assert not validator.is_valid(value)
    (violation,) = validator.violations(value)
    assert violation.path == ("child",) * DEPTH + ("name",)
    assert violation.message.endswith('.child.name" must be a string')


def test_a_100000_deep_array_schema_and_value() -> None:
    schema: dict[str, Any] = {"type": "integer", "minimum": 0}
    for _ in range(DEPTH):
        schema = {"type": "array", "items": schema, "maxItems": 1}
    assert_supported_json_schema(schema)
    validator = compile_validator(schema)
    value: Any = 3
    for _ in range(DEPTH):
        value = [value]
    assert validator.is_valid(value)
    bad: Any = -1
    for _ in range(DEPTH):
        bad = [bad]
    assert not validator.is_valid(bad)
    (violation,) = validator.violations(bad)
    assert violation.message.endswith('[0]" must be >= 0')


def test_a_deep_anyof_recursion_through_the_root() -> None:
    schema = {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}]}
    validator = compile_validator(schema)
    value: Any = 1
    for _ in range(DEPTH):
        value = [value, 2]
    assert validator.is_valid(value)
    bad: Any = "x"
    for _ in range(DEPTH):
        bad = [1, bad]
    assert not validator.is_valid(bad)
    assert validator.violations(bad)


def test_cyclic_values_under_recursive_schemas_fail_instead_of_looping() -> None:
    validator = compile_validator(NODE)
    loop: dict[str, Any] = {"name": "a"}
    loop["child"] = loop
    assert not validator.is_valid(loop)
    assert [v.keyword for v in validator.violations(loop)] == ["lossless"]
    tree = compile_validator({"type": "array", "items": {"$ref": "#"}})
    cycle: list[Any] = []
    cycle.append(cycle)
    assert not tree.is_valid(cycle)
    assert tree.violations(cycle)
    shared: list[Any] = [[]]
    assert tree.is_valid([shared, shared])  # a shared (not cyclic) reference is fine


def test_messages_of_optional_models_point_inside_the_model() -> None:
    validator = compile_validator(NODE)
    assert [str(v) for v in validator.violations({"name": "a", "child": {"child": 3}})] == [
        'missing required property "value.child.name"',
        '"value.child.child" must be an object or null',
    ]
