"""One call's state while the pipeline runs it, and the results every stage can make.

:class:`CallEntry` is a call as entry read it (it never changes);
:class:`CallSettlement`, the one record the stages write, is how it is
settling. The result constructors here make the registry's own failures
(docs/texts.md, "Error content" and "Cancellation and timeout results"), already frozen: a stage returns one of them (or
a result from :mod:`._outcome`) and nothing normalizes it again.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final

from dsh_codegen.registry._errors import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH, ToolNotFoundError
from dsh_codegen.registry._results import (
    UNSET,
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
    ToolError,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    error_content,
    failure_from_exception,
)

from dsh_codegen.registry.cancel import AbortError, abort_signal
from dsh_codegen.schema import ToolArgsError

if TYPE_CHECKING:
    from dsh_codegen.registry._definitions import CompiledTool, FinalizeContent
    from dsh_codegen.registry._execution import ToolExecution, ToolRunContext
    from dsh_codegen.registry._gate import PipelineGate
    from dsh_codegen.registry._registry import ListenerSnapshot, ToolScope
    from dsh_codegen.registry.pipeline._reads import RegistryReads

__all__ = [
    "ABORTED_MESSAGE",
    "RESULT_TYPES",
    "BodyCancellation",
    "CallEntry",
    "CallSettlement",
    "aborted",
    "aborted_before_dispatch",
    "cancel_call",
    "cancellation_withdrawn",
    "invalid_arguments",
    "is_awaitable",
    "maybe_await",
    "not_found",
    "plain_failure",
    "record_cancellation",
    "run_contexts",
    "safe_repr",
]

#: The two kinds of ``ToolExecutionResult``: what a stage returns when it had nothing to await.
RESULT_TYPES: Final = (ToolSuccess, ToolFailure)

ABORTED_BEFORE_DISPATCH_MESSAGE: Final = "tool call aborted before dispatch"
ABORTED_MESSAGE: Final = "tool call aborted"

#: Types a listener or body returns that are certainly not awaitable (checked before the general protocol).
_PLAIN_RESULTS: Final = frozenset(
    {
        type(None),
        str,
        int,
        float,
        bool,
        dict,
        list,
        tuple,
        Allow,
        Deny,
        Ask,
        Accept,
        Block,
        ToolSuccess,
        ToolFailure,
    }
)


@dataclass(slots=True, eq=False)
class CallEntry:
    """One call as stage 1 read it: what it is and what it sees. No stage writes it.

    ``compiled`` is the tool the calling scope resolved at entry (``None``
    for ``run_code``, resolved at dispatch, and for an unknown name) at
    registry ``version``; ``listeners`` are the ones registered then (guards
    are read live); ``failure`` says why the input cannot run (an unreadable
    field, lossy arguments), for :func:`~._entry.entry_outcome`. How the call
    is settling is its ``settlement``, the one record the stages write. (Not
    frozen: a frozen dataclass sets each field through ``object.__setattr__``,
    and a named tuple's fields are slower to read than slots; the stages read
    these fields many times per call. A test checks that no stage assigns one.)
    """

    registry: RegistryReads
    execution: ToolExecution
    chain: tuple[ToolScope, ...]
    compiled: CompiledTool | None
    version: int
    listeners: ListenerSnapshot
    gate: PipelineGate | None
    failure: str | None
    settlement: CallSettlement


@dataclass(slots=True)
class BodyCancellation:
    """The awaiting task's cancellation as it reached a running body's driver.

    ``requests`` is the task's count of cancellation requests then (see
    :func:`cancellation_withdrawn`); ``settled`` is the outcome the body
    settled to afterwards.
    """

    error: asyncio.CancelledError
    task: asyncio.Task[Any] | None
    requests: int
    settled: ToolExecutionResult | None = None


@dataclass(slots=True)
class CallSettlement:
    """How one call is settling: what the stages found out and decided while it ran.

    - ``finalize``: ``finalize_content`` of the tool resolved at entry
      (snapshotted: it still applies if the tool is disposed meanwhile), or
      of the tool dispatch resolved when entry resolved none;
    - ``validated``: the tool whose argument schema accepted the arguments
      (dispatch validates again only against another tool);
    - ``run``: the run context of the latest body invocation (``None`` until
      a body starts, so it also says whether one started);
    - ``value``: the body's return value (written by the trampoline's steps);
    - ``produced``: the results ``next()`` gave wrappers (returning one is
      not authoring);
    - ``runs_post_execute``: whether the outcome so far goes through
      post-execute (a dispatched outcome or a policy denial);
    - ``cancelled``: the awaiting task's ``CancelledError`` that the call
      re-raises once settled (see :func:`cancel_call`);
    - ``body_cancellation``: that cancellation as a running body's driver
      absorbed it.
    """

    finalize: FinalizeContent | None
    validated: CompiledTool | None = None
    run: ToolRunContext | None = None
    value: Any = None
    produced: list[ToolExecutionResult] | None = None
    runs_post_execute: bool = False
    cancelled: asyncio.CancelledError | None = None
    body_cancellation: BodyCancellation | None = None


def cancel_call(call: CallEntry, exc: asyncio.CancelledError) -> None:
    """The awaiting task was cancelled in a stage: keep ``exc`` to re-raise once the call settled.

    The first cancellation is kept. A body still running (its handed-off work)
    gets its signal aborted, so it stops.
    """
    settlement = call.settlement
    if settlement.cancelled is None:
        settlement.cancelled = exc
    run = settlement.run
    if run is not None:
        abort_signal(run.signal, AbortError(ABORTED_MESSAGE))


def record_cancellation(call: CallEntry, exc: asyncio.CancelledError) -> None:
    """Keep the first ``CancelledError`` that reached a body's driver, with the task's request count."""
    settlement = call.settlement
    if settlement.body_cancellation is None:
        task = asyncio.current_task()
        requests = 0 if task is None else task.cancelling()
        settlement.body_cancellation = BodyCancellation(exc, task, requests)


def cancellation_withdrawn(cancellation: BodyCancellation) -> bool:
    """Whether the code that cancelled the task withdrew the request since (``Task.uncancel()``).

    ``asyncio.timeout()`` and ``TaskGroup`` cancel the task they run in and
    withdraw the request when they handle it: inside a wrapper around
    ``next()``, the call then goes on as that code decided, uncancelled.
    """
    task = cancellation.task
    return task is not None and task.cancelling() < cancellation.requests


def is_awaitable(value: object) -> bool:
    """Whether a listener's or body's return value must be awaited (the two common cases first)."""
    kind = type(value)
    if kind is CoroutineType:
        return True
    if kind in _PLAIN_RESULTS:
        return False
    return inspect.isawaitable(value)


async def maybe_await(value: Any) -> Any:
    """``value``, awaited if it is awaitable (listeners may be sync or async).

    Cancellation: propagates from the awaited value.
    """
    if is_awaitable(value):
        return await value
    return value


def invalid_arguments(compiled: CompiledTool, arguments: object) -> ToolFailure | None:
    """``INVALID_ARGS`` when a validating tool's schema refuses ``arguments``, else ``None``.

    Raw tools (no argument validator) own their validation: ``None``. Frozen
    arguments that ``execution_mode`` already found valid (the same object)
    are not validated again.
    """
    validator = compiled.args_validator
    if validator is None:
        return None
    valid = compiled.valid_arguments
    if (valid and valid.get(id(arguments)) is arguments) or validator.is_valid(arguments):
        return None
    return failure_from_exception(ToolArgsError(validator.validate_args(arguments)))


def _coded_failure(message: str, name: str, code: str, contexts: Any = ()) -> ToolFailure:
    return ToolFailure(
        ToolError(message, ToolErrorInfo(name, code)),
        error_content(message),
        UNSET,
        tuple(contexts),
    )


def plain_failure(message: str, contexts: Any = ()) -> ToolFailure:
    """A failure ``Error: <message>`` without ``info``, keeping ``contexts``."""
    return ToolFailure(ToolError(message), error_content(message), UNSET, tuple(contexts))


def aborted_before_dispatch(contexts: Any = ()) -> ToolFailure:
    """The exact ``ABORTED_BEFORE_DISPATCH`` result (docs/texts.md)."""
    return _coded_failure(ABORTED_BEFORE_DISPATCH_MESSAGE, "AbortError", TOOL_ABORTED_BEFORE_DISPATCH, contexts)


def aborted(contexts: Any = ()) -> ToolFailure:
    """The exact ``ABORTED`` result (docs/texts.md)."""
    return _coded_failure(ABORTED_MESSAGE, "AbortError", TOOL_ABORTED, contexts)


def not_found(exc: ToolNotFoundError, contexts: Any = ()) -> ToolFailure:
    """The ``UNKNOWN_TOOL`` failure for ``exc``."""
    return failure_from_exception(exc, additional_contexts=contexts)


def run_contexts(run: ToolRunContext | None) -> tuple[Any, ...]:
    """The contexts a body deferred (none when no body started)."""
    deferred = None if run is None else run._deferred  # the registry's own run context
    return () if deferred is None else tuple(deferred)


def safe_repr(value: object) -> str:
    """``repr(value)``, or ``<TypeName>`` when ``repr`` raises."""
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"
