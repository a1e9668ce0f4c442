"""The agent-loop helper: run one model turn's tool calls through a registry.

:func:`execute_tool_calls` takes the calls a model emitted in one turn and
returns one result per call, in model order. Bodies of consecutive
``parallel`` calls overlap in a rolling pool of at most ``max_parallel``;
an ``exclusive`` call is a barrier (it starts when nothing else is in flight
and nothing starts until it has committed). The classification of the next
call is asked again after every commit, so a commit that changes the
registry is seen by the calls after it.

Ordering (CONTRACT.md behaviours 153-155): calls start in model order; the
pre-execute phase (waterfall, approval, guards) of each call runs after the
previous call's, and its commit (post-execute, ``finalize_content``,
``on_result``, then the ``tool/result`` event) after the previous call's
commit. The loop hands the registry a :class:`PipelineGate` per call to get
this; only bodies (and around-dispatch wrappers) overlap.

Session log: ``tool/call`` is appended when a call starts, ``tool/result``
when it commits; both carry the batch's ``batchId`` so
:func:`derive_messages` can rebuild the turn.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from dsh_codegen.json import LosslessJsonError, is_json_value, parse_json
from dsh_codegen.registry._errors import TOOL_ABORTED_BEFORE_DISPATCH
from dsh_codegen.registry._execution import ToolExecutionInput
from dsh_codegen.registry._gate import PipelineGate
from dsh_codegen.registry._results import (
    UNSET,
    JsonValue,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    failure_from_exception,
)
from dsh_codegen.registry._session_log import (
    TOOL_CALL_EVENT,
    TOOL_RESULT_EVENT,
    SessionEvent,
    SessionLog,
    event_time,
)
from dsh_codegen.registry.cancel import AbortController, AbortError, AbortSignal, fuse_signals

__all__ = [
    "ABORTED_BEFORE_DISPATCH_MESSAGE",
    "ToolCall",
    "ToolCallExecutor",
    "execute_tool_calls",
    "parse_call_arguments",
]

ABORTED_BEFORE_DISPATCH_MESSAGE: Final = "tool call aborted before dispatch"
#: The reason the loop aborts its started calls when it stops early.
_STOP_MESSAGE: Final = "tool call loop stopped"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the model emitted it.

    ``arguments`` is the model's raw argument text (parsed by the loop, see
    :func:`parse_call_arguments`) or an already parsed JSON value.
    """

    call_id: str
    name: str
    arguments: str | JsonValue


class ToolCallExecutor(Protocol):
    """What :func:`execute_tool_calls` needs from a registry."""

    async def execute(self, input: ToolExecutionInput, *, gate: PipelineGate | None = None) -> ToolExecutionResult:
        """Run one call through the pipeline and return its final result.

        Cancellation: the loop never cancels the task awaiting this (it aborts
        ``input.signal`` instead); an implementation must settle the body
        before it returns.
        """
        ...

    def execution_mode(self, input: ToolExecutionInput) -> str:
        """``"parallel"`` or ``"exclusive"`` for one call."""
        ...


def parse_call_arguments(arguments: str | JsonValue) -> JsonValue:
    """The arguments a model-emitted call passes to the registry (CONTRACT.md behaviour 156).

    A ``str`` (a subclass is read as its plain value) is parsed by
    :func:`dsh_codegen.json.parse_json`, whose result is already frozen
    lossless JSON, so the registry's snapshot of it is free. The empty string
    (or only whitespace, in ``str.strip``'s sense) is ``{}``. Text that is not
    JSON (including ``NaN`` and ``Infinity``, which Python's parser would
    otherwise accept, trailing data, or an integer beyond
    ``sys.get_int_max_str_digits()``) is kept as the raw string, so the tool's
    own validation reports it. Nesting of any depth parses. Valid JSON that is
    not lossless (``-0.0``, a float overflowing to infinity) returns
    ``json.loads``'s plain value, so the registry reports it as not lossless
    (or, nested too deep for ``json.loads``, the raw string). Anything else
    is returned unchanged. Never raises.
    """
    if not isinstance(arguments, str):
        return arguments
    try:
        value: JsonValue = parse_json(arguments)
    except LosslessJsonError:
        try:
            lossy: JsonValue = json.loads(arguments)
        except RecursionError:
            return arguments
        return lossy
    except ValueError:  # json.JSONDecodeError, NaN/Infinity, an int beyond the digit limit
        if not arguments.strip():
            return {}
        return arguments
    return value


