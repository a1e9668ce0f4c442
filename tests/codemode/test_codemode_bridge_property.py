"""Property test: random programs keep the pool's invariants (issue 13 "Tests").

A program is a sequence of groups; each group's binding calls are gathered.
A call is safe or exclusive, may fail, may be cancelled by the program (a
``wait_for`` that times out), and sleeps a little; the outer call may be
aborted at a random moment. Whatever happens:

- every started sub-call has exactly one settle event, and none lands after
  ``run_code`` returned; settle events (commits) come in submission order;
- pre-execute phases run in submission order, one at a time (with a
  pre-execute listener; without one the pool runs the calls without a gate,
  which the run is drawn with too);
- exclusive bodies run alone and in submission order;
- at most ``max_parallel_sub_calls`` sub-calls are in flight (started and not
  settled), and at most that many bodies run at once;
- no task is left behind (``async_test``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from _bridge_helpers import ToolCallError, async_test, code_registry, run_code
from dsh_codegen.registry import AbortController, ToolFailure, ToolOutput, define_tool


@dataclass(frozen=True)
class Call:
    safe: bool
    fails: bool
    delay_ms: int
    cancel: bool


calls = st.builds(
    Call,
    safe=st.booleans(),
    fails=st.booleans(),
    delay_ms=st.integers(0, 3),
    cancel=st.booleans(),
)
programs = st.lists(st.lists(calls, min_size=1, max_size=5), min_size=1, max_size=5)


class Recorder:
    def __init__(self) -> None:
        self.active: dict[str, bool] = {}  # call id -> exclusive
        self.peak = 0
        self.violations: list[str] = []
        self.pre_order: list[int] = []
        self.pre_active = 0
        self.exclusive_order: list[int] = []

    def body(self, exclusive: bool) -> Any:
        async def run(args: Any, run: Any) -> Any:
            call_id = run.call_id
            if exclusive and self.active:
                self.violations.append(f"{call_id} started beside {sorted(self.active)}")
            if any(self.active.values()):
                self.violations.append(f"{call_id} started beside an exclusive call")
            if exclusive:
                self.exclusive_order.append(number(call_id))
            self.active[call_id] = exclusive
            self.peak = max(self.peak, len(self.active))
            try:
                delay = int(args.get("text", "0")) / 1000
                if delay:
                    await asyncio.sleep(delay)
                else:
                    await asyncio.sleep(0)
                if args.get("fail"):
                    raise RuntimeError("planned failure")
                return "ok"
            finally:
                del self.active[call_id]

        return run

    async def pre(self, execution: Any, next: Any) -> Any:
        if execution.parent is None:
            return await next()
        self.pre_active += 1
        if self.pre_active > 1:
            self.violations.append(f"pre-execute of {execution.call_id} overlapped another")
        self.pre_order.append(number(execution.call_id))
        try:
            await asyncio.sleep(0)
            return await next()
        finally:
            self.pre_active -= 1


def number(call_id: str) -> int:
    return int(call_id.rsplit(":", 1)[1])


def make_program(groups: list[list[Call]]) -> Any:
    async def program(tools: Any, print: Any) -> Any:
        for group in groups:
            awaitables = []
            for call in group:
                binding = tools.safe if call.safe else tools.excl
                future = binding({"text": str(call.delay_ms), "fail": call.fails})
                if call.cancel:
                    awaitables.append(asyncio.wait_for(future, 0.001))
                else:
                    awaitables.append(future)
            for outcome in await asyncio.gather(*awaitables, return_exceptions=True):
                if isinstance(outcome, BaseException) and not isinstance(
                    outcome, (ToolCallError, asyncio.TimeoutError)
                ):
                    raise outcome
            print(f"group of {len(group)}")
        return "done"

    return program


@settings(max_examples=60)
@given(groups=programs, cap=st.integers(1, 4), abort_ms=st.none() | st.integers(0, 12), policy=st.booleans())
def test_random_programs_keep_the_pool_invariants(
    groups: list[list[Call]], cap: int, abort_ms: int | None, policy: bool
) -> None:
    @async_test
    async def check() -> None:
        recorder = Recorder()
        registry, runtime, log = code_registry(
            _tool("safe", recorder.body(False), True),
            _tool("excl", recorder.body(True), False),
            max_parallel_sub_calls=cap,
        )
        if policy:
            registry.on_pre_execute(recorder.pre)
        runtime.add("p", make_program(groups))
        controller = AbortController()
        handle = None
        if abort_ms is not None:
            handle = asyncio.get_running_loop().call_later(abort_ms / 1000, controller.abort)
        result = await run_code(registry, "p", signal=controller.signal)
        at_return = len(log.events)
        if handle is not None:
            handle.cancel()
        await asyncio.sleep(0.01)
        assert len(log.events) == at_return, "an event landed after the outer result"
        assert recorder.violations == []
        assert recorder.pre_order == sorted(recorder.pre_order)
        assert recorder.exclusive_order == sorted(recorder.exclusive_order)
        assert recorder.peak <= cap
        starts = [e["subCallId"] for e in log.events if e["type"] == "tool/code-dispatch-start"]
        settles = [e["subCallId"] for e in log.events if e["type"] == "tool/code-dispatch"]
        assert sorted(starts) == sorted(settles) and len(set(starts)) == len(starts)
        assert [number(s) for s in starts] == sorted(number(s) for s in starts)
        assert [number(s) for s in settles] == sorted(number(s) for s in settles)
        in_flight = 0
        for event in log.events:
            in_flight += 1 if event["type"] == "tool/code-dispatch-start" else -1
            assert 0 <= in_flight <= cap
        if abort_ms is None:
            assert not result.is_error and result.value["result"] == "done"
        else:
            assert not result.is_error or isinstance(result, ToolFailure)

    check()


def _tool(name: str, body: Any, safe: bool) -> Any:
    return define_tool(
        name=name,
        description=f"The {name} tool.",
        parameters={"text": {"type": "string"}, "fail": {"type": "boolean"}},
        output=ToolOutput(schema={"type": "string"}, render=lambda a, v: [{"type": "text", "text": v}]),
        execute=body,
        is_concurrency_safe=(lambda args: True) if safe else None,
    )
