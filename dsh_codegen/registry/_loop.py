"""The agent-loop helper: run one model turn's tool calls through a registry.

:func:`execute_tool_calls` takes the calls a model emitted in one turn and
returns one result per call, in model order. Bodies of consecutive
``parallel`` calls overlap in a rolling pool of at most ``max_parallel``;
an ``exclusive`` call is a barrier (it starts when nothing else is in flight
and nothing starts until it has committed). The classification of the next
call is asked again after every commit, so a commit that changes the
registry is seen by the calls after it.

Ordering (guarantees 153-155, docs/guarantees.md): calls start in model order; the
pre-execute phase (waterfall, approval, guards) of each call runs after the
previous call's, and its commit (post-execute, ``finalize_content``,
``on_result``, then the ``tool/result`` event) after the previous call's
commit. Every call runs the same way: in a task of its own (so the loop
never cancels a call; it aborts the calls' signal), awaiting
``registry.execute``. The loop hands the registry a :class:`PipelineGate`
per call that may overlap others to get this order; only bodies (and
around-dispatch wrappers) overlap. A call that runs alone (nothing in
flight, nothing may start before it commits) has nothing to be ordered
against and gets no gate.

Session log: ``tool/call`` is appended when a call starts, ``tool/result``
when it commits; both carry the batch's ``batchId`` so
:func:`derive_messages` can rebuild the turn.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

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
from dsh_codegen.registry.cancel import AbortError, AbortSignal, abort_signal

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
    """The arguments a model-emitted call passes to the registry (guarantee 156).

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
    """The scheduler state of one :func:`execute_tool_calls` run.

    Every call runs in a task of its own (:meth:`_start`, :meth:`_run_call`);
    a call that may overlap others gets a :class:`_CallGate`, a call that runs
    alone gets none (nothing to order it against) and the scheduler waits for
    its commit before it looks at the next call. Results are committed and
    logged in model order, and a cancellation of the loop's task becomes the
    loop's stop abort for the running calls, which are waited for (see
    :meth:`run`).
    """

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
        # Only events carry the batch id: no log, no id.
        self.batch_id = "" if log is None else uuid.uuid4().hex
        # Every call's signal: it follows the caller's signal (see run()) and
        # the loop aborts it itself to stop its started calls (_stop()).
        self.call_signal = AbortSignal()
        self._unfollow: Callable[[], None] = _noop
        self.results: list[ToolExecutionResult | None] = [None] * count
        self.inputs: list[ToolExecutionInput | None] = [None] * count
        # The gates' turns, made when the first gated call starts (calls that
        # run alone never wait for a turn; see _start()).
        self.policy_done: _Turns | None = None
        self.commit_done: _Turns | None = None
        # Call tasks started and not yet finished, by call index.
        self.in_flight: dict[int, asyncio.Task[None]] = {}
        self.next_start = 0
        self.failure: BaseException | None = None
        # Made by the first wait.
        self.wake: asyncio.Event | None = None

    # -- scheduling ----------------------------------------------------------

    async def run(self) -> list[ToolExecutionResult]:
        """Schedule every call and return the results in model order.

        Cancellation: a ``CancelledError`` (or an internal failure) aborts
        the calls' signal, drains every started call (surviving further
        cancellations) and is re-raised; see :func:`execute_tool_calls`.
        """
        self._follow_caller()
        try:
            try:
                await self._schedule()
            except BaseException as exc:
                self._stop()
                cancelled_meanwhile = await self._drain()
                if isinstance(exc, asyncio.CancelledError):
                    if self.failure is not None and exc.__cause__ is None:
                        # Cancellation wins; a call's failure meanwhile is its cause.
                        raise exc from self.failure
                    raise
                if cancelled_meanwhile:
                    raise asyncio.CancelledError() from exc
                raise
            return self._finish()
        finally:
            self._unfollow()

    def _follow_caller(self) -> None:
        """Make the calls' signal follow the caller's (``_unfollow()`` detaches it)."""
        caller = self.signal
        if caller.is_aborted():
            abort_signal(self.call_signal, caller.reason)
            self._unfollow = _noop
        else:
            self._unfollow = caller.add_listener(self._caller_aborted)

    def _caller_aborted(self, caller: AbortSignal) -> None:
        # The caller's signal listener: the calls follow it, the scheduler stops starting.
        abort_signal(self.call_signal, caller.reason)
        self._wake()

    def _stop(self) -> None:
        """Abort every started call's signal (the loop is stopping early)."""
        abort_signal(self.call_signal, AbortError(_STOP_MESSAGE))

    def _wake(self) -> None:
        wake = self.wake
        if wake is not None:
            wake.set()

    async def _schedule(self) -> None:
        """Start calls while the pool allows, then wait for the started ones to commit.

        A call that runs alone starts without a gate, and nothing starts
        until it has committed.

        Cancellation: while waiting it only waits on the wake event, so a
        cancellation leaves the call tasks untouched (:meth:`run` drains
        them).
        """
        count = len(self.calls)
        in_flight = self.in_flight
        while self.next_start < count and not self.signal.is_aborted():
            self._raise_failure()
            if len(in_flight) >= self.max_parallel:
                # Nothing can start whatever the next call is; classify it
                # after the next commit, when the answer can matter.
                await self._wait_for_change()
                continue
            index = self.next_start
            input = self._input(index)
            parallel = self.registry.execution_mode(input) == "parallel"
            if not in_flight and (not parallel or index == count - 1 or self.max_parallel == 1):
                # Nothing runs and nothing may start before this call commits.
                self._start(index, alone=True)
                while index in in_flight:
                    await self._wait_for_change()
            elif parallel:
                self._start(index, alone=False)
            else:
                await self._wait_for_change()
        while in_flight:
            self._raise_failure()
            await self._wait_for_change()
        self._raise_failure()

    async def _wait_for_change(self) -> None:
        """Wait for a commit, a failure or the caller's abort.

        Cancellation: propagates at once; nothing is held.
        """
        wake = self.wake
        if wake is None:
            wake = self.wake = asyncio.Event()
        wake.clear()
        await wake.wait()

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

    def _start(self, index: int, *, alone: bool) -> None:
        """Start call ``index`` in a task: gated, or (``alone``) without a gate."""
        if self.log is not None:
            self.log.append(self._call_event(index))
        self.next_start = index + 1
        gate: _CallGate | None = None
        if not alone:
            if self.policy_done is None:
                # The first gated call: every earlier call ran alone and has
                # committed, so their turns are passed already.
                count = len(self.calls)
                self.policy_done = _Turns(count, index)
                self.commit_done = _Turns(count, index)
            gate = _CallGate(self, index)
        loop = asyncio.get_running_loop()
        self.in_flight[index] = loop.create_task(
            self._run_call(index, gate), name=f"dsh_codegen tool call {self.calls[index].call_id}"
        )

    async def _drain(self) -> bool:
        """Wait until no call task is left; return whether a cancellation arrived meanwhile.

        Cancellation: absorbed and reported through the return value, so the
        drain always completes (the calls were aborted, so it is bounded by
        how fast bodies honour their signal).
        """
        cancelled = False
        while self.in_flight:
            try:
                await asyncio.wait(list(self.in_flight.values()))
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

    def _commit(self, index: int, result: object) -> None:
        """Record and log a call's result (its commit turn held). Raises ``TypeError`` for a non-result."""
        if type(result) is not ToolSuccess and type(result) is not ToolFailure:
            if not isinstance(result, (ToolSuccess, ToolFailure)):
                raise TypeError(f"registry.execute returned {type(result).__name__}, not a ToolExecutionResult")
        self.results[index] = result
        if self.log is not None:
            self.log.append(self._result_event(index, result))

    def _pass_turns(self, index: int) -> None:
        # A call that ran alone has committed: a later gated call may wait for its turns.
        if self.policy_done is not None and self.commit_done is not None:
            self.policy_done.pass_turn(index)
            self.commit_done.pass_turn(index)

    async def _run_call(self, index: int, gate: _CallGate | None) -> None:
        """Execute one call (the body of its task), then commit it in model order.

        Cancellation: the loop never cancels these tasks (it aborts their
        signal); an outside cancellation is recorded as an internal failure.
        """
        error: BaseException | None = None
        result: object = None
        try:
            pending = self.registry.execute(self._input(index), gate=gate)
            if not inspect.isawaitable(pending):
                raise TypeError(f"registry.execute returned {type(pending).__name__}, which cannot be awaited")
            result = await pending
        except (Exception, asyncio.CancelledError) as exc:
            error = exc
        try:
            if gate is not None:
                await gate.acquire_commit_turn()
            if error is None:
                self._commit(index, result)
        except (Exception, asyncio.CancelledError) as exc:
            if error is None:
                error = exc
        finally:
            if gate is None:
                self._pass_turns(index)
            else:
                gate.release()
            del self.in_flight[index]
            if error is not None and self.failure is None:
                self.failure = error
                self._stop()
            self._wake()

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


