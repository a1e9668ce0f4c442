"""The one scheduler of ordered calls (``dsh_codegen.registry.scheduler``), on calls of its own.

Its two users (the loop helper, Code Mode's sub-call pool) are tested in
tests/registry (test_registry_loop_*) and tests/codemode (test_codemode_bridge*); these tests pin the module's
contract without them: order, bounds, barriers, turns, gates, eager starts,
withdrawal, stopping, waiting and failures.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import pytest

from dsh_codegen.registry.scheduler import CallScheduler, CallState, ScheduledCall

pytestmark = pytest.mark.once  # orchestration only: nothing here depends on the schema twin

T = TypeVar("T")
Trace = list[tuple[str, str]]


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class Step(ScheduledCall):
    """A call that records its phases in ``trace``; its body awaits ``body()``."""

    __slots__ = ("body", "errors", "gated", "label", "ordered_stages", "parallel", "trace")

    def __init__(
        self,
        trace: Trace,
        label: str,
        *,
        parallel: bool = True,
        body: Callable[[], Awaitable[Any]] | None = None,
        ordered_stages: bool = True,
    ) -> None:
        super().__init__()
        self.trace = trace
        self.label = label
        self.parallel = parallel
        self.body = body
        self.ordered_stages = ordered_stages
        self.errors: list[BaseException] = []
        self.gated: bool | None = None

    def classify(self) -> bool:
        self.trace.append(("classify", self.label))
        return self.parallel

    def starting(self) -> None:
        self.trace.append(("start", self.label))

    def needs_gate(self) -> bool:
        return self.ordered_stages

    async def run(self) -> str:
        gate = self.gate()
        self.gated = gate is not None
        if gate is not None:
            async with gate.policy():
                self.trace.append(("pre", self.label))
                await asyncio.sleep(0)
        if self.body is not None:
            await self.body()
        self.trace.append(("end", self.label))
        return self.label

    def commit(self, outcome: Any) -> None:
        assert outcome == self.label
        self.trace.append(("commit", self.label))

    def failed(self, error: BaseException) -> None:
        self.errors.append(error)


def phase(trace: Trace, kind: str) -> list[str]:
    return [label for what, label in trace if what == kind]


def sleeping(seconds: float) -> Callable[[], Awaitable[None]]:
    async def body() -> None:
        await asyncio.sleep(seconds)

    return body


# -- order, bound, barriers --------------------------------------------------------------


@pytest.mark.parametrize("bound", [1, 2, 10])
def test_parallel_calls_overlap_up_to_the_bound_and_an_exclusive_call_runs_alone(bound: int) -> None:
    trace: Trace = []
    running: set[str] = set()
    peak: list[int] = [0]
    alone: list[bool] = []
    target = min(bound, 3)  # three parallel calls lead the batch

    async def main() -> None:
        enough = asyncio.Event()

        def body(label: str) -> Callable[[], Awaitable[None]]:
            async def held() -> None:
                running.add(label)
                peak[0] = max(peak[0], len(running))
                if len(running) >= target:
                    enough.set()
                if label == "x":
                    alone.append(running == {"x"})
                # Each body stays until as many run as may (the timeout only guards against a hang).
                await asyncio.wait_for(enough.wait(), 5)
                await asyncio.sleep(0)
                running.discard(label)

            return held

        scheduler: CallScheduler[Step] = CallScheduler(bound)
        labels = ["p0", "p1", "p2", "x", "p3", "p4"]
        scheduler.submit_batch(Step(trace, label, parallel=label != "x", body=body(label)) for label in labels)
        await scheduler.wait()

    run(main())
    assert phase(trace, "start") == ["p0", "p1", "p2", "x", "p3", "p4"]
    assert phase(trace, "commit") == ["p0", "p1", "p2", "x", "p3", "p4"]
    assert peak[0] == target and alone == [True]
    # Nothing starts beside the exclusive call: it starts after p2's commit, p3 after its own.
    assert trace.index(("start", "x")) > trace.index(("commit", "p2"))
    assert trace.index(("start", "p3")) > trace.index(("commit", "x"))


def test_commits_and_pre_execute_keep_submission_order_whatever_order_bodies_finish_in() -> None:
    trace: Trace = []

    async def main() -> None:
        # Forced, not timed: c0 ends only after c1, c1 only after c2.
        ended = {label: asyncio.Event() for label in ("c0", "c1", "c2")}

        def after(label: str | None, own: str) -> Callable[[], Awaitable[None]]:
            async def body() -> None:
                if label is not None:
                    await asyncio.wait_for(ended[label].wait(), 5)
                ended[own].set()

            return body

        scheduler: CallScheduler[Step] = CallScheduler(10)
        steps = [
            Step(trace, "c0", body=after("c1", "c0")),
            Step(trace, "c1", body=after("c2", "c1")),
            Step(trace, "c2", body=after(None, "c2")),
        ]
        scheduler.submit_batch(steps)
        await scheduler.wait()

    run(main())
    assert phase(trace, "end") == ["c2", "c1", "c0"]
    assert phase(trace, "commit") == ["c0", "c1", "c2"]
    assert phase(trace, "pre") == ["c0", "c1", "c2"]


def test_the_head_is_classified_only_when_it_could_start_and_again_after_each_commit() -> None:
    trace: Trace = []

    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(1)
        scheduler.submit_batch(Step(trace, f"c{i}", body=sleeping(0.001)) for i in range(3))
        await scheduler.wait()

    run(main())
    # With a bound of 1 nothing could start beside a call in flight: one classification per call.
    assert phase(trace, "classify") == ["c0", "c1", "c2"]

    trace.clear()
    flipped: list[Step] = []

    class Flipping(Step):
        __slots__ = ()

        def commit(self, outcome: Any) -> None:
            super().commit(outcome)
            flipped[0].parallel = True  # the commit changes the next call's class

    async def flip() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(10)
        first = Flipping(trace, "c0", body=sleeping(0.002))
        waiting = Step(trace, "c1", parallel=False, body=sleeping(0.002))
        flipped.append(waiting)
        scheduler.submit_batch([first, waiting, Step(trace, "c2", body=sleeping(0.002))])
        await scheduler.wait()

    run(flip())
    # c1 was exclusive while c0 ran, parallel after its commit: c1 and c2 then overlap.
    assert phase(trace, "classify") == ["c0", "c1", "c1", "c2"]
    assert trace.index(("start", "c2")) < trace.index(("commit", "c1"))


# -- gates ---------------------------------------------------------------------------------


def test_calls_that_run_alone_get_no_gate_and_the_others_one() -> None:
    async def gated(bound: int, classes: list[bool], ordered_stages: bool = True) -> list[bool | None]:
        trace: Trace = []
        scheduler: CallScheduler[Step] = CallScheduler(bound)
        steps = [
            Step(trace, f"c{i}", parallel=parallel, body=sleeping(0.001), ordered_stages=ordered_stages)
            for i, parallel in enumerate(classes)
        ]
        scheduler.submit_batch(steps)
        await scheduler.wait()
        return [step.gated for step in steps]

    # The exclusive calls, and the batch's last call started with nothing in flight, run alone.
    assert run(gated(10, [False, True, True, False, True])) == [False, True, True, False, False]
    assert run(gated(10, [True, True, True])) == [True, True, True]  # the last starts beside the others
    assert run(gated(1, [True, True])) == [False, False]  # a bound of 1: every call alone
    assert run(gated(10, [True, True], ordered_stages=False)) == [False, False]


def test_a_call_without_ordered_stages_passes_its_policy_turn_at_once() -> None:
    trace: Trace = []

    async def until_c2_is_past_pre_execute() -> None:
        for _ in range(1000):
            if ("pre", "c2") in trace:
                return
            await asyncio.sleep(0)

    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(10)
        slow = Step(trace, "c0", body=until_c2_is_past_pre_execute)
        plain = Step(trace, "c1", ordered_stages=False)
        later = Step(trace, "c2")
        scheduler.submit_batch([slow, plain, later, Step(trace, "c3")])
        await scheduler.wait()
        assert (slow.gated, plain.gated, later.gated) == (True, False, True)

    run(main())
    # c2's pre-execute waited for c0's, not for c0's body: c1 had none to wait for.
    assert trace.index(("pre", "c2")) < trace.index(("end", "c0"))
    assert phase(trace, "commit") == ["c0", "c1", "c2", "c3"]


class Held(Step):
    """A call held in flight until ``open`` is set; it never enters its gate (the test does, by hand)."""

    __slots__ = ("open",)

    def __init__(self, label: str) -> None:
        super().__init__([], label)
        self.open = asyncio.Event()

    async def run(self) -> str:
        await self.open.wait()
        return self.label


def test_a_passed_turn_costs_no_wait_and_a_pending_one_wakes_its_waiter() -> None:
    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(10)
        first, second, third, fourth = Held("c0"), Held("c1"), Held("c2"), Held("c3")
        scheduler.submit_batch([first, second, third, fourth])
        second_gate, third_gate = second.gate(), third.gate()
        assert second_gate is not None and third_gate is not None
        # c0 is in flight, short of its commit: c1's policy turn waits (a future) until c0 passes its own.
        second_policy = second_gate.policy()
        waiting = asyncio.ensure_future(second_policy.__aenter__())
        await asyncio.sleep(0)
        assert not waiting.done()
        first.open.set()  # c0 commits, which passes its turns and wakes c1's wait
        await waiting
        assert first.state is CallState.DONE and first._waiter is None
        # A turn already passed costs no wait: entering returns at its first step (no future, no loop iteration).
        again = second.gate()
        assert again is not None
        with pytest.raises(StopIteration):
            again.policy().__aenter__().send(None)
        # A cancelled wait leaves nothing held; a later wait still works.
        cancelled = asyncio.ensure_future(third_gate.policy().__aenter__())
        await asyncio.sleep(0)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        later_gate = third.gate()
        assert later_gate is not None
        later = asyncio.ensure_future(later_gate.policy().__aenter__())
        await asyncio.sleep(0)
        assert not later.done()
        await second_policy.__aexit__(None, None, None)  # c1 is past pre-execute
        await later
        with pytest.raises(RuntimeError, match=r"PipelineGate.policy\(\) entered twice for one call"):
            later_gate.policy()
        for call in (second, third, fourth):
            call.open.set()
        assert await scheduler.drain() is False

    run(main())


# -- how calls start --------------------------------------------------------------------------


def test_every_call_runs_in_a_task_of_its_own_started_eagerly_where_asyncio_can() -> None:
    trace: Trace = []
    tasks: dict[str, asyncio.Task[Any] | None] = {}

    class Instant(Step):
        __slots__ = ()

        async def run(self) -> str:
            tasks[self.label] = asyncio.current_task()
            async with asyncio.timeout(10):  # needs a task of its own: the call's
                self.trace.append(("end", self.label))
            return self.label

    async def main() -> None:
        submitter = asyncio.current_task()
        for eager in (False, True):
            scheduler: CallScheduler[Step] = CallScheduler(10, eager=eager)
            call = Instant(trace, f"eager={eager}")
            scheduler.submit(call)
            if eager and sys.version_info >= (3, 12):
                # asyncio's eager start: the first step ran inside submit, in the call's task.
                assert call.state is CallState.DONE and call.outcome == call.label
            else:
                assert call.state is CallState.IN_FLIGHT  # its task runs on the next loop iteration
            await scheduler.wait()
            assert scheduler.in_flight() == [] and call.outcome == call.label
            assert tasks[call.label] is not None and tasks[call.label] is not submitter

    run(main())
    # Started on an idle scheduler and done before another call came: never classified.
    assert phase(trace, "classify") == []
    assert phase(trace, "commit") == ["eager=False", "eager=True"]


@pytest.mark.parametrize("eager", [False, True])
def test_a_call_on_an_idle_scheduler_is_classified_only_when_another_comes(eager: bool) -> None:
    trace: Trace = []

    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(10, eager=eager)
        alone = Step(trace, "c0")
        scheduler.submit(alone)
        await scheduler.wait()  # done before another call came: never classified
        first = Step(trace, "c1", body=sleeping(0.002))
        scheduler.submit(first)
        assert phase(trace, "classify") == []
        scheduler.submit(Step(trace, "c2", body=sleeping(0.002)))
        # c2 could start beside c1: c1 was classified then (parallel), then c2, which started.
        assert phase(trace, "classify") == ["c1", "c2"] and ("start", "c2") in trace
        await scheduler.wait()

    run(main())
    assert phase(trace, "commit") == ["c0", "c1", "c2"]


def test_each_call_runs_in_a_copy_of_the_context_it_was_submitted_from() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: dict[str, str] = {}

    class Reading(Step):
        __slots__ = ()

        async def run(self) -> str:
            seen[self.label] = var.get()
            var.set("set by " + self.label)
            await asyncio.sleep(0.001)
            return self.label

    async def main() -> None:
        for eager in (False, True):
            scheduler: CallScheduler[Step] = CallScheduler(1, eager=eager)
            var.set(f"submitter, eager={eager}")
            # c1 starts after c0 commits, from c0's task: it still sees its submitter's context.
            trace: Trace = []
            scheduler.submit(Reading(trace, "c0"))
            scheduler.submit(Reading(trace, "c1"))
            await scheduler.wait()
            assert seen == {"c0": f"submitter, eager={eager}", "c1": f"submitter, eager={eager}"}
            assert var.get() == f"submitter, eager={eager}"

    run(main())


# -- withdrawal, stopping, waiting -------------------------------------------------------------


def test_a_withdrawn_call_never_runs_and_the_turns_pass_through_it() -> None:
    trace: Trace = []

    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(1)
        first, second, third = Step(trace, "c0", body=sleeping(0.002)), Step(trace, "c1"), Step(trace, "c2")
        scheduler.submit(first)
        scheduler.submit(second)
        scheduler.submit(third)
        assert scheduler.withdraw(second) and second.state is CallState.WITHDRAWN
        assert not scheduler.withdraw(second)
        assert not scheduler.withdraw(first)  # in flight: the caller aborts it instead
        await scheduler.wait()

    run(main())
    assert phase(trace, "start") == ["c0", "c2"] and phase(trace, "commit") == ["c0", "c2"]


def test_stop_withdraws_the_queue_and_refuses_later_submissions() -> None:
    trace: Trace = []

    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(1)
        steps = [Step(trace, f"c{i}", body=sleeping(0.002)) for i in range(3)]
        for step in steps:
            scheduler.submit(step)
        assert scheduler.in_flight() == [steps[0]]
        assert scheduler.stop() == steps[1:]
        assert [step.state for step in steps] == [CallState.IN_FLIGHT, CallState.WITHDRAWN, CallState.WITHDRAWN]
        with pytest.raises(RuntimeError, match="no call can be submitted after stop"):
            scheduler.submit(Step(trace, "late"))
        await scheduler.wait()
        assert steps[0].state is CallState.DONE and scheduler.in_flight() == []

    run(main())
    assert phase(trace, "commit") == ["c0"]


def test_submitting_twice_or_a_bad_bound_is_refused() -> None:
    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(2)
        call = Step([], "c0", body=sleeping(0.001))
        scheduler.submit(call)
        with pytest.raises(RuntimeError, match="a call can be submitted once"):
            scheduler.submit(call)
        await scheduler.wait()
        for bad in (0, -1, True, 1.5, None):
            with pytest.raises(ValueError, match="max_parallel must be a positive integer"):
                CallScheduler(bad)  # type: ignore[arg-type]

    run(main())


def test_cancelling_a_wait_stops_the_scheduler_at_once_and_drain_absorbs_cancellations() -> None:
    trace: Trace = []
    release: list[asyncio.Future[None]] = []

    def held() -> Callable[[], Awaitable[None]]:
        async def body() -> None:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            release.append(future)
            await future

        return body

    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(1)
        scheduler.submit_batch([Step(trace, "c0", body=held()), Step(trace, "c1", body=held())])
        waiting = asyncio.ensure_future(scheduler.wait())
        while not release:
            await asyncio.sleep(0)
        release[0].set_result(None)  # c0 commits before the waiting task sees its cancellation
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert phase(trace, "start") == ["c0"]  # c1 never started
        assert scheduler.in_flight() == []  # c0 had committed

    run(main())
    assert phase(trace, "commit") == ["c0"]


# -- failures ---------------------------------------------------------------------------------


def test_each_failure_reaches_its_call_and_the_scheduler_goes_on() -> None:
    trace: Trace = []

    class Failing(Step):
        __slots__ = ("where",)

        def __init__(self, label: str, where: str) -> None:
            super().__init__(trace, label, parallel=where != "classify-exclusive")
            self.where = where

        def classify(self) -> bool:
            if self.where == "classify":
                raise LookupError("classifier")
            return super().classify()

        def starting(self) -> None:
            if self.where == "starting":
                raise OSError("log full")
            super().starting()

        async def run(self) -> str:
            if self.where == "run":
                raise ValueError("body")
            return await super().run()

        def commit(self, outcome: Any) -> None:
            if self.where == "commit":
                raise TypeError("commit")
            super().commit(outcome)

    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(10)
        calls = [Failing("c0", "run"), Failing("c1", "commit"), Failing("c2", "starting"), Failing("c3", "none")]
        scheduler.submit_batch(calls)
        await scheduler.wait()
        assert [type(error) for call in calls for error in call.errors] == [ValueError, TypeError, OSError]
        assert [call.state for call in calls] == [CallState.DONE, CallState.DONE, CallState.WITHDRAWN, CallState.DONE]
        assert calls[0].outcome is None and calls[1].outcome == "c1"

        classified = Failing("c4", "classify")
        blocked: CallScheduler[Step] = CallScheduler(10)
        blocked.submit_batch([classified])
        assert [type(error) for error in classified.errors] == [LookupError]
        assert classified.state is CallState.QUEUED  # it stays queued: stopping is its owner's call
        assert blocked.stop() == [classified]

    run(main())
    assert phase(trace, "commit") == ["c3"]


def test_a_call_task_cancelled_from_elsewhere_ends_that_call() -> None:
    trace: Trace = []

    async def main() -> None:
        scheduler: CallScheduler[Step] = CallScheduler(10)
        call = Step(trace, "c0", body=sleeping(5))
        scheduler.submit_batch([call, Step(trace, "c1", parallel=False)])
        await asyncio.sleep(0.001)
        task = call._task
        assert task is not None
        task.cancel()
        await scheduler.wait()
        assert [type(error) for error in call.errors] == [asyncio.CancelledError]

    run(main())
    assert phase(trace, "commit") == ["c1"]
