"""Stage 3: the pre-execute waterfall, approval, guards and the cancellation recheck."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from dsh_codegen.registry._approval import (
    ApprovalRequest,
    CallDeferred,
    channel_approval,
    current_suspension_scope,
)
from dsh_codegen.registry._results import (
    Allow,
    Ask,
    Deny,
    ToolExecutionResult,
    ToolFailure,
    failure_from_exception,
)
from dsh_codegen.registry.pipeline._call import (
    CallEntry,
    aborted_before_dispatch,
    is_awaitable,
    maybe_await,
    plain_failure,
    safe_repr,
)

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from dsh_codegen.registry._execution import ToolExecution
    from dsh_codegen.registry._gate import PipelineGate
    from dsh_codegen.registry._registry import ListenerEntry

__all__ = ["bad_pre_decision", "run_policy"]

ALLOW: Final = Allow()
_PRE_NEXT_TWICE: Final = "tools/pre-execute: next() was already called"


def bad_pre_decision(decision: object) -> TypeError:
    """The error for a pre-execute listener that returned something other than a decision."""
    return TypeError(
        f"tools/pre-execute listener returned {type(decision).__name__}; expected Allow(), Deny(reason) or Ask(reason)"
    )


class _PreNext:
    """``next()`` of one pre-execute listener: runs the rest of the waterfall once."""

    __slots__ = ("called", "entries", "execution", "index")

    def __init__(self, entries: tuple[ListenerEntry, ...], index: int, execution: ToolExecution) -> None:
        self.entries = entries
        self.index = index
        self.execution = execution
        self.called = False

    async def __call__(self) -> Any:
        if self.called:
            raise RuntimeError(_PRE_NEXT_TWICE)
        self.called = True
        if self.index == len(self.entries):
            return ALLOW  # the chain's end, without another coroutine
        return await _pre_waterfall(self.entries, self.index, self.execution)


async def _pre_waterfall(entries: tuple[ListenerEntry, ...], index: int, execution: ToolExecution) -> Any:
    while index < len(entries):
        entry = entries[index]
        if entry.alive:
            decision = entry.fn(execution, _PreNext(entries, index + 1, execution))
            if is_awaitable(decision):
                decision = await decision
            if type(decision) is not Allow and type(decision) is not Deny and type(decision) is not Ask:
                raise bad_pre_decision(decision)
            return decision
        index += 1
    return ALLOW


def _run_guards(call: CallEntry) -> str | None:
    """The first guard reason: the global layer (live: guards added meanwhile run too), then the chain."""
    execution = call.execution
    registry = call.registry
    snapshot = registry.guards_of(None)
    done: set[int] | None = None
    while True:
        for entry in snapshot:
            if done is not None:
                if id(entry) in done:
                    continue
                done.add(id(entry))
            if entry.alive:
                reason = _guard_reason(entry.fn(execution))
                if reason is not None:
                    return reason
        current = registry.guards_of(None)
        if current is snapshot:
            break
        # A guard registered (or disposed) during this pass: run the ones not yet run.
        if done is None:
            done = {id(entry) for entry in snapshot}
        snapshot = current
    for scope in reversed(call.chain):
        for entry in registry.guards_of(scope):
            if entry.alive:
                reason = _guard_reason(entry.fn(execution))
                if reason is not None:
                    return reason
    return None


def _guard_reason(value: object) -> str | None:
    if value is None:
        return None
    if type(value) is str:
        return value
    raise TypeError(f"guard returned {type(value).__name__}; expected a reason string or None")


async def _approve(call: CallEntry, reason: str | None) -> ToolFailure | None:
    """Service an ``Ask``: ``None`` when approved, else the denial (or cancellation) result."""
    execution = call.execution
    name = execution.name
    scope = current_suspension_scope()
    # A resumed call's approval was answered while it was suspended: no service is asked.
    answer: object = None if scope is None else scope.decision(execution.call_id)
    if answer is None:
        channel = channel_approval()
        approval = call.registry.approval if channel is None else channel
        if approval is None:
            return plain_failure(
                reason if reason is not None else f'tool "{name}" requires approval (not yet supported)'
            )
        if execution.agent is None and channel is None:
            return plain_failure(f'tool "{name}" requires approval, but the call has no agent to route it through')
        answer = await maybe_await(
            approval.request(ApprovalRequest(execution.agent, name, execution.call_id, reason, execution.signal))
        )
    if execution.signal.aborted and answer != "rejected":
        return aborted_before_dispatch()
    if answer == "allowed-once":
        return None
    if answer == "rejected":
        return plain_failure(f'the user rejected tool "{name}"')
    if answer == "cancelled":
        return plain_failure(f'approval for tool "{name}" was cancelled')
    if answer == "deferred":
        if scope is None:
            return plain_failure(
                f'approval for tool "{name}" was deferred, but this call cannot be suspended'
                " (only execute_tool_calls and Code Mode runs inside it can)"
            )
        scope.deferring(execution.call_id)
        raise CallDeferred(name, execution.call_id, reason, held=False)
    if answer == "unavailable":
        return plain_failure(f'tool "{name}" requires approval, but no approval channel is available')
    return plain_failure(f'approval for tool "{name}" returned an unsupported answer: {safe_repr(answer)}')


def _reason_text(reason: object) -> str:
    if type(reason) is str:
        return reason
    try:
        return str(reason)
    except Exception:
        return "<unprintable denial reason>"


def run_policy(
    call: CallEntry, result: ToolExecutionResult | None
) -> ToolExecutionResult | None | Coroutine[Any, Any, ToolExecutionResult | None]:
    """Pre-execute waterfall, then approval (for ``Ask``), then guards, then a cancellation recheck.

    ``result``: the outcome decided at entry, passed on unchanged (nothing
    runs, the gate is not entered). Otherwise, under a gate, all of it runs
    inside ``gate.policy()``; without one, a call with no pre-execute
    listener and no guard has nothing to decide (``None``; dispatch rechecks
    the caller's signal). Returns ``None`` when the call may dispatch, else
    the failure: a denial, an approval denial or a caller abort goes on to
    post-execute (``call.settlement.runs_post_execute``); a raising listener, guard or
    approval service gives ``Error: <message>`` and skips post-execute. A
    denial or error that settles after the caller aborted is kept (more
    specific); an ``Allow`` after the caller aborted becomes
    ``ABORTED_BEFORE_DISPATCH``. The registry waits for every listener to settle.
    Inside a suspension scope (``execute_tool_calls``) a ``"deferred"``
    approval, or a scope already suspending, raises ``CallDeferred``: the
    call ends without a result and nothing is committed.
    Cancellation: a ``CancelledError`` (from a listener, the approval service
    or entering the gate) propagates to :func:`~._run.run_pipeline`.

    A plain function: with nothing to await it returns the outcome itself,
    else the coroutine that decides it (awaited by the pipeline).
    """
    if result is not None:
        return result
    gate = call.gate
    if gate is not None:
        return _decide_in_order(call, gate)
    if not call.listeners.pre and not call.registry.guarded(call.chain):
        return None
    return _decide(call)


async def _decide_in_order(call: CallEntry, gate: PipelineGate) -> ToolExecutionResult | None:
    """:func:`_decide` inside ``gate.policy()``."""
    async with gate.policy():
        return await _decide(call)


async def _decide(call: CallEntry) -> ToolExecutionResult | None:
    """:func:`run_policy`'s work once it has some."""
    execution = call.execution
    listeners = call.listeners
    scope = current_suspension_scope()
    if scope is not None and scope.suspending():
        # An earlier call was deferred: this one does not start its pre-execute phase.
        raise CallDeferred(execution.name, execution.call_id, None, held=True)
    try:
        decision = await _pre_waterfall(listeners.pre, 0, execution) if listeners.pre else ALLOW
        if type(decision) is Deny:
            call.settlement.runs_post_execute = True
            return plain_failure(_reason_text(decision.reason))
        if type(decision) is Ask:
            denied = await _approve(call, decision.reason)
            if denied is not None:
                call.settlement.runs_post_execute = True
                return denied
        reason = _run_guards(call) if call.registry.guarded(call.chain) else None
    except CallDeferred:
        raise
    except Exception as exc:
        return failure_from_exception(exc)
    if reason is not None:
        call.settlement.runs_post_execute = True
        return plain_failure(reason)
    if execution.signal.aborted:
        call.settlement.runs_post_execute = True
        return aborted_before_dispatch()
    return None
