"""execute_tool_calls against a stand-in registry: scheduling, ordering, abort, failures.

Guarantees 153-156 of docs/guarantees.md (names say which).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from dsh_codegen.registry._errors import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH
from dsh_codegen.registry._loop import ToolCall, execute_tool_calls, parse_call_arguments
from dsh_codegen.registry._results import ToolFailure, ToolSuccess
from dsh_codegen.registry._session_log import MemorySessionLog, derive_messages
from dsh_codegen.registry.cancel import AbortController, AbortSignal

from _loop_fakes import FakeRegistry, FakeTool, calls, echo, run, sleeper, wait_or_abort


def code_of(result: Any) -> str | None:
    assert isinstance(result, ToolFailure)
    return None if result.error.info is None else result.error.info.code


def phases(registry: FakeRegistry, phase: str) -> list[str]:
    return [call_id for kind, call_id in registry.trace if kind == phase]


# -- 153: rolling pool, barriers, reclassification, cap ------------------------


def test_153_parallel_siblings_all_start_before_any_completes() -> None:
    registry = FakeRegistry({"p": FakeTool(sleeper(0.02))})

    async def main() -> list[Any]:
        return await execute_tool_calls(registry, calls("p", "p", "p"), signal=AbortController().signal)

    results = run(main())
    assert all(isinstance(r, ToolSuccess) for r in results)
    kinds = [kind for kind, _ in registry.trace if kind in ("start", "end")]
    assert kinds == ["start"] * 3 + ["end"] * 3
    assert registry.max_running == 3


def test_153_exclusive_call_between_safe_calls_forms_three_groups() -> None:
    registry = FakeRegistry({"p": FakeTool(sleeper(0.01)), "x": FakeTool(sleeper(0.01), parallel=False)})
    run(execute_tool_calls(registry, calls("p", "p", "x", "p", "p"), signal=AbortController().signal))
    trace = [(kind, call_id) for kind, call_id in registry.trace if kind in ("start", "commit")]
    assert trace == [
        ("start", "c0"),
        ("start", "c1"),
        ("commit", "c0"),
        ("commit", "c1"),
        ("start", "c2"),
        ("commit", "c2"),
        ("start", "c3"),
        ("start", "c4"),
        ("commit", "c3"),
        ("commit", "c4"),
    ]


def test_153_later_calls_are_reclassified_after_each_commit() -> None:
    registry = FakeRegistry({"flip": FakeTool(sleeper(0.005), parallel=False), "p": FakeTool(sleeper(0.005))})

    def on_commit(call_id: str) -> None:
        if call_id == "c0":
            registry.tools["flip"].parallel = True  # the commit of c0 makes "flip" safe

    registry.on_commit = on_commit
    run(execute_tool_calls(registry, calls("p", "flip", "flip"), signal=AbortController().signal))
    starts = [(kind, call_id) for kind, call_id in registry.trace if kind in ("start", "commit")]
    # c1 was exclusive when first classified (waiting behind c0); after c0's
    # commit it is parallel, so c1 and c2 overlap.
    assert starts == [
        ("start", "c0"),
        ("commit", "c0"),
        ("start", "c1"),
        ("start", "c2"),
        ("commit", "c1"),
        ("commit", "c2"),
    ]


@pytest.mark.parametrize("cap", [1, 2, 3, 10])
def test_153_at_most_max_parallel_in_flight(cap: int) -> None:
    registry = FakeRegistry({"p": FakeTool(sleeper(0.003))})
    results = run(execute_tool_calls(registry, calls(*["p"] * 7), signal=AbortController().signal, max_parallel=cap))
    assert len(results) == 7
    assert registry.max_running == min(cap, 7)
    if cap == 1:  # serial: each call ends before the next starts
        kinds = [kind for kind, _ in registry.trace if kind in ("start", "end")]
        assert kinds == ["start", "end"] * 7


def test_153_default_cap_is_ten() -> None:
    registry = FakeRegistry({"p": FakeTool(sleeper(0.003))})
    run(execute_tool_calls(registry, calls(*["p"] * 14), signal=AbortController().signal))
    assert registry.max_running == 10


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2", None])
def test_153_max_parallel_must_be_a_positive_integer(bad: Any) -> None:
    registry = FakeRegistry({"p": FakeTool(echo)})
    with pytest.raises(ValueError, match="^max_parallel must be a positive integer$"):
        run(execute_tool_calls(registry, calls("p"), signal=AbortController().signal, max_parallel=bad))
    assert registry.executed == []


# -- 154: model order ------------------------------------------------------------


def _finishing_after(before: asyncio.Event | None, done: asyncio.Event, value: Any) -> Any:
    """A body that returns ``value`` only after ``before`` is set, and then sets ``done``."""

    async def body(arguments: Any, signal: AbortSignal) -> Any:
        if before is not None:
            # Bounded: a scheduler that failed to overlap the calls fails the test instead of hanging it.
            await asyncio.wait_for(before.wait(), 10)
        else:
            await asyncio.sleep(0)
        done.set()
        return value

    return body


def test_154_commits_and_result_events_in_model_order_despite_completion_order() -> None:
    # Completion order is forced, not timed: "mid" finishes only after "fast",
    # "slow" only after "mid" (each waits for the other's event).
    fast_done, mid_done, slow_done = asyncio.Event(), asyncio.Event(), asyncio.Event()
    registry = FakeRegistry(
        {
            "slow": FakeTool(_finishing_after(mid_done, slow_done, "slow")),
            "mid": FakeTool(_finishing_after(fast_done, mid_done, "mid")),
            "fast": FakeTool(_finishing_after(None, fast_done, {})),
        }
    )
    log = MemorySessionLog()
    results = run(execute_tool_calls(registry, calls("slow", "mid", "fast"), signal=AbortController().signal, log=log))
    assert phases(registry, "end") == ["c2", "c1", "c0"]  # bodies finished in reverse
    assert phases(registry, "commit") == ["c0", "c1", "c2"]
    assert phases(registry, "pre") == ["c0", "c1", "c2"]
    assert [r.value for r in results if isinstance(r, ToolSuccess)] == ["slow", "mid", {}]
    assert [(e["type"], e["callId"]) for e in log.events] == [
        ("tool/call", "c0"),
        ("tool/call", "c1"),
        ("tool/call", "c2"),
        ("tool/result", "c0"),
        ("tool/result", "c1"),
        ("tool/result", "c2"),
    ]
    assert len({e["batchId"] for e in log.events}) == 1
    assert all(isinstance(e["time"], float) for e in log.events)


def test_154_pre_execute_never_overlaps_and_follows_model_order() -> None:
    registry = FakeRegistry({"slowpolicy": FakeTool(echo, policy_delay=0.02), "p": FakeTool(echo)})
    run(execute_tool_calls(registry, calls("slowpolicy", "p", "p"), signal=AbortController().signal))
    policy = [(kind, call_id) for kind, call_id in registry.trace if kind in ("pre", "pre-end")]
    assert policy == [
        ("pre", "c0"),
        ("pre-end", "c0"),
        ("pre", "c1"),
        ("pre-end", "c1"),
        ("pre", "c2"),
        ("pre-end", "c2"),
    ]


def test_154_derived_messages_follow_model_order() -> None:
    registry = FakeRegistry({"slow": FakeTool(sleeper(0.02, "A")), "fast": FakeTool(echo)})
    log = MemorySessionLog()
    loop_calls = [ToolCall("a", "slow", '{"x": 1}'), ToolCall("b", "fast", "")]
    run(execute_tool_calls(registry, loop_calls, signal=AbortController().signal, log=log))
    messages = derive_messages(log.events)
    assert messages[0] == {
        "role": "assistant",
        "toolCalls": [
            {"callId": "a", "name": "slow", "arguments": {"x": 1}},
            {"callId": "b", "name": "fast", "arguments": {}},
        ],
    }
    assert [(m["role"], m["callId"], m["content"]) for m in messages[1:]] == [
        ("tool", "a", [{"type": "text", "text": "A"}]),
        ("tool", "b", [{"type": "text", "text": "{}"}]),
    ]


# -- 155: abort and internal failure --------------------------------------------------


def test_155_abort_stops_new_starts_drains_started_and_synthesizes_the_rest() -> None:
    registry = FakeRegistry({"p": FakeTool(sleeper(5)), "x": FakeTool(sleeper(5), parallel=False)})
    log = MemorySessionLog()
    controller = AbortController()

    async def main() -> list[Any]:
        asyncio.get_running_loop().call_later(0.02, controller.abort)
        return await execute_tool_calls(registry, calls("p", "p", "x", "p"), signal=controller.signal, log=log)

    results = run(main())
    assert registry.executed == ["c0", "c1"]  # no new starts after the abort
    assert [code_of(r) for r in results] == [
        TOOL_ABORTED,
        TOOL_ABORTED,
        TOOL_ABORTED_BEFORE_DISPATCH,
        TOOL_ABORTED_BEFORE_DISPATCH,
    ]
    assert results[2].content == [{"type": "text", "text": "Error: tool call aborted before dispatch"}]
    assert isinstance(results[2], ToolFailure) and results[2].error.message == "tool call aborted before dispatch"
    assert registry.running == set()
    assert [(e["type"], e["callId"]) for e in log.events] == [
        ("tool/call", "c0"),
        ("tool/call", "c1"),
        ("tool/result", "c0"),
        ("tool/result", "c1"),
        ("tool/call", "c2"),
        ("tool/result", "c2"),
        ("tool/call", "c3"),
        ("tool/result", "c3"),
    ]
    synthetic = log.events[5]
    assert synthetic["isError"] is True
    assert synthetic["error"] == {
        "message": "tool call aborted before dispatch",
        "info": {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"},
    }


def test_155_pre_aborted_signal_never_reaches_the_registry() -> None:
    registry = FakeRegistry({"p": FakeTool(echo)})
    log = MemorySessionLog()
    results = run(execute_tool_calls(registry, calls("p", "p"), signal=AbortSignal.aborted_signal(), log=log))
    assert registry.executed == []
    assert [code_of(r) for r in results] == [TOOL_ABORTED_BEFORE_DISPATCH] * 2
    assert [e["type"] for e in log.events] == ["tool/call", "tool/result"] * 2


class ExplodingLog(MemorySessionLog):
    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.count = 0
        self.fail_on = fail_on

    def append(self, event: Any) -> None:
        self.count += 1
        if self.count == self.fail_on:
            raise OSError("disk full")
        super().append(event)


def test_155_internal_failure_drains_and_reraises_without_fabricating_results() -> None:
    registry = FakeRegistry({"fast": FakeTool(echo), "slow": FakeTool(sleeper(5))})
    # events: call c0, call c1, call c2, result c0 (fails)
    log = ExplodingLog(fail_on=4)

    async def main() -> None:
        await execute_tool_calls(
            registry, calls("fast", "slow", "slow", "slow"), signal=AbortController().signal, log=log, max_parallel=3
        )

    with pytest.raises(OSError, match="disk full"):
        run(main())
    assert registry.running == set()  # the started slow bodies were aborted and settled
    assert registry.executed == ["c0", "c1", "c2"]
    # Drained calls still commit (whatever the registry made of the abort);
    # nothing is synthesized for the never-started c3.
    assert [(e["type"], e["callId"]) for e in log.events] == [
        ("tool/call", "c0"),
        ("tool/call", "c1"),
        ("tool/call", "c2"),
        ("tool/result", "c1"),
        ("tool/result", "c2"),
    ]


def test_155_classifier_failure_is_an_internal_failure() -> None:
    class Broken(FakeRegistry):
        def execution_mode(self, input: Any) -> str:
            if input.call_id == "c1":
                raise RuntimeError("classifier bug")
            return super().execution_mode(input)

    registry = Broken({"p": FakeTool(sleeper(5))})
    with pytest.raises(RuntimeError, match="classifier bug"):
        run(execute_tool_calls(registry, calls("p", "p"), signal=AbortController().signal))
    assert registry.executed == ["c0"] and registry.running == set()


def test_155_wrong_result_type_is_an_internal_failure() -> None:
    class Wrong(FakeRegistry):
        async def execute(self, input: Any, *, gate: Any = None) -> Any:
            await super().execute(input, gate=gate)
            return {"isError": False}

    with pytest.raises(TypeError, match="registry.execute returned dict, not a ToolExecutionResult"):
        run(execute_tool_calls(Wrong({"p": FakeTool(echo)}), calls("p"), signal=AbortController().signal))


def _only_current_task_left() -> bool:
    return asyncio.all_tasks() == {asyncio.current_task()}


def test_cancelling_the_caller_task_aborts_and_drains_every_call() -> None:
    registry = FakeRegistry({"p": FakeTool(sleeper(5))})
    log = MemorySessionLog()

    async def main() -> None:
        task = asyncio.create_task(
            execute_tool_calls(
                registry, calls("p", "p", "p", "p"), signal=AbortController().signal, log=log, max_parallel=2
            )
        )
        await asyncio.sleep(0.01)
        assert registry.running == {"c0", "c1"}
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert registry.running == set()
        assert _only_current_task_left()

    run(main())
    # Started calls committed (aborted); the rest never started and nothing was fabricated.
    assert [(e["type"], e["callId"]) for e in log.events] == [
        ("tool/call", "c0"),
        ("tool/call", "c1"),
        ("tool/result", "c0"),
        ("tool/result", "c1"),
    ]
    assert [e["error"]["info"]["code"] for e in log.events if e["type"] == "tool/result"] == [TOOL_ABORTED] * 2


def test_a_second_cancellation_does_not_cut_the_drain_short() -> None:
    settled: list[str] = []

    async def stubborn(arguments: Any, signal: AbortSignal) -> Any:
        try:
            await wait_or_abort(signal, 5)
        finally:
            await asyncio.sleep(0.02)  # cleanup after the abort takes a while
            settled.append("done")
        return "unreachable"

    registry = FakeRegistry({"s": FakeTool(stubborn)})

    async def main() -> None:
        task = asyncio.create_task(execute_tool_calls(registry, calls("s"), signal=AbortController().signal))
        await asyncio.sleep(0.005)
        task.cancel()
        await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert settled == ["done"]
        assert _only_current_task_left()

    run(main())


# -- 156: argument parsing ----------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ("", {}),
        ("   ", {}),
        ('{"a": [1, 2.5, null]}', {"a": [1, 2.5, None]}),
        ("[1]", [1]),
        ("null", None),
        ("{not json", "{not json"),
        ('{"a": NaN}', '{"a": NaN}'),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("[" * 100_000, "[" * 100_000),
        ({"already": "parsed"}, {"already": "parsed"}),
        (None, None),
    ],
)
def test_156_raw_argument_strings_are_parsed_as_the_loop_does(raw: Any, parsed: Any) -> None:
    assert parse_call_arguments(raw) == parsed


def test_156_invalid_json_reaches_the_tool_as_the_raw_string() -> None:
    registry = FakeRegistry({"e": FakeTool(echo)})
    log = MemorySessionLog()
    loop_calls = [ToolCall("a", "e", "{broken"), ToolCall("b", "e", ""), ToolCall("c", "e", '{"n": 1}')]
    results = run(execute_tool_calls(registry, loop_calls, signal=AbortController().signal, log=log))
    assert [r.value for r in results if isinstance(r, ToolSuccess)] == ["{broken", {}, {"n": 1}]
    assert [e["arguments"] for e in log.events if e["type"] == "tool/call"] == ["{broken", {}, {"n": 1}]


def test_lossy_preparsed_arguments_are_left_out_of_the_call_event() -> None:
    registry = FakeRegistry({"e": FakeTool(echo)})
    log = MemorySessionLog()
    run(execute_tool_calls(registry, [ToolCall("a", "e", {"x": math.nan})], signal=AbortController().signal, log=log))
    assert "arguments" not in log.events[0]


# -- input checks ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_calls", "error", "text"),
    [
        ([("a", "e", "")], TypeError, r"calls\[0\] must be a ToolCall, got tuple"),
        ([ToolCall(1, "e", "")], TypeError, r"calls\[0\].call_id must be a str, got int"),  # type: ignore[arg-type]
        ([ToolCall("a", None, "")], TypeError, r"calls\[0\].name must be a str, got NoneType"),  # type: ignore[arg-type]
        ([ToolCall("a", "e", ""), ToolCall("a", "e", "")], ValueError, r"calls\[1\].call_id 'a' duplicates calls\[0\]"),
    ],
)
def test_bad_calls_are_rejected_before_anything_runs(bad_calls: list[Any], error: type[Exception], text: str) -> None:
    registry = FakeRegistry({"e": FakeTool(echo)})
    log = MemorySessionLog()
    with pytest.raises(error, match=text):
        run(execute_tool_calls(registry, bad_calls, signal=AbortController().signal, log=log))
    assert registry.executed == [] and log.events == []


def test_signal_must_be_an_abort_signal() -> None:
    with pytest.raises(TypeError, match="signal must be an AbortSignal, got AbortController"):
        run(execute_tool_calls(FakeRegistry(), calls("e"), signal=AbortController()))  # type: ignore[arg-type]


def test_no_calls_no_events() -> None:
    log = MemorySessionLog()
    assert run(execute_tool_calls(FakeRegistry(), [], signal=AbortController().signal, log=log)) == []
    assert log.events == []


def test_agent_is_passed_to_the_registry_and_logged_when_a_string() -> None:
    seen: list[Any] = []

    class Recording(FakeRegistry):
        async def execute(self, input: Any, *, gate: Any = None) -> Any:
            seen.append(input.agent)
            return await super().execute(input, gate=gate)

    log = MemorySessionLog()
    run(
        execute_tool_calls(
            Recording({"e": FakeTool(echo)}), calls("e"), signal=AbortController().signal, log=log, agent="planner"
        )
    )
    assert seen == ["planner"]
    assert log.events[0]["agent"] == "planner"


def test_caller_signal_listeners_are_removed_after_the_batch() -> None:
    controller = AbortController()
    registry = FakeRegistry({"e": FakeTool(echo)})
    for _ in range(3):
        run(execute_tool_calls(registry, calls("e", "e"), signal=controller.signal))
    assert not controller.signal._listeners  # nothing accumulates on a long-lived signal


def test_log_failure_on_a_call_event_stops_before_that_call_starts() -> None:
    registry = FakeRegistry({"p": FakeTool(sleeper(5))})
    log = ExplodingLog(fail_on=2)  # the second tool/call event
    with pytest.raises(OSError, match="disk full"):
        run(execute_tool_calls(registry, calls("p", "p", "p"), signal=AbortController().signal, log=log))
    assert registry.executed == ["c0"]  # c1 never started, nothing fabricated
    assert registry.running == set()
    assert [(e["type"], e["callId"]) for e in log.events] == [("tool/call", "c0"), ("tool/result", "c0")]


def test_a_registry_entering_the_policy_gate_twice_is_an_internal_failure() -> None:
    class Twice(FakeRegistry):
        async def execute(self, input: Any, *, gate: Any = None) -> Any:
            async with gate.policy():
                pass
            async with gate.policy():
                pass
            raise AssertionError("unreachable")

    # Two parallel calls: the first may overlap the second, so it runs as a task
    # with a gate (a call that runs alone gets none: nothing to order it against).
    with pytest.raises(RuntimeError, match=r"PipelineGate.policy\(\) entered twice for one call"):
        run(execute_tool_calls(Twice({"p": FakeTool(echo)}), calls("p", "p"), signal=AbortController().signal))


def test_no_call_starts_once_the_awaiting_task_is_cancelled_even_if_a_commit_lands_first() -> None:
    # c0's body is released in the same loop iteration as the cancellation, but
    # before it: c0 commits before the loop's task sees its CancelledError. c1
    # must not start in between (nothing starts once the cancellation is requested).
    release: list[asyncio.Future[None]] = []

    async def held(arguments: Any, signal: AbortSignal) -> Any:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        release.append(future)
        await future
        return "released"

    registry = FakeRegistry({"x": FakeTool(held, parallel=False)})
    log = MemorySessionLog()

    async def main() -> None:
        task = asyncio.create_task(
            execute_tool_calls(registry, calls("x", "x"), signal=AbortController().signal, log=log)
        )
        while not release:
            await asyncio.sleep(0)
        release[0].set_result(None)  # c0's task wakes first ...
        task.cancel()  # ... and the loop's task after it, with the cancellation
        with pytest.raises(asyncio.CancelledError):
            await task
        assert _only_current_task_left()

    run(main())
    assert registry.executed == ["c0"]
    assert [(e["type"], e["callId"]) for e in log.events] == [("tool/call", "c0"), ("tool/result", "c0")]
    assert log.events[1]["isError"] is False
