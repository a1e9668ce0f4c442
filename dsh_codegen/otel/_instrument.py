"""``instrument(registry)``: one OpenTelemetry span per tool call (GenAI ``execute_tool`` conventions).

Built on the registry's public seams only:

- the call hook (``on_execute``) starts the ``execute_tool <name>`` span when
  a call enters ``execute``, makes it the current span for the whole call
  (policies, wrappers, the body, post-execute, ``finalize_content``,
  observers), and ends it exactly once when the call settles;
- a pre-execute listener, an around-dispatch wrapper and a post-execute
  listener, each put first so that it sees every other listener's decision,
  add the stage events;
- a Code Mode sub-call carries its ``run_code`` call's token as ``parent``:
  that call's span becomes the sub-call span's parent, whatever task or
  context the runtime dispatched the sub-call from.

See ``docs/tracing.md`` for the attributes, the events and the error types.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Hashable, Mapping
from contextvars import Token
from typing import Any, Final

from dsh_codegen._version import __version__
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    Allow,
    Ask,
    Block,
    CallSettle,
    CodeRunFailedError,
    Deny,
    Disposer,
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionResult,
    ToolExecutionToken,
    ToolFailure,
    ToolRegistry,
    ToolSuccess,
)

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
except ImportError as exc:  # the optional extra is not installed
    raise ImportError(
        "dsh_codegen.otel needs the OpenTelemetry API (the opentelemetry-api package): pip install 'dsh_codegen[otel]'"
    ) from exc

__all__ = ["instrument"]

# Attributes of the GenAI semantic conventions (execute_tool span).
OPERATION_NAME: Final = "gen_ai.operation.name"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
AGENT_NAME: Final = "gen_ai.agent.name"
ERROR_TYPE: Final = "error.type"
# This package's own attributes and events.
ROOT_CALL_ID: Final = "dsh_codegen.root_call_id"
SUB_CALLS: Final = "dsh_codegen.code_mode.sub_calls"
CODE_LOGS: Final = "dsh_codegen.code_mode.logs"
DECISION: Final = "dsh_codegen.decision"
OUTCOME: Final = "dsh_codegen.outcome"
PRE_EXECUTE_EVENT: Final = "dsh_codegen.pre_execute"
DISPATCH_EVENT: Final = "dsh_codegen.dispatch"
DISPATCH_END_EVENT: Final = "dsh_codegen.dispatch.end"
POST_EXECUTE_EVENT: Final = "dsh_codegen.post_execute"
CANCELLED_EVENT: Final = "dsh_codegen.cancelled"
# error.type values for failures without a code (the others report their code).
DENIED: Final = "denied"
BLOCKED: Final = "blocked"
TOOL_ERROR: Final = "tool_error"
OTHER: Final = "_OTHER"

_DECISIONS: Final = {Allow: "allow", Deny: "deny", Ask: "ask", Block: "block"}

#: The live instrumentation of each registry, weakly on both sides: the registry keeps its
#: instrumentation alive through its listeners, and nothing here keeps the registry alive.
_ACTIVE: weakref.WeakKeyDictionary[ToolRegistry, weakref.ref[_Tracing]] = weakref.WeakKeyDictionary()


def instrument(
    registry: ToolRegistry,
    *,
    tracer_provider: TracerProvider | None = None,
    record_logs: bool = False,
) -> Disposer:
    """Trace every call of ``registry`` with OpenTelemetry; return the disposer that stops it.

    Each call gets one ``execute_tool <name>`` span (kind ``INTERNAL``) made
    by ``tracer_provider``'s tracer (the global provider's when ``None``),
    the child of the span current where the call was made, or of its
    ``run_code`` call's span for a Code Mode sub-call. ``record_logs``: put a
    ``run_code`` program's printed lines on its span (never by default:
    they are the program's output and may hold anything).

    Instrumenting a registry that is already instrumented with the same
    options returns the same disposer; disposing twice does nothing. Calls
    made after the disposer ran record nothing; a call in flight then still
    ends its span.

    Raised errors: ``TypeError`` for a ``registry`` that is not a
    ``ToolRegistry`` or a ``record_logs`` that is not a ``bool``;
    ``ValueError`` when ``registry`` is already instrumented with other
    options.
    """
    if not isinstance(registry, ToolRegistry):
        raise TypeError(f"instrument() expects a ToolRegistry, got {type(registry).__name__}")
    if type(record_logs) is not bool:
        raise TypeError(f"instrument(): record_logs must be a bool, got {type(record_logs).__name__}")
    live = _ACTIVE.get(registry)
    current = None if live is None else live()
    if current is not None:
        if current.tracer_provider is tracer_provider and current.record_logs == record_logs:
            return current.disposer
        raise ValueError(
            "instrument(): this registry is already instrumented with other options;"
            " call the disposer the first instrument() returned before instrumenting it again"
        )
    tracing = _Tracing(trace.get_tracer("dsh_codegen", __version__, tracer_provider), tracer_provider, record_logs)
    undo: list[Disposer] = []
    try:
        undo.append(registry.on_execute(tracing.enter))
        undo.append(registry.on_pre_execute(tracing.pre_execute, prepend=True))
        undo.append(registry.wrap_execute(tracing.wrap_dispatch, prepend=True))
        undo.append(registry.on_post_execute(tracing.post_execute, prepend=True))
    except BaseException:
        for disposer in reversed(undo):
            disposer()
        raise
    target = weakref.ref(registry)

    def dispose() -> None:
        instrumented = target()
        if instrumented is not None and _ACTIVE.get(instrumented) is entry:
            del _ACTIVE[instrumented]
        for disposer in reversed(undo):
            disposer()

    tracing.disposer = Disposer(dispose)
    entry = _ACTIVE[registry] = weakref.ref(tracing)
    return tracing.disposer


class _Tracing:
    """One instrumentation: its options, its listeners, its disposer and the spans of the calls in flight."""

    __slots__ = ("__weakref__", "disposer", "live", "record_logs", "tracer", "tracer_provider")

    def __init__(self, tracer: Tracer, tracer_provider: TracerProvider | None, record_logs: bool) -> None:
        self.tracer = tracer
        self.tracer_provider = tracer_provider
        self.record_logs = record_logs
        self.disposer = Disposer(lambda: None)  # replaced by instrument() once the listeners are in
        # The span of every call in flight, by the call's token (a sub-call finds its parent here).
        self.live: dict[ToolExecutionToken, _CallSpan] = {}

    def enter(self, execution: ToolExecution) -> CallSettle:
        """The ``on_execute`` hook: start the call's span, make it current, return its settle."""
        parent = None if execution.parent is None else self.live.get(execution.parent)
        name = execution.name
        attributes: dict[str, Any] = {
            OPERATION_NAME: "execute_tool",
            TOOL_NAME: name,
            TOOL_CALL_ID: execution.call_id,
            TOOL_TYPE: "function",
        }
        agent: Hashable | None = execution.agent
        if type(agent) is str:
            attributes[AGENT_NAME] = agent
        if execution.root_call_id is not None:
            attributes[ROOT_CALL_ID] = execution.root_call_id
        span = self.tracer.start_span(
            f"execute_tool {name}" if name else "execute_tool",
            # None: the span current where the call was made.
            context=None if parent is None else trace.set_span_in_context(parent.span),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        # Current for the whole call: the body's own spans, and the tasks a run_code runtime
        # starts, nest under it.
        attached = otel_context.attach(trace.set_span_in_context(span))
        call = self.live[execution.token] = _CallSpan(self, execution.token, span, attached, name == RUN_CODE_NAME)
        if parent is not None:
            parent.sub_calls += 1
        return call.settle

    async def pre_execute(self, execution: ToolExecution, next: Any) -> Any:
        """Pre-execute listener (first): the waterfall's decision as an event."""
        call = self.live.get(execution.token)
        if call is None:
            return await next()
        call.policy_ran = True
        try:
            decision = await next()
        except Exception:
            call.span.add_event(PRE_EXECUTE_EVENT, {DECISION: "error"})
            raise
        call.span.add_event(PRE_EXECUTE_EVENT, {DECISION: _DECISIONS.get(type(decision), "error")})
        return decision

    async def wrap_dispatch(self, dispatch: ToolDispatchExecution, next: Any) -> Any:
        """Around-dispatch wrapper (outermost): when dispatch started and how the wrappers and body ended."""
        call = self.live.get(dispatch.token)
        if call is None:
            return await next()
        span = call.span
        call.dispatched = True
        definition = dispatch.definition
        if definition is not None and type(definition.description) is str:
            span.set_attribute(TOOL_DESCRIPTION, definition.description)
        span.add_event(DISPATCH_EVENT)
        try:
            result = await next()
        except asyncio.CancelledError:
            span.add_event(DISPATCH_END_EVENT, {OUTCOME: "cancelled"})
            raise
        except BaseException:
            call.dispatch_failed = True
            span.add_event(DISPATCH_END_EVENT, {OUTCOME: "error"})
            raise
        failed = isinstance(result, ToolFailure)
        if failed:
            call.dispatch_failed = True
        span.add_event(DISPATCH_END_EVENT, {OUTCOME: "failure" if failed else "success"})
        return result

    async def post_execute(self, execution: ToolExecution, result: ToolExecutionResult, next: Any) -> Any:
        """Post-execute listener (first): the waterfall's decision as an event."""
        call = self.live.get(execution.token)
        if call is None:
            return await next()
        call.post_ran = True
        try:
            decision = await next()
        except Exception:
            call.span.add_event(POST_EXECUTE_EVENT, {DECISION: "error"})
            raise
        kind = _DECISIONS.get(type(decision), "accept")
        if kind == "block":
            call.blocked = True
        call.span.add_event(POST_EXECUTE_EVENT, {DECISION: kind})
        return decision


class _CallSpan:
    """The span of one call in flight and what its stages showed."""

    __slots__ = (
        "blocked",
        "context_token",
        "dispatch_failed",
        "dispatched",
        "policy_ran",
        "post_ran",
        "run_code",
        "span",
        "sub_calls",
        "token",
        "tracing",
    )

    def __init__(
        self, tracing: _Tracing, token: ToolExecutionToken, span: Span, attached: Token[Context], run_code: bool
    ) -> None:
        self.tracing = tracing
        self.token = token
        self.span = span
        self.context_token = attached
        self.run_code = run_code
        self.sub_calls = 0
        self.policy_ran = False
        self.dispatched = False
        self.dispatch_failed = False
        self.post_ran = False
        self.blocked = False

    def settle(self, result: ToolExecutionResult | None, error: BaseException | None) -> None:
        """The call is over (called once by the registry): record the outcome, end the span, restore the context."""
        self.tracing.live.pop(self.token, None)
        span = self.span
        try:
            if self.sub_calls:
                span.set_attribute(SUB_CALLS, self.sub_calls)
            if isinstance(error, asyncio.CancelledError):
                span.add_event(CANCELLED_EVENT)
            if isinstance(result, ToolFailure):
                self._failed(result)
            elif isinstance(result, ToolSuccess):
                if self.run_code and self.tracing.record_logs:
                    self._record_logs(result)
            elif error is not None:  # an exception escaped execute before there was a result
                span.set_attribute(ERROR_TYPE, type(error).__qualname__)
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, _describe(error)))
        finally:
            span.end()
            otel_context.detach(self.context_token)

    def _failed(self, result: ToolFailure) -> None:
        span = self.span
        error = result.error
        info = error.info
        message = error.message
        if self.run_code:
            # A failed run's message ends with what the program printed: the run's logs.
            message, _, logs = message.partition(CodeRunFailedError.LOGS_HEADER)
            if logs and self.tracing.record_logs:
                span.set_attribute(CODE_LOGS, logs.split("\n"))
        if info is not None:
            error_type = info.code
        elif self.blocked:
            error_type = BLOCKED
        elif self.dispatch_failed:
            error_type = TOOL_ERROR
        elif self.policy_ran and not self.dispatched and self.post_ran:
            # Refused by the policy stage (a refusal reaches post-execute; a raising policy does not).
            error_type = DENIED
        else:
            error_type = OTHER
        span.set_attribute(ERROR_TYPE, error_type)
        span.set_status(Status(StatusCode.ERROR, message))

    def _record_logs(self, result: ToolSuccess) -> None:
        value = result.value
        logs = value.get("logs") if isinstance(value, Mapping) else None
        if logs:
            self.span.set_attribute(CODE_LOGS, [line for line in logs if type(line) is str])


def _describe(error: BaseException) -> str:
    try:
        return str(error) or type(error).__name__
    except Exception:
        return type(error).__name__
