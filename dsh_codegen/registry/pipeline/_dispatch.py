"""Stage 4: the around-dispatch wrappers and, innermost, the body.

:func:`run_dispatch` runs the ``wrap_execute`` wrappers (first registered
outermost) around :func:`dispatch_core`, which resolves the tool, runs the
body through the trampoline (:mod:`._trampoline`) and normalizes its value
(:mod:`._outcome`). Arguments were validated at entry (stage 2); dispatch
validates them only against a tool it resolves anew. This module is where
the dispatch stage is changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final, NoReturn

from dsh_codegen.registry._approval import CallDeferred
from dsh_codegen.registry._errors import error_message
from dsh_codegen.registry._execution import (
    FollowingRunContext,
    ToolDispatchExecution,
    ToolRunContext,
)
from dsh_codegen.registry._results import (
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    failure_from_exception,
)
from dsh_codegen.registry.cancel import AbortSignal
from dsh_codegen.registry.pipeline._call import (
    BodyCancellation,
    CallEntry,
    aborted,
    aborted_before_dispatch,
    cancellation_withdrawn,
    invalid_arguments,
    is_awaitable,
    not_found,
    plain_failure,
    run_contexts,
)
from dsh_codegen.registry.pipeline._outcome import normalize_authored, normalize_value
from dsh_codegen.registry.pipeline._trampoline import DONE, BodyDriver, await_any, body_steps

if TYPE_CHECKING:
    from dsh_codegen.registry._definitions import CompiledTool

__all__ = ["bad_next_signal", "dispatch_core", "dispatch_started", "run_dispatch"]


def bad_next_signal(signal: object) -> TypeError:
    """The error for a wrapper passing something other than an ``AbortSignal`` to ``next(signal=...)``."""
    return TypeError(f"next(signal=...) expects an AbortSignal, got {type(signal).__name__}")


def _raise_cancelled(cancellation: BodyCancellation, settled: ToolExecutionResult) -> NoReturn:
    """The body settled after its task was cancelled: keep its outcome and re-raise the cancellation."""
    cancellation.settled = settled
    raise cancellation.error


async def dispatch_core(call: CallEntry, signal: AbortSignal) -> ToolExecutionResult:
    """The innermost dispatch: resolve the tool now, run the body, normalize.

    ``signal`` is the current dispatch signal (the caller's, or a wrapper's
    replacement). Returns: ``UNKNOWN_TOOL`` for a tool the scope cannot see
    now; ``ABORTED_BEFORE_DISPATCH`` when the caller's or the current signal
    already aborted; ``INVALID_ARGS`` when the registry changed since entry
    and the tool resolved now refuses the arguments (entry validated them
    against the tool it saw);
    the body's exception as ``Error: <message>`` (its deferred contexts kept;
    ``ABORTED`` when it re-raises the abort reason of a caller cancellation);
    else the normalized success. The body gets a fused signal of the caller's
    and the current one and runs inline (no task): its first step runs in
    :func:`dispatch_started`; a body that suspends is driven by :class:`BodyDriver`.

    Cancellation: when the fused signal aborts (the caller's, a wrapper's,
    or a cancellation of the awaiting task), the driver cancels the body as a
    task is cancelled (its pending ``await`` raises ``CancelledError``) and
    keeps driving it until it settles; the settled outcome is then normalized
    as usual (a success, its own failure, ``ABORTED`` if it ends with the
    ``CancelledError`` or re-raises the abort reason). After a cancellation
    of the awaiting task it is kept on the call (``body_cancellation.settled``) and the
    task's ``CancelledError`` is re-raised. Nothing else a body raises
    escapes: a ``CancelledError`` the registry did not cause is the body's
    failure (only ``KeyboardInterrupt`` and ``SystemExit`` propagate).
    """
    outcome = dispatch_started(call, signal)
    if isinstance(outcome, (ToolSuccess, ToolFailure)):
        return outcome
    return await outcome


def dispatch_started(
    call: CallEntry, signal: AbortSignal
) -> ToolExecutionResult | Coroutine[Any, Any, ToolExecutionResult]:
    """:func:`dispatch_core` up to the body's first step: the result, or the coroutine that finishes the body.

    A body that never suspends (the common case) is finished here, so the
    caller awaits nothing for it; a body that suspended is finished by
    awaiting the returned :func:`drive_body` coroutine.
    Cancellation: synchronous; see :func:`dispatch_core` for the returned coroutine.
    """
    compiled = call.compiled
    execution = call.execution
    settlement = call.settlement
    caller = execution.signal
    if compiled is None or call.version != call.registry.version:
        resolved = _resolve_for_dispatch(call)
        if isinstance(resolved, ToolFailure):
            return resolved
        if compiled is None and settlement.finalize is None:
            # Resolved only now (run_code always is): its finalizer applies from here.
            settlement.finalize = resolved.finalize_content
        compiled = resolved
    if caller.aborted or (signal is not caller and signal.aborted):
        return aborted_before_dispatch()
    args = execution.arguments
    if compiled is not settlement.validated and compiled.args_validator is not None:
        # A tool resolved after entry (the registry changed): its own schema decides.
        invalid = invalid_arguments(compiled, args)
        if invalid is not None:
            return invalid
    run = FollowingRunContext(execution, caller if signal is caller else (caller, signal))
    settlement.run = run
    steps = None
    try:
        value = compiled.execute(args, run)
        if type(value) is CoroutineType or is_awaitable(value):
            steps = body_steps(settlement, value if type(value) is CoroutineType else await_any(value))
            # The first step, inline: a body that never suspends ends here.
            yielded = next(steps, DONE)
            if yielded is DONE:
                steps = None
                value = settlement.value
    except BaseException as exc:
        run._release()
        if ends_the_process(exc) or suspends(call, exc):
            raise
        return body_failure(call, run, exc, None)
    if steps is not None:
        return drive_body(call, compiled, run, steps, yielded)
    run._release()
    deferred = run._deferred
    return normalize_value(call, compiled, value, () if deferred is None else tuple(deferred), run._concluded)


def _resolve_for_dispatch(call: CallEntry) -> CompiledTool | ToolFailure:
    """The tool the calling scope resolves now (the registry changed since entry), or the failure."""
    name = call.execution.name
    try:
        compiled = call.registry.resolve(name, call.chain)
    except Exception as exc:  # e.g. run_code for an unknown runtime language
        return failure_from_exception(exc)
    if compiled is None:
        return not_found(call.registry.unknown_tool_error(name, call.chain))
    return compiled


#: The failure of a body that raised ``CancelledError`` although nothing cancelled the call.
FOREIGN_CANCELLATION: Final = (
    "tool body raised CancelledError, but the call was not cancelled"
    " (something else cancelled a task or future the body awaited)"
)


def ends_the_process(exc: BaseException) -> bool:
    """Whether ``exc`` is (or holds) ``KeyboardInterrupt`` or ``SystemExit``: the one kind a body's exception that propagates.

    Everything else a body raises, transport errors and ``CancelledError``
    included, is the call's outcome, never an exception out of ``execute``.
    """
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup((KeyboardInterrupt, SystemExit)) is not None
    return isinstance(exc, (KeyboardInterrupt, SystemExit))


def suspends(call: CallEntry, exc: BaseException) -> bool:
    """Whether a body raised its own call's :class:`CallDeferred` (a Code Mode run suspended inside it): no result, it propagates."""
    return isinstance(exc, CallDeferred) and exc.call_id == call.execution.call_id


