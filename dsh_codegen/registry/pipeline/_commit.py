"""Stages 5-8, the commit: post-execute, cancellation settlement, ``finalize_content``, observers."""

from __future__ import annotations

import asyncio
import logging

from typing import TYPE_CHECKING, Any, Final

from dsh_codegen.json import snapshot_json
from dsh_codegen.registry._errors import ToolNotFoundError, error_message
from dsh_codegen.registry._materialize import RESULT_NOT_LOSSLESS, check_content, snapshot_contexts
from dsh_codegen.registry._results import (
    UNSET,
    Accept,
    Block,
    ToolError,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    failure_from_exception,
)
from dsh_codegen.registry.pipeline._call import (
    CallEntry,
    aborted,
    cancel_call,
    aborted_before_dispatch,
    is_awaitable,
    not_found,
    plain_failure,
    safe_repr,
)
from dsh_codegen.registry.pipeline._outcome import normalize_value

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from dsh_codegen.registry._execution import ToolExecution
    from dsh_codegen.registry._registry import ListenerEntry

__all__ = [
    "bad_post_decision",
    "notify_result",
    "run_finalize",
    "run_post_execute",
    "settle_cancellation",
]

_log = logging.getLogger("dsh_codegen")

_BLOCK_DEFAULT: Final = "tool result blocked by post-execute policy"
_POST_NEXT_TWICE: Final = "tools/post-execute: next() was already called"
_BOTH_REPLACED: Final = "tools/post-execute accept decision cannot replace both value and content"
_FAILED_VALUE: Final = "tools/post-execute cannot replace the value of a failed result"


def bad_post_decision(decision: object) -> TypeError:
    """The error for a post-execute listener that returned something other than a decision."""
    return TypeError(
        f"tools/post-execute listener returned {type(decision).__name__}; expected Accept(...) or Block(feedback)"
    )


class _PostNext:
    """``next()`` of one post-execute listener."""

    __slots__ = ("called", "entries", "execution", "index", "result")

    def __init__(
        self,
        entries: tuple[ListenerEntry, ...],
        index: int,
        execution: ToolExecution,
        result: ToolExecutionResult,
    ) -> None:
        self.entries = entries
        self.index = index
        self.execution = execution
        self.result = result
        self.called = False

    async def __call__(self) -> Any:
        if self.called:
            raise RuntimeError(_POST_NEXT_TWICE)
        self.called = True
        if self.index == len(self.entries):
            return _ACCEPT  # the chain's end, without another coroutine
        return await _post_waterfall(self.entries, self.index, self.execution, self.result)


_ACCEPT: Final = Accept()


async def _post_waterfall(
    entries: tuple[ListenerEntry, ...],
    index: int,
    execution: ToolExecution,
    result: ToolExecutionResult,
) -> Any:
    while index < len(entries):
        entry = entries[index]
        if entry.alive:
            decision = entry.fn(execution, result, _PostNext(entries, index + 1, execution, result))
            if is_awaitable(decision):
                decision = await decision
            if type(decision) is not Accept and type(decision) is not Block:
                raise bad_post_decision(decision)
            return decision
        index += 1
    return _ACCEPT


def _feedback_message(content: Any) -> str:
    parts = [
        (block["text"] if block["type"] == "text" and type(block.get("text")) is str else f"[{block['type']} content]")
        for block in content
    ]
    return "\n".join(parts) if parts else _BLOCK_DEFAULT


def apply_post_decision(call: CallEntry, result: ToolExecutionResult, decision: Accept | Block) -> ToolExecutionResult:
    """Apply an ``Accept``/``Block`` decision to ``result`` (see guarantees 49-56, docs/guarantees.md)."""
    if type(decision) is Block:
        try:
            feedback = check_content(snapshot_json(decision.feedback))
            block_contexts = snapshot_contexts(decision.additional_contexts, "Block")
        except (ValueError, TypeError, RecursionError):
            return plain_failure(RESULT_NOT_LOSSLESS, result.additional_contexts)
        return ToolFailure(ToolError(_feedback_message(feedback)), feedback, UNSET, block_contexts)
    assert type(decision) is Accept
    kept: tuple[Any, ...] = tuple(result.additional_contexts)
    try:
        added = snapshot_contexts(decision.additional_contexts, "Accept")
    except (ValueError, TypeError, RecursionError):
        return plain_failure(RESULT_NOT_LOSSLESS, kept)
    contexts: tuple[Any, ...] = kept + added if added else kept
    content, value = decision.content, decision.value
    if content is not UNSET and value is not UNSET:
        return plain_failure(_BOTH_REPLACED, kept)
    if value is not UNSET:
        if not isinstance(result, ToolSuccess):
            return plain_failure(_FAILED_VALUE, kept)
        name = call.execution.name
        compiled = call.registry.resolve(name, call.chain)
        if compiled is None:
            return not_found(ToolNotFoundError.unknown(name), contexts)
        return normalize_value(call, compiled, value, contexts, result.concludes_turn)
    if content is not UNSET:
        try:
            new_content = check_content(snapshot_json(content))
        except (ValueError, TypeError, RecursionError):
            return plain_failure(RESULT_NOT_LOSSLESS, kept)
        if isinstance(result, ToolSuccess):
            return ToolSuccess(result.value, new_content, result.meta, contexts, result.concludes_turn)
        return ToolFailure(result.error, new_content, result.meta, contexts)
    if not added:
        return result
    if isinstance(result, ToolSuccess):
        return ToolSuccess(result.value, result.content, result.meta, contexts, result.concludes_turn)
    return ToolFailure(result.error, result.content, result.meta, contexts)


