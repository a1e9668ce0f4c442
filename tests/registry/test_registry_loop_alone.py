"""Calls that run alone: a task of their own without a gate, and the guarantees of every call task.

A call runs alone (no gate: nothing to order it against) when nothing is in
flight and nothing may start before it commits: an exclusive call, the last
call, or any call with ``max_parallel=1``. Every call, alone or not, runs in
a task of its own (one path). These tests pin which calls run alone and what
a call task gives: model order, an isolated context, futures it waits for
never cancelled, the loop task's cancellation turned into the loop's stop
abort (the call committed and logged first, wherever it lands), and an
asyncio Task's handling of bad yields.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import types
from collections.abc import Generator
from typing import Any

import pytest

from dsh_codegen.registry import AbortController, ToolRegistry
from dsh_codegen.registry._definitions import ToolOutput, define_tool
from dsh_codegen.registry._errors import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH
from dsh_codegen.registry._execution import ToolExecutionInput
from dsh_codegen.registry._loop import execute_tool_calls
from dsh_codegen.registry._results import ToolExecutionResult, ToolFailure, ToolSuccess, failure_from_exception
from dsh_codegen.registry._session_log import MemorySessionLog

from _loop_fakes import FakeRegistry, FakeTool, calls, echo, run, sleeper


def code_of(result: Any) -> str | None:
    if not isinstance(result, ToolFailure) or result.error.info is None:
        return None
    return result.error.info.code


class TaskRecording(FakeRegistry):
    """Records the task each call's execute() ran in."""

    def __init__(self, tools: dict[str, FakeTool]) -> None:
        super().__init__(tools)
        self.tasks: dict[str, asyncio.Task[Any] | None] = {}

    async def execute(self, input: ToolExecutionInput, *, gate: Any = None) -> ToolExecutionResult:
        self.tasks[input.call_id] = asyncio.current_task()
        return await super().execute(input, gate=gate)


# -- which calls run alone ------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "max_parallel", "inline"),
    [
        (("x", "p", "p", "x", "p"), 10, ["c0", "c3", "c4"]),  # exclusive calls, and the last one started alone
        (("p", "p", "p"), 10, []),  # the last call starts while the others run
        (("p", "p", "p"), 1, ["c0", "c1", "c2"]),  # serial: every call runs alone
        (("p",), 10, ["c0"]),
        (("x", "x"), 3, ["c0", "c1"]),
    ],
)
def test_calls_that_run_alone_run_without_gate_each_in_its_own_task(
    names: tuple[str, ...], max_parallel: int, inline: list[str]
) -> None:
    registry = TaskRecording({"p": FakeTool(echo), "x": FakeTool(echo, parallel=False)})

    async def main() -> asyncio.Task[Any] | None:
        await execute_tool_calls(registry, calls(*names), signal=AbortController().signal, max_parallel=max_parallel)
        return asyncio.current_task()

    loop_task = run(main())
    assert registry.ungated == inline  # the fake also checks that each really ran alone
    tasks = list(registry.tasks.values())
    assert loop_task not in tasks and None not in tasks and len(set(tasks)) == len(names)
    assert [call_id for kind, call_id in registry.trace if kind == "commit"] == [f"c{i}" for i in range(len(names))]


def test_reclassification_still_follows_each_lone_commit() -> None:
    # c0 runs alone; its commit flips the classifier, so c1 and c2 overlap as tasks.
    registry = TaskRecording({"t": FakeTool(sleeper(0.01), parallel=False)})

    def flip(call_id: str) -> None:
        if call_id == "c0":
            registry.tools["t"].parallel = True

    registry.on_commit = flip
    run(execute_tool_calls(registry, calls("t", "t", "t"), signal=AbortController().signal))
    assert registry.ungated == ["c0"]
    assert registry.max_running == 2


# -- a lone call behaves like a call task -------------------------------------------


def test_a_lone_call_runs_in_its_own_context_copy() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[tuple[str, str]] = []

    async def body(arguments: Any, signal: Any) -> Any:
        seen.append(("before", var.get()))
        var.set("set by the call")
        await asyncio.sleep(0)
        seen.append(("after", var.get()))
        return "ok"

    for names in (("x", "x"), ("p", "p")):  # lone calls, then call tasks: the same isolation
        seen.clear()
        registry = FakeRegistry({"x": FakeTool(body, parallel=False), "p": FakeTool(body)})

        async def main() -> str:
            var.set("caller")
            await execute_tool_calls(registry, calls(*names), signal=AbortController().signal)
            return var.get()

        assert run(main()) == "caller"
        assert seen.count(("before", "caller")) == 2 and seen.count(("after", "set by the call")) == 2


