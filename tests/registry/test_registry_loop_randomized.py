"""Randomized: 5,000 calls with random policies, wrappers, failures, timeouts and cancellation.

Seeded: the seed is printed (run with ``-s`` to see it) and can be replayed
with ``DSH_LOOP_SEED=<seed>``. Each round runs a batch through
``execute_tool_calls`` (or direct ``registry.execute`` calls under
``gather``), aborting the loop's signal or cancelling the awaiting task at a
random point. Per call it checks: exactly one result and one ``on_result``
(none for a call the loop never started), a code consistent with where the
cancellation landed, no body still running, no task left afterwards, and
no future a body awaited without owning it ever cancelled (the registry
shields bodies from the awaiting task's cancellation).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
from dataclasses import dataclass, field
from typing import Any

from dsh_codegen.registry import Block, Deny, ToolExecutionInput
from dsh_codegen.registry._definitions import ToolOutput, define_tool
from dsh_codegen.registry._errors import (
    INVALID_ARGS,
    INVALID_TOOL_OUTPUT,
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    TOOL_TIMEOUT,
)
from dsh_codegen.registry._loop import ToolCall, execute_tool_calls
from dsh_codegen.registry._registry import ToolRegistry
from dsh_codegen.registry._results import ToolExecutionResult, ToolFailure, ToolSuccess
from dsh_codegen.registry._session_log import MemorySessionLog
from dsh_codegen.registry.cancel import AbortController, AbortSignal
from dsh_codegen.registry.policies import ToolMetrics, metrics_policy, retry_policy, timeout_policy

TOTAL_CALLS = 5_000
TOOL_NAMES = ("ok", "slow", "fail", "stubborn", "bad_output", "deadline", "safe", "foreign")
DENIED_REASON = "denied by the random policy"
GUARD_REASON = "guarded by the random policy"


@dataclass
class Round:
    """What happened to the calls of one round (keyed by call id)."""

    clock: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    body_start: dict[str, int] = field(default_factory=dict)
    body_end: dict[str, int] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    observed: dict[str, int] = field(default_factory=dict)
    executed: list[str] = field(default_factory=list)
    abort_at: int | None = None
    timeouts_on: bool = False
    denied: set[str] = field(default_factory=set)
    guarded: set[str] = field(default_factory=set)
    blocked: set[str] = field(default_factory=set)
    # Calls inside execute() now, and the one that runs alone (no gate), if any.
    active: set[str] = field(default_factory=set)
    alone: str | None = None
    # Futures the "foreign" tool's bodies awaited without owning them: cancelled only when the
    # round aborted or cancelled (the body is then cancelled as a task would be).
    foreign: list[asyncio.Future[str]] = field(default_factory=list)

    def tick(self) -> int:
        return next(self.clock)


class CountingRegistry:
    """Delegates to the real registry and records which calls it was asked to execute."""

    def __init__(self, registry: ToolRegistry, state: Round, *, loop: bool = True) -> None:
        self.registry = registry
        self.state = state
        # Called by the loop (which passes no gate only to a call that runs alone), or directly.
        self.loop = loop

    def execution_mode(self, input: ToolExecutionInput) -> str:
        return self.registry.execution_mode(input)

    async def execute(self, input: ToolExecutionInput, *, gate: Any = None) -> ToolExecutionResult:
        call_id = input.call_id
        state = self.state
        # The loop hands no gate only to a call that runs alone.
        assert state.alone is None, f"{call_id} entered while {state.alone} runs alone"
        if gate is None and self.loop:
            assert not state.active, f"{call_id} has no gate but {state.active} are being executed"
            state.alone = call_id
        state.active.add(call_id)
        state.executed.append(call_id)
        try:
            return await self.registry.execute(input, gate=gate)
        finally:
            state.active.discard(call_id)
            if state.alone == call_id:
                state.alone = None
            # Quiescence: the body has settled by the time execute returns or raises.
            assert call_id not in state.running, f"{call_id} body still running"


def _n(execution: Any) -> int:
    arguments = execution.arguments
    return arguments.get("n", -1) if isinstance(arguments, dict) else -1


async def _yields(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def _build(rng: random.Random, state: Round) -> ToolRegistry:
    registry = ToolRegistry()

    def tool(name: str, behaviour: Any, *, timeout_ms: float | None = None, safe: bool | None = None) -> None:
        async def execute(args: Any, run: Any) -> Any:
            call_id = run.call_id
            state.body_start[call_id] = state.tick()
            state.running.add(call_id)
            try:
                return await behaviour(args, run.signal)
            finally:
                state.running.discard(call_id)
                state.body_end[call_id] = state.tick()

        registry.register(
            define_tool(
                name=name,
                description=f"randomized {name}",
                parameters={"n": {"type": "integer", "required": True}},
                output=ToolOutput(
                    schema={"type": "string"},
                    render=lambda args, value: [{"type": "text", "text": value}],
                ),
                execute=execute,
                timeout_ms=timeout_ms,
                is_concurrency_safe=(lambda args: args["n"] % 2 == 0) if safe is None else (lambda args: safe),
            )
        )

    async def ok(args: Any, signal: AbortSignal) -> Any:
        await _yields(args["n"] % 3)
        return "ok"

    async def slow(args: Any, signal: AbortSignal) -> Any:
        for _ in range(args["n"] % 7 + 1):
            if signal.aborted:
                raise RuntimeError("stopped early")  # a tool-owned failure: more specific than ABORTED
            await asyncio.sleep(0)
        return "slow"

    async def fail(args: Any, signal: AbortSignal) -> Any:
        await _yields(args["n"] % 2)
        raise RuntimeError("boom")

    async def stubborn(args: Any, signal: AbortSignal) -> Any:
        await _yields(3)  # ignores the signal for a while, then succeeds
        return "stubborn"

    async def bad_output(args: Any, signal: AbortSignal) -> Any:
        return 42

    async def deadline(args: Any, signal: AbortSignal) -> Any:
        await signal.wait()  # only ever ends by abort or timeout
        raise RuntimeError("deadline body stopped")

    async def foreign(args: Any, signal: AbortSignal) -> Any:
        # Awaits a future it does not own, resolved by loop callbacks (like an
        # executor or another task would): only an abort cancels it.
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()
        state.foreign.append(future)

        def resolve(remaining: int) -> None:
            if future.done():
                return
            if remaining <= 0 or signal.aborted:
                future.set_result("foreign")
            else:
                loop.call_soon(resolve, remaining - 1)

        loop.call_soon(resolve, args["n"] % 5 + 1)
        return await future

    tool("ok", ok)
    tool("foreign", foreign)
    tool("slow", slow)
    tool("fail", fail)
    tool("stubborn", stubborn)
    tool("bad_output", bad_output)
    tool("deadline", deadline, timeout_ms=1)
    tool("safe", ok, safe=True)

    if rng.random() < 0.5:
        yields = rng.randrange(3)

        async def pre(execution: Any, next: Any) -> Any:
            await _yields(yields)
            if _n(execution) % 11 == 5:
                state.denied.add(execution.call_id)
                return Deny(DENIED_REASON)
            return await next()

        registry.on_pre_execute(pre)
    if rng.random() < 0.3:

        def guard(execution: Any) -> str | None:
            if _n(execution) % 13 == 7:
                state.guarded.add(execution.call_id)
                return GUARD_REASON
            return None

        registry.guard(guard)
    if rng.random() < 0.5:
        state.timeouts_on = True
        timeout_policy(registry)
    if rng.random() < 0.3:
        retry_policy(registry, max_attempts=2, tools={"fail"})
    if rng.random() < 0.3:
        metrics_policy(registry, ToolMetrics())
    if rng.random() < 0.4:
        wrap_yields = rng.randrange(3)

        async def wrapper(dispatch: Any, next: Any) -> Any:
            await _yields(wrap_yields)
            result = await next()
            await _yields(wrap_yields)
            return result

        registry.wrap_execute(wrapper)
    if rng.random() < 0.3:

        async def post(execution: Any, result: Any, next: Any) -> Any:
            await asyncio.sleep(0)
            if _n(execution) % 17 == 3:
                state.blocked.add(execution.call_id)
                return Block([{"type": "text", "text": "blocked"}])
            return await next()

        registry.on_post_execute(post)

    def observe(execution: Any, result: Any) -> None:
        state.observed[execution.call_id] = state.observed.get(execution.call_id, 0) + 1

    registry.on_result(observe)
    return registry


def _code(result: ToolExecutionResult) -> str | None:
    if isinstance(result, ToolFailure) and result.error.info is not None:
        return result.error.info.code
    return None


def _check_call(state: Round, call: ToolCall, result: ToolExecutionResult, aborted: bool) -> None:
    call_id = call.call_id
    started = call_id in state.body_start
    code = _code(result)
    where = f"{call_id} ({call.name}, args {call.arguments!r}): {result!r}"
    if call_id in state.executed:
        assert state.observed.get(call_id) == 1, f"on_result count {state.observed.get(call_id)} for {where}"
    else:
        assert call_id not in state.observed, where
        assert code == TOOL_ABORTED_BEFORE_DISPATCH and aborted, where
    if code == TOOL_ABORTED:
        assert started and aborted, where
    if code == TOOL_ABORTED_BEFORE_DISPATCH:
        assert not started and aborted, where
    if code == TOOL_TIMEOUT:
        assert state.timeouts_on and call.name == "deadline", where
    if isinstance(result, ToolSuccess):
        assert started, where
        if aborted and state.abort_at is not None:
            assert state.body_end[call_id] < state.abort_at, f"success after the abort: {where}"
        assert call.name in ("ok", "slow", "stubborn", "safe", "foreign"), where
    if not aborted:
        _check_uncancelled(state, call, result)


def _check_uncancelled(state: Round, call: ToolCall, result: ToolExecutionResult) -> None:
    """Without cancellation the outcome follows from the tool and the policies alone."""
    call_id = call.call_id
    code = _code(result)
    where = f"{call_id} ({call.name}, args {call.arguments!r}): {result!r}"
    if call_id in state.blocked:  # post-execute runs last, so a block wins
        assert isinstance(result, ToolFailure) and result.content == [{"type": "text", "text": "blocked"}], where
    elif call.arguments == "{not json":
        # Arguments are validated inside dispatch, so a 1 ms deadline may fire first on a busy machine.
        timed_out = call.name == "deadline" and state.timeouts_on and code == TOOL_TIMEOUT
        assert code == INVALID_ARGS or timed_out, where
    elif call_id in state.denied:
        assert isinstance(result, ToolFailure) and result.error.message == DENIED_REASON, where
    elif call_id in state.guarded:
        assert isinstance(result, ToolFailure) and result.error.message == GUARD_REASON, where
    elif call.name in ("ok", "slow", "stubborn", "safe", "foreign"):
        assert isinstance(result, ToolSuccess), where
    elif call.name == "fail":
        assert isinstance(result, ToolFailure) and result.error.message == "boom", where
    elif call.name == "bad_output":
        assert code == INVALID_TOOL_OUTPUT, where
    elif call.name == "deadline":
        assert state.timeouts_on and code == TOOL_TIMEOUT, where


def _random_calls(rng: random.Random, start: int, count: int) -> list[ToolCall]:
    calls = []
    for offset in range(count):
        name = rng.choice(TOOL_NAMES)
        if name == "deadline" and rng.random() < 0.7:
            name = "ok"  # deadline calls stall a batch without the timeout policy; keep them rare
        arguments = "{not json" if rng.random() < 0.03 else f'{{"n": {rng.randrange(40)}}}'
        calls.append(ToolCall(f"r{start + offset}", name, arguments))
    return calls


async def _abort_after(loop: asyncio.AbstractEventLoop, hops: int, action: Any) -> None:
    """Run ``action`` after ``hops`` event-loop iterations (no task: chained callbacks)."""

    def hop(remaining: int) -> None:
        if remaining <= 0:
            action()
        else:
            loop.call_soon(hop, remaining - 1)

    loop.call_soon(hop, hops)


async def _loop_round(rng: random.Random, start: int) -> int:
    state = Round()
    registry = _build(rng, state)
    calls = _random_calls(rng, start, rng.randrange(1, 13))
    if not state.timeouts_on:
        calls = [c if c.name != "deadline" else ToolCall(c.call_id, "ok", c.arguments) for c in calls]
    controller = AbortController()
    log = MemorySessionLog()
    loop = asyncio.get_running_loop()
    mode = rng.choice(("none", "abort", "abort", "cancel"))
    task = asyncio.create_task(
        execute_tool_calls(
            CountingRegistry(registry, state),
            calls,
            signal=controller.signal,
            max_parallel=rng.randrange(1, 5),
            log=log,
        )
    )

    def abort() -> None:
        state.abort_at = state.tick()
        controller.abort()

    def cancel() -> None:
        state.abort_at = state.tick()
        task.cancel()

    if mode != "none":
        await _abort_after(loop, rng.randrange(40), abort if mode == "abort" else cancel)
    try:
        results = await task
    except asyncio.CancelledError:
        results = None
    assert state.running == set(), f"bodies still running: {state.running}"
    assert asyncio.all_tasks() == {asyncio.current_task()}, "a task outlived the round"
    assert state.abort_at is not None or not any(f.cancelled() for f in state.foreign), (
        "a foreign future was cancelled without an abort"
    )
    aborted = state.abort_at is not None
    if results is None:
        # The awaiting task was cancelled: started calls were drained and
        # committed, nothing fabricated for the rest.
        assert mode == "cancel"
        results_events = [e for e in log.events if e["type"] == "tool/result"]
        assert [e["callId"] for e in results_events] == state.executed
        for call_id in state.executed:
            assert state.observed.get(call_id) == 1
        return len(calls)
    assert len(results) == len(calls)
    for call, result in zip(calls, results, strict=True):
        _check_call(state, call, result, aborted)
    pairs = [(e["type"], e["callId"]) for e in log.events]
    assert sorted(pairs) == sorted(
        [("tool/call", c.call_id) for c in calls] + [("tool/result", c.call_id) for c in calls]
    )
    assert [e["callId"] for e in log.events if e["type"] == "tool/result"] == [c.call_id for c in calls]
    return len(calls)


async def _direct_round(rng: random.Random, start: int) -> int:
    """Direct ``registry.execute`` calls under gather, one awaiting task cancelled at a random point."""
    state = Round()
    registry = _build(rng, state)
    calls = _random_calls(rng, start, rng.randrange(1, 6))
    if not state.timeouts_on:
        calls = [c if c.name != "deadline" else ToolCall(c.call_id, "ok", c.arguments) for c in calls]
    controller = AbortController()
    counting = CountingRegistry(registry, state, loop=False)
    from dsh_codegen.registry._loop import parse_call_arguments

    tasks = [
        asyncio.create_task(
            counting.execute(
                ToolExecutionInput(c.call_id, c.name, parse_call_arguments(c.arguments), controller.signal)
            )
        )
        for c in calls
    ]
    victim = rng.randrange(len(tasks))

    def cancel() -> None:
        state.abort_at = state.tick()
        tasks[victim].cancel()

    await _abort_after(asyncio.get_running_loop(), rng.randrange(30), cancel)
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    assert state.running == set()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert state.abort_at is not None or not any(f.cancelled() for f in state.foreign), (
        "a foreign future was cancelled without an abort"
    )
    for index, (call, outcome) in enumerate(zip(calls, outcomes, strict=True)):
        assert state.observed.get(call.call_id) == 1, call
        if isinstance(outcome, BaseException):
            assert isinstance(outcome, asyncio.CancelledError) and index == victim, outcome
            continue
        _check_call(state, call, outcome, aborted=index == victim)
    return len(calls)


def test_randomized_5000_calls() -> None:
    seed = int(os.environ.get("DSH_LOOP_SEED", random.randrange(2**32)))
    print(f"randomized loop test seed: DSH_LOOP_SEED={seed}")
    rng = random.Random(seed)

    async def main() -> int:
        done = 0
        while done < TOTAL_CALLS:
            if rng.random() < 0.8:
                done += await _loop_round(rng, done)
            else:
                done += await _direct_round(rng, done)
        return done

    assert asyncio.run(main()) >= TOTAL_CALLS
