"""Materialization of content and additional contexts: shapes, and errors that name the place."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from _registry_helpers import async_test, call, echo_tool, registry_with, text
from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, LosslessJsonError, snapshot_json
from dsh_codegen.registry import ToolRunContext
from dsh_codegen.registry._materialize import (
    ContentShapeError,
    check_content,
    snapshot_context,
    snapshot_contexts,
)

SHAPE = '{"role": "user", "content": [blocks], "source": str, "meta"?: {...}}'
BLOCK = 'must be an object with a string "type"'


def ctx(source: str = "s", **extra: Any) -> dict[str, Any]:
    context: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": source}], "source": source}
    context.update(extra)
    return context


# -- check_content --------------------------------------------------------------


def test_check_content_returns_good_content_as_is() -> None:
    frozen = snapshot_json([{"type": "text", "text": "a"}, {"type": "image", "data": "", "mimeType": "x"}])
    assert check_content(frozen) is frozen
    empty = snapshot_json([])
    assert check_content(empty) is empty


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ([{"type": "text"}, {"text": "no type"}], f"content block [1] {BLOCK}"),
        ([{"type": 3}], f"content block [0] {BLOCK}"),
        ([{"type": "text"}, {"type": "text"}, "text"], f"content block [2] {BLOCK}"),
        ([{"type": "a"}, [], {"x": 1}], f"content block [1] {BLOCK}"),
        ({"type": "text"}, "content must be a list of content blocks"),
        ("text", "content must be a list of content blocks"),
    ],
)
def test_check_content_names_the_first_bad_block(content: Any, message: str) -> None:
    with pytest.raises(ContentShapeError) as info:
        check_content(snapshot_json(content))
    assert str(info.value) == message


# -- snapshot_context: good input ----------------------------------------------


def test_snapshot_context_freezes_and_reuses_frozen_input() -> None:
    context = ctx("a", meta={"k": [1]})
    frozen = snapshot_context(context, "defer_context()")
    assert type(frozen) is FrozenJsonObject
    assert type(frozen["content"]) is FrozenJsonArray
    assert frozen == context
    context["content"].append({"type": "text", "text": "later"})
    assert len(frozen["content"]) == 1
    assert snapshot_context(frozen, "defer_context()") is frozen


def test_snapshot_contexts_keeps_order_and_the_empty_tuple() -> None:
    empty: tuple[object, ...] = ()
    assert snapshot_contexts(empty, "Accept") is empty
    assert snapshot_contexts([], "Accept") == ()
    frozen = snapshot_contexts([ctx("a"), ctx("b")], "Accept")
    assert [item["source"] for item in frozen] == ["a", "b"]
    with pytest.raises(TypeError) as info:
        snapshot_contexts(ctx("a").values(), "Accept")  # type: ignore[arg-type]
    assert str(info.value) == "Accept: additional_contexts must be a list or tuple"


# -- snapshot_context: wrong shapes ----------------------------------------------


WRONG_SHAPES: list[tuple[object, str]] = [
    ([ctx()], "got an array"),
    ("text", "got a string"),
    (3, "got a number"),
    (1.5, "got a number"),
    (True, "got a boolean"),
    (None, "got null"),
    ({**ctx(), "role": "assistant"}, '"role" is not "user"'),
    ({"content": [], "source": "s"}, '"role" is not "user"'),
    ({**ctx(), "content": {"type": "text"}}, '"content" is not an array'),
    ({"role": "user", "source": "s"}, '"content" is not an array'),
    ({**ctx(), "source": 7}, '"source" is not a string'),
    ({"role": "user", "content": []}, '"source" is not a string'),
    (ctx(meta=None), '"meta" is not an object'),
    (ctx(meta=["x"]), '"meta" is not an object'),
]


@pytest.mark.parametrize(("context", "problem"), WRONG_SHAPES)
def test_a_wrong_shape_names_where_and_the_wrong_part(context: object, problem: str) -> None:
    with pytest.raises(ValueError) as info:
        snapshot_context(context, "defer_context()")
    assert type(info.value) is ValueError
    assert str(info.value) == f"defer_context(): an additional context must be {SHAPE} ({problem})"


@pytest.mark.parametrize(("context", "problem"), WRONG_SHAPES)
def test_a_wrong_shape_in_a_sequence_names_its_index(context: object, problem: str) -> None:
    with pytest.raises(ValueError) as info:
        snapshot_contexts([ctx("fine"), ctx("fine"), context], "Accept")
    assert type(info.value) is ValueError
    assert str(info.value) == f"Accept: additional context [2] must be {SHAPE} ({problem})"


# -- snapshot_context: bad content blocks ----------------------------------------


@pytest.mark.parametrize(
    ("content", "bad"),
    [
        ([{"type": "text", "text": "a"}, {"text": "no type"}], 1),
        (["text"], 0),
        ([{"type": "text"}, {"type": "text"}, {"type": None}], 2),
        ([[{"type": "text"}]], 0),
    ],
)
def test_a_bad_block_inside_a_context_names_where_and_the_block(content: list[Any], bad: int) -> None:
    context = {"role": "user", "content": content, "source": "s"}
    with pytest.raises(ContentShapeError) as info:
        snapshot_context(context, "defer_context()")
    assert str(info.value) == f"defer_context(): content block [{bad}] {BLOCK}"
    with pytest.raises(ContentShapeError) as info:
        snapshot_contexts((ctx(), context), "Block")
    assert str(info.value) == f"Block: additional context [1], content block [{bad}] {BLOCK}"
    assert isinstance(info.value, ValueError)


# -- snapshot_context: lossy input -----------------------------------------------


@pytest.mark.parametrize(
    ("context", "path", "reason"),
    [
        (ctx(meta={"x": float("nan")}), ("meta", "x"), "NaN is not a JSON number"),
        (
            {"role": "user", "content": [{"type": "text", "text": print}], "source": "s"},
            ("content", 0, "text"),
            "type builtin_function_or_method is not a JSON type",
        ),
        ({"role": "user", 1: "x"}, (), "object key of type int (keys must be exactly str)"),
        ({1, 2}, (), "type set is not a JSON type"),
    ],
)
def test_lossy_input_stays_a_lossless_json_error_and_names_where(
    context: object, path: tuple[str | int, ...], reason: str
) -> None:
    with pytest.raises(LosslessJsonError) as info:
        snapshot_context(context, "defer_context()")
    error = info.value
    assert type(error) is LosslessJsonError
    assert error.path == path
    assert error.reason == f"{reason} (defer_context(): in an additional context)"
    assert str(error).endswith(f" is not lossless JSON: {reason} (defer_context(): in an additional context)")
    assert str(pickle.loads(pickle.dumps(error))) == str(error)
    with pytest.raises(LosslessJsonError) as info:
        snapshot_contexts([ctx(), ctx(), ctx(), context], "tools/execute")
    assert type(info.value) is LosslessJsonError
    assert info.value.path == path
    assert info.value.reason == f"{reason} (tools/execute: in additional context [3])"


# -- through the registry: defer_context() -----------------------------------------


@async_test
async def test_defer_context_errors_name_defer_context_and_the_place() -> None:
    seen: list[tuple[str, str]] = []

    async def body(args: Any, run: ToolRunContext) -> str:
        bad: dict[str, Any]
        for bad in (
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"text": "b"}], "source": "s"},
            {"role": "user", "content": [], "source": None},
            {"role": "user", "content": [{"type": "text", "text": float("inf")}], "source": "s"},
        ):
            try:
                run.defer_context(bad)
            except ValueError as exc:
                seen.append((type(exc).__name__, str(exc)))
        run.defer_context(ctx("kept"))
        return "done"

    result = await registry_with(echo_tool(execute=body)).execute(call())
    assert text(result) == "done"
    assert seen == [
        ("ContentShapeError", f"defer_context(): content block [1] {BLOCK}"),
        ("ValueError", f'defer_context(): an additional context must be {SHAPE} ("source" is not a string)'),
        (
            "LosslessJsonError",
            '"value.content[0].text" is not lossless JSON: inf is not a JSON number '
            "(defer_context(): in an additional context)",
        ),
    ]
    assert [context["source"] for context in result.additional_contexts] == ["kept"]
