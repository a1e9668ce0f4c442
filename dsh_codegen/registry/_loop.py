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
``registry.execute``. The order is kept by the one scheduler of ordered
calls, :class:`dsh_codegen.registry.scheduler.CallScheduler` (which Code
Mode's sub-calls use too): it hands the registry a :class:`PipelineGate` per
call that may overlap others; only bodies (and around-dispatch wrappers)
overlap. A call that runs alone (nothing in flight, nothing may start before
it commits) has nothing to be ordered against and gets no gate.

Session log: ``tool/call`` is appended when a call starts, ``tool/result``
when it commits; both carry the batch's ``batchId`` so
:func:`derive_messages` can rebuild the turn.

Suspension: the batch is the :class:`~dsh_codegen.registry._approval.SuspensionScope`
of its calls. A call whose approval is answered ``"deferred"`` ends without a
result (``CallDeferred``); from then on no call starts, and a started call
that reaches its pre-execute phase is held (it counts as not started). Once
the started calls have ended, :func:`execute_tool_calls` raises
:class:`~dsh_codegen.registry.suspension.ToolCallsSuspended`;
:func:`resume_tool_calls` runs the rest of the batch with the decisions.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
import weakref
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from dsh_codegen.json import LosslessJsonError, is_json_value, parse_json
from dsh_codegen.registry._approval import CallDeferred, suspension_scope
from dsh_codegen.registry._errors import TOOL_ABORTED_BEFORE_DISPATCH
from dsh_codegen.registry._execution import ToolExecutionInput
from dsh_codegen.registry._gate import PipelineGate
from dsh_codegen.registry._results import (
    JsonValue,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    failure_from_exception,
)
from dsh_codegen.registry._session_log import (
    APPROVAL_PENDING_EVENT,
    APPROVAL_RESOLVED_EVENT,
    TOOL_CALL_EVENT,
    TOOL_RESULT_EVENT,
    SessionEvent,
    SessionLog,
    event_time,
    result_fields,
)
from dsh_codegen.registry.cancel import AbortError, AbortSignal, abort_signal
from dsh_codegen.registry.scheduler import CallScheduler, ScheduledCall
from dsh_codegen.registry.suspension import (
    PendingApproval,
    SuspendedCall,
    Suspension,
    ToolCallsSuspended,
    new_id,
    tools_to_check,
)

if TYPE_CHECKING:
    from dsh_codegen.registry._registry import ToolRegistry

__all__ = [
    "ABORTED_BEFORE_DISPATCH_MESSAGE",
    "ToolCall",
    "ToolCallExecutor",
    "execute_tool_calls",
    "parse_call_arguments",
    "resume_tool_calls",
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

    Suspension: when an approval service answers ``"deferred"``, the call is
    suspended, not failed: no result is published for it, no call starts any
    more, and once the started calls have ended this raises
    :class:`~dsh_codegen.registry.suspension.ToolCallsSuspended`, whose
    ``suspension`` :func:`resume_tool_calls` finishes. (When ``signal``
    aborts meanwhile the batch ends as an aborted one instead: the suspended
    calls get ``ABORTED_BEFORE_DISPATCH`` like the calls that never started.)

    Cancellation: cancelling the awaiting task aborts every started call,
    waits for each to settle and commit (a second cancellation does not cut
    the wait short), then re-raises ``CancelledError``. No task outlives the
    call.
    """
    _check_options(max_parallel, signal)
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


def _check_options(max_parallel: object, signal: object) -> None:
    if type(max_parallel) is not int or max_parallel < 1:
        raise ValueError("max_parallel must be a positive integer")
    if not isinstance(signal, AbortSignal):
        raise TypeError(f"signal must be an AbortSignal, got {type(signal).__name__}")


#: Per registry, the suspensions already resumed in this process (a second resume is refused).
_resumed: weakref.WeakKeyDictionary[object, set[str]] = weakref.WeakKeyDictionary()


async def resume_tool_calls(
    registry: ToolRegistry,
    suspension: Suspension,
    decisions: Mapping[str, str],
    *,
    signal: AbortSignal,
    log: SessionLog | None = None,
    agent: Hashable | None = None,
    max_parallel: int | None = None,
) -> list[ToolExecutionResult]:
    """Finish a suspended batch and return the results of all its calls in model order.

    ``decisions`` answers every pending approval of ``suspension`` by its
    ``approval_id``: ``"allowed-once"`` or ``"rejected"``. The calls that
    finished before keep their results and never run again; each pending call
    runs its pipeline again, its ``Ask`` answered by the decision (a rejected
    call gets the same rejection result as an inline one); the calls that
    never started run as they would have. The results are those an
    uninterrupted run would have given. A call that is deferred again
    suspends the batch again: this raises ``ToolCallsSuspended`` with a new
    suspension (the finished calls of both runs in it).

    ``agent`` defaults to the suspension's (the batch's agent when it was a
    ``str``); ``max_parallel`` to the batch's; ``log`` receives one
    ``tool/approval-resolved`` event per decision, then the events of the
    calls that run (under the batch's ``batchId``; a call whose ``tool/call``
    was logged before is not logged again).

    Raised errors, before anything runs or is logged: ``TypeError`` for a
    ``suspension`` that is not a :class:`Suspension` and the argument errors
    of :func:`execute_tool_calls`; ``ValueError`` for a decision for an
    approval id the suspension does not hold (another batch's), a missing or
    unknown decision, a suspension already resumed in this process, or a
    registry where a tool still to run was removed or changed its schema.

    Cancellation: as :func:`execute_tool_calls`.
    """
    if not isinstance(suspension, Suspension):
        raise TypeError(f"suspension must be a Suspension, got {type(suspension).__name__}")
    parallel = suspension.max_parallel if max_parallel is None else max_parallel
    _check_options(parallel, signal)
    by_call = suspension.decisions_by_call(decisions)
    run_as = suspension.agent if agent is None else agent
    suspension.check_registry(registry, run_as)
    resumed = _resumed.setdefault(registry, set())
    if suspension.suspension_id in resumed:
        raise ValueError(f"suspension {suspension.suspension_id} was already resumed")
    resumed.add(suspension.suspension_id)
    calls = [ToolCall(call.call_id, call.name, call.arguments) for call in suspension.calls]
    batch = _Batch(registry, calls, signal, parallel, log, run_as, batch_id=suspension.batch_id or None)
    for batch_call, suspended in zip(batch.calls, suspension.calls):
        batch_call.result = suspended.result
        batch_call.announced = suspended.announced
    for call in suspension.calls:
        if call.state == "pending" and call.code is not None:
            batch.states[call.call_id] = call.code
            # The run passed its own pre-execute phase before: an Ask there is answered as it was then.
            by_call[call.call_id] = "allowed-once"
    batch.decisions = by_call
    if log is not None:
        for item in suspension.pending:
            event: SessionEvent = {
                "type": APPROVAL_RESOLVED_EVENT,
                "batchId": batch.batch_id,
                "approvalId": item.approval_id,
                "callId": item.call_id,
                "name": item.tool_name,
                "decision": decisions[item.approval_id],
            }
            if item.sub_call_id is not None:
                event["subCallId"] = item.sub_call_id
            event["time"] = event_time()
            log.append(event)
    return await batch.run()


class _Batch:
    """One :func:`execute_tool_calls` run: its calls, their signal, results and events.

    The order is the :class:`~dsh_codegen.registry.scheduler.CallScheduler`'s
    (the batch is submitted whole, so its last call may run alone); what is
    the loop's own stays here: the calls' signal, which follows the caller's
    and which the loop aborts to stop its started calls, the ``tool/call`` and
    ``tool/result`` events, the first internal failure, and the synthetic
    results of the calls that never started (see :meth:`run`).
    """

    def __init__(
        self,
        registry: ToolCallExecutor,
        calls: list[ToolCall],
        signal: AbortSignal,
        max_parallel: int,
        log: SessionLog | None,
        agent: Hashable | None,
        batch_id: str | None = None,
    ) -> None:
        self.registry = registry
        self.signal = signal
        self.log = log
        self.agent = agent
        self.max_parallel = max_parallel
        # Only events carry the batch id: no log, no id (a suspension makes one if it needs it).
        self.batch_id = batch_id if batch_id is not None else "" if log is None else uuid.uuid4().hex
        #: Recorded approval answers by call id (a resumed batch's decisions), each used once.
        self.decisions: dict[str, str] = {}
        #: Whether a call was deferred: no call starts any more, and the batch ends suspended.
        self.suspended = False
        #: A resumed batch's suspended Code Mode runs: call id -> the state each left.
        self.states: dict[str, Any] = {}
        # Every call's signal: it follows the caller's signal (see run()) and
        # the loop aborts it itself to stop its started calls (_stop()).
        self.call_signal = AbortSignal()
        self._unfollow: Callable[[], None] = _noop
        self.calls = [_BatchCall(self, call) for call in calls]
        self.scheduler: CallScheduler[_BatchCall] = CallScheduler(max_parallel)
        self.failure: BaseException | None = None

    async def run(self) -> list[ToolExecutionResult]:
        """Schedule every call and return the results in model order.

        Cancellation: a ``CancelledError`` (or an internal failure) aborts
        the calls' signal, drains every started call (surviving further
        cancellations) and is re-raised; see :func:`execute_tool_calls`.
        """
        self._follow_caller()
        scheduler = self.scheduler
        try:
            try:
                if not self.signal.aborted:
                    # The calls' contexts (copied at submission) hold this batch as their suspension scope.
                    with suspension_scope(self):
                        scheduler.submit_batch([call for call in self.calls if call.result is None])
                await scheduler.wait()
                if self.failure is not None:
                    raise self.failure
            except BaseException as exc:
                self._stop()
                cancelled_meanwhile = await scheduler.drain()
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
        if caller.aborted:
            abort_signal(self.call_signal, caller.reason)
            self._unfollow = _noop
        else:
            self._unfollow = caller.add_listener(self._caller_aborted)

    def _caller_aborted(self, caller: AbortSignal) -> None:
        # The caller's signal listener: the calls follow it, nothing starts any more.
        abort_signal(self.call_signal, caller.reason)
        self.scheduler.stop()

    def _stop(self) -> None:
        """Stop: nothing starts any more, and every started call's signal aborts."""
        self.scheduler.stop()
        abort_signal(self.call_signal, AbortError(_STOP_MESSAGE))

    def failed(self, error: BaseException) -> None:
        """A call (or its classification, or its ``tool/call`` event) failed: the first failure stops the batch."""
        if self.failure is None:
            self.failure = error
            self._stop()

    # -- the suspension scope of the calls (read by the policy stage) ---------------------

    def decision(self, call_id: str) -> str | None:
        return self.decisions.pop(call_id, None)

    def suspending(self) -> bool:
        return self.suspended

    def deferring(self, call_id: str) -> None:
        self.suspended = True
        self.scheduler.stop()  # nothing starts after a deferred call; the queued ones wait for the resume

    def resumed_state(self, call_id: str) -> Any:
        return self.states.get(call_id)

    def _finish(self) -> list[ToolExecutionResult]:
        # Only reached when the signal aborted or every call ran or was held: the calls
        # that never started (a tail, as calls start in order) get their
        # synthetic pair, in model order after the commits of the started calls.
        if self.suspended and not self.signal.aborted:
            raise ToolCallsSuspended(self._suspension())
        results: list[ToolExecutionResult] = []
        for call in self.calls:
            result = call.result
            if result is None:
                if self.log is not None and not call.announced:
                    self.log.append(self._call_event(call))
                result = failure_from_exception(
                    AbortError(ABORTED_BEFORE_DISPATCH_MESSAGE, TOOL_ABORTED_BEFORE_DISPATCH)
                )
                if self.log is not None:
                    self.log.append(self._result_event(call, result))
            results.append(result)
        return results

    def _suspension(self) -> Suspension:
        """What the batch leaves once suspended: every call's state, in model order."""
        if not self.batch_id:
            self.batch_id = uuid.uuid4().hex
        calls: list[SuspendedCall] = []
        pending: list[PendingApproval] = []
        to_run: list[str] = []
        for call in self.calls:
            deferral = call.deferral
            if call.result is not None:
                state: Any = "finished"
            elif deferral is not None and not deferral.held:
                state = "pending"
                if deferral.sub_calls:
                    for approval_id, (sub_call_id, name, arguments, reason) in zip(
                        call.approval_ids, deferral.sub_calls
                    ):
                        pending.append(
                            PendingApproval(approval_id, call.call.call_id, name, arguments, reason, sub_call_id)
                        )
                        to_run.append(name)
                else:
                    pending.append(
                        PendingApproval(
                            call.approval_ids[0], call.call.call_id, call.call.name, call.arguments, deferral.reason
                        )
                    )
            else:
                state = "not-started"
            if state != "finished":
                to_run.append(call.call.name)
            calls.append(
                SuspendedCall(
                    call.call.call_id,
                    call.call.name,
                    call.call.arguments,
                    state,
                    call.result,
                    call.announced,
                    deferral.state if state == "pending" and deferral is not None else None,
                )
            )
        registry: Any = self.registry
        return Suspension(
            suspension_id=new_id(),
            batch_id=self.batch_id,
            agent=self.agent if isinstance(self.agent, str) else None,
            max_parallel=self.max_parallel,
            calls=calls,
            pending=pending,
            tools=tools_to_check(registry, self.agent, to_run) if hasattr(registry, "resolve") else {},
        )

    def _pending_event(
        self, batch_call: _BatchCall, approval_id: str, name: str, reason: str | None, sub_call_id: str | None
    ) -> SessionEvent:
        event: SessionEvent = {
            "type": APPROVAL_PENDING_EVENT,
            "batchId": self.batch_id,
            "approvalId": approval_id,
            "callId": batch_call.call.call_id,
            "name": name,
            "reason": reason,
        }
        if sub_call_id is not None:
            event["subCallId"] = sub_call_id
        if isinstance(self.agent, str):
            event["agent"] = self.agent
        event["time"] = event_time()
        return event

    # -- events ---------------------------------------------------------------

    def _call_event(self, batch_call: _BatchCall) -> SessionEvent:
        call = batch_call.call
        event: SessionEvent = {
            "type": TOOL_CALL_EVENT,
            "batchId": self.batch_id,
            "callId": call.call_id,
            "name": call.name,
        }
        arguments = batch_call.arguments
        # Arguments a caller passed pre-parsed may be lossy; the registry
        # reports that as the call's result, so the event just leaves them out.
        if isinstance(call.arguments, str) or is_json_value(arguments):
            event["arguments"] = arguments
        if isinstance(self.agent, str):
            event["agent"] = self.agent
        event["time"] = event_time()
        return event

    def _result_event(self, batch_call: _BatchCall, result: ToolExecutionResult) -> SessionEvent:
        call = batch_call.call
        event: SessionEvent = {
            "type": TOOL_RESULT_EVENT,
            "batchId": self.batch_id,
            "callId": call.call_id,
            "name": call.name,
            **result_fields(result),
            "time": event_time(),
        }
        return event


class _BatchCall(ScheduledCall):
    """One call of a batch: what the scheduler runs for it, and its result once committed."""

    __slots__ = ("announced", "approval_ids", "arguments", "batch", "call", "deferral", "input", "result")

    def __init__(self, batch: _Batch, call: ToolCall) -> None:
        ScheduledCall.__init__(self)
        self.batch = batch
        self.call = call
        self.arguments = parse_call_arguments(call.arguments)
        # What the registry reads for classification and execution (frozen).
        self.input = ToolExecutionInput(call.call_id, call.name, self.arguments, batch.call_signal, batch.agent)
        #: The committed result (``None`` until then; a call that never started gets a synthetic one).
        self.result: ToolExecutionResult | None = None
        #: Whether its ``tool/call`` event is logged (by this run or, resumed, by the suspended one).
        self.announced = False
        #: How the call was suspended (deferred or held), if it was, and its approval ids once deferred
        #: (one, or one per deferred sub-call of a Code Mode run).
        self.deferral: CallDeferred | None = None
        self.approval_ids: list[str] = []

    def classify(self) -> bool:
        return self.batch.registry.execution_mode(self.input) == "parallel"

    def starting(self) -> None:
        log = self.batch.log
        if log is not None and not self.announced:
            log.append(self.batch._call_event(self))
        self.announced = True

    def run(self) -> Awaitable[Any]:
        pending = self.batch.registry.execute(self.input, gate=self.gate())
        if not inspect.isawaitable(pending):
            raise TypeError(f"registry.execute returned {type(pending).__name__}, which cannot be awaited")
        return pending

    def commit(self, outcome: Any) -> None:
        """Record and log the call's result (its commit turn held). Raises ``TypeError`` for a non-result."""
        if type(outcome) is not ToolSuccess and type(outcome) is not ToolFailure:
            if not isinstance(outcome, (ToolSuccess, ToolFailure)):
                raise TypeError(f"registry.execute returned {type(outcome).__name__}, not a ToolExecutionResult")
        self.result = outcome
        log = self.batch.log
        if log is not None:
            log.append(self.batch._result_event(self, outcome))

    def failed(self, error: BaseException) -> None:
        if isinstance(error, CallDeferred):
            # Suspended, not failed (its commit turn held: in model order).
            self.deferral = error
            if not error.held:
                # (A run_code call suspends from its body: its batch learns it only now. It ran
                # alone, run_code being exclusive, so no later call has started.)
                self.batch.deferring(self.call.call_id)
                waiting = error.sub_calls or ((None, self.call.name, self.arguments, error.reason),)
                log = self.batch.log
                for sub_call_id, name, _, reason in waiting:
                    approval_id = new_id()
                    self.approval_ids.append(approval_id)
                    if log is not None:
                        log.append(self.batch._pending_event(self, approval_id, name, reason, sub_call_id))
            return
        self.batch.failed(error)

    def task_name(self) -> str:
        return f"dsh_codegen tool call {self.call.call_id}"


def _noop() -> None:
    return None
