"""The work budget of every walk: ``max_nodes`` values, ``max_chars`` characters (issue 12).

Shared references are legal input, so a value can describe far more values than
it holds (``x = [x, x]`` nested n times describes 2**n). Every walk counts the
values it reaches and the writers count the text they write; past the budget
the walk stops with ``JsonBudgetError`` naming the budget and where it stopped.
Runs against the active twin (the suite runs twice); the differential test at
the end compares both twins directly.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from _shared_helpers import require_compiled_twin

from dsh_codegen.json import (
    JsonBudgetError,
    LosslessJsonError,
    dump_canonical_json,
    is_json_value,
    render_json_pretty,
    snapshot_json,
)
from dsh_codegen.json import _json_py
from dsh_codegen.json._errors import DEFAULT_MAX_CHARS, DEFAULT_MAX_NODES
from json_strategies import lossless_values


def _doubling(levels: int) -> list[Any]:
    value: list[Any] = [0]
    for _ in range(levels):
        value = [value, value]
    return value


def _nodes(value: Any) -> int:
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def test_defaults_are_generous_and_documented() -> None:
    assert DEFAULT_MAX_NODES == 10_000_000
    assert DEFAULT_MAX_CHARS == 1 << 28


def test_the_issue_value_stops_at_the_budget() -> None:
    # 27 levels describe 2**28 - 1 values; the walk stops after max_nodes of them.
    value = _doubling(27)
    for walk in (snapshot_json, render_json_pretty, dump_canonical_json):
        with pytest.raises(JsonBudgetError) as info:
            walk(value, max_nodes=100_000)
        error = info.value
        assert error.budget == "max_nodes" and error.limit == 100_000
        assert str(error).startswith('JSON walk budget exceeded at "value[')
        assert str(error).endswith("more than 100000 values visited (max_nodes=100000)")
        assert not isinstance(error, LosslessJsonError) and isinstance(error, ValueError)
    assert is_json_value(value, max_nodes=100_000) is False


@pytest.mark.once
def test_the_issue_value_stops_at_the_default_budget() -> None:
    # The default (ten million values) on the compiled twin: well under a second. (The pure
    # twin takes about as long per value as an interpreted loop: the test above uses less.)
    twin = _compiled()
    value = _doubling(27)
    with pytest.raises(JsonBudgetError) as info:
        twin.snapshot_json(value)
    assert info.value.limit == DEFAULT_MAX_NODES
    assert str(info.value).endswith("more than 10000000 values visited (max_nodes=10000000)")
    assert twin.is_json_value(value) is False


@pytest.mark.parametrize("walk", ["snapshot", "check", "render", "canonical"])
def test_max_nodes_counts_every_value_once(walk: str) -> None:
    value = {"a": [1, 2, {"b": None}], "c": "x"}  # 7 values: root, a, 1, 2, {b}, None, c
    assert _nodes(value) == 7

    def run(limit: int | None) -> Any:
        if walk == "snapshot":
            return snapshot_json(value, max_nodes=limit)
        if walk == "check":
            return is_json_value(value, max_nodes=limit)
        if walk == "render":
            return render_json_pretty(value, max_nodes=limit)
        return dump_canonical_json(value, max_nodes=limit)

    assert run(7) is not False and run(None) is not False
    if walk == "check":
        assert run(6) is False
        return
    with pytest.raises(JsonBudgetError) as info:
        run(6)
    # The seventh value reached (walk order: members in order, depth first) is "c".
    assert info.value.path == ("c",) and info.value.path_text == "value.c"
    assert str(info.value) == ('JSON walk budget exceeded at "value.c": more than 6 values visited (max_nodes=6)')
    with pytest.raises(JsonBudgetError) as info:
        run(0)
    assert info.value.path == ()


def test_a_frozen_value_reused_by_the_snapshot_counts_once() -> None:
    frozen = snapshot_json([[1, 2, 3], [4, 5, 6]])
    assert snapshot_json(frozen, max_nodes=1) is frozen
    assert snapshot_json({"a": frozen}, max_nodes=2) == {"a": frozen}
    with pytest.raises(JsonBudgetError):
        snapshot_json({"a": frozen}, max_nodes=2, freeze=False)


def test_max_chars_stops_the_writers_at_the_value_that_crosses_it() -> None:
    value = ["x" * 10, ["y" * 10], "z"]
    text = render_json_pretty(value)
    assert render_json_pretty(value, max_chars=len(text)) == text
    with pytest.raises(JsonBudgetError) as info:
        render_json_pretty(value, max_chars=len(text) - 1)
    # The last value ends before the closing bracket: only the final check sees it.
    assert info.value.path == () and info.value.budget == "max_chars"
    assert str(info.value) == (
        f'JSON walk budget exceeded at "value": more than {len(text) - 1} characters written '
        f"(max_chars={len(text) - 1})"
    )
    with pytest.raises(JsonBudgetError) as info:
        render_json_pretty(value, max_chars=10)
    assert info.value.path == (0,)
    with pytest.raises(JsonBudgetError) as info:
        dump_canonical_json(value, max_chars=17)  # ["xxxxxxxxxx",[  is 16
    assert info.value.path == (1, 0)
    with pytest.raises(JsonBudgetError) as info:
        dump_canonical_json("long string", max_chars=3)
    assert info.value.path == ()


def test_shared_strings_cannot_write_unbounded_text() -> None:
    chunk = "a" * 1_000_000
    value = [chunk] * 1000  # a thousand values, a billion characters of text
    with pytest.raises(JsonBudgetError) as info:
        dump_canonical_json(value, max_chars=5_000_000)
    assert info.value.path == (4,)
    assert snapshot_json(value) == value  # the copy shares the strings: cheap, allowed


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
@pytest.mark.parametrize("option", ["max_nodes", "max_chars"])
def test_bad_budget_options_are_rejected(option: str, bad: Any) -> None:
    expected: type[Exception] = ValueError if bad == -1 and type(bad) is int else TypeError
    with pytest.raises(expected) as info:
        render_json_pretty([1], **{option: bad})
    if expected is ValueError:
        assert str(info.value) == f"{option} must be >= 0, got -1"
    else:
        assert str(info.value) == f"{option} must be an int or None, not {type(bad).__qualname__}"
    if option == "max_nodes":
        with pytest.raises(expected):
            snapshot_json([1], max_nodes=bad)
        with pytest.raises(expected):
            is_json_value([1], max_nodes=bad)


def test_budget_errors_pickle() -> None:
    import pickle

    error = JsonBudgetError("max_nodes", 5, ("a", 0))
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is JsonBudgetError and str(again) == str(error) and again.path == ("a", 0)


# --- both twins -------------------------------------------------------------------------------


def _compiled() -> ModuleType:
    return require_compiled_twin("_json_c")


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as exc:
        return ("error", type(exc), str(exc), getattr(exc, "path", None))


@pytest.mark.once
@settings(max_examples=200)
@given(value=lossless_values, nodes=st.integers(0, 40), chars=st.integers(0, 400))
def test_twins_stop_at_the_same_place(value: Any, nodes: int, chars: int) -> None:
    compiled = _compiled()
    for name, kwargs in (
        ("snapshot_json", {"max_nodes": nodes}),
        ("is_json_value", {"max_nodes": nodes}),
        ("render_json_pretty", {"max_nodes": nodes, "max_chars": chars}),
        ("dump_canonical_json", {"max_nodes": nodes, "max_chars": chars}),
        ("dump_canonical_json", {"max_nodes": nodes, "max_chars": chars, "sort_keys": False}),
    ):
        c = _outcome(getattr(compiled, name), value, **kwargs)
        p = _outcome(getattr(_json_py, name), value, **kwargs)
        assert c == p, (name, kwargs)


def test_a_large_copy_stops_where_the_writer_stops() -> None:
    # Past 100,000 values a copy first checks the whole value against its budget (building
    # millions of containers is slow); the error is the one the copy itself would raise.
    value = {"rows": [[i, {"v": [i]}] for i in range(40_000)], "tail": [1, 2, 3]}
    limit = _nodes(value) - 2
    with pytest.raises(JsonBudgetError) as copied:
        snapshot_json(value, max_nodes=limit)
    with pytest.raises(JsonBudgetError) as written:
        dump_canonical_json(value, sort_keys=False, max_nodes=limit)
    assert copied.value.path == written.value.path == ("tail", 1)
    assert str(copied.value) == str(written.value)
    assert snapshot_json(value, max_nodes=limit + 2) == value
    frozen_rows = snapshot_json(value["rows"])
    # Frozen parts are reused (one value each) by the copy and by its pre-check alike.
    assert snapshot_json({"rows": frozen_rows, "tail": [1]}, max_nodes=4) == {"rows": frozen_rows, "tail": [1]}