def _real_registry(foreign: list[asyncio.Future[str]], running: set[str], observed: dict[str, int]) -> ToolRegistry:
    """An exclusive tool with a suspending pre-execute listener, guard, wrapper, body and post-execute listener.

    The pre-execute listener and the body each await a future they do not own
    (resolved by loop callbacks). The loop turns its cancellation into an abort
    of the calls' signal: that cancels the body as a task is cancelled (its
    future may be cancelled, and the body is still awaited), never the policy's.
    """

    def foreign_future(hops: int, owner: str = "policy") -> asyncio.Future[str]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()
        if owner == "policy":
            foreign.append(future)

        def resolve(remaining: int) -> None:
            if not future.done():
                if remaining <= 0:
                    future.set_result("foreign")
                else:
                    loop.call_soon(resolve, remaining - 1)

        loop.call_soon(resolve, hops)
        return future

    async def body(args: Any, run: Any) -> Any:
        running.add(run.call_id)
        try:
            await asyncio.sleep(0)
            return await foreign_future(3, "body")
        finally:
            running.discard(run.call_id)

    registry = ToolRegistry()
    registry.register(
        define_tool(
            name="serial",
            description="an exclusive tool",
            parameters={},
            output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}]),
            execute=body,
        )
    )

    async def pre(execution: Any, next: Any) -> Any:
        await foreign_future(2)
        return await next()

    async def wrapper(dispatch: Any, next: Any) -> Any:
        await asyncio.sleep(0)
        result = await next()
        await asyncio.sleep(0)
        return result

    async def post(execution: Any, result: Any, next: Any) -> Any:
        await asyncio.sleep(0)
        return await next()

    def observe(execution: Any, result: Any) -> None:
        observed[execution.call_id] = observed.get(execution.call_id, 0) + 1

    registry.on_pre_execute(pre)
    registry.guard(lambda execution: None)
    registry.wrap_execute(wrapper)
    registry.on_post_execute(post)
    registry.on_result(observe)
    return registry


def _cancel_after(hops: int, action: Any) -> None:
    loop = asyncio.get_running_loop()

    def hop(remaining: int) -> None:
        if remaining <= 0:
            action()
        else:
            loop.call_soon(hop, remaining - 1)

    loop.call_soon(hop, hops)


@pytest.mark.parametrize("second_cancel", [None, 1, 4])
def test_cancelling_the_loop_at_every_await_point_of_lone_calls(second_cancel: int | None) -> None:
    """Cancel the awaiting task after 0, 1, 2, ... loop iterations, until the batch finishes first."""
    finished_first = False
    hops = 0
    cancelled_rounds = 0
    while not finished_first:
        foreign: list[asyncio.Future[str]] = []
        running: set[str] = set()
        observed: dict[str, int] = {}
        log = MemorySessionLog()
        registry = _real_registry(foreign, running, observed)
        batch = calls("serial", "serial", "serial")

        async def main() -> list[Any] | None:
            task = asyncio.create_task(execute_tool_calls(registry, batch, signal=AbortController().signal, log=log))
            _cancel_after(hops, task.cancel)
            if second_cancel is not None:
                _cancel_after(hops + second_cancel, task.cancel)
            try:
                results = await task
            except asyncio.CancelledError:
                results = None
            assert running == set(), f"hops {hops}: a body is still running"
            assert asyncio.all_tasks() == {asyncio.current_task()}, f"hops {hops}: a task outlived the batch"
            return results

        results = run(main())
        where = f"hops {hops}, second cancel {second_cancel}"
        assert not any(future.cancelled() for future in foreign), f"{where}: a policy's foreign future was cancelled"
        events = [(event["type"], event["callId"]) for event in log.events]
        if results is None:
            cancelled_rounds += 1
            started = [call_id for kind, call_id in events if kind == "tool/call"]
            # The started calls committed and were logged, in order; nothing was fabricated
            # for the rest, and nothing started after the cancellation.
            assert events == [
                pair for call_id in started for pair in (("tool/call", call_id), ("tool/result", call_id))
            ], where
            assert observed == {call_id: 1 for call_id in started}, where
            last = log.events[-1]
            assert last["isError"] is False or last["error"]["info"]["code"] in (
                TOOL_ABORTED,
                TOOL_ABORTED_BEFORE_DISPATCH,
            ), where
        else:
            finished_first = True
            assert all(isinstance(result, ToolSuccess) for result in results), where
            assert observed == {"c0": 1, "c1": 1, "c2": 1}, where
        hops += 1
    assert cancelled_rounds >= 30  # every await point of all three calls was hit


def test_a_cancelled_lone_call_sees_the_loop_stop_abort() -> None:
    reasons: list[object] = []

    async def body(arguments: Any, signal: Any) -> Any:
        reasons.append(await signal.wait())
        return "stopped"

    registry = FakeRegistry({"x": FakeTool(body, parallel=False)})

    async def main() -> None:
        task = asyncio.create_task(execute_tool_calls(registry, calls("x", "x"), signal=AbortController().signal))
        await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert [str(reason) for reason in reasons] == ["tool call loop stopped"]
    assert registry.executed == ["c0"]