def _noop() -> None:
    return None


class _CallGate:
    """The :class:`PipelineGate` of one call that may overlap others: model-order turns for policy and commit.

    Call ``i`` passes its policy turn (``policy_done``) once it can no
    longer run pre-execute (its policy context exited, or it reached its
    commit), and only after call ``i-1`` did; it passes its commit turn
    (``commit_done``) after its ``tool/result`` event, and only after call
    ``i-1`` did. So a call that skips pre-execute never holds up the next
    call's pre-execute behind an earlier body. A turn already passed costs
    no wait (no coroutine, no future, no loop iteration).
    """

    __slots__ = ("_commit", "_commit_entered", "_holds_commit", "_index", "_policy", "_policy_entered")

    def __init__(self, batch: _Batch, index: int) -> None:
        assert batch.policy_done is not None and batch.commit_done is not None  # made by _start()
        self._policy = batch.policy_done
        self._commit = batch.commit_done
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
        if index and not self._policy.passed(index - 1):
            await self._policy.wait(index - 1)

    def policy_finished(self) -> None:
        self._policy.pass_turn(self._index)

    async def acquire_commit_turn(self) -> None:
        """Wait until every earlier call has committed; then this call holds the commit turn.

        Cancellation: a cancelled wait leaves nothing held (``release`` still
        runs in the call task's ``finally``).
        """
        if self._holds_commit:
            return
        index = self._index
        policy = self._policy
        if index and not policy.passed(index - 1):
            await policy.wait(index - 1)
        policy.pass_turn(index)
        if index and not self._commit.passed(index - 1):
            await self._commit.wait(index - 1)
        self._holds_commit = True

    def release(self) -> None:
        """Pass both turns of this call (called once, when the call task ends)."""
        self._policy.pass_turn(self._index)
        self._commit.pass_turn(self._index)


class _Turns:
    """Which calls of a batch have passed one kind of turn (policy or commit).

    Only call ``i + 1`` ever waits for call ``i``'s turn, one wait at a time,
    so each wait has a future of its own and a cancelled wait leaves nothing
    behind.
    """

    __slots__ = ("_passed", "_waiters")

    def __init__(self, count: int, passed_before: int) -> None:
        # The calls before ``passed_before`` ran alone and committed already.
        self._passed = [True] * passed_before + [False] * (count - passed_before)
        self._waiters: dict[int, asyncio.Future[None]] = {}

    def passed(self, index: int) -> bool:
        return self._passed[index]

    def pass_turn(self, index: int) -> None:
        """Mark call ``index`` as past this turn (idempotent) and wake its waiter."""
        if not self._passed[index]:
            self._passed[index] = True
            waiter = self._waiters.pop(index, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    async def wait(self, index: int) -> None:
        """Return once call ``index`` has passed this turn.

        Cancellation: propagates; the wait's future is dropped.
        """
        while not self._passed[index]:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters[index] = waiter
            try:
                await waiter
            finally:
                if self._waiters.get(index) is waiter:
                    del self._waiters[index]


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
