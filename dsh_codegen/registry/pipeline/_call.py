"""One call's state while the pipeline runs it, and the results every stage can make.

:class:`Call` is the only mutable object of a call; the stages read and
write it. The result constructors here make the registry's own failures
(docs/texts.md, "Error content" and "Cancellation and timeout results"), already frozen: a stage returns one of them (or
a result from :mod:`._outcome`) and nothing normalizes it again.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Hashable
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
    JsonValue,
    ToolSuccess,
    error_content,
    failure_from_exception,
)

from dsh_codegen.registry._execution import ToolExecution, ToolExecutionToken
from dsh_codegen.registry.cancel import AbortError, abort_signal
from dsh_codegen.schema import ToolArgsError

if TYPE_CHECKING:
    from dsh_codegen.registry._definitions import CompiledTool
    from dsh_codegen.registry._execution import ToolRunContext
    from dsh_codegen.registry._gate import PipelineGate
    from dsh_codegen.registry.cancel import AbortSignal
    from dsh_codegen.registry._registry import ListenerSnapshot, ToolScope
    from dsh_codegen.registry.pipeline._reads import RegistryReads

__all__ = [
    "ABORTED_MESSAGE",
    "Call",
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


class Call:
    """The mutable state of one call while the pipeline runs it."""

    __slots__ = (
        "agent",
        "arguments",
        "call_id",
        "cancel_exc",
        "cancel_task",
        "cancelled",
        "cancelling",
        "chain",
        "compiled",
        "execution",
        "failure",
        "finalize",
        "gate",
        "guarded",
        "listeners",
        "name",
        "parent",
        "produced",
        "registry",
        "root_call_id",
        "run",
        "runs_post_execute",
        "settled",
        "signal",
        "validated",
        "value",
        "version",
    )

    def __init__(
        self,
        registry: RegistryReads,
        call_id: str,
        name: str,
        arguments: JsonValue,
        signal: AbortSignal,
        agent: Hashable | None,
        parent: ToolExecutionToken | None,
        root_call_id: str | None,
        chain: tuple[ToolScope, ...],
        compiled: CompiledTool | None,
        listeners: ListenerSnapshot,
        guarded: bool,
        version: int,
        gate: PipelineGate | None,
        failure: str | None,
    ) -> None:
        self.registry = registry
        # The scheduler's ordering hook (entered by the policy stage and around the commit).
        self.gate = gate
        # Why the input cannot run (an unreadable field, lossy arguments), read by entry_outcome.
        self.failure = failure
        # The fields of the call's ToolExecution (arguments already snapshotted).
        self.call_id = call_id
        self.name = name
        self.arguments = arguments
        self.signal = signal
        self.agent = agent
        self.parent = parent
        self.root_call_id = root_call_id
        self.chain = chain
        # The tool resolved at entry, reused while the registry's version is unchanged.
        self.compiled = compiled
        self.version = version
        # Whether a guard applied at entry (the policy stage reads the guards live).
        self.guarded = guarded
        # Snapshotted now: it still applies if the tool is disposed mid-pipeline.
        self.finalize = None if compiled is None else compiled.finalize_content
        self.listeners = listeners
        # The call's ToolExecution (and its token). A call with a listener, a guard, a gate
        # or a finalizer makes it now, and its stages read this attribute; a plain call
        # makes it only if its body asks (made_execution()): most bodies never do.
        self.execution: ToolExecution | None = None
        if gate is not None or guarded or listeners.any or self.finalize is not None:
            self.made_execution()
        # The run context of the latest body invocation (its deferred contexts survive
        # cancellation); ``None`` until a body starts, so it also says whether one started.
        self.run: ToolRunContext | None = None
        # Whether the outcome so far goes through post-execute: set by the policy stage for a
        # denial and by the dispatch stage for a body's (or a wrapper's) outcome; an entry
        # outcome, a raising listener or wrapper and a cancellation skip it.
        self.runs_post_execute = False
        # The CancelledError of the awaiting task that the call re-raises once it has settled
        # (a stage that was awaiting when it arrived recorded it: see cancel_call()).
        self.cancelled: asyncio.CancelledError | None = None
        # Results produced by ``next()`` for wrappers: returning one of them is not "authoring".
        self.produced: list[ToolExecutionResult] | None = None
        # The CancelledError that reached a suspended body's trampoline (the awaiting task was
        # cancelled), and the outcome that body settled to afterwards.
        self.cancel_exc: asyncio.CancelledError | None = None
        self.settled: ToolExecutionResult | None = None
        # The task that was cancelled and its count of cancellation requests then
        # (see cancellation_withdrawn()).
        self.cancel_task: asyncio.Task[Any] | None = None
        self.cancelling = 0
        # The body's return value (written by the trampoline's steps, read right after).
        self.value: Any = None
        # The tool whose argument schema accepted ``arguments`` at entry (dispatch does not
        # validate them again unless it resolves another tool).
        self.validated: CompiledTool | None = None

    def made_execution(self) -> ToolExecution:
        """The call's immutable view (with its token): made on the first call, the same object after."""
        execution = self.execution
        if execution is None:
            execution = self.execution = ToolExecution(
                ToolExecutionToken(),
                self.call_id,
                self.name,
                self.arguments,
                self.signal,
                self.agent,
                self.parent,
                self.root_call_id,
            )
        return execution


def cancel_call(call: Call, exc: asyncio.CancelledError) -> None:
    """The awaiting task was cancelled in a stage: keep ``exc`` to re-raise once the call settled.

    The first cancellation is kept. A body still running (its handed-off work)
    gets its signal aborted, so it stops.
    """
    if call.cancelled is None:
        call.cancelled = exc
    run = call.run
    if run is not None:
        abort_signal(run.signal, AbortError(ABORTED_MESSAGE))


def record_cancellation(call: Call, exc: asyncio.CancelledError) -> None:
    """Keep the first ``CancelledError`` that reached a body's driver, with the task's request count."""
    if call.cancel_exc is None:
        call.cancel_exc = exc
        task = asyncio.current_task()
        if task is not None:
            call.cancel_task = task
            call.cancelling = task.cancelling()


def cancellation_withdrawn(call: Call) -> bool:
    """Whether the code that cancelled the task withdrew the request since (``Task.uncancel()``).

    ``asyncio.timeout()`` and ``TaskGroup`` cancel the task they run in and
    withdraw the request when they handle it: inside a wrapper around
    ``next()``, the call then goes on as that code decided, uncancelled.
    """
    task = call.cancel_task
    return task is not None and task.cancelling() < call.cancelling


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