def run_post_execute(
    call: CallEntry, result: ToolExecutionResult
) -> ToolExecutionResult | Coroutine[Any, Any, ToolExecutionResult]:
    """The post-execute waterfall (chain end ``Accept()``) over the frozen ``result``.

    Runs only for an outcome that goes through post-execute
    (``call.settlement.runs_post_execute``: a dispatched outcome or a policy denial)
    of a call that has post-execute listeners and was not cancelled; else
    ``result`` is returned as it is. Returns the decided result: accept keeps, replaces content (value and meta
    kept) or replaces the value (re-validated, re-rendered, meta recomputed),
    never both, and appends its contexts after the existing ones; block makes a
    valueless failure whose content is the feedback and whose contexts are only
    the block's. A raising listener gives ``Error: <message>`` keeping the
    existing contexts. Listeners see the caller's signal on the execution.
    Cancellation: a ``CancelledError`` is recorded on the call
    (:func:`~._call.cancel_call`, re-raised once the call settled) and
    ``result`` stands.

    A plain function: with no waterfall to run it returns ``result`` itself,
    else the coroutine that decides (awaited by the pipeline).
    """
    entries = call.listeners.post
    if not entries or not call.settlement.runs_post_execute or call.settlement.cancelled is not None:
        return result
    return _post_execute(call, entries, result)


async def _post_execute(
    call: CallEntry, entries: tuple[ListenerEntry, ...], result: ToolExecutionResult
) -> ToolExecutionResult:
    """:func:`run_post_execute`'s waterfall and what it decided."""
    try:
        decision = await _post_waterfall(entries, 0, call.execution, result)
    except asyncio.CancelledError as exc:
        cancel_call(call, exc)
        return result
    except Exception as exc:
        return failure_from_exception(exc, additional_contexts=result.additional_contexts)
    if decision is _ACCEPT:
        return result  # the chain's own end: nothing to apply
    return apply_post_decision(call, result, decision)


# --- 6. settle_cancellation ---------------------------------------------------------------


def settle_cancellation(call: CallEntry, result: ToolExecutionResult) -> ToolExecutionResult:
    """Replace a success with ``ABORTED`` (body started) or ``ABORTED_BEFORE_DISPATCH`` if the caller cancelled.

    The caller cancelled when its signal aborted or its awaiting task was
    cancelled (``call.settlement.cancelled``). Failures are kept (more specific). The
    replacement keeps the success's additional contexts. Cancellation: synchronous.
    """
    if not isinstance(result, ToolSuccess):
        return result
    if call.settlement.cancelled is None and not call.execution.signal.aborted:
        return result
    if call.settlement.run is not None:  # the body started
        return aborted(result.additional_contexts)
    return aborted_before_dispatch(result.additional_contexts)


# --- 7. run_finalize ------------------------------------------------------------------------


def run_finalize(call: CallEntry, result: ToolExecutionResult) -> ToolExecutionResult:
    """Call the snapshotted ``finalize_content(execution, result)`` exactly once.

    ``None`` keeps the content; returned content replaces only ``content``
    (re-materialized; lossy content gives ``tool result must be losslessly
    JSON-serializable``); a raising finalizer gives ``Error: <message>``. The
    finalizer is never called again. Contexts are kept. Cancellation: synchronous.
    """
    finalize = call.settlement.finalize
    if finalize is None:
        return result
    try:
        replaced = finalize(call.execution, result)
    except Exception as exc:
        return failure_from_exception(exc, additional_contexts=result.additional_contexts)
    if replaced is None:
        return result
    try:
        content = check_content(snapshot_json(replaced))
    except (ValueError, TypeError, RecursionError):
        return plain_failure(RESULT_NOT_LOSSLESS, result.additional_contexts)
    if isinstance(result, ToolSuccess):
        return ToolSuccess(result.value, content, result.meta, result.additional_contexts, result.concludes_turn)
    return ToolFailure(result.error, content, result.meta, result.additional_contexts)


# --- 8. notify_result -----------------------------------------------------------------------


def notify_result(call: CallEntry, result: ToolExecutionResult) -> Coroutine[Any, Any, None] | None:
    """Call every ``on_result`` observer with the execution and the final result (emit: no transform).

    Observer failures (raising, rejecting, unprintable) are logged at WARNING
    on ``dsh_codegen`` and never stop the other observers; asynchronous
    observers are awaited one after the other, in registration order.
    Cancellation: a ``CancelledError`` from an observer (or while awaiting
    one) is recorded on the call (re-raised once every observer has run).

    A plain function: with no observer it returns ``None``, else the
    coroutine that notifies them (awaited by the pipeline).
    """
    entries = call.listeners.observers
    if not entries:
        return None
    return _notify(call, entries, result)


async def _notify(call: CallEntry, entries: tuple[ListenerEntry, ...], result: ToolExecutionResult) -> None:
    """:func:`notify_result`'s observers, one after the other."""
    execution = call.execution
    for entry in entries:
        if not entry.alive:
            continue
        try:
            outcome = entry.fn(execution, result)
            if is_awaitable(outcome):
                await outcome
        except asyncio.CancelledError as exc:
            if call.settlement.cancelled is None:
                call.settlement.cancelled = exc
        except Exception as exc:
            _log_observer_failure(entry, exc)


def _log_observer_failure(entry: ListenerEntry, exc: BaseException) -> None:
    _log.warning(
        "tools/result observer %s raised: %s",
        safe_repr(entry.fn),
        error_message(exc),
        exc_info=True,
    )
