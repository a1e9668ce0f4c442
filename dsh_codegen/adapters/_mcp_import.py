"""``import_mcp_tools``: the tools of a live MCP ``ClientSession`` as registry tools.

The ``mcp`` package (extra ``dsh_codegen[mcp]``) is imported lazily: this
module loads without it, and only a call that needs it fails when it is absent.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from dsh_codegen._extras import require_extra
from dsh_codegen.adapters._formats import ToolNote, from_mcp_tools, mcp_value_schema
from dsh_codegen.adapters._mcp_wire import utf8_refusal
from dsh_codegen.adapters._schema_tools import render_value_as_text, tool_from_schema
from dsh_codegen.registry import (
    AbortSignal,
    ApprovalRequest,
    Disposer,
    HarnessError,
    ToolExecution,
    ToolExecutionResult,
    ToolExecutionToken,
    ToolRegistry,
    ToolRunContext,
    ToolScope,
    ToolSuccess,
)
from dsh_codegen.schema import JsonSchemaError

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client.session import ClientRequestContext, ElicitationFnT
    from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult, ErrorData, InputResponse, Tool

__all__ = ["McpElicitation", "McpImport", "McpToolError", "import_mcp_tools", "mcp_elicitation_callback"]

MCP_TOOL_ERROR = "MCP_TOOL_ERROR"
MCP_CONNECTION_ERROR = "MCP_CONNECTION_ERROR"
#: An answer the transport cannot carry, refused before anything is sent (the session stays usable).
MCP_REQUEST_NOT_SENT = "MCP_REQUEST_NOT_SENT"
#: How many input-required rounds (MCP 2026-07-28 multi-round-trip requests) one call may take.
MAX_INPUT_ROUNDS = 10

_log = logging.getLogger("dsh_codegen")


class McpToolError(HarnessError):
    """Raised (inside an imported tool's body) when an MCP call cannot give a result.

    ``code`` is ``MCP_TOOL_ERROR`` for a result with ``isError: true`` (the
    message is its text content), ``MCP_CONNECTION_ERROR`` when the request
    itself failed (the server exited, the connection closed, a JSON-RPC error,
    a result the SDK refused), and ``MCP_REQUEST_NOT_SENT`` for an elicitation
    answer the transport cannot carry (a lone surrogate: MCP's JSON travels as
    UTF-8), refused before anything is sent so the session stays usable. (Call
    arguments holding one never get here: the registry refuses them at entry.)
    """


@dataclass(frozen=True, slots=True)
class McpElicitation:
    """One ``elicitation/create`` request of an MCP server, to be answered for its user.

    ``mode`` is ``"form"`` (``requested_schema`` says what to fill in) or
    ``"url"`` (``url`` is where the user should go). ``call`` is the imported
    tool's call the server asked during, when it is known (always with the
    2026-07-28 multi-round-trip flow; with a 2025 session only while exactly
    one imported call of that session is in flight); ``signal`` aborts when
    that call does.
    """

    message: str
    mode: Literal["form", "url"]
    requested_schema: Mapping[str, Any] | None
    url: str | None
    call: ToolExecution | None
    signal: AbortSignal


#: ``await handler(elicitation)`` -> ``{"action": "accept" | "decline" | "cancel", "content"?: {...}}``.
McpElicitationHandler: TypeAlias = Callable[[McpElicitation], Awaitable[Mapping[str, Any]]]


@dataclass(eq=False)
class McpImport:
    """What :func:`import_mcp_tools` registered.

    ``names`` are the registered names (with the prefix), in the server's
    order; ``notes`` the schema-lowering notes; ``skipped`` the tools left
    out (name -> why): a schema the core does not accept with
    ``on_unsupported="skip"`` (a ``JsonSchemaError``), and always a tool the
    server marks task-only (``execution.taskSupport: "required"``, an
    ``McpToolError``), whose task flow the SDK's client does not drive.
    Calling it (or :meth:`dispose`) unregisters every imported tool.
    """

    names: tuple[str, ...]
    notes: tuple[ToolNote, ...]
    skipped: Mapping[str, JsonSchemaError | McpToolError]
    _disposers: list[Disposer] = field(default_factory=list, repr=False)

    def dispose(self) -> None:
        for disposer in reversed(self._disposers):
            disposer()

    def __call__(self) -> None:
        self.dispose()


async def list_all_tools(session: ClientSession) -> list[Tool]:
    from mcp.types import PaginatedRequestParams

    tools: list[Tool] = []
    result = await session.list_tools()
    tools.extend(result.tools)
    while result.next_cursor is not None:
        result = await session.list_tools(params=PaginatedRequestParams(cursor=result.next_cursor))
        tools.extend(result.tools)
    return tools


def _text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")  # type: ignore[union-attr]


class _ServerContent:
    """The content blocks of MCP results, carried from a call's body to its ``finalize_content``.

    ``render`` sees only the value (the text, or the structured content), so
    the body keeps the server's blocks here under the call's token, and the
    tool's ``finalize_content`` (run exactly once per call, after
    post-execute) makes them the final content of a success: the blocks as
    the server sent them, in its order, so binary content is never copied
    into text and ``[text, image, text]`` stays in that order. When
    post-execute replaced the content, the server's non-text blocks follow the
    replacement.
    """

    def __init__(self) -> None:
        self._pending: dict[ToolExecutionToken, list[dict[str, Any]]] = {}

    def keep(self, token: ToolExecutionToken, result: CallToolResult) -> None:
        blocks = [block.model_dump(by_alias=True, exclude_none=True, mode="json") for block in result.content]
        if blocks:
            self._pending[token] = blocks

    def finalize(self, execution: ToolExecution, result: ToolExecutionResult) -> list[Mapping[str, Any]] | None:
        blocks = self._pending.pop(execution.token, None)
        if blocks is None or not isinstance(result, ToolSuccess):
            return None
        if list(result.content) == render_value_as_text(execution.arguments, result.value):
            return list(blocks)  # what the server sent, in its order
        media = [block for block in blocks if block.get("type") != "text"]
        # An image-only answer renders an empty text block first: leave it out.
        kept = [block for block in result.content if not (block.get("type") == "text" and block.get("text") == "")]
        return [*kept, *media] if media else None


#: The imported calls in flight per session: a 2025 session's elicitation callback learns the
#: call it belongs to from here (the request carries no link to it).
_IN_FLIGHT: weakref.WeakKeyDictionary[ClientSession, list[ToolRunContext]] = weakref.WeakKeyDictionary()


def _body(
    session: ClientSession,
    remote: str,
    structured: bool,
    content: _ServerContent,
    answer_elicitation: Callable[[McpElicitation], Awaitable[Mapping[str, Any]]],
) -> Callable[[Any, ToolRunContext], Any]:
    async def execute(args: Any, run: ToolRunContext) -> Any:
        from mcp import MCPError
        from pydantic import ValidationError

        signal = run.signal
        signal.throw_if_aborted()
        plain = _plain(args)

        # The SDK calls back from its own task: report in the body's context, whose listeners are the caller's.
        context = contextvars.copy_context()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            try:
                context.run(run.report_progress, progress, total, message)
            except (TypeError, ValueError):
                _log.warning("dsh_codegen: MCP tool %r reported malformed progress %r/%r", remote, progress, total)

        in_flight = _IN_FLIGHT.setdefault(session, [])
        in_flight.append(run)
        try:
            call = asyncio.ensure_future(_call_with_input(session, remote, plain, on_progress, run, answer_elicitation))
            remove = signal.add_listener(lambda _signal: call.cancel())
            try:
                result = await call
            except asyncio.CancelledError:
                # Aborted by the signal: the SDK sent notifications/cancelled for the request.
                signal.throw_if_aborted()
                raise
            except McpToolError:
                raise
            except (MCPError, OSError, EOFError, RuntimeError, ValidationError) as error:
                # RuntimeError: what the SDK raises for a result it refuses (structured content
                # that fails the tool's output schema, an input-required result it cannot take).
                raise McpToolError(f'MCP request for tool "{remote}" failed: {error}', MCP_CONNECTION_ERROR) from None
            finally:
                remove()
        finally:
            in_flight.remove(run)
        if result.is_error:
            # Servers that render failures as docs/texts.md says (serve_mcp) already say "Error: ";
            # the registry adds it again to the failure's content.
            text = _text_of(result).removeprefix("Error: ")
            raise McpToolError(text or f'MCP tool "{remote}" reported an error', MCP_TOOL_ERROR)
        content.keep(run.token, result)
        if structured:
            return result.structured_content
        return _text_of(result)

    return execute


async def _call_with_input(
    session: ClientSession,
    remote: str,
    args: Any,
    on_progress: Any,
    run: ToolRunContext,
    answer_elicitation: Callable[[McpElicitation], Awaitable[Mapping[str, Any]]],
) -> CallToolResult:
    """``tools/call``, driving MCP 2026-07-28's multi-round-trip flow to the final result.

    A server that needs input returns ``InputRequiredResult`` instead of the
    result; its elicitations are answered through this import's hook (with the
    call known), sampling and roots requests through the session's own
    callbacks, and the call is sent again with the answers and the echoed
    ``requestState``, at most :data:`MAX_INPUT_ROUNDS` times.

    Cancellation: cancelling this coroutine cancels the request in flight
    (the SDK sends ``notifications/cancelled``) or the answer being awaited.
    """
    from mcp.client.session import ClientRequestContext
    from mcp.types import ElicitRequest, InputRequiredResult

    result = await session.call_tool(remote, args, progress_callback=on_progress, allow_input_required=True)
    rounds = 0
    delay = 0.05
    while isinstance(result, InputRequiredResult):
        rounds += 1
        if rounds > MAX_INPUT_ROUNDS:
            raise McpToolError(
                f'MCP tool "{remote}" still asked for input after {MAX_INPUT_ROUNDS} rounds', MCP_CONNECTION_ERROR
            )
        responses: dict[str, InputResponse] = {}
        for key, request in (result.input_requests or {}).items():
            if isinstance(request, ElicitRequest):
                responses[key] = _elicit_result(await answer_elicitation(_elicitation(request.params, run)))
            else:
                context = ClientRequestContext(session=session, request_id=key)
                answer = await session.dispatch_input_request(context, request)
                if not _is_response(answer):
                    raise McpToolError(
                        f'MCP tool "{remote}" asked for {request.method}, which this client refused: '
                        f"{getattr(answer, 'message', answer)}",
                        MCP_CONNECTION_ERROR,
                    )
                responses[key] = answer  # type: ignore[assignment]
        if not responses:
            # Only request state: the server is still working; back off before asking again.
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)
        result = await session.call_tool(
            remote,
            args,
            progress_callback=on_progress,
            input_responses=responses or None,
            request_state=result.request_state,
            allow_input_required=True,
        )
    return result


def _is_response(answer: object) -> bool:
    from mcp.types import ErrorData

    return not isinstance(answer, ErrorData)


def _elicitation(params: ElicitRequestParams, run: ToolRunContext | None) -> McpElicitation:
    mode: Literal["form", "url"] = "url" if getattr(params, "mode", "form") == "url" else "form"
    schema = getattr(params, "requested_schema", None)
    return McpElicitation(
        message=params.message,
        mode=mode,
        requested_schema=None if schema is None else _plain(schema),
        url=getattr(params, "url", None),
        call=None if run is None else run.execution,
        signal=AbortSignal() if run is None else run.signal,
    )


def _elicit_result(answer: Mapping[str, Any]) -> ElicitResult:
    """The SDK's ``ElicitResult`` for a handler's answer.

    Raised errors: ``McpToolError`` for an answer that is not one (its
    message names what was wrong), so the call fails instead of the session.
    """
    from mcp.types import ElicitResult
    from pydantic import ValidationError

    try:
        result = ElicitResult.model_validate(dict(answer))
    except (ValidationError, TypeError, ValueError) as error:
        raise McpToolError(
            f"the elicitation handler's answer is not an MCP ElicitResult: {error}", MCP_TOOL_ERROR
        ) from None
    refusal = utf8_refusal(result.content)
    if refusal is not None:
        raise McpToolError(f"the elicitation handler's answer cannot be sent: {refusal}", MCP_REQUEST_NOT_SENT)
    return result


def _approval_answerer(registry_or_scope: ToolRegistry | ToolScope) -> McpElicitationHandler:
    """The default elicitation handler: the registry's :class:`ApprovalService` says yes or no.

    The elicitation's message (and URL) is the approval's reason. An approval
    can only say yes or no, so it answers a form that needs no value beyond
    its defaults (a confirmation) and a URL request; a form with a required
    field without a default is cancelled, as is every elicitation when the
    registry has no approval service ("allowed-once" accepts with the
    defaults, "rejected" declines, anything else cancels).
    """
    registry = registry_or_scope.registry if isinstance(registry_or_scope, ToolScope) else registry_or_scope
    scope_agent = registry_or_scope.agent if isinstance(registry_or_scope, ToolScope) else None

    async def answer(elicitation: McpElicitation) -> Mapping[str, Any]:
        approval = registry.approval
        content = _defaults(elicitation.requested_schema)
        if approval is None or content is None:
            return {"action": "cancel"}
        call = elicitation.call
        reason = elicitation.message if elicitation.url is None else f"{elicitation.message} ({elicitation.url})"
        verdict = await approval.request(
            ApprovalRequest(
                call.agent if call is not None and call.agent is not None else scope_agent,
                call.name if call is not None else "",
                call.call_id if call is not None else "",
                reason,
                elicitation.signal,
            )
        )
        if verdict == "allowed-once":
            return {"action": "accept"} if elicitation.mode == "url" else {"action": "accept", "content": content}
        if verdict == "rejected":
            return {"action": "decline"}
        return {"action": "cancel"}

    return answer


def _defaults(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The form's default values, or ``None`` when a required field has no default (or no schema: ``{}``)."""
    if schema is None:
        return {}
    properties = schema.get("properties") or {}
    values = {
        name: spec["default"] for name, spec in properties.items() if isinstance(spec, Mapping) and "default" in spec
    }
    if any(name not in values for name in schema.get("required") or ()):
        return None
    return values


