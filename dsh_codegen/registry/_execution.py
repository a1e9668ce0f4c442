"""Call descriptions and the per-phase views of one execution.

- :class:`ToolExecutionInput` is what a caller passes to ``registry.execute``.
- :class:`ToolExecutionToken` is the opaque identity the registry mints per call.
- :class:`ToolExecution` is the immutable view every policy and observer sees.
- :class:`ToolDispatchExecution` is the ``wrap_execute`` view (its signal is current).
- :class:`ToolRunContext` is what a tool body receives as ``run`` (the pipeline makes a
  :class:`FollowingRunContext`, which makes its fused signal on first use).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, final

from dsh_codegen.registry._events import (
    LogLevel,
    emit_tool_event,
    has_tool_event_listeners,
    log_event,
    progress_event,
)
from dsh_codegen.registry._materialize import snapshot_context
from dsh_codegen.registry._results import AdditionalContext, JsonValue
from dsh_codegen.registry.cancel import AbortSignal, derive_signal, release_signal

if TYPE_CHECKING:
    from dsh_codegen.registry._definitions import ToolDefinition

_T = TypeVar("_T")

__all__ = [
    "FollowingRunContext",
    "ToolDispatchExecution",
    "ToolExecution",
    "ToolExecutionInput",
    "ToolExecutionToken",
    "ToolRunContext",
]


class ToolExecutionInput(NamedTuple):
    """A caller's call description (immutable).

    ``signal`` is required and caller-owned; ``agent`` selects the calling
    scope (any hashable key); ``parent`` is the enclosing call's token for
    nested calls; ``root_call_id`` names the outermost call. The registry reads
    each field exactly once. (A named tuple: the cheapest immutable record,
    built once per call.)
    """

    call_id: str
    name: str
    arguments: Any
    signal: AbortSignal
    agent: Hashable | None = None
    parent: ToolExecutionToken | None = None
    root_call_id: str | None = None


@final
class ToolExecutionToken:
    """Opaque identity of one call: equality is identity; not JSON, not picklable, not copyable."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<ToolExecutionToken {id(self):#x}>"

    def __reduce__(self) -> Any:
        raise TypeError("ToolExecutionToken cannot be pickled")

    def __copy__(self) -> ToolExecutionToken:
        return self

    def __deepcopy__(self, memo: object) -> ToolExecutionToken:
        return self


class ToolExecution(NamedTuple):
    """The immutable view of one call that every phase sees.

    ``arguments`` is the detached, frozen snapshot (``None`` when the
    arguments could not be materialized); ``signal`` is the caller's signal.
    """

    token: ToolExecutionToken
    call_id: str
    name: str
    arguments: JsonValue
    signal: AbortSignal
    agent: Hashable | None
    parent: ToolExecutionToken | None
    root_call_id: str | None


class _ExecutionFields:
    """Read-only call fields delegated to the wrapped :class:`ToolExecution`."""

    __slots__ = ()

    if TYPE_CHECKING:  # an attribute of ToolDispatchExecution, a property of ToolRunContext

        @property
        def execution(self) -> ToolExecution: ...

    @property
    def token(self) -> ToolExecutionToken:
        return self.execution.token

    @property
    def call_id(self) -> str:
        return self.execution.call_id

    @property
    def name(self) -> str:
        return self.execution.name

    @property
    def arguments(self) -> JsonValue:
        return self.execution.arguments

    @property
    def agent(self) -> Hashable | None:
        return self.execution.agent

    @property
    def parent(self) -> ToolExecutionToken | None:
        return self.execution.parent

    @property
    def root_call_id(self) -> str | None:
        return self.execution.root_call_id


class ToolDispatchExecution(_ExecutionFields):
    """The ``wrap_execute`` view of a call: the execution plus the current signal and definition.

    ``signal`` is the signal the next layer will see (the caller's unless an
    outer wrapper replaced it); ``definition`` is the tool resolved for the
    calling scope, or ``None`` when it is unknown.
    """

    __slots__ = ("definition", "execution", "signal")
    execution: ToolExecution

    def __init__(
        self,
        execution: ToolExecution,
        signal: AbortSignal,
        definition: ToolDefinition | None,
    ) -> None:
        self.execution = execution
        self.signal = signal
        self.definition = definition