def body_failure(call: CallEntry, run: ToolRunContext, exc: BaseException, driver: BodyDriver | None) -> ToolFailure:
    """The outcome of a body that raised ``exc`` (its deferred contexts kept).

    ``ABORTED`` when it raised ``CancelledError`` after the registry
    cancelled it (``driver.cancelled_body``: its signal aborted or its task
    was cancelled), when it re-raised the caller's abort reason, or the abort
    reason of the awaiting task's cancellation. A ``CancelledError`` the
    registry did not cause (another task cancelled a future the body awaited)
    is a failure of the body, like any exception: ``Error: tool body raised
    CancelledError, but the call was not cancelled ...``. Else ``Error:
    <message>``. A driven body whose task was cancelled keeps this outcome on
    the call and re-raises the cancellation.
    """
    contexts = run_contexts(run)
    caller = call.execution.signal
    cancellation = None if driver is None else call.settlement.body_cancellation
    if isinstance(exc, asyncio.CancelledError):
        if driver is not None and driver.cancelled_body:
            outcome = aborted(contexts)
        else:
            detail = error_message(exc)
            message = FOREIGN_CANCELLATION if detail == "CancelledError" else f"{FOREIGN_CANCELLATION}: {detail}"
            outcome = plain_failure(message, contexts)
    elif caller.aborted and exc is caller.reason:
        outcome = aborted(contexts)
    elif cancellation is not None and run._signal is not None and exc is run._signal.reason:
        outcome = aborted(contexts)  # the body re-raised the cancellation's abort reason
    else:
        outcome = failure_from_exception(exc, additional_contexts=contexts)
    if cancellation is not None:
        _raise_cancelled(cancellation, outcome)
    return outcome


async def drive_body(
    call: CallEntry,
    compiled: CompiledTool,
    run: ToolRunContext,
    steps: Generator[Any, None, None],
    yielded: object,
) -> ToolExecutionResult:
    """Drive a body that suspended at its first step (``yielded``) to completion and normalize it.

    Owns the fused signal from here and releases it once the body settled.
    Whatever the body raises becomes its outcome (:func:`body_failure`),
    except ``KeyboardInterrupt`` and ``SystemExit``.
    """
    driver = BodyDriver(call, steps, yielded, run)
    try:
        await driver
    except BaseException as exc:
        if ends_the_process(exc) or suspends(call, exc):
            raise
        return body_failure(call, run, exc, driver)
    finally:
        run._release()
    result = normalize_value(call, compiled, call.settlement.value, run_contexts(run), run._concluded)
    cancellation = call.settlement.body_cancellation
    if cancellation is not None:
        _raise_cancelled(cancellation, result)
    return result


