"""An aborted signal cancels the body as a task is cancelled, and the registry still waits for it (issue 35).

Before: a body that ignored its signal (``await asyncio.sleep(1)``) ran to its
end under ``timeout_policy`` and the caller's abort alike. Now its pending
``await`` raises ``CancelledError`` the moment its signal aborts (a deadline,
the caller's abort, a cancellation of the awaiting task), and ``execute`` still
returns only once the body has settled. A thread cannot be interrupted: a plain
``def`` body of ``@tool`` runs in ``run.to_thread``, which waits for it.
(No timing is asserted: each test records where its body was stopped; a body
that was not interrupted sleeps its two seconds and the records say so.)
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from _registry_helpers import call, echo_tool, error_code, registry_with, text
from _shared_helpers import async_test
from dsh_codegen.registry import (
    AbortController,
    ToolRegistry,
    ToolRunContext,
    ToolSuccess,
    tool,
)
from dsh_codegen.registry.policies import timeout_policy


class Sleeper:
    """A body that sleeps two seconds, ignoring its signal, and records how it ended."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.started = asyncio.Event()

    async def body(self, args: Any, run: ToolRunContext) -> str:
        self.started.set()
        try:
            await asyncio.sleep(2)
        except asyncio.CancelledError:
            self.events.append("cancelled")
            await asyncio.sleep(0.01)  # cleanup that awaits: the registry waits for it
            self.events.append("cleaned up")
            raise
        self.events.append("slept")
        return "done"


@async_test
async def test_a_deadline_cancels_a_body_that_ignores_its_signal() -> None:
    sleeper = Sleeper()
    registry = registry_with(echo_tool(execute=sleeper.body, timeout_ms=20))
    timeout_policy(registry)
    result = await registry.execute(call())
    assert text(result) == "Error: tool call timed out after 20ms"
    assert error_code(result) == "TOOL_TIMEOUT"
    # Interrupted at its await, and its cleanup ran to the end before execute returned.
    assert sleeper.events == ["cancelled", "cleaned up"]


@async_test
async def test_the_callers_abort_cancels_the_body_and_execute_returns_aborted() -> None:
    sleeper = Sleeper()
    registry = registry_with(echo_tool(execute=sleeper.body))
    controller = AbortController()
    task = asyncio.ensure_future(registry.execute(call(signal=controller.signal)))
    await sleeper.started.wait()
    controller.abort("user pressed stop")
    result = await task  # a result: the caller's abort is not a task cancellation
    assert error_code(result) == "ABORTED"
    assert sleeper.events == ["cancelled", "cleaned up"]


@async_test
async def test_a_body_that_finishes_after_its_cancellation_keeps_the_deadlines_outcome() -> None:
    async def stubborn(args: Any, run: ToolRunContext) -> str:
        try:
            await asyncio.sleep(2)
        except asyncio.CancelledError:
            pass  # swallows it and returns normally
        return "done anyway"

    registry = registry_with(echo_tool(execute=stubborn, timeout_ms=10))
    timeout_policy(registry)
    result = await registry.execute(call())
    assert error_code(result) == "TOOL_TIMEOUT"


@async_test
async def test_a_body_waiting_for_its_signal_is_not_cancelled_out_of_its_cleanup() -> None:
    # The await that observes the abort completes normally (its future already has its
    # result), so a cooperative body runs its own cleanup and reports its own failure.
    events: list[str] = []

    async def cooperative(args: Any, run: ToolRunContext) -> str:
        await run.signal.wait()
        await asyncio.sleep(0)
        events.append("cleaned up")
        raise RuntimeError("stopped at the deadline")

    registry = registry_with(echo_tool(execute=cooperative, timeout_ms=10))
    timeout_policy(registry)
    result = await registry.execute(call())
    assert error_code(result) == "TOOL_TIMEOUT"
    assert events == ["cleaned up"]


@async_test
async def test_a_plain_def_tool_is_offered_the_signal_and_its_thread_is_awaited() -> None:
    stopped = threading.Event()
    finished: list[str] = []

    @tool(timeout_ms=20)
    def crunch(run: ToolRunContext) -> str:
        """Crunch until told to stop."""
        try:
            while not run.signal.aborted:  # the signal, offered to the thread
                time.sleep(0.002)
            stopped.set()
            time.sleep(0.02)  # winding down after the abort
            return "partial"
        finally:
            finished.append("thread")

    registry = ToolRegistry()
    registry.register(crunch)
    timeout_policy(registry)
    result = await registry.execute(call("crunch", {}))
    assert error_code(result) == "TOOL_TIMEOUT"
    assert stopped.is_set() and finished == ["thread"]  # the thread ended before execute returned


@async_test
async def test_to_thread_waits_for_an_uninterruptible_thread_then_raises_the_cancellation() -> None:
    release = threading.Event()
    outcome: list[str] = []

    async def body(args: Any, run: ToolRunContext) -> str:
        try:
            return await run.to_thread(release.wait)  # ignores the signal
        except asyncio.CancelledError:
            outcome.append(f"cancelled after the thread: {release.is_set()}")
            raise

    registry = registry_with(echo_tool(execute=body))
    controller = AbortController()
    task = asyncio.ensure_future(registry.execute(call(signal=controller.signal)))
    await asyncio.sleep(0.01)
    controller.abort()
    for _ in range(5):
        await asyncio.sleep(0.002)
    assert not task.done() and outcome == []  # the thread is still running: so is the call
    release.set()
    result = await task
    assert error_code(result) == "ABORTED"
    assert outcome == ["cancelled after the thread: True"]


@async_test
async def test_to_thread_returns_the_threads_value_without_a_cancellation() -> None:
    async def body(args: Any, run: ToolRunContext) -> str:
        return await run.to_thread(lambda a, b: f"{a}-{b}", "x", b="y")

    registry = registry_with(echo_tool(execute=body))
    result = await registry.execute(call())
    assert isinstance(result, ToolSuccess) and text(result) == "x-y"