class ToolRunContext(_ExecutionFields):
    """What a tool body receives as ``run``: the execution, the fused signal, and two effects.

    ``signal`` is the fused signal (aborted when the caller's or a wrapper's
    signal aborts, or when the awaiting task is cancelled). ``defer_context``
    queues an additional context delivered with the final result (even a
    failure or cancellation); ``conclude_turn`` marks a successful result
    ``concludes_turn=True``.
    """

    __slots__ = ("_concluded", "_deferred", "_execution", "_follows", "_signal")

    def __init__(self, execution: ToolExecution, signal: AbortSignal) -> None:
        self._execution = execution
        self._signal: AbortSignal | None = signal
        self._follows: AbortSignal | tuple[AbortSignal, ...] | None = None
        self._deferred: list[AdditionalContext] | None = None
        self._concluded = False

    @property
    def execution(self) -> ToolExecution:
        """The call's execution (the same object its listeners see)."""
        return self._execution

    @property
    def signal(self) -> AbortSignal:
        """The fused signal: aborted when the caller's or a wrapper's signal aborts, or the awaiting task is cancelled."""
        signal = self._signal
        if signal is None:
            follows = self._follows
            if follows is None:
                signal = AbortSignal()
            else:
                signal = derive_signal((follows,) if type(follows) is AbortSignal else follows)
            self._signal = signal
        return signal

    def _release(self) -> None:
        """Stop the fused signal following its sources, made or not (it keeps its state)."""
        signal = self._signal
        if signal is None:
            self._follows = None
        else:
            release_signal(signal)

    def defer_context(self, context: AdditionalContext) -> None:
        """Queue ``context`` for delivery after this call's result.

        The context must be lossless JSON shaped ``{"role": "user", "content":
        [blocks], "source": str, "meta"?: {...}}``; it is snapshotted now.
        Raised errors: ``ValueError`` (including ``LosslessJsonError``) for a
        malformed context.
        """
        frozen = snapshot_context(context, "defer_context()")
        if self._deferred is None:
            self._deferred = [frozen]
        else:
            self._deferred.append(frozen)

    def conclude_turn(self) -> None:
        """Mark the result as concluding the agent's turn (kept only if the call succeeds)."""
        self._concluded = True

    async def to_thread(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """Run ``fn(*args, **kwargs)`` in a worker thread and wait until it returns, even when cancelled.

        Like ``asyncio.to_thread`` (the loop's default executor, the caller's
        context variables), but a thread cannot be interrupted, so a
        cancellation does not leave it running behind the call: the await
        waits for the thread to return, then raises the ``CancelledError``
        (or the thread's own exception, which says more). To stop early,
        ``fn`` should watch :attr:`signal` (pass it in; ``signal.aborted`` is
        safe to read from any thread). ``@tool`` runs a plain ``def`` body
        this way.
        """
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        future = loop.run_in_executor(None, functools.partial(context.run, fn, *args, **kwargs))
        interrupted: asyncio.CancelledError | None = None
        while not future.done():
            try:
                # asyncio.wait never cancels the future it waits for.
                await asyncio.wait((future,))
            except asyncio.CancelledError as exc:
                interrupted = interrupted or exc
        if interrupted is not None and future.exception() is None:
            raise interrupted
        return future.result()

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report how far the body has come (``progress`` of ``total``, both finite numbers).

        The event goes to the listeners of the calling context
        (:func:`~dsh_codegen.registry.watch_tool_events`): ``serve_mcp`` sends it
        as an MCP progress notification to a client that asked for progress;
        with no listener it is dropped. Raised errors: ``TypeError``/``ValueError``
        for a value that is not a finite number (or a message that is not a string).
        """
        event = progress_event(self.execution, progress, total, message)  # checked with or without a listener
        if has_tool_event_listeners():
            emit_tool_event(event)

    def log(self, level: LogLevel, data: object, *, logger: str | None = None) -> None:
        """Send a log entry (``level`` one of MCP's syslog levels, ``data`` lossless JSON) to the caller.

        Like :meth:`report_progress`: ``serve_mcp`` sends it as an MCP log
        notification (subject to the client's ``logging/setLevel``); with no
        listener it is dropped. Raised errors: ``ValueError`` for an unknown
        level or data that is not lossless JSON.
        """
        event = log_event(self.execution, level, data, logger)
        if has_tool_event_listeners():
            emit_tool_event(event)


class FollowingRunContext(ToolRunContext):
    """The registry's own run context: its fused signal is made on first use.

    The fused signal follows ``follows``. Most bodies never look at
    ``run.signal``; they do not pay for it. The signal made later is the one an eager
    fused signal would be by then: following ``follows`` until
    ``run._release()``, and after it a pending signal with no sources (an
    eager one nobody polled never aborted).
    """

    __slots__ = ()

    def __init__(self, execution: ToolExecution, follows: AbortSignal | tuple[AbortSignal, ...]) -> None:
        self._execution = execution
        self._signal = None
        self._follows = follows
        self._deferred = None
        self._concluded = False