def test_a_failure_after_an_absorbed_cancellation_still_raises_cancelled_error() -> None:
    class FailingLog(MemorySessionLog):
        def append(self, event: Any) -> None:
            if event["type"] == "tool/result":
                raise OSError("disk full")
            super().append(event)

    registry = FakeRegistry({"x": FakeTool(sleeper(5), parallel=False)})

    async def main() -> None:
        task = asyncio.create_task(
            execute_tool_calls(registry, calls("x", "x"), signal=AbortController().signal, log=FailingLog())
        )
        await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as raised:
            await task
        assert isinstance(raised.value.__cause__, OSError)

    run(main())
    assert registry.running == set() and registry.executed == ["c0"]


def test_a_lone_failure_without_cancellation_is_the_internal_failure() -> None:
    class FailingLog(MemorySessionLog):
        def append(self, event: Any) -> None:
            if event["type"] == "tool/result":
                raise OSError("disk full")
            super().append(event)

    registry = FakeRegistry({"x": FakeTool(echo, parallel=False)})
    with pytest.raises(OSError, match="disk full"):
        run(execute_tool_calls(registry, calls("x", "x"), signal=AbortController().signal, log=FailingLog()))
    assert registry.executed == ["c0"]


# -- what execute() returns, and what a lone call yields ------------------------------