async def execute_tool_calls(
    registry: ToolCallExecutor,
    calls: Sequence[ToolCall],
    *,
    signal: AbortSignal,
    max_parallel: int = 10,
    log: SessionLog | None = None,
    agent: Hashable | None = None,
) -> list[ToolExecutionResult]:
    """Execute one turn's tool calls and return their results in model order.

    Guarantees:

    - exactly one result per call, at the call's index;
    - consecutive ``parallel`` calls overlap, at most ``max_parallel`` in flight
      (started and not yet committed); an ``exclusive`` call runs alone and
      later calls wait for its commit; classification is re-read after every
      commit;
    - pre-execute phases, commits and ``tool/result`` events follow model
      order whatever order bodies finish in;
    - when ``signal`` aborts: no call starts any more, the started calls are
      drained (they see the abort through their signal) and committed, then
      every call never started gets a synthetic ``tool/call`` event and an
      ``ABORTED_BEFORE_DISPATCH`` result (also logged). Synthetic results are
      made by the loop; the registry, and so ``on_result``, never sees them.

    Calls run with ``agent`` as their scope key and a signal that follows
    ``signal`` and the loop's own stop signal.

    Raised errors: ``ValueError`` for ``max_parallel`` that is not a positive
    ``int`` (``max_parallel must be a positive integer``) or duplicate call
    ids; ``TypeError`` for calls that are not :class:`ToolCall` with ``str``
    ids and names, or a ``signal`` that is not an :class:`AbortSignal`.
    Nothing runs then. An internal failure (the log or the registry raising,
    a result of the wrong type) aborts the started calls, waits for them to
    settle and re-raises, without fabricating results for the others.

    Cancellation: cancelling the awaiting task aborts every started call,
    waits for each to settle and commit (a second cancellation does not cut
    the wait short), then re-raises ``CancelledError``. No task outlives the
    call.
    """
    if type(max_parallel) is not int or max_parallel < 1:
        raise ValueError("max_parallel must be a positive integer")
    if not isinstance(signal, AbortSignal):
        raise TypeError(f"signal must be an AbortSignal, got {type(signal).__name__}")
    call_list = list(calls)
    seen: dict[str, int] = {}
    for index, call in enumerate(call_list):
        if not isinstance(call, ToolCall):
            raise TypeError(f"calls[{index}] must be a ToolCall, got {type(call).__name__}")
        if not isinstance(call.call_id, str):
            raise TypeError(f"calls[{index}].call_id must be a str, got {type(call.call_id).__name__}")
        if not isinstance(call.name, str):
            raise TypeError(f"calls[{index}].name must be a str, got {type(call.name).__name__}")
        first = seen.setdefault(call.call_id, index)
        if first != index:
            raise ValueError(f"calls[{index}].call_id {call.call_id!r} duplicates calls[{first}]")
    if not call_list:
        return []
    return await _Batch(registry, call_list, signal, max_parallel, log, agent).run()


