"""The pipeline: the stages of one call, declared once, in call order, and the one function that runs them.

``PIPELINE_STAGES`` names the stages in the order :func:`run_pipeline`
calls them; every call goes through every stage, plain calls too, so a rule
added to a stage applies to every call. Each stage's contract (inputs, what
its return means, failure and cancellation behaviour) is the docstring of the
function of that name, in the module that is the one place to change it:

1. ``create_execution``    (:mod:`._entry`)    read the input once, snapshot ``finalize_content``, the arguments and the listeners
2. ``entry_outcome``       (:mod:`._entry`)    entry failure, pre-aborted entry, Code Mode collapse, invalid arguments
3. ``run_policy``          (:mod:`._policy`)   pre-execute waterfall, approval, guards, cancellation recheck (inside ``gate.policy()``)
4. ``run_dispatch``        (:mod:`._dispatch`) around-dispatch wrappers around the body (:mod:`._trampoline`) and the output normalization (:mod:`._outcome`)
5. ``run_post_execute``    (:mod:`._commit`)   post-execute waterfall (accept / block); 5-8 inside ``gate.commit()``
6. ``settle_cancellation`` (:mod:`._commit`)   caller cancellation replaces a success (``ABORTED`` / ``ABORTED_BEFORE_DISPATCH``)
7. ``run_finalize``        (:mod:`._commit`)   ``finalize_content`` exactly once
8. ``notify_result``       (:mod:`._commit`)   ``on_result`` observers (failures logged)

Stages 2-4 return the outcome so far, ``None`` while it is not decided; a
stage given a decided outcome passes it on. Stages 5-7 take the result and
return it, replaced or not. Each stage decides for itself when it has
nothing to do (no listener of its kind, no gate, no finalizer). Every result
is normalized exactly once, where it is made.

Every stage is a plain function. One with something to await (a listener,
the gate, a body that suspends) returns the coroutine that finishes it, and
:func:`run_pipeline` awaits that; one with nothing to await returns its
outcome itself, so a plain call does not make a coroutine per stage.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from dsh_codegen.registry._execution import ToolExecutionInput
from dsh_codegen.registry._results import ToolExecutionResult
from dsh_codegen.registry.pipeline._call import (
    RESULT_TYPES,
    CallEntry,
    aborted,
    aborted_before_dispatch,
    cancel_call,
    run_contexts,
)
from dsh_codegen.registry.pipeline._commit import (
    notify_result,
    run_finalize,
    run_post_execute,
    settle_cancellation,
)
from dsh_codegen.registry.pipeline._dispatch import run_dispatch
from dsh_codegen.registry.pipeline._entry import create_execution, entry_outcome
from dsh_codegen.registry.pipeline._policy import run_policy

if TYPE_CHECKING:
    from dsh_codegen.registry._gate import PipelineGate
    from dsh_codegen.registry.pipeline._reads import RegistryReads
    from dsh_codegen.registry.pipeline._hooks import CallHooks

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
    registry: RegistryReads,
    input: ToolExecutionInput,
    gate: PipelineGate | None,
    hooks: CallHooks | None = None,
) -> ToolExecutionResult:
    """Run every stage in order and return the one frozen result that observers saw.

    Cancellation: see ``ToolRegistry.execute``. A ``CancelledError`` from
    stage 3 or 4 ends them; a body has settled by then (the trampoline waits
    for it). The call then records the settled body's outcome (a success
    becomes ``ABORTED``) or ``ABORTED`` / ``ABORTED_BEFORE_DISPATCH``, skips
    post-execute, runs finalize and observers once (inside ``gate.commit()``
    unless entering it is cancelled too), and the ``CancelledError`` is
    re-raised.

    ``hooks`` (from :func:`~._hooks.run_hooked`): the ``on_execute`` hooks
    are entered right after the input is read, and get the final result.
    """
    call = create_execution(registry, input, gate)
    if hooks is not None:
        hooks.enter(call)
    decided: ToolExecutionResult | None = entry_outcome(call)
    result: ToolExecutionResult
    try:
        policy = run_policy(call, decided)
        decided = policy if policy is None or isinstance(policy, RESULT_TYPES) else await policy
        dispatched = run_dispatch(call, decided)
        result = dispatched if isinstance(dispatched, RESULT_TYPES) else await dispatched
    except asyncio.CancelledError as exc:
        cancel_call(call, exc)
        result = _cancelled_outcome(call)
    if gate is None:
        result = await _commit(call, result)
    else:
        result = await _commit_in_order(call, gate, result)
    if hooks is not None:
        hooks.result = result
    if call.settlement.cancelled is not None:
        raise call.settlement.cancelled
    return result


async def _commit(call: CallEntry, result: ToolExecutionResult) -> ToolExecutionResult:
    """Stages 5-8. Cancellation: each stage records it on the call (none raises it)."""
    posted = run_post_execute(call, result)
    result = posted if isinstance(posted, RESULT_TYPES) else await posted
    result = settle_cancellation(call, result)
    result = run_finalize(call, result)
    notified = notify_result(call, result)
    if notified is not None:
        await notified
    return result


async def _commit_in_order(call: CallEntry, gate: PipelineGate, result: ToolExecutionResult) -> ToolExecutionResult:
    """Stages 5-8 inside ``gate.commit()``; if entering the gate is cancelled, without it."""
    entered = False
    try:
        async with gate.commit():
            entered = True
            return await _commit(call, result)
    except asyncio.CancelledError as exc:
        if entered:
            raise
        cancel_call(call, exc)  # post-execute is skipped; finalize and observers still run
        return await _commit(call, result)


def _cancelled_outcome(call: CallEntry) -> ToolExecutionResult:
    # A body that settled after the cancellation reached it keeps its own outcome
    # (settle_cancellation then replaces only a success); else the stage that
    # was awaiting when the cancellation arrived never produced one.
    cancellation = call.settlement.body_cancellation
    if cancellation is not None and cancellation.settled is not None:
        return cancellation.settled
    contexts = run_contexts(call.settlement.run)
    return aborted(contexts) if call.settlement.run is not None else aborted_before_dispatch(contexts)