class _Yield:
    """An awaitable that yields ``value`` once to whatever drives it."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, None]:
        yield self.value


def _bad_yields() -> list[Any]:
    def generator() -> Generator[None, None, None]:
        yield None

    other_loop = asyncio.new_event_loop()
    foreign = other_loop.create_future()
    other_loop.close()
    return [42, "text", generator(), foreign]


async def _await_and_report(value: object) -> str:
    try:
        await _Yield(value)
    except RuntimeError as exc:
        # The text names the task (its repr): compare the rest.
        return "RuntimeError: " + re.sub(r"<Task .*?> (with|got) ", r"<task> \1 ", str(exc))
    return "no error"


def test_bad_yields_in_a_lone_call_get_the_errors_a_task_gives() -> None:
    for value in _bad_yields():

        class Yielding(FakeRegistry):
            async def execute(self, input: Any, *, gate: Any = None) -> ToolExecutionResult:
                return ToolSuccess(await _await_and_report(value), [])

        async def in_a_task() -> str:
            return await asyncio.create_task(_await_and_report(value))

        expected = run(in_a_task())
        assert expected.startswith("RuntimeError: ")
        results = run(execute_tool_calls(Yielding({}), calls("x"), signal=AbortController().signal))
        assert isinstance(results[0], ToolSuccess) and results[0].value == expected, value


def test_a_lone_call_awaiting_its_own_task_gets_the_task_error() -> None:
    class SelfAwaiting(FakeRegistry):
        async def execute(self, input: Any, *, gate: Any = None) -> ToolExecutionResult:
            task = asyncio.current_task()
            assert task is not None
            try:
                await task
            except RuntimeError as exc:
                return failure_from_exception(exc)
            raise AssertionError("unreachable")

    results = run(execute_tool_calls(SelfAwaiting({}), calls("x"), signal=AbortController().signal))
    assert isinstance(results[0], ToolFailure) and "cannot await on itself" in results[0].error.message


def test_bare_yields_give_the_loop_an_iteration() -> None:
    order: list[str] = []

    class Yielding(FakeRegistry):
        async def execute(self, input: Any, *, gate: Any = None) -> ToolExecutionResult:
            asyncio.get_running_loop().call_soon(order.append, "callback")
            await asyncio.sleep(0)
            order.append("resumed")
            return ToolSuccess("ok", [])

    run(execute_tool_calls(Yielding({}), calls("x"), signal=AbortController().signal))
    assert order == ["callback", "resumed"]


@pytest.mark.parametrize("kind", ["future", "custom", "generator-coroutine"])
def test_execute_may_return_any_awaitable(kind: str) -> None:
    class AnyAwaitable(FakeRegistry):
        def execute(self, input: Any, *, gate: Any = None) -> Any:  # type: ignore[override]
            result = ToolSuccess(input.call_id, [])
            if kind == "future":
                future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                asyncio.get_running_loop().call_soon(future.set_result, result)
                return future
            if kind == "custom":

                class Done:
                    def __await__(self) -> Generator[Any, None, Any]:
                        yield None
                        return result

                return Done()

            @types.coroutine
            def old_style() -> Generator[Any, None, Any]:
                yield None
                return result

            return old_style()

    results = run(
        execute_tool_calls(AnyAwaitable({}), calls("x", "y"), signal=AbortController().signal, max_parallel=1)
    )
    assert [result.value for result in results if isinstance(result, ToolSuccess)] == ["c0", "c1"]


def test_execute_returning_a_non_awaitable_is_an_internal_failure() -> None:
    class NotAwaitable(FakeRegistry):
        def execute(self, input: Any, *, gate: Any = None) -> Any:  # type: ignore[override]
            return 42

    with pytest.raises(TypeError, match="registry.execute returned int, which cannot be awaited"):
        run(execute_tool_calls(NotAwaitable({}), calls("x"), signal=AbortController().signal))


def test_a_pre_aborted_signal_still_runs_nothing() -> None:
    controller = AbortController()
    controller.abort()
    registry = FakeRegistry({"x": FakeTool(echo, parallel=False)})
    results = run(execute_tool_calls(registry, calls("x"), signal=controller.signal))
    assert registry.executed == [] and code_of(results[0]) == TOOL_ABORTED_BEFORE_DISPATCH


# -- cancellations that code inside a call makes and withdraws ----------------------------


def _waiting_tool(registry: ToolRegistry, waiting: tuple[str, ...] = ("c0",)) -> None:
    async def body(args: Any, run: Any) -> Any:
        if run.call_id in waiting:
            await run.signal.wait()  # only ends by abort
        return "done"

    registry.register(
        define_tool(
            name="serial",
            description="an exclusive tool",
            parameters={},
            output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}]),
            execute=body,
        )
    )


def test_a_timeout_inside_a_call_does_not_cancel_the_caller() -> None:
    """``asyncio.timeout()`` in a wrapper cancels the call's task and withdraws that: the wrapper's outcome stands."""
    registry = ToolRegistry()
    _waiting_tool(registry)
    timed_out: list[str] = []

    async def wrapper(dispatch: Any, next: Any) -> Any:
        try:
            async with asyncio.timeout(0.005):
                return await next()
        finally:
            timed_out.append(dispatch.call_id)

    registry.wrap_execute(wrapper)

    async def main() -> tuple[list[Any], int]:
        results = await execute_tool_calls(registry, calls("serial", "serial"), signal=AbortController().signal)
        task = asyncio.current_task()
        assert task is not None
        return results, task.cancelling()

    results, cancelling = run(main())
    assert cancelling == 0
    assert timed_out == ["c0", "c1"]
    # c0's body was stopped through its signal; the wrapper then raised TimeoutError, as under plain asyncio.
    assert isinstance(results[0], ToolFailure) and results[0].error.message == "TimeoutError"
    assert isinstance(results[1], ToolSuccess) and results[1].value == "done"


def test_a_task_group_inside_a_call_does_not_cancel_the_caller() -> None:
    # The child fails while the group's body waits for next(): the group cancels
    # its task (the call's) and withdraws that in __aexit__.
    registry = ToolRegistry()
    _waiting_tool(registry, waiting=("c0", "c1"))

    async def wrapper(dispatch: Any, next: Any) -> Any:
        async def fails() -> None:
            raise ValueError("child failed")

        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(fails())
                return await next()
        except* ValueError:
            raise RuntimeError("the wrapper's child failed") from None

    registry.wrap_execute(wrapper)
    results = run(execute_tool_calls(registry, calls("serial", "serial"), signal=AbortController().signal))
    assert [result.error.message for result in results if isinstance(result, ToolFailure)] == [
        "the wrapper's child failed",
        "the wrapper's child failed",
    ]


def test_a_timeout_around_the_loop_still_times_it_out() -> None:
    registry = ToolRegistry()
    _waiting_tool(registry)
    log = MemorySessionLog()

    async def main() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.005):
                await execute_tool_calls(registry, calls("serial", "serial"), signal=AbortController().signal, log=log)

    run(main())
    # c0 was stopped, committed and logged; c1 never started.
    assert [(event["type"], event["callId"]) for event in log.events] == [("tool/call", "c0"), ("tool/result", "c0")]


def test_a_done_future_yielded_costs_one_loop_iteration_as_in_a_task() -> None:
    async def yield_done(order: list[str]) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        future._asyncio_future_blocking = True
        asyncio.get_running_loop().call_soon(order.append, "callback")
        await _Yield(future)
        order.append("resumed")

    class Yielding(FakeRegistry):
        async def execute(self, input: Any, *, gate: Any = None) -> ToolExecutionResult:
            await yield_done(lone_order)
            return ToolSuccess("ok", [])

    lone_order: list[str] = []
    task_order: list[str] = []

    async def in_a_task() -> None:
        await asyncio.create_task(yield_done(task_order))

    run(in_a_task())
    run(execute_tool_calls(Yielding({}), calls("x"), signal=AbortController().signal))
    assert lone_order == task_order == ["callback", "resumed"]