def mcp_elicitation_callback(
    registry_or_scope: ToolRegistry | ToolScope, *, elicitation: McpElicitationHandler | None = None
) -> ElicitationFnT:
    """An ``elicitation_callback`` for ``mcp.ClientSession``: a 2025 server's elicitations answered by our hook.

    A session speaking a 2025 revision receives a server's ``elicitation/create``
    as a request of its own, answered by the callback the session was built
    with (the SDK's default refuses). Build the session with this one::

        ClientSession(read, write, elicitation_callback=mcp_elicitation_callback(registry))

    ``elicitation`` (``await handler(McpElicitation) -> {"action", "content"?}``)
    answers; without it the registry's approval service does (see
    :func:`import_mcp_tools`). ``McpElicitation.call`` is the imported call of
    this session in flight when there is exactly one (the request carries no
    link to the call), else ``None``. A handler that raises or answers
    something that is not an ``ElicitResult`` makes the server's request fail
    with an error, never the session.
    """
    handler = elicitation if elicitation is not None else _approval_answerer(registry_or_scope)

    async def callback(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        from mcp.types import INTERNAL_ERROR, ErrorData

        in_flight = _IN_FLIGHT.get(context.session, [])
        run = in_flight[0] if len(in_flight) == 1 else None
        try:
            return _elicit_result(await handler(_elicitation(params, run)))
        except Exception as error:  # noqa: BLE001 - a failing handler fails this request, not the session
            message = error.message if isinstance(error, McpToolError) else f"{type(error).__name__}: {error}"
            return ErrorData(code=INTERNAL_ERROR, message=f"elicitation failed: {message}")

    return callback


def _plain(value: Any) -> Any:
    """Frozen values as plain ``dict``/``list`` (the SDK serialises them with pydantic)."""
    from dsh_codegen.json import snapshot_json

    return snapshot_json(value, freeze=False)


def _read_only(tool: Tool) -> bool:
    annotations = tool.annotations
    return annotations is not None and annotations.read_only_hint is True


def _task_only(tool: Tool) -> bool:
    execution = tool.execution
    return execution is not None and execution.task_support == "required"


async def import_mcp_tools(
    registry_or_scope: ToolRegistry | ToolScope,
    session: ClientSession,
    *,
    prefix: str = "",
    concurrency_from_annotations: bool = False,
    on_unsupported: Literal["raise", "skip"] = "raise",
    timeout_ms: float | None = None,
    elicitation: McpElicitationHandler | None = None,
) -> McpImport:
    """Register every tool of an initialised MCP ``session`` in ``registry_or_scope``.

    Each tool keeps its published input schema (foreign forms lowered, with
    notes) and the registry validates arguments against it before the
    request. A tool publishing an ``outputSchema`` returns its structured
    content (validated against that schema); any other returns its text
    content (the text blocks joined by newlines) as a string. The final
    content of a success is the server's content blocks as sent, in order
    (text, image, audio, resource, resource_link, as MCP spells them). A
    result with ``isError: true`` becomes a failure (``McpToolError``, code
    ``MCP_TOOL_ERROR``, the server's text as message); a request that fails
    (the server exited or closed the connection) becomes a failure with code
    ``MCP_CONNECTION_ERROR`` (arguments the transport cannot carry, a lone
    surrogate, are refused by the registry at entry, before the body).
    With ``concurrency_from_annotations=True`` a tool annotated
    ``readOnlyHint: true`` is ``is_concurrency_safe``; otherwise the
    annotations are ignored (they are hints from the server, not guarantees).

    The server's progress notifications for a call become that call's
    ``run.report_progress`` events. Its elicitations during a call (the
    2026-07-28 multi-round-trip flow) are answered by ``elicitation`` (``await
    elicitation(McpElicitation) -> {"action", "content"?}``), or, without it, by
    the registry's approval service; a 2025 session's elicitation requests
    reach the session's own callback (:func:`mcp_elicitation_callback`).

    A tool whose schema the schema core does not accept raises its
    ``JsonSchemaError`` (tools registered so far are unregistered again), or
    is recorded in ``skipped`` with ``on_unsupported="skip"``. A task-only
    tool (``taskSupport: "required"``) is always recorded in ``skipped``. The
    session must stay open while the tools are used; dispose the result
    before closing it.

    Raised errors: ``ImportError`` naming the extra and its install command
    (``pip install 'dsh_codegen[mcp]'``) when the ``mcp`` extra is not installed.

    Cancellation: cancelling this coroutine while it lists the tools cancels
    the ``tools/list`` request and registers nothing. A call's signal
    aborting while its request runs cancels the request (the SDK sends
    ``notifications/cancelled``) and the call ends ``ABORTED``.
    """
    require_extra("mcp.types", "mcp", "import_mcp_tools")
    if on_unsupported not in ("raise", "skip"):
        raise ValueError(f'on_unsupported must be "raise" or "skip", got {on_unsupported!r}')
    tools = await list_all_tools(session)
    notes: list[ToolNote] = []
    imported = McpImport((), (), {})
    names: list[str] = []
    skipped: dict[str, JsonSchemaError | McpToolError] = {}
    content = _ServerContent()
    answer_elicitation = elicitation if elicitation is not None else _approval_answerer(registry_or_scope)
    try:
        for tool in tools:
            name = prefix + tool.name
            if _task_only(tool):
                skipped[name] = McpToolError(
                    f'MCP tool "{tool.name}" runs only as a task (taskSupport: "required"), '
                    "a flow the MCP SDK's client does not drive; not imported",
                    "MCP_TASK_REQUIRED",
                )
                continue
            try:
                [schema] = from_mcp_tools([tool], notes=notes)
                structured = "output_schema" in schema
                definition = tool_from_schema(
                    schema,
                    _body(session, tool.name, structured, content, answer_elicitation),
                    output_schema=mcp_value_schema(schema),
                    render=render_value_as_text,
                    timeout_ms=timeout_ms,
                    is_concurrency_safe=(
                        (lambda _args: True) if concurrency_from_annotations and _read_only(tool) else None
                    ),
                    finalize_content=content.finalize,
                    name=name,
                )
                imported._disposers.append(registry_or_scope.register(definition))
            except JsonSchemaError as error:
                if on_unsupported == "raise":
                    raise
                skipped[name] = error
                continue
            names.append(name)
    except BaseException:
        imported.dispose()
        raise
    imported.names = tuple(names)
    imported.notes = tuple(notes)
    imported.skipped = skipped
    return imported
