"""Cancelling a call: the body is cancelled as a task would be, then awaited to its end (docs/guarantees.md, 74 and after 77).

The registry steps a tool body itself (dsh_codegen.registry.pipeline's
trampoline). When the body's signal aborts (the caller's signal, a wrapper's
deadline, or a cancellation of the task awaiting ``execute()``), the body is
cancelled the way ``Task.cancel()`` cancels a task: its pending ``await``
raises ``CancelledError``. The registry then waits for the body to settle
(nothing is abandoned), records the outcome once and, for a task
cancellation, re-raises ``CancelledError``. Work a body hands to a thread is
waited for through ``run.to_thread`` (a thread cannot be interrupted).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import types
from collections.abc import Generator
from typing import Any

import pytest

from _registry_helpers import async_test, call, echo_tool, registry_with, text
from dsh_codegen.registry import (
    AbortController,
    AbortError,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
)
from dsh_codegen.registry.pipeline import _dispatch
from dsh_codegen.registry._loop import ToolCall, execute_tool_calls

ABORTED = "Error: tool call aborted"


def is_aborted(result: ToolExecutionResult) -> bool:
    return (
        isinstance(result, ToolFailure)
        and text(result) == ABORTED
        and result.error.info is not None
        and (result.error.info.name, result.error.info.code) == ("AbortError", "ABORTED")
    )


class ThreadTool:
    """A body whose work runs in a worker thread (``run.to_thread``) that polls the body's signal."""

    def __init__(self) -> None:
        self.started = threading.Semaphore(0)
        self.running = 0
        self.finished: list[str] = []
        self.lock = threading.Lock()

    async def body(self, args: Any, run: Any) -> str:
        signal = run.signal

        def work() -> str:
            with self.lock:
                self.running += 1
            self.started.release()
            try:
                while not signal.aborted:
                    time.sleep(0.002)
                time.sleep(0.03)  # winding down takes a while after the abort
                return "stopped"
            finally:
                with self.lock:
                    self.running -= 1
                    self.finished.append(args["text"])

        return await run.to_thread(work)

    async def wait_started(self, count: int = 1) -> None:
        for _ in range(count):
            while not self.started.acquire(blocking=False):
                await asyncio.sleep(0.001)

    def close(self) -> None:
        pass


def observing(registry: Any) -> list[ToolExecutionResult]:
    observed: list[ToolExecutionResult] = []
    registry.on_result(lambda e, r: observed.append(r))
    return observed


@async_test
async def test_executor_body_has_stopped_when_the_cancelled_execute_ends() -> None:
    tool = ThreadTool()
    try:
        registry = registry_with(echo_tool(execute=tool.body))
        observed = observing(registry)
        task = asyncio.ensure_future(registry.execute(call()))
        await tool.wait_started()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # execute() did not end before the thread stopped working.
        assert tool.running == 0 and tool.finished == ["hi"]
        assert task.cancelled()
        assert len(observed) == 1 and is_aborted(observed[0])  # the late success is replaced
    finally:
        tool.close()


@async_test
async def test_the_future_a_body_awaits_is_cancelled_and_its_cleanup_awaited() -> None:
    loop = asyncio.get_running_loop()
    awaited: asyncio.Future[str] = loop.create_future()
    cleanup: asyncio.Future[None] = loop.create_future()
    seen: dict[str, Any] = {}
    entered = asyncio.Event()

    async def body(args: Any, run: Any) -> str:
        seen["signal"] = run.signal
        entered.set()
        try:
            return await awaited
        except asyncio.CancelledError:
            seen["cancelled"] = True
            await cleanup  # cleanup that takes a while: the registry waits for it
            raise

    registry = registry_with(echo_tool(execute=body))
    observed = observing(registry)
    task = asyncio.ensure_future(registry.execute(call()))
    await entered.wait()
    task.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    assert awaited.cancelled()  # as Task.cancel() cancels the future its coroutine awaits
    assert seen["cancelled"] is True
    assert not task.done()  # waiting for the body's cleanup
    assert seen["signal"].aborted and isinstance(seen["signal"].reason, AbortError)
    assert seen["signal"].reason.args[0] == "tool call aborted"
    cleanup.set_result(None)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(observed) == 1 and is_aborted(observed[0])


