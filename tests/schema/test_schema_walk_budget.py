"""One walk budget for validation, as for snapshot_json (issue 35).

A value may share references (legal JSON input): a list holding one list
twice, nested 23 levels deep, describes 2**24 values. Before, ``is_valid`` walked
all of them (27 levels: past 30 s; here: seconds, then ``True``); the
validators now count the values they reach (the root, and each member or item
of every container walked) and stop past the JSON layer's budget (10,000,000),
as ``snapshot_json`` does: such a value is not valid, and its one violation says
why. No timing is asserted. The pure twin walks ten million values in seconds,
so only the lossless walk and the arguments' report run in both passes; the
other walks are checked on the compiled twin (``once``).
"""

from __future__ import annotations

from typing import Any

import pytest

from dsh_codegen.json import JsonBudgetError, snapshot_json
from dsh_codegen.schema import compile_validator


def _shared(levels: int) -> Any:
    value: Any = []
    for _ in range(levels):
        value = [value, value]
    return value


#: snapshot_json's default max_nodes, the budget every walk over a caller's value shares.
DEFAULT_MAX_NODES = 10_000_000
HUGE = _shared(23)  # 2**24 - 1 values as a tree: past the budget
MESSAGE = f"is too large to validate: more than {DEFAULT_MAX_NODES} values visited (max_nodes={DEFAULT_MAX_NODES})"


@pytest.mark.once
def test_the_value_is_past_the_json_layers_budget_too() -> None:
    with pytest.raises(JsonBudgetError):
        snapshot_json(HUGE)


@pytest.mark.parametrize(
    "schema",
    [
        {},  # the lossless walk
        pytest.param({"type": "array", "items": {"type": "array"}}, marks=pytest.mark.once),  # the structural walk
    ],
)
def test_a_value_past_the_budget_is_not_valid_and_says_why(schema: Any) -> None:
    validator = compile_validator(schema)
    assert validator.is_valid(HUGE) is False
    [violation] = validator.violations(HUGE)
    assert (violation.path, violation.keyword, violation.message) == ((), "budget", f'"value" {MESSAGE}')


def test_arguments_past_the_budget_are_one_violation() -> None:
    validator = compile_validator({"type": "object", "properties": {"a": {}}})
    [violation] = validator.validate_args({"a": HUGE})
    assert (violation.path, violation.keyword, violation.message) == ((), "budget", f'"arguments" {MESSAGE}')


@pytest.mark.once
def test_the_dialect_walk_has_the_same_budget() -> None:
    recursive = {"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}
    validator = compile_validator(recursive)
    assert validator.is_valid(HUGE) is False
    assert [v.keyword for v in validator.violations(HUGE)] == ["budget"]


@pytest.mark.once
def test_a_shared_value_within_the_budget_is_still_valid() -> None:
    within = _shared(20)  # 2**21 - 1 values
    assert compile_validator({"type": "array"}).is_valid(within) is True
    assert compile_validator({}).violations(within) == []
