"""A tool body runs in an asyncio task of its own on every path: asyncio.timeout and wait_for work in it.

``asyncio.timeout`` (and ``asyncio.wait_for``, built on it from Python 3.12)
refuses to run outside a task ("Timeout should be used inside a task") and
cancels the task that entered it. A body stepped by hand outside the task that
goes on to run it would fail, or time out the wrong task. Found in CI on 3.12:
a Code Mode sub-call whose body used ``wait_for`` failed before it started.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _shared_helpers import async_test, render_text
from dsh_codegen import (
    AbortController,
    ToolCall,
    ToolExecutionInput,
    ToolOutput,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    execute_tool_calls,
)
from dsh_codegen.codemode import PythonSubprocessRuntime


async def _timed(args: Any, run: ToolRunContext) -> str:
    async with asyncio.timeout(10):
        await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.sleep(0), 10)
    return f"ok {args['n']}"


def _tool() -> Any:
    return define_tool(
        name="timed",
        description="Sleeps under a timeout.",
        parameters={"n": {"type": "integer", "required": True}},
        output=ToolOutput(schema={"type": "string"}, render=render_text),
        execute=_timed,
        is_concurrency_safe=True,
    )


@async_test
async def test_a_native_call_s_body_may_use_asyncio_timeout() -> None:
    registry = ToolRegistry()
    registry.register(_tool())
    result = await registry.execute(ToolExecutionInput("c1", "timed", {"n": 1}, AbortController().signal))
    assert result.content == [{"type": "text", "text": "ok 1"}]


@async_test
async def test_parallel_calls_of_a_turn_may_use_asyncio_timeout() -> None:
    registry = ToolRegistry()
    registry.register(_tool())
    calls = [ToolCall(f"c{n}", "timed", {"n": n}) for n in range(3)]
    results = await execute_tool_calls(registry, calls, signal=AbortController().signal)
    assert [result.content for result in results] == [[{"type": "text", "text": f"ok {n}"}] for n in range(3)]


@pytest.mark.once
@async_test
async def test_code_mode_sub_calls_bodies_may_use_asyncio_timeout() -> None:
    async with PythonSubprocessRuntime() as runtime:
        registry = ToolRegistry(mode="code", code_runtime=runtime)
        registry.register(_tool())
        code = (
            "import asyncio\n"
            "one = await tools.timed({'n': 0})\n"
            "more = await asyncio.gather(*(tools.timed({'n': n}) for n in (1, 2)))\n"
            "return [one, *more]"
        )
        result = await registry.execute(
            ToolExecutionInput("c1", "run_code", {"code": code, "description": "timeouts"}, AbortController().signal)
        )
    assert result.content == [{"type": "text", "text": '[\n  "ok 0",\n  "ok 1",\n  "ok 2"\n]'}]