@async_test
async def test_double_cancellation_still_waits_for_the_thread() -> None:
    tool = ThreadTool()
    gate = threading.Event()
    original = tool.body

    async def slow_to_stop(args: Any, run: Any) -> str:
        try:
            return await original(args, run)
        finally:
            # Cleanup that takes a while after the abort, in another thread.
            await run.to_thread(gate.wait)

    try:
        registry = registry_with(echo_tool(execute=slow_to_stop))
        observed = observing(registry)
        task = asyncio.ensure_future(registry.execute(call()))
        await tool.wait_started()
        task.cancel()
        while not tool.finished:
            await asyncio.sleep(0.001)
        task.cancel()
        task.cancel()
        await asyncio.sleep(0.01)
        assert not task.done()
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()
        assert len(observed) == 1 and is_aborted(observed[0])
    finally:
        gate.set()
        tool.close()


@async_test
async def test_asyncio_timeout_around_execute_raises_timeout_after_quiescence() -> None:
    tool = ThreadTool()
    try:
        registry = registry_with(echo_tool(execute=tool.body))
        observed = observing(registry)
        current = asyncio.current_task()
        assert current is not None
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.02):
                await registry.execute(call())
        assert tool.running == 0 and tool.finished == ["hi"]
        assert current.cancelling() == 0  # the timeout consumed its own cancellation
        assert len(observed) == 1 and is_aborted(observed[0])
        # The task is still usable: a later call succeeds.
        registry2 = registry_with(echo_tool())
        assert text(await registry2.execute(call())) == "echo:hi"
    finally:
        tool.close()


@async_test
async def test_timeout_that_does_not_fire_leaves_the_result_alone() -> None:
    registry = registry_with(echo_tool())

    async def suspending(args: Any, run: Any) -> str:
        await asyncio.sleep(0)
        await asyncio.sleep(0.001)
        return "done"

    registry.register(echo_tool("suspending", execute=suspending))
    async with asyncio.timeout(5):
        result = await registry.execute(call("suspending"))
    assert isinstance(result, ToolSuccess) and text(result) == "done"


@async_test
async def test_taskgroup_sibling_failure_cancels_and_awaits_the_body() -> None:
    tool = ThreadTool()
    try:
        registry = registry_with(echo_tool(execute=tool.body))
        observed = observing(registry)

        async def failing_sibling() -> None:
            await tool.wait_started(2)
            raise ValueError("sibling failed")

        with pytest.raises(ExceptionGroup) as caught:
            async with asyncio.TaskGroup() as group:
                group.create_task(registry.execute(call(call_id="a", arguments={"text": "a"})))
                group.create_task(registry.execute(call(call_id="b", arguments={"text": "b"})))
                group.create_task(failing_sibling())
        assert [type(e) for e in caught.value.exceptions] == [ValueError]
        assert tool.running == 0 and sorted(tool.finished) == ["a", "b"]
        assert len(observed) == 2 and all(is_aborted(r) for r in observed)
    finally:
        tool.close()


