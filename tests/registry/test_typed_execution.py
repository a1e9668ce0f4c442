"""``@tool`` definitions executed through ``ToolRegistry.execute`` (both twins)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NotRequired, TypedDict

import pytest
from _typed_helpers import Priority, Theme, async_test, error_code, run_tool, text

from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject
from dsh_codegen.registry import ToolFailure, ToolRunContext, ToolSuccess
from dsh_codegen.registry._typed import tool


class Edit(TypedDict):
    old: str
    new: str
    count: NotRequired[int]


seen: list[Any] = []


@tool
async def apply_edits(
    path: str,
    edits: list[Edit],
    mode: Literal["dry-run", "write"] = "dry-run",
    tags: Sequence[str] = ("default",),
    *,
    run: ToolRunContext,
) -> dict[str, Any]:
    """Apply edits to a file.

    Args:
        path: The file.
        edits: What to replace.
    """
    seen.append({"path": path, "edits": edits, "mode": mode, "tags": tags, "run": run})
    return {"path": path, "applied": len(edits), "mode": mode}


@async_test
async def test_valid_arguments_reach_the_body() -> None:
    seen.clear()
    result = await run_tool(
        apply_edits, {"path": "a.txt", "edits": [{"old": "x", "new": "y"}], "mode": "write"}, call_id="c7"
    )
    assert isinstance(result, ToolSuccess)
    assert result.value == {"path": "a.txt", "applied": 1, "mode": "write"}
    call = seen[-1]
    assert call["edits"] == [{"old": "x", "new": "y"}]
    assert type(call["edits"]) is FrozenJsonArray and type(call["edits"][0]) is FrozenJsonObject
    with pytest.raises(TypeError):
        call["edits"].append({})  # arguments are the registry's frozen snapshot
    assert isinstance(call["run"], ToolRunContext) and call["run"].call_id == "c7"


@async_test
async def test_defaults_applied_on_the_python_side() -> None:
    seen.clear()
    result = await run_tool(apply_edits, {"path": "a.txt", "edits": []})
    assert isinstance(result, ToolSuccess)
    assert seen[-1]["mode"] == "dry-run"
    assert seen[-1]["tags"] == ("default",)  # the Python default object itself, not a JSON copy
    assert "default" in apply_edits.parameters["properties"]["mode"]  # recorded for the model only


@async_test
async def test_undeclared_keys_are_refused() -> None:
    # The root is closed (docs/typed-tools.md): a misspelt parameter is an error, not a silent default.
    seen.clear()
    result = await run_tool(apply_edits, {"path": "p", "edits": [], "surprise": 1})
    assert (
        text(result) == 'Error: invalid arguments: "surprise" is not a declared property (additionalProperties: false)'
    )
    run_key = await run_tool(apply_edits, {"path": "p", "edits": [], "run": "not the context"})
    assert error_code(run_key) == "INVALID_ARGS"
    assert seen == []


@async_test
async def test_invalid_arguments_never_reach_the_body() -> None:
    seen.clear()
    missing = await run_tool(apply_edits, {"edits": []})
    assert text(missing) == 'Error: invalid arguments: missing required property "path"'
    assert error_code(missing) == "INVALID_ARGS"
    wrong = await run_tool(apply_edits, {"path": 1, "edits": [{"old": "x"}], "mode": "delete"})
    assert text(wrong) == (
        'Error: invalid arguments: "path" must be a string; missing required property "edits[0].new"; '
        '"mode" must be one of ["dry-run","write"]'
    )
    closed = await run_tool(apply_edits, {"path": "p", "edits": [{"old": "x", "new": "y", "extra": 1}]})
    assert (
        text(closed)
        == 'Error: invalid arguments: "edits[0].extra" is not a declared property (additionalProperties: false)'
    )
    not_object = await run_tool(apply_edits, ["p"])
    assert text(not_object) == 'Error: invalid arguments: "arguments" must be an object'
    assert seen == []


@async_test
async def test_wrong_return_value_fails_output_validation() -> None:
    @tool
    async def count(text: str) -> int:
        """Count characters (wrongly)."""
        return text  # type: ignore[return-value]

    result = await run_tool(count, {"text": "abc"})
    assert isinstance(result, ToolFailure)
    assert error_code(result) == "INVALID_TOOL_OUTPUT"
    assert text(result) == 'Error: tool "count" returned invalid output: "value" must be an integer'


@async_test
async def test_default_render() -> None:
    @tool
    async def greet(name: str) -> str:
        """Greet."""
        return f"hello {name}"

    @tool
    async def info(name: str) -> dict[str, Any]:
        """Info."""
        return {"name": name, "sizes": [1, 2]}

    @tool
    async def nothing() -> None:
        """Nothing."""

    assert text(await run_tool(greet, {"name": "ada"})) == "hello ada"
    assert text(await run_tool(info, {"name": "ada"})) == '{\n  "name": "ada",\n  "sizes": [\n    1,\n    2\n  ]\n}'
    result = await run_tool(nothing, {})
    assert isinstance(result, ToolSuccess) and result.value is None and text(result) == "null"


@async_test
async def test_output_render_override() -> None:
    def render(args: Any, value: Any) -> list[dict[str, str]]:
        return [{"type": "text", "text": f"{args['n']} -> {value}"}]

    @tool(output_render=render)
    async def double(n: int) -> int:
        """Double."""
        return n * 2

    assert text(await run_tool(double, {"n": 4})) == "4 -> 8"


@async_test
async def test_run_context_effects() -> None:
    @tool
    async def finish(run: ToolRunContext) -> str:
        """Finish the turn."""
        run.conclude_turn()
        return "done"

    result = await run_tool(finish, {})
    assert isinstance(result, ToolSuccess) and result.concludes_turn is True


@async_test
async def test_body_exception_becomes_error_result() -> None:
    @tool
    async def explode(reason: str) -> str:
        """Explode."""
        raise RuntimeError(reason)

    result = await run_tool(explode, {"reason": "boom"})
    assert isinstance(result, ToolFailure) and text(result) == "Error: boom"


@async_test
async def test_optional_and_nullable_parameters() -> None:
    received: list[Any] = []

    @tool
    async def probe(a: int | None, b: float = 1.5, c: str | None = None) -> list[Any]:
        """Probe."""
        received.append((a, b, c))
        return [a, b, c]

    ok = await run_tool(probe, {"a": None, "b": 2})
    assert isinstance(ok, ToolSuccess) and received[-1] == (None, 2, None)
    bad = await run_tool(probe, {"b": None})
    assert text(bad) == ('Error: invalid arguments: missing required property "a"; "b" must be a number')
    assert len(received) == 1


def test_definition_options_pass_through() -> None:
    def classify(args: Any) -> bool:
        return bool(args.get("read_only"))

    @tool(is_concurrency_safe=classify, timeout_ms=1000)
    async def touch(read_only: bool) -> bool:
        """Touch."""
        return read_only

    assert touch.is_concurrency_safe is classify and touch.timeout_ms == 1000


class Box(TypedDict):
    kind: Literal["box"]
    corners: tuple[int, ...]
    names: list[str]


class Bag(TypedDict):
    kind: Literal["bag"]
    items: tuple[str, ...]


@async_test
async def test_tuple_annotations_receive_tuples() -> None:
    received: list[Any] = []

    @tool
    async def shapes(
        flat: tuple[int, ...],
        nested: list[tuple[str, ...]],
        box: Box,
        either: Box | Bag | tuple[bool, ...] | None = None,
        plain: list[int] | None = None,
    ) -> int:
        """Shapes."""
        received.append((flat, nested, box, either, plain))
        return 0

    box = {"kind": "box", "corners": [1, 2], "names": ["a"]}
    await run_tool(
        shapes,
        {"flat": [1, 2], "nested": [["a"], []], "box": box, "either": {"kind": "bag", "items": ["x"]}, "plain": [3]},
    )
    flat, nested, got_box, either, plain = received[-1]
    assert flat == (1, 2) and type(flat) is tuple
    assert nested == [("a",), ()] and type(nested) is list
    assert got_box == {"kind": "box", "corners": (1, 2), "names": ["a"]}
    assert type(got_box["corners"]) is tuple and type(got_box["names"]) is FrozenJsonArray
    assert either == {"kind": "bag", "items": ("x",)}
    assert type(plain) is FrozenJsonArray  # no tuple inside: the frozen snapshot as is
    for value, expected in [
        (box, {"kind": "box", "corners": (1, 2), "names": ["a"]}),
        ([True], (True,)),
        (None, None),
    ]:
        await run_tool(shapes, {"flat": [], "nested": [], "box": box, "either": value})
        assert received[-1][3] == expected
        assert type(received[-1][3]) is type(expected)


class Absorbed(TypedDict):
    a: Any | tuple[int, ...]
    b: list[int]
    c: list[int]


@async_test
async def test_tuple_absorbed_by_any_converts_nothing() -> None:
    received: list[Any] = []

    @tool
    async def absorbed(x: Absorbed) -> None:
        """Absorbed."""
        received.append(x)

    assert absorbed.parameters["properties"]["x"]["properties"]["a"] == {}
    await run_tool(absorbed, {"x": {"a": [1], "b": [2], "c": [3]}})
    value = received[-1]
    assert type(value) is FrozenJsonObject  # nothing to convert: the frozen snapshot itself
    assert all(type(value[key]) is FrozenJsonArray for key in "abc")


@async_test
async def test_presenters_and_finalize_pass_through() -> None:
    def present_call(args: Any) -> Any:
        return {"kind": "generic", "title": f"touch {args['path']}"}

    def finalize(execution: Any, result: Any) -> Any:
        return [{"type": "text", "text": "finalized"}]

    async def body(path: str) -> str:
        """Touch."""
        return path

    definition = tool(body, name="touch", present_call=present_call, finalize_content=finalize)
    assert definition.call_view({"path": "a"}) == {"kind": "generic", "title": "touch a"}
    assert definition.call_view({"path": 1}) is None  # soft validation against the mapped schema
    assert text(await run_tool(definition, {"path": "a"})) == "finalized"


# -- plain (sync) functions run in a worker thread ---------------------------------------


@async_test
async def test_a_plain_function_runs_in_a_worker_thread() -> None:
    import threading

    threads: list[int] = []

    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        threads.append(threading.get_ident())
        return a + b

    result = await run_tool(add, {"a": 40})
    assert isinstance(result, ToolSuccess) and result.value == 42
    assert threads and threads[0] != threading.get_ident()
    invalid = await run_tool(add, {"a": "x"})
    assert error_code(invalid) == "INVALID_ARGS"  # validated before the thread starts


@async_test
async def test_a_plain_function_raising_is_an_error_result() -> None:
    @tool
    def explode() -> int:
        """Explode."""
        raise ValueError("exploded in a thread")

    result = await run_tool(explode, {})
    assert isinstance(result, ToolFailure) and text(result) == "Error: exploded in a thread"


@async_test
async def test_cancelling_a_plain_function_aborts_its_signal_and_waits_for_the_thread() -> None:
    import asyncio
    import threading
    import time

    started = threading.Event()
    finished: list[str] = []

    @tool
    def poll(*, run: ToolRunContext) -> str:
        """Poll the signal until aborted."""
        started.set()
        deadline = time.monotonic() + 5
        while not run.signal.aborted and time.monotonic() < deadline:
            time.sleep(0.001)
        finished.append("aborted" if run.signal.aborted else "timed out")
        return "done"

    task = asyncio.ensure_future(run_tool(poll, {}))
    while not started.is_set():
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == ["aborted"]  # the thread had returned before execute() ended


@tool
async def pick(
    theme: Literal[Theme.DARK, "auto"], level: Literal[Priority.HIGH, None] = None
) -> Literal[Theme.DARK, "auto"]:
    """Pick a theme."""
    seen.append({"theme": theme, "level": level})
    return theme


@async_test
async def test_literal_enum_members_reach_the_body_as_members() -> None:
    seen.clear()
    dark = await run_tool(pick, {"theme": "dark", "level": 2})
    assert isinstance(dark, ToolSuccess) and dark.value == "dark"  # the returned member is encoded
    assert seen[-1]["theme"] is Theme.DARK and seen[-1]["level"] is Priority.HIGH
    auto = await run_tool(pick, {"theme": "auto", "level": None})
    assert isinstance(auto, ToolSuccess) and auto.value == "auto"
    assert type(seen[-1]["theme"]) is str and seen[-1]["level"] is None
    light = await run_tool(pick, {"theme": "light"})
    assert error_code(light) == "INVALID_ARGS"
    assert text(light) == 'Error: invalid arguments: "theme" must be one of ["dark","auto"]'