class _WrapNext:
    """``next(signal=None)`` of one wrapper: runs the inner layers with the (optionally) replaced signal."""

    __slots__ = ("call", "dispatch", "index")

    def __init__(self, call: CallEntry, index: int, dispatch: ToolDispatchExecution) -> None:
        self.call = call
        self.index = index
        self.dispatch = dispatch

    async def __call__(self, signal: AbortSignal | None = None) -> ToolExecutionResult:
        dispatch = self.dispatch
        if signal is not None and type(signal) is not AbortSignal:
            raise bad_next_signal(signal)
        call = self.call
        pending = _pending_cancellation(call)
        if pending is not None:
            # The awaiting task was cancelled under an earlier next(): no new body starts.
            raise pending
        previous = dispatch.signal
        if signal is not None:
            dispatch.signal = signal
        try:
            if self.index == len(call.listeners.wrappers):
                result = await dispatch_core(call, dispatch.signal)
            else:
                result = await _wrap_chain(call, self.index, dispatch)
        finally:
            # Restore: outer wrappers (and the registry) see their own signal again.
            dispatch.signal = previous
        produced = self.call.settlement.produced
        if produced is None:
            self.call.settlement.produced = [result]
        else:
            produced.append(result)
        return result


async def _wrap_chain(call: CallEntry, index: int, dispatch: ToolDispatchExecution) -> ToolExecutionResult:
    wrappers = call.listeners.wrappers
    while index < len(wrappers):
        entry = wrappers[index]
        if entry.alive:
            if call.execution.signal.aborted:
                # The caller cancelled while an outer wrapper was still deciding.
                return aborted_before_dispatch()
            returned = entry.fn(dispatch, _WrapNext(call, index + 1, dispatch))
            if is_awaitable(returned):
                returned = await returned
            return normalize_authored(call, returned)
        index += 1
    return await dispatch_core(call, dispatch.signal)


def run_dispatch(
    call: CallEntry, result: ToolExecutionResult | None
) -> ToolExecutionResult | Coroutine[Any, Any, ToolExecutionResult]:
    """Run the wrappers (first registered outermost) around :func:`dispatch_core`.

    ``result``: the outcome decided before dispatch (at entry or by the
    policy stage), passed on unchanged. Otherwise returns the dispatched
    outcome, which goes on to post-execute (``call.settlement.runs_post_execute``),
    except that a raising wrapper (or one returning a non-result) gives
    ``Error: <message>`` and skips post-execute. Without wrappers the body
    runs alone. A wrapper may replace only the signal (via
    ``next(signal=...)``); the caller's signal is re-fused before the body.
    Cancellation: a ``CancelledError`` propagates to :func:`~._run.run_pipeline`. A
    wrapper that swallows the task's cancellation cannot start another body
    (``next()`` re-raises it) nor end the call uncancelled (it is re-raised
    here once the wrappers return), unless the request was withdrawn
    (``asyncio.timeout()`` or a ``TaskGroup`` inside the wrapper, which
    cancel the task and ``uncancel()`` it): then the wrapper's outcome
    stands, as it would under plain asyncio.

    A plain function: a body that never suspends, with no wrapper around it,
    gives the outcome itself; else the coroutine that finishes the dispatch
    (awaited by the pipeline).
    """
    if result is not None:
        return result
    if not call.listeners.wrappers:
        # Whatever the body settles to goes on to post-execute; a cancellation that
        # ends the dispatch instead is recorded on the settlement, which post-execute reads.
        call.settlement.runs_post_execute = True
        return dispatch_started(call, call.execution.signal)
    return _run_wrapped(call)


async def _run_wrapped(call: CallEntry) -> ToolExecutionResult:
    """:func:`run_dispatch` with wrappers: the chain around :func:`dispatch_core`."""
    execution = call.execution
    resolved = call.compiled
    if resolved is None or call.version != call.registry.version:
        try:
            resolved = call.registry.resolve(call.execution.name, call.chain)
        except Exception:
            resolved = None  # dispatch_core reports the error as the result
    dispatch = ToolDispatchExecution(execution, execution.signal, None if resolved is None else resolved.definition)
    try:
        result = await _wrap_chain(call, 0, dispatch)
    except Exception as exc:
        if suspends(call, exc):
            raise
        pending = _pending_cancellation(call)
        if pending is not None:
            raise pending from None  # a wrapper swallowed the task's cancellation
        return failure_from_exception(exc, additional_contexts=run_contexts(call.settlement.run))
    pending = _pending_cancellation(call)
    if pending is not None:
        raise pending  # a wrapper swallowed the task's cancellation
    call.settlement.runs_post_execute = True
    return result


def _pending_cancellation(call: CallEntry) -> asyncio.CancelledError | None:
    """The task's cancellation a body's driver absorbed, unless the request was withdrawn since."""
    settlement = call.settlement
    cancellation = settlement.body_cancellation
    if cancellation is None:
        return None
    if cancellation_withdrawn(cancellation):
        settlement.body_cancellation = None
        return None
    return cancellation.error
