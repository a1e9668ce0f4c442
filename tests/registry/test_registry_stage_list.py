"""The pipeline is its stage list: every call enters every stage of ``PIPELINE_STAGES``, in order.

A rule added to a stage (a check in ``run_policy``, a rewrite in
``run_finalize``) applies to every call only if every call goes through that
stage: plain calls with no listener, calls refused at entry, denied,
cancelled or ordered by a gate alike. The test records, with the
interpreter's profiler, which stage functions a call enters and in what
order, and compares that with the declared list.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import types
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from _registry_helpers import async_test, call, echo_tool, error_code, registry_with, text
from dsh_codegen.registry import (
    PIPELINE_STAGES,
    Accept,
    Allow,
    Deny,
    ToolExecution,
    ToolRegistry,
    ToolRunContext,
)
from dsh_codegen.registry.pipeline import _run

pytestmark = pytest.mark.once


def _stage_codes() -> dict[types.CodeType, str]:
    """The code object of each declared stage (the function of that name the pipeline calls)."""
    codes: dict[types.CodeType, str] = {}
    for name in PIPELINE_STAGES:
        function = getattr(_run, name)
        codes[function.__code__] = name
    return codes


async def _entered_stages(run: Callable[[], Awaitable[Any]]) -> tuple[list[str], Any]:
    """The stages ``run()`` entered, in order (a coroutine resumed after a suspension counts once)."""
    codes = _stage_codes()
    entered: list[str] = []

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call":
            name = codes.get(frame.f_code)
            if name is not None and (not entered or entered[-1] != name):
                entered.append(name)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        outcome: Any = await run()
    except BaseException as exc:
        outcome = exc
    finally:
        sys.setprofile(previous)
    return entered, outcome


def test_the_stage_list_names_functions_the_pipeline_module_holds() -> None:
    # The check below can fail: each name resolves to a distinct function.
    assert len(_stage_codes()) == len(PIPELINE_STAGES) == 8


@async_test
async def test_a_plain_call_enters_every_declared_stage_in_order() -> None:
    registry = registry_with(echo_tool())
    entered, result = await _entered_stages(lambda: registry.execute(call()))
    assert text(result) == "echo:hi"
    assert entered == list(PIPELINE_STAGES)


@async_test
async def test_a_call_refused_at_entry_still_enters_every_stage() -> None:
    registry = registry_with(echo_tool())
    entered, result = await _entered_stages(lambda: registry.execute(call(arguments={"text": 1})))
    assert error_code(result) == "INVALID_ARGS"
    assert entered == list(PIPELINE_STAGES)


@async_test
async def test_an_unknown_tool_enters_every_stage() -> None:
    registry = registry_with(echo_tool())
    entered, result = await _entered_stages(lambda: registry.execute(call("missing")))
    assert error_code(result) == "UNKNOWN_TOOL"
    assert entered == list(PIPELINE_STAGES)


@async_test
async def test_a_call_with_every_kind_of_listener_enters_every_stage() -> None:
    registry = registry_with(echo_tool())
    seen: list[str] = []

    async def pre(execution: ToolExecution, next: Any) -> Any:
        seen.append("pre")
        return Allow()

    async def wrapper(dispatch: Any, next: Any) -> Any:
        seen.append("wrap")
        return await next()

    async def post(execution: ToolExecution, result: Any, next: Any) -> Any:
        seen.append("post")
        return Accept()

    registry.on_pre_execute(pre)
    registry.guard(lambda execution: None)
    registry.wrap_execute(wrapper)
    registry.on_post_execute(post)
    registry.on_result(lambda execution, result: seen.append("result"))
    entered, result = await _entered_stages(lambda: registry.execute(call()))
    assert text(result) == "echo:hi"
    assert seen == ["pre", "wrap", "post", "result"]
    assert entered == list(PIPELINE_STAGES)


@async_test
async def test_a_denied_call_enters_every_stage() -> None:
    registry = registry_with(echo_tool())
    registry.on_pre_execute(lambda execution, next: Deny("no"))
    entered, result = await _entered_stages(lambda: registry.execute(call()))
    assert text(result) == "Error: no"
    assert entered == list(PIPELINE_STAGES)


class _RecordingGate:
    """A real ordering hook that records when the pipeline enters its two parts."""

    def __init__(self) -> None:
        self.entered: list[str] = []

    @contextlib.asynccontextmanager
    async def policy(self) -> AsyncIterator[None]:
        self.entered.append("policy")
        yield

    @contextlib.asynccontextmanager
    async def commit(self) -> AsyncIterator[None]:
        self.entered.append("commit")
        yield


@async_test
async def test_a_gated_call_enters_every_stage() -> None:
    registry = registry_with(echo_tool())
    gate = _RecordingGate()
    entered, result = await _entered_stages(lambda: registry.execute(call(), gate=gate))
    assert text(result) == "echo:hi"
    assert gate.entered == ["policy", "commit"]
    assert entered == list(PIPELINE_STAGES)


@async_test
async def test_a_cancelled_call_enters_every_stage_and_reraises() -> None:
    started = asyncio.Event()

    async def body(args: Any, run: ToolRunContext) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    registry = registry_with(echo_tool(execute=body))
    results: list[Any] = []
    registry.on_result(lambda execution, result: results.append(result))

    async def cancel_once_started() -> Any:
        task = asyncio.ensure_future(registry.execute(call()))
        await started.wait()
        task.cancel()
        return await task

    entered, outcome = await _entered_stages(cancel_once_started)
    assert isinstance(outcome, asyncio.CancelledError)
    assert [error_code(result) for result in results] == ["ABORTED"]
    assert entered == list(PIPELINE_STAGES)


@async_test
async def test_a_code_mode_collapse_enters_every_stage() -> None:
    registry = ToolRegistry(mode="code")
    registry.register(echo_tool())
    entered, result = await _entered_stages(lambda: registry.execute(call()))
    assert error_code(result) == "UNKNOWN_TOOL"
    assert entered == list(PIPELINE_STAGES)
