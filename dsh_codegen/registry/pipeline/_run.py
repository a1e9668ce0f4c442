"""The pipeline: the stages of one call, declared once, in call order, and the one function that runs them.

``PIPELINE_STAGES`` names the stages in the order :func:`run_pipeline`
calls them. Each stage's contract (inputs, what its return means, failure and
cancellation behaviour) is the docstring of the function of that name:

1. ``create_execution``    (:mod:`._entry`)    read the input once, snapshot ``finalize_content``, the arguments and the listeners
2. ``entry_outcome``       (:mod:`._entry`)    entry failure, pre-aborted entry, Code Mode collapse, invalid arguments (all skip 3-5)
3. ``run_policy``          (:mod:`._policy`)   pre-execute waterfall, approval, guards, cancellation recheck (inside ``gate.policy()``)
4. ``run_dispatch``        (:mod:`._dispatch`) around-dispatch wrappers around the body (:mod:`._trampoline`) and the output normalization (:mod:`._outcome`)
5. ``run_post_execute``    (:mod:`._commit`)   post-execute waterfall (accept / block); 5-8 inside ``gate.commit()``
6. ``settle_cancellation`` (:mod:`._commit`)   caller cancellation replaces a success (``ABORTED`` / ``ABORTED_BEFORE_DISPATCH``)
7. ``run_finalize``        (:mod:`._commit`)   ``finalize_content`` exactly once
8. ``notify_result``       (:mod:`._commit`)   ``on_result`` observers (failures logged), then the same object is returned

A stage returns a normalized, frozen result or ``None`` ("continue"); every
result is normalized exactly once, where it is made. A stage with nothing to
do (no listener of its kind, no gate, no finalizer) is not entered.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from dsh_codegen.registry._execution import ToolExecutionInput
from dsh_codegen.registry._results import ToolExecutionResult, ToolFailure, ToolSuccess
from dsh_codegen.registry.cancel import AbortError, abort_signal
from dsh_codegen.registry.pipeline._call import (
    ABORTED_MESSAGE,
    Call,
    aborted,
    aborted_before_dispatch,
    run_contexts,
)
from dsh_codegen.registry.pipeline._commit import (
    notify_result,
    run_finalize,
    run_post_execute,
    settle_cancellation,
)
from dsh_codegen.registry.pipeline._dispatch import dispatch_core, dispatch_started, run_dispatch
from dsh_codegen.registry.pipeline._entry import arguments_outcome, create_execution, entry_outcome
from dsh_codegen.registry.pipeline._policy import run_policy

if TYPE_CHECKING:
    from dsh_codegen.registry._gate import PipelineGate
    from dsh_codegen.registry.pipeline._hooks import CallHooks
    from dsh_codegen.registry._registry import ToolRegistry

__all__ = ["PIPELINE_STAGES", "run_pipeline"]

PIPELINE_STAGES: Final = (
    "create_execution",
    "entry_outcome",
    "run_policy",
    "run_dispatch",
    "run_post_execute",
    "settle_cancellation",
    "run_finalize",
    "notify_result",
)


async def run_pipeline(
    registry: ToolRegistry,
    input: ToolExecutionInput,
    gate: PipelineGate | None,
    hooks: CallHooks | None = None,
) -> ToolExecutionResult:
    """Run every stage in order and return the one frozen result that observers saw.

    Cancellation: see ``ToolRegistry.execute``. A ``CancelledError`` from any
    awaiting stage ends the policy/dispatch stages; a body has settled by
    then (the trampoline waits for it). The call then records the settled
    body's outcome (a success becomes ``ABORTED``) or ``ABORTED`` /
    ``ABORTED_BEFORE_DISPATCH``, skips post-execute, runs finalize and
    observers once (inside ``gate.commit()`` unless entering it is cancelled
    too), and the original ``CancelledError`` is re-raised.

    ``hooks`` (from :func:`~._hooks.run_hooked`): the ``on_execute`` hooks
    are entered right after the input is read, and get the final result.
    """
    call, failure = create_execution(registry, input, gate is not None)
    if hooks is not None:
        hooks.enter(call)
    listeners = call.listeners
    result: ToolExecutionResult | None
    if failure is None and not call.chain and registry.mode != "code" and not call.signal.is_aborted():
        result = arguments_outcome(call)  # what entry_outcome() would say
    else:
        result = entry_outcome(call, failure)
    skip_post = True
    cancel_exc: asyncio.CancelledError | None = None
    if result is None:
        try:
            if (
                gate is None
                and not listeners.pre
                and not listeners.wrappers
                and not call.guarded
            ):
                # No policy stage has work: the body, with nothing around it, awaited
                # only if it suspended.
                outcome = dispatch_started(call, call.signal, at_entry=True)
                if isinstance(outcome, (ToolSuccess, ToolFailure)):
                    result, skip_post = outcome, False
                else:
                    result, skip_post = await outcome, False
            else:
                result, skip_post = await _policy_and_dispatch(call, gate)
        except asyncio.CancelledError as exc:
            cancel_exc = exc
            _task_cancelled(call)
            result, skip_post = _cancelled_outcome(call), True
    cancelled = cancel_exc is not None
    if gate is None:
        if listeners.post or listeners.observers:
            result, cancelled = await _commit(call, result, skip_post, cancelled)
        elif cancelled or call.finalize is not None or call.signal.is_aborted():
            result = _settle_and_finalize(call, result, cancelled)
    else:
        committed = False
        try:
            async with gate.commit():
                committed = True
                result, cancelled = await _commit(call, result, skip_post, cancelled)
        except asyncio.CancelledError as exc:
            if committed:
                raise
            # Entering the gate was cancelled: still finalize and observe, without ordering.
            cancel_exc = cancel_exc or exc
            _task_cancelled(call)
            result, cancelled = await _commit(call, result, True, True)
    # The run context reads its execution from the call (made on first use), so the two
    # point at each other: drop the call's side now, and reference counting frees both
    # (no cycle left for the collector).
    call.run = None
    if hooks is not None:
        hooks.result = result
    if cancelled:
        raise cancel_exc if cancel_exc is not None else asyncio.CancelledError()
    return result


async def _policy_and_dispatch(
    call: Call, gate: PipelineGate | None
) -> tuple[ToolExecutionResult, bool]:
    """Stages 3-4: ``(result, skip_post)``. Cancellation: propagates to :func:`run_pipeline`."""
    listeners = call.listeners
    if gate is not None:
        async with gate.policy():
            result, skip_post = await run_policy(call)
        if result is not None:
            return result, skip_post
    elif listeners.pre or call.registry.guarded(call.chain):
        result, skip_post = await run_policy(call)
        if result is not None:
            return result, skip_post
    # else: no policy at all; the caller's signal was checked at entry and
    # nothing has been awaited since.
    if listeners.wrappers:
        return await run_dispatch(call)
    return await dispatch_core(call, call.signal), False


async def _commit(
    call: Call, result: ToolExecutionResult, skip_post: bool, cancelled: bool
) -> tuple[ToolExecutionResult, bool]:
    """Stages 5-8; returns the final result and whether the awaiting task was cancelled."""
    listeners = call.listeners
    if not skip_post and not cancelled and listeners.post:
        try:
            result = await run_post_execute(call, result)
        except asyncio.CancelledError:
            cancelled = True
            _task_cancelled(call)
    result = _settle_and_finalize(call, result, cancelled)
    if listeners.observers:
        notified = notify_result(call, result)
        if notified is True or (notified is not False and await notified):
            cancelled = True
    return result, cancelled


def _settle_and_finalize(
    call: Call, result: ToolExecutionResult, cancelled: bool
) -> ToolExecutionResult:
    """Stages 6-7 (each entered only when it can change something)."""
    if type(result) is ToolSuccess and (cancelled or call.signal.is_aborted()):
        result = settle_cancellation(call, result, cancelled)
    if call.finalize is not None:
        result = run_finalize(call, result)
    return result


def _task_cancelled(call: Call) -> None:
    """The awaiting task was cancelled: abort the running body's signal (its handed-off work stops)."""
    run = call.run
    if run is not None:
        abort_signal(run.signal, AbortError(ABORTED_MESSAGE))


def _cancelled_outcome(call: Call) -> ToolExecutionResult:
    # A body that settled after the cancellation reached it keeps its own outcome
    # (settle_cancellation then replaces only a success); else the stage that
    # was awaiting when the cancellation arrived never produced one.
    settled = call.settled
    if settled is not None:
        return settled
    contexts = run_contexts(call.run)
    return aborted(contexts) if call.run is not None else aborted_before_dispatch(contexts)