class _Batch:
    """The scheduler state of one :func:`execute_tool_calls` run."""

    def __init__(
        self,
        registry: ToolCallExecutor,
        calls: list[ToolCall],
        signal: AbortSignal,
        max_parallel: int,
        log: SessionLog | None,
        agent: Hashable | None,
    ) -> None:
        count = len(calls)
        self.registry = registry
        self.calls = calls
        self.arguments = [parse_call_arguments(call.arguments) for call in calls]
        self.signal = signal
        self.max_parallel = max_parallel
        self.log = log
        self.agent = agent
        self.batch_id = uuid.uuid4().hex
        self.stop = AbortController()
        self.call_signal: AbortSignal = signal
        self.results: list[ToolExecutionResult | None] = [None] * count
        self.inputs: list[ToolExecutionInput | None] = [None] * count
        self.policy_done = [asyncio.Event() for _ in range(count)]
        self.commit_done = [asyncio.Event() for _ in range(count)]
        self.in_flight: dict[asyncio.Task[None], int] = {}
        self.exclusive_in_flight = False
        self.next_start = 0
        self.failure: BaseException | None = None
        self.wake = asyncio.Event()

    # -- scheduling ----------------------------------------------------------

    async def run(self) -> list[ToolExecutionResult]:
        """Schedule every call and return the results in model order.

        Cancellation: a ``CancelledError`` (or an internal failure) aborts
        the stop signal, drains every started call (surviving further
        cancellations) and is re-raised; see :func:`execute_tool_calls`.
        """
        self.call_signal, detach = fuse_signals([self.signal, self.stop.signal])
        remove = self.signal.add_listener(lambda _signal: self.wake.set())
        try:
            try:
                await self._schedule()
            except BaseException as exc:
                self.stop.abort(AbortError(_STOP_MESSAGE))
                if await self._drain() and not isinstance(exc, asyncio.CancelledError):
                    raise asyncio.CancelledError() from exc
                raise
            return self._finish()
        finally:
            remove()
            detach()

    async def _schedule(self) -> None:
        """Start calls while the pool allows, then wait for the started ones to commit.

        Cancellation: it only waits on the wake event, so a cancellation
        leaves the call tasks untouched; :meth:`run` drains them.
        """
        count = len(self.calls)
        while self.next_start < count and not self.signal.aborted:
            self._raise_failure()
            if self.exclusive_in_flight or len(self.in_flight) >= self.max_parallel:
                # Nothing can start whatever the next call is; classify it
                # after the next commit, when the answer can matter.
                await self._wait_for_change()
                continue
            index = self.next_start
            parallel = self.registry.execution_mode(self._input(index)) == "parallel"
            if parallel or not self.in_flight:
                self._start(index, exclusive=not parallel)
            else:
                await self._wait_for_change()
        while self.in_flight:
            self._raise_failure()
            await self._wait_for_change()
        self._raise_failure()

    async def _wait_for_change(self) -> None:
        """Wait for a commit, a failure or the caller's abort.

        Cancellation: propagates at once; nothing is held.
        """
        self.wake.clear()
        await self.wake.wait()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def _input(self, index: int) -> ToolExecutionInput:
        # One input per call, built on first use (classification or start):
        # the registry reads it, never changes it (it is frozen).
        made = self.inputs[index]
        if made is None:
            call = self.calls[index]
            made = self.inputs[index] = ToolExecutionInput(
                call_id=call.call_id,
                name=call.name,
                arguments=self.arguments[index],
                signal=self.call_signal,
                agent=self.agent,
            )
        return made

    def _start(self, index: int, *, exclusive: bool) -> None:
        if self.log is not None:
            self.log.append(self._call_event(index))
        self.next_start = index + 1
        task = asyncio.create_task(self._run_call(index), name=f"dsh_codegen tool call {self.calls[index].call_id}")
        self.in_flight[task] = index
        self.exclusive_in_flight = exclusive

    async def _drain(self) -> bool:
        """Wait until no call task is left; return whether a cancellation arrived meanwhile.

        Cancellation: absorbed and reported through the return value, so the
        drain always completes (the calls were aborted, so it is bounded by
        how fast bodies honour their signal).
        """
        cancelled = False
        while self.in_flight:
            try:
                await asyncio.wait(list(self.in_flight))
            except asyncio.CancelledError:
                cancelled = True
        return cancelled

    def _finish(self) -> list[ToolExecutionResult]:
        # Only reached when the signal aborted or every call ran: the unstarted
        # tail (if any) gets its synthetic pair, in model order after the
        # commits of the started calls.
        for index in range(self.next_start, len(self.calls)):
            if self.log is not None:
                self.log.append(self._call_event(index))
            synthetic = failure_from_exception(AbortError(ABORTED_BEFORE_DISPATCH_MESSAGE, TOOL_ABORTED_BEFORE_DISPATCH))
            self.results[index] = synthetic
            if self.log is not None:
                self.log.append(self._result_event(index, synthetic))
        results: list[ToolExecutionResult] = []
        for result in self.results:
            assert result is not None  # every index was committed or synthesized above
            results.append(result)
        return results

    # -- one call -------------------------------------------------------------

    async def _run_call(self, index: int) -> None:
        """Execute one call, then commit it in model order.

        Cancellation: the loop never cancels these tasks (it aborts their
        signal); an outside cancellation is recorded as an internal failure.
        """
        gate = _CallGate(self, index)
        error: BaseException | None = None
        result: object = None
        try:
            result = await self.registry.execute(self._input(index), gate=gate)
        except (Exception, asyncio.CancelledError) as exc:
            error = exc
        try:
            await gate.acquire_commit_turn()
            if error is None:
                if not isinstance(result, (ToolSuccess, ToolFailure)):
                    raise TypeError(f"registry.execute returned {type(result).__name__}, not a ToolExecutionResult")
                self.results[index] = result
                if self.log is not None:
                    self.log.append(self._result_event(index, result))
        except (Exception, asyncio.CancelledError) as exc:
            if error is None:
                error = exc
        finally:
            gate.release()
            del self.in_flight[asyncio.current_task()]  # type: ignore[arg-type]
            if error is not None and self.failure is None:
                self.failure = error
                self.stop.abort(AbortError(_STOP_MESSAGE))
            if not self.in_flight:
                # An exclusive call runs alone, so an empty pool ends it.
                self.exclusive_in_flight = False
            self.wake.set()

    # -- events ---------------------------------------------------------------

    def _call_event(self, index: int) -> SessionEvent:
        call = self.calls[index]
        event: SessionEvent = {
            "type": TOOL_CALL_EVENT,
            "batchId": self.batch_id,
            "callId": call.call_id,
            "name": call.name,
        }
        arguments = self.arguments[index]
        # Arguments a caller passed pre-parsed may be lossy; the registry
        # reports that as the call's result, so the event just leaves them out.
        if isinstance(call.arguments, str) or is_json_value(arguments):
            event["arguments"] = arguments
        if isinstance(self.agent, str):
            event["agent"] = self.agent
        event["time"] = event_time()
        return event

    def _result_event(self, index: int, result: ToolExecutionResult) -> SessionEvent:
        call = self.calls[index]
        event: SessionEvent = {
            "type": TOOL_RESULT_EVENT,
            "batchId": self.batch_id,
            "callId": call.call_id,
            "name": call.name,
            "isError": result.is_error,
            "content": result.content,
        }
        if isinstance(result, ToolFailure):
            error: SessionEvent = {"message": result.error.message}
            if result.error.info is not None:
                error["info"] = result.error.info.to_json()
            event["error"] = error
        if result.meta is not UNSET:
            event["meta"] = result.meta
        if result.additional_contexts:
            event["additionalContexts"] = list(result.additional_contexts)
        if isinstance(result, ToolSuccess) and result.concludes_turn:
            event["concludesTurn"] = True
        event["time"] = event_time()
        return event


