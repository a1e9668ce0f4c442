"""A small stand-in registry for scheduler tests (the real one is tested separately).

It implements the two methods the loop uses, enters the gate like the real
pipeline (policy around pre-execute, commit around post-execute, commit
always), and records a trace of phases so tests can check ordering. A call
the loop hands no gate (it runs alone) is checked to really run alone: no
other call is inside ``execute`` when it enters, and none enters before it
returns.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dsh_codegen.registry._errors import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH
from dsh_codegen.registry._execution import ToolExecutionInput
from dsh_codegen.registry._gate import PipelineGate
from dsh_codegen.registry._loop import ToolCall
from dsh_codegen.registry._results import ToolExecutionResult, ToolSuccess, failure_from_exception
from dsh_codegen.registry.cancel import AbortError, AbortSignal

Body = Callable[[Any, AbortSignal], Awaitable[Any]]
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` in a fresh event loop."""
    return asyncio.run(coro)


def calls(*names: str) -> list[ToolCall]:
    """One call per name (ids ``c0``, ``c1`` ...), each with the argument text ``{}``."""
    return [ToolCall(f"c{i}", name, "{}") for i, name in enumerate(names)]


@dataclass
class FakeTool:
    body: Body
    parallel: bool = True
    policy_delay: float = 0.0


@dataclass
class FakeRegistry:
    tools: dict[str, FakeTool] = field(default_factory=dict)
    trace: list[tuple[str, str]] = field(default_factory=list)
    running: set[str] = field(default_factory=set)
    max_running: int = 0
    on_commit: Callable[[str], None] | None = None
    executed: list[str] = field(default_factory=list)
    # Calls inside execute() now, and the ones that were handed no gate.
    active: set[str] = field(default_factory=set)
    ungated: list[str] = field(default_factory=list)

    def execution_mode(self, input: ToolExecutionInput) -> str:
        tool = self.tools.get(input.name)
        return "parallel" if tool is not None and tool.parallel else "exclusive"

    async def execute(self, input: ToolExecutionInput, *, gate: PipelineGate | None = None) -> ToolExecutionResult:
        call_id = input.call_id
        assert not (set(self.ungated) & self.active), f"{call_id} entered while an ungated call runs: {self.active}"
        if gate is None:
            assert not self.active, f"{call_id} has no gate but {self.active} are being executed"
            self.ungated.append(call_id)
            gate = _NoGate()
        self.active.add(call_id)
        try:
            return await self._execute(input, gate)
        finally:
            self.active.discard(call_id)

    async def _execute(self, input: ToolExecutionInput, gate: PipelineGate) -> ToolExecutionResult:
        call_id = input.call_id
        self.executed.append(call_id)
        if input.signal.aborted:
            async with gate.commit():
                self.trace.append(("commit", call_id))
            return failure_from_exception(AbortError("tool call aborted before dispatch", TOOL_ABORTED_BEFORE_DISPATCH))
        tool = self.tools.get(input.name)
        async with gate.policy():
            self.trace.append(("pre", call_id))
            if tool is not None and tool.policy_delay:
                await asyncio.sleep(tool.policy_delay)
            self.trace.append(("pre-end", call_id))
        result: ToolExecutionResult
        if input.signal.aborted:
            result = failure_from_exception(
                AbortError("tool call aborted before dispatch", TOOL_ABORTED_BEFORE_DISPATCH)
            )
        elif tool is None:
            result = failure_from_exception(ValueError(f'unknown tool "{input.name}"'))
        else:
            self.trace.append(("start", call_id))
            self.running.add(call_id)
            self.max_running = max(self.max_running, len(self.running))
            try:
                value = await tool.body(input.arguments, input.signal)
            except Exception as exc:
                result = failure_from_exception(exc)
            else:
                if input.signal.aborted:
                    result = failure_from_exception(AbortError("tool call aborted", TOOL_ABORTED))
                else:
                    result = ToolSuccess(value, [{"type": "text", "text": str(value)}])
            finally:
                self.running.discard(call_id)
                self.trace.append(("end", call_id))
        async with gate.commit():
            self.trace.append(("commit", call_id))
            if self.on_commit is not None:
                self.on_commit(call_id)
        return result


class _NoGate:
    """What an ungated call enters instead of a gate: nothing to wait for."""

    def policy(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def commit(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()


async def wait_or_abort(signal: AbortSignal, seconds: float) -> None:
    """Sleep ``seconds`` unless ``signal`` aborts first (then raise its AbortError)."""
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait([waiter], timeout=seconds)
    finally:
        waiter.cancel()
        try:
            await waiter
        except asyncio.CancelledError:
            pass
    if signal.aborted:
        raise AbortError("tool call aborted", TOOL_ABORTED)


def sleeper(seconds: float, value: Any = "ok") -> Body:
    async def body(arguments: Any, signal: AbortSignal) -> Any:
        await wait_or_abort(signal, seconds)
        return value

    return body


async def echo(arguments: Any, signal: AbortSignal) -> Any:
    await asyncio.sleep(0)
    return arguments
