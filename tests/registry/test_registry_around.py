"""Guarantees 41-48 (docs/guarantees.md): around-dispatch wrappers (``wrap_execute``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _registry_helpers import async_test, call, echo_tool, error_code, registry_with, text
from dsh_codegen.registry import (
    AbortController,
    AbortSignal,
    ToolDispatchExecution,
    ToolError,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
)

CONTEXT = {"role": "user", "content": [{"type": "text", "text": "note"}], "source": "wrapper"}


@async_test
async def test_b41_next_returns_a_normalized_result_for_a_thrown_body() -> None:
    async def explode(args: Any, run: Any) -> Any:
        raise KeyError("gone")

    registry = registry_with(echo_tool(execute=explode))
    seen: list[ToolExecutionResult] = []
    post_seen: list[ToolExecutionResult] = []

    async def wrap(dispatch: ToolDispatchExecution, next: Any) -> Any:
        result = await next()
        seen.append(result)
        return result

    registry.wrap_execute(wrap)
    registry.on_post_execute(lambda e, r, n: post_seen.append(r) or n())
    result = await registry.execute(call())
    [inner] = seen
    assert isinstance(inner, ToolFailure)
    assert inner.error == ToolError("'gone'")
    assert post_seen == [inner] and result is inner


@async_test
async def test_b42_results_given_to_wrappers_and_post_are_frozen() -> None:
    registry = registry_with(
        echo_tool(
            output_schema={"type": "object", "properties": {}, "additionalProperties": True},
            execute=_object_body,
        )
    )
    checked: list[str] = []

    async def wrap(dispatch: Any, next: Any) -> Any:
        result = await next()
        with pytest.raises(TypeError):
            result.value["k"] = 2
        with pytest.raises(TypeError):
            result.content[0]["text"] = "x"
        with pytest.raises(AttributeError):
            result.value = {}
        checked.append("wrap")
        return result

    def post(execution: Any, result: Any, next: Any) -> Any:
        with pytest.raises(TypeError):
            result.value["list"].append(1)
        checked.append("post")
        return next()

    registry.wrap_execute(wrap)
    registry.on_post_execute(post)
    result = await registry.execute(call())
    assert not result.is_error, result
    assert checked == ["wrap", "post"]


async def _object_body(args: Any, run: Any) -> Any:
    return {"k": 1, "list": []}


@async_test
async def test_b43_short_circuit_success_is_revalidated_and_rerendered() -> None:
    ran: list[str] = []

    async def body(args: Any, run: Any) -> str:
        ran.append("body")
        return "x"

    registry = registry_with(echo_tool(execute=body))
    registry.wrap_execute(
        lambda d, n: ToolSuccess(
            "cached", [{"type": "text", "text": "authored content"}], additional_contexts=[CONTEXT]
        )
    )
    result = await registry.execute(call())
    assert isinstance(result, ToolSuccess)
    assert result.value == "cached"
    assert text(result) == "cached"  # re-rendered from the value
    assert list(result.additional_contexts) == [CONTEXT]
    assert ran == []


@async_test
async def test_b44_a_cached_result_from_another_tool_is_revalidated() -> None:
    async def number(args: Any, run: Any) -> int:
        return 42

    registry = registry_with(
        echo_tool("numbers", execute=number, output_schema={"type": "integer"}),
        echo_tool("strings"),
    )
    cache: dict[str, ToolExecutionResult] = {}

    async def wrap(dispatch: ToolDispatchExecution, next: Any) -> Any:
        if "numbers" in cache and dispatch.name == "strings":
            return cache["numbers"]
        result = await next()
        cache[dispatch.name] = result
        return result

    registry.wrap_execute(wrap)
    first = await registry.execute(call("numbers"))
    assert isinstance(first, ToolSuccess) and first.value == 42
    crossed = await registry.execute(call("strings"))
    assert text(crossed) == 'Error: tool "strings" returned invalid output: "value" must be a string'
    assert error_code(crossed) == "INVALID_TOOL_OUTPUT"
    assert not hasattr(crossed, "value")


@async_test
async def test_b45_wrapper_authored_failure_is_kept() -> None:
    registry = registry_with(echo_tool())
    authored = ToolFailure(
        ToolError("budget exceeded", ToolErrorInfo("BudgetError", "BUDGET")),
        [
            {"type": "text", "text": "custom failure text"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        ],
        meta={"spent": 3},
        additional_contexts=[CONTEXT],
    )
    registry.wrap_execute(lambda d, n: authored)
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure)
    assert result.error == authored.error
    assert list(result.content) == list(authored.content)
    assert result.meta == {"spent": 3}
    assert list(result.additional_contexts) == [CONTEXT]


@async_test
async def test_b46_authored_success_for_a_tool_unregistered_meanwhile() -> None:
    registry = registry_with()
    dispose = registry.register(echo_tool())

    async def wrap(dispatch: Any, next: Any) -> Any:
        dispose()
        return ToolSuccess("late", [{"type": "text", "text": "late"}])

    registry.wrap_execute(wrap)
    result = await registry.execute(call())
    assert text(result) == 'Error: unknown tool "echo"'
    assert error_code(result) == "UNKNOWN_TOOL"


@async_test
async def test_b47_body_gets_a_fused_signal() -> None:
    observed: dict[str, Any] = {}
    started = asyncio.Event()

    async def body(args: Any, run: Any) -> str:
        observed["body"] = run.signal
        started.set()
        await run.signal.wait()
        raise RuntimeError("stopped: " + str(run.signal.reason))

    registry = registry_with(echo_tool(execute=body))
    wrapper_controller = AbortController()

    async def wrap(dispatch: ToolDispatchExecution, next: Any) -> Any:
        observed["caller"] = dispatch.signal
        return await next(signal=wrapper_controller.signal)

    registry.wrap_execute(wrap)

    # 1. the caller aborts: the body's fused signal aborts, the wrapper's does not
    caller = AbortController()
    task = asyncio.ensure_future(registry.execute(call(signal=caller.signal)))
    await started.wait()
    body_signal: AbortSignal = observed["body"]
    assert body_signal is not caller.signal and body_signal is not wrapper_controller.signal
    assert not body_signal.aborted
    caller.abort("caller reason")
    await task
    assert body_signal.aborted and body_signal.reason == "caller reason"
    assert not wrapper_controller.signal.aborted

    # 2. the wrapper's signal aborts: the body's fused signal aborts too
    started.clear()
    task = asyncio.ensure_future(registry.execute(call()))
    await started.wait()
    wrapper_controller.abort("wrapper reason")
    result = await task
    assert text(result) == "Error: stopped: wrapper reason"


@async_test
async def test_b48_post_execute_sees_the_caller_signal_again() -> None:
    registry = registry_with(echo_tool())
    replacement = AbortController().signal
    seen: dict[str, Any] = {}

    async def wrap(dispatch: ToolDispatchExecution, next: Any) -> Any:
        result = await next(signal=replacement)
        seen["after"] = dispatch.signal
        return result

    async def inner(dispatch: ToolDispatchExecution, next: Any) -> Any:
        seen["inner"] = dispatch.signal
        return await next()

    def post(execution: ToolExecution, result: Any, next: Any) -> Any:
        seen["post"] = execution.signal
        return next()

    registry.wrap_execute(wrap)
    registry.wrap_execute(inner)
    registry.on_post_execute(post)
    caller = AbortController().signal
    await registry.execute(call(signal=caller))
    assert seen["inner"] is replacement
    assert seen["after"] is caller
    assert seen["post"] is caller