class _CallGate:
    """The :class:`PipelineGate` of one call: model-order turns for policy and commit.

    ``policy_done[i]`` is set once call ``i`` can no longer run pre-execute
    (its policy context exited, or it reached its commit), and only after
    ``policy_done[i-1]``; ``commit_done[i]`` is set after call ``i``'s
    ``tool/result`` event, and only after ``commit_done[i-1]``. So a call that
    skips pre-execute never holds up the next call's pre-execute behind an
    earlier body.
    """

    __slots__ = ("_batch", "_commit_entered", "_holds_commit", "_index", "_policy_entered")

    def __init__(self, batch: _Batch, index: int) -> None:
        self._batch = batch
        self._index = index
        self._policy_entered = False
        self._commit_entered = False
        self._holds_commit = False

    def policy(self) -> _PolicyTurn:
        if self._policy_entered:
            raise RuntimeError("PipelineGate.policy() entered twice for one call")
        self._policy_entered = True
        return _PolicyTurn(self)

    def commit(self) -> _CommitTurn:
        if self._commit_entered:
            raise RuntimeError("PipelineGate.commit() entered twice for one call")
        self._commit_entered = True
        return _CommitTurn(self)

    async def acquire_policy_turn(self) -> None:
        """Wait until every earlier call is past pre-execute.

        Cancellation: a cancelled wait leaves nothing held.
        """
        index = self._index
        if index:
            await self._batch.policy_done[index - 1].wait()

    def policy_finished(self) -> None:
        self._batch.policy_done[self._index].set()

    async def acquire_commit_turn(self) -> None:
        """Wait until every earlier call has committed; then this call holds the commit turn.

        Cancellation: a cancelled wait leaves nothing held (``release`` still
        runs in the call task's ``finally``).
        """
        if self._holds_commit:
            return
        batch, index = self._batch, self._index
        if index:
            await batch.policy_done[index - 1].wait()
        batch.policy_done[index].set()
        if index:
            await batch.commit_done[index - 1].wait()
        self._holds_commit = True

    def release(self) -> None:
        """Mark this call as past policy and committed (called once, when the call task ends)."""
        self._batch.policy_done[self._index].set()
        self._batch.commit_done[self._index].set()


class _PolicyTurn:
    __slots__ = ("_gate",)

    def __init__(self, gate: _CallGate) -> None:
        self._gate = gate

    async def __aenter__(self) -> None:
        """Wait for the policy turn. Cancellation: propagates; nothing is held."""
        await self._gate.acquire_policy_turn()

    async def __aexit__(self, *exc_info: object) -> None:
        """Pass the policy turn on. Cancellation: never awaits."""
        self._gate.policy_finished()


class _CommitTurn:
    __slots__ = ("_gate",)

    def __init__(self, gate: _CallGate) -> None:
        self._gate = gate

    async def __aenter__(self) -> None:
        """Wait for the commit turn. Cancellation: propagates; nothing is held."""
        await self._gate.acquire_commit_turn()

    async def __aexit__(self, *exc_info: object) -> None:
        """Keep the turn. Cancellation: never awaits."""
        # The turn stays held until the loop has logged the result (release()).
        return None