@async_test
async def test_loop_helper_cancelled_mid_batch_waits_for_every_started_body() -> None:
    tool = ThreadTool()
    try:
        registry = registry_with(echo_tool(execute=tool.body, is_concurrency_safe=lambda a: True))
        observed = observing(registry)
        calls = [ToolCall(f"c{i}", "echo", f'{{"text": "t{i}"}}') for i in range(6)]
        task = asyncio.ensure_future(
            execute_tool_calls(registry, calls, signal=AbortController().signal, max_parallel=3)
        )
        await tool.wait_started(3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert tool.running == 0
        assert sorted(tool.finished) == ["t0", "t1", "t2"]  # the rest never started
        assert len(observed) == 3
    finally:
        tool.close()


@async_test
async def test_a_body_taking_bare_yields_is_cancelled_at_its_next_step() -> None:
    steps: list[int] = []
    seen: dict[str, Any] = {}

    async def body(args: Any, run: Any) -> str:
        seen["signal"] = run.signal
        try:
            for index in range(1000):
                steps.append(index)
                await asyncio.sleep(0)  # a bare yield: one loop iteration each
        except asyncio.CancelledError:
            seen["cancelled_after"] = len(steps)
            raise
        return "done"

    registry = registry_with(echo_tool(execute=body))
    observed = observing(registry)
    task = asyncio.ensure_future(registry.execute(call()))
    while len(steps) < 2:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen["cancelled_after"] == len(steps) < 1000  # its next bare yield raised
    assert seen["signal"].aborted
    assert len(observed) == 1 and is_aborted(observed[0])


@async_test
async def test_body_outcomes_after_the_cancellation() -> None:
    async def catches_and_returns(args: Any, run: Any) -> str:
        try:
            await run.signal.wait()
        except asyncio.CancelledError:
            pass
        return "returned normally"

    async def reraises(args: Any, run: Any) -> str:
        await asyncio.sleep(2)
        return "unreachable"

    async def rethrows_reason(args: Any, run: Any) -> str:
        try:
            await asyncio.sleep(2)
        except asyncio.CancelledError:
            run.signal.throw_if_aborted()
        return "unreachable"

    async def own_failure(args: Any, run: Any) -> str:
        try:
            await asyncio.sleep(2)
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None
        return "unreachable"

    async def invalid_output(args: Any, run: Any) -> Any:
        try:
            await asyncio.sleep(2)
        except asyncio.CancelledError:
            pass
        return 42

    expectations = {
        "returns": (catches_and_returns, lambda r: is_aborted(r)),
        "reraises": (reraises, lambda r: is_aborted(r)),
        "rethrows": (rethrows_reason, lambda r: is_aborted(r)),
        "fails": (
            own_failure,
            lambda r: isinstance(r, ToolFailure) and r.error.message == "cleanup failed",
        ),
        "invalid": (
            invalid_output,
            lambda r: (
                isinstance(r, ToolFailure) and r.error.info is not None and r.error.info.code == "INVALID_TOOL_OUTPUT"
            ),
        ),
    }
    for name, (body, check) in expectations.items():
        registry = registry_with(echo_tool(name, execute=body))
        observed = observing(registry)
        task = asyncio.ensure_future(registry.execute(call(name)))
        for _ in range(3):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(observed) == 1 and check(observed[0]), (name, observed)


@async_test
async def test_non_suspending_body_creates_no_driver_and_no_future() -> None:
    made: list[str] = []

    class CountingDriver(_dispatch.BodyDriver):
        __slots__ = ()

        def __init__(self, *args: Any) -> None:
            made.append("driver")
            super().__init__(*args)

    loop = asyncio.get_running_loop()
    original_create_future = loop.create_future

    def counting_create_future() -> asyncio.Future[Any]:
        made.append("future")
        return original_create_future()

    async def immediate(args: Any, run: Any) -> str:
        return "now"

    async def suspends_once(args: Any, run: Any) -> str:
        await asyncio.sleep(0.001)
        return "later"

    registry = registry_with(echo_tool(execute=immediate), echo_tool("later", execute=suspends_once))
    patch = pytest.MonkeyPatch()
    try:
        patch.setattr(_dispatch, "BodyDriver", CountingDriver)
        patch.setattr(loop, "create_future", counting_create_future)
        for _ in range(20):
            assert text(await registry.execute(call())) == "now"
        assert made == []  # the inline first step finished the body
        assert text(await registry.execute(call("later"))) == "later"
        # A suspending body: one driver, and only the sleep's own future (the shield is no future).
        assert made.count("driver") == 1 and made.count("future") == 1
    finally:
        patch.undo()


@types.coroutine
def _bad_yield(value: object) -> Generator[Any, None, None]:
    yield value


@async_test
async def test_bad_yields_are_thrown_back_like_a_task_would() -> None:
    other_loop = asyncio.new_event_loop()
    try:
        foreign = other_loop.create_future()
        foreign._asyncio_future_blocking = True

        async def yields_junk(args: Any, run: Any) -> str:
            await _bad_yield(42)
            return "unreachable"

        async def yields_non_blocking(args: Any, run: Any) -> str:
            future = asyncio.get_running_loop().create_future()
            await _bad_yield(future)  # _asyncio_future_blocking is False
            return "unreachable"

        async def yields_other_loop(args: Any, run: Any) -> str:
            await _bad_yield(foreign)
            return "unreachable"

        async def recovers(args: Any, run: Any) -> str:
            try:
                await _bad_yield("junk")
            except RuntimeError as exc:
                return f"caught: {exc}"
            return "unreachable"

        registry = registry_with(
            echo_tool("junk", execute=yields_junk),
            echo_tool("nonblocking", execute=yields_non_blocking),
            echo_tool("otherloop", execute=yields_other_loop),
            echo_tool("recovers", execute=recovers),
        )
        junk = await registry.execute(call("junk"))
        assert isinstance(junk, ToolFailure) and junk.error.message == "tool body got bad yield: 42"
        nonblocking = await registry.execute(call("nonblocking"))
        assert isinstance(nonblocking, ToolFailure)
        assert nonblocking.error.message.startswith("yield was used instead of yield from")
        otherloop = await registry.execute(call("otherloop"))
        assert isinstance(otherloop, ToolFailure)
        assert "attached to a different loop" in otherloop.error.message
        assert text(await registry.execute(call("recovers"))) == "caught: tool body got bad yield: 'junk'"
    finally:
        other_loop.close()


@async_test
async def test_awaitable_that_is_not_a_coroutine_is_driven_too() -> None:
    loop = asyncio.get_running_loop()
    pending: list[asyncio.Future[str]] = []

    def returns_future(args: Any, run: Any) -> asyncio.Future[str]:
        future: asyncio.Future[str] = loop.create_future()
        pending.append(future)
        return future

    registry = registry_with(echo_tool(execute=returns_future))  # type: ignore[arg-type]
    observed = observing(registry)
    task = asyncio.ensure_future(registry.execute(call()))
    while not pending:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pending[0].cancelled()  # the future the body handed over is cancelled with it
    assert len(observed) == 1 and is_aborted(observed[0])
    # Without a cancellation the future's value is the tool's value.
    task = asyncio.ensure_future(registry.execute(call()))
    while len(pending) < 2:
        await asyncio.sleep(0)
    pending[1].set_result("value")
    assert text(await task) == "value"


@async_test
async def test_a_wrapper_swallowing_the_cancellation_starts_no_second_body() -> None:
    bodies: list[str] = []

    async def body(args: Any, run: Any) -> str:
        bodies.append("body")
        await run.signal.wait()
        return "late"

    registry = registry_with(echo_tool(execute=body))
    observed = observing(registry)
    wrapper_saw: list[str] = []

    async def swallowing(dispatch: Any, next: Any) -> Any:
        try:
            return await next()
        except asyncio.CancelledError:
            wrapper_saw.append("cancelled")
        try:
            return await next()  # a retry after the task was cancelled
        except asyncio.CancelledError:
            wrapper_saw.append("cancelled again")
        return await next()

    registry.wrap_execute(swallowing)
    task = asyncio.ensure_future(registry.execute(call()))
    while not bodies:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert bodies == ["body"]
    assert wrapper_saw == ["cancelled", "cancelled again"]
    assert len(observed) == 1 and is_aborted(observed[0])


@async_test
async def test_a_cancelled_error_the_call_did_not_cause_is_the_bodys_failure() -> None:
    # A future the body awaits is cancelled by its owner (a transport closing down, a
    # task group elsewhere): that is the body's failure, never an exception out of execute.
    loop = asyncio.get_running_loop()
    owned: asyncio.Future[str] = loop.create_future()
    gone: asyncio.Future[str] = loop.create_future()
    gone.cancel("the connection closed")

    async def suspended(args: Any, run: Any) -> str:
        return await owned  # cancelled by its owner below

    async def at_once(args: Any, run: Any) -> str:
        return await gone  # already cancelled: raises in the body's first step

    async def in_a_group(args: Any, run: Any) -> str:
        raise BaseExceptionGroup("transport tasks", [asyncio.CancelledError()])

    registry = registry_with(
        echo_tool("suspended", execute=suspended),
        echo_tool("at_once", execute=at_once),
        echo_tool("in_a_group", execute=in_a_group),
    )
    observed = observing(registry)
    task = asyncio.ensure_future(registry.execute(call("suspended")))
    await asyncio.sleep(0)
    owned.cancel()
    result = await task  # a result, not a CancelledError
    assert not task.cancelled()
    assert isinstance(result, ToolFailure) and result.error.info is None
    assert text(result) == "Error: " + _dispatch.FOREIGN_CANCELLATION
    at_once_result = await registry.execute(call("at_once"))
    assert text(at_once_result) == f"Error: {_dispatch.FOREIGN_CANCELLATION}: the connection closed"
    grouped = await registry.execute(call("in_a_group"))
    assert isinstance(grouped, ToolFailure)
    assert grouped.error.message == "transport tasks"
    assert observed == [result, at_once_result, grouped]


@async_test
async def test_no_exception_a_body_raises_escapes_execute() -> None:
    import anyio

    raised: list[BaseException] = [
        OSError("broken pipe"),
        ConnectionResetError("reset by peer"),
        anyio.BrokenResourceError(),
        anyio.ClosedResourceError(),
        ExceptionGroup("unhandled errors in a TaskGroup", [anyio.EndOfStream()]),
        BaseExceptionGroup("mixed", [ValueError("v"), asyncio.CancelledError()]),
        asyncio.CancelledError("a stray cancellation"),
        UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"),
    ]
    for exc in raised:
        for suspends in (False, True):

            async def body(args: Any, run: Any, exc: BaseException = exc, suspends: bool = suspends) -> str:
                if suspends:
                    await asyncio.sleep(0)
                raise exc

            registry = registry_with(echo_tool(execute=body))
            result = await registry.execute(call())
            assert isinstance(result, ToolFailure), (exc, suspends)
    # Only what ends the process propagates.
    for fatal in (KeyboardInterrupt(), SystemExit(3)):

        async def ending(args: Any, run: Any, fatal: BaseException = fatal) -> str:
            await asyncio.sleep(0)
            raise fatal

        registry = registry_with(echo_tool(execute=ending))
        with pytest.raises(type(fatal)):
            await registry.execute(call())


@async_test
async def test_nested_execute_inside_a_body_is_cancelled_at_every_level() -> None:
    loop = asyncio.get_running_loop()
    foreign: asyncio.Future[str] = loop.create_future()
    signals: dict[str, Any] = {}
    unwound: list[str] = []

    async def inner(args: Any, run: Any) -> str:
        signals["inner"] = run.signal
        try:
            return await foreign
        finally:
            unwound.append("inner")

    registry = registry_with(echo_tool("inner", execute=inner))

    async def outer(args: Any, run: Any) -> str:
        signals["outer"] = run.signal
        try:
            result = await registry.execute(call("inner", signal=run.signal))
        finally:
            unwound.append("outer")
        return "outer saw " + text(result)

    registry.register(echo_tool("outer", execute=outer))
    observed = observing(registry)
    task = asyncio.ensure_future(registry.execute(call("outer")))
    while "inner" not in signals:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert signals["outer"].aborted and signals["inner"].aborted
    assert foreign.cancelled()
    assert unwound == ["inner", "outer"]  # the inner body settled first, then the outer one
    assert [is_aborted(r) for r in observed] == [True, True]


def test_an_uncooperative_body_is_awaited_to_its_end() -> None:
    """A body that swallows its cancellation keeps running, and the registry waits for it."""

    async def main() -> None:
        ended: list[str] = []

        async def body(args: Any, run: Any) -> str:
            try:
                await asyncio.sleep(2)
            except asyncio.CancelledError:
                ended.append("cancelled")
            await asyncio.sleep(0.02)
            ended.append("slept")
            return "x"

        registry = registry_with(echo_tool(execute=body))
        task = asyncio.ensure_future(registry.execute(call()))
        await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert ended == ["cancelled", "slept"]

    asyncio.run(main())


@async_test
async def test_concurrent_bodies_of_one_call_are_each_aborted_and_awaited() -> None:
    tool = ThreadTool()
    try:
        registry = registry_with(echo_tool(execute=tool.body))
        observed = observing(registry)

        async def twice_at_once(dispatch: Any, next: Any) -> Any:
            # A TaskGroup waits for both children when cancelled (gather would not:
            # it returns at the first cancelled child and orphans the other).
            async with asyncio.TaskGroup() as group:
                first = group.create_task(next())
                group.create_task(next())
            return first.result()

        registry.wrap_execute(twice_at_once)
        task = asyncio.ensure_future(registry.execute(call()))
        await tool.wait_started(2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert tool.running == 0 and tool.finished == ["hi", "hi"]
        assert len(observed) == 1 and is_aborted(observed[0])
    finally:
        tool.close()


@async_test
async def test_cancel_requests_are_left_for_the_task_to_account() -> None:
    """The registry never uncancels: two cancel() calls leave cancelling() == 2."""
    release = asyncio.Event()
    entered = asyncio.Event()

    async def body(args: Any, run: Any) -> str:
        entered.set()
        while not release.is_set():
            try:
                await release.wait()  # swallows every cancellation until released
            except asyncio.CancelledError:
                pass
        return "x"

    registry = registry_with(echo_tool(execute=body))
    seen: dict[str, Any] = {}

    async def caller() -> None:
        try:
            await registry.execute(call())
        except asyncio.CancelledError:
            current = asyncio.current_task()
            assert current is not None
            seen["cancelling"] = current.cancelling()
            raise

    task = asyncio.ensure_future(caller())
    await entered.wait()
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen["cancelling"] == 2


@async_test
async def test_outer_cancel_inside_asyncio_timeout_stays_a_cancellation() -> None:
    tool = ThreadTool()
    try:
        registry = registry_with(echo_tool(execute=tool.body))
        outcome: dict[str, str] = {}

        async def caller() -> None:
            try:
                async with asyncio.timeout(30):
                    await registry.execute(call())
            except TimeoutError:
                outcome["kind"] = "timeout"
            except asyncio.CancelledError:
                outcome["kind"] = "cancelled"
                raise

        task = asyncio.ensure_future(caller())
        await tool.wait_started()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert outcome == {"kind": "cancelled"}  # not mistaken for the timeout
        assert tool.running == 0
    finally:
        tool.close()


async def _resume_order(start: Any) -> list[str]:
    """The loop iterations (ticks) around a coroutine that awaits a future completed by a loop callback."""
    loop = asyncio.get_running_loop()
    order: list[str] = []
    ticks = 0

    def tick() -> None:
        nonlocal ticks
        ticks += 1
        order.append(f"tick {ticks}")
        if ticks < 8:
            loop.call_soon(tick)

    async def waits() -> str:
        future: asyncio.Future[str] = loop.create_future()
        loop.call_soon(loop.call_soon, future.set_result, "v")  # completed two iterations from now
        order.append("awaiting")
        value = await future
        order.append("resumed")
        return value

    loop.call_soon(tick)
    await asyncio.create_task(start(waits))
    while ticks < 8:
        await asyncio.sleep(0)
    return order


@async_test
async def test_an_await_in_a_body_resumes_in_as_many_loop_iterations_as_under_plain_asyncio() -> None:
    async def plain(waits: Any) -> None:
        assert await waits() == "v"

    async def through_execute(waits: Any) -> None:
        async def body(args: Any, run: Any) -> str:
            return await waits()

        registry = registry_with(echo_tool(execute=body))
        assert text(await registry.execute(call())) == "v"

    expected = await _resume_order(plain)
    assert expected.index("resumed") > expected.index("awaiting") + 1  # the wait really spans ticks
    assert await _resume_order(through_execute) == expected
