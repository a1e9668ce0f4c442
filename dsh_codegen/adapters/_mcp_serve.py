"""``serve_mcp`` and ``McpToolServer``: a registry's visible tools as an MCP server.

Every ``tools/call`` runs ``registry.execute`` (the whole pipeline: argument
validation, pre-execute policies and approval, guards, around-dispatch
wrappers such as ``timeout_policy``, post-execute, ``finalize_content`` and
the result observers). The ``mcp`` package is imported when a server is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import logging
import secrets
import threading
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from dsh_codegen._extras import require_extra
from dsh_codegen.adapters._formats import mcp_output_schema, to_mcp_tools
from dsh_codegen.adapters._mcp_wire import utf8_refusal
from dsh_codegen.registry import (
    LOG_LEVELS,
    RUN_CODE_NAME,
    AbortController,
    ApprovalRequest,
    LogLevel,
    ToolEvent,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolLog,
    ToolProgress,
    ToolRegistry,
    ToolScope,
    ToolSuccess,
    approval_channel,
    watch_tool_events,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.context import ServerRequestContext
    from mcp.types import (
        CallToolRequestParams,
        CallToolResult,
        EmptyResult,
        InputRequiredResult,
        ListToolsResult,
        PaginatedRequestParams,
        SetLevelRequestParams,
    )

_log = logging.getLogger("dsh_codegen")
#: The key of the approval question in a 2026-07-28 ``InputRequiredResult``.
APPROVAL_INPUT = "dsh_codegen/approval"

__all__ = ["McpToolServer", "serve_mcp"]


class McpToolServer:
    """An MCP server (the SDK's low-level ``Server``) over ``registry``'s visible tools.

    ``scope`` (a ``ToolScope`` or an agent key) picks the view: the tools it
    sees are listed, and each call carries it as ``agent`` so scoped policies
    apply. Under a code presentation (``ToolRegistry(mode="code")`` or the
    scope's ``present_as("code")``) the server lists only ``run_code``: Code
    Mode served as one tool (see :meth:`tool_list`). ``server`` is the SDK
    object, for embedding (its ``streamable_http_app()`` is an ASGI app to
    mount). ``run(read, write)`` serves one connection over a stream pair.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        scope: ToolScope | Hashable | None = None,
        name: str = "dsh_codegen",
        version: str | None = None,
        instructions: str | None = None,
    ) -> None:
        require_extra("mcp.server.lowlevel", "mcp", "McpToolServer")
        from mcp.server.lowlevel import Server

        from dsh_codegen._version import __version__

        self.registry = registry
        self.agent: Hashable | None = scope.agent if isinstance(scope, ToolScope) else scope
        self._scope = scope
        self._calls = itertools.count(1)
        self.server: Server[Any] = Server(
            name,
            version=__version__ if version is None else version,
            instructions=instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        from mcp.types import SetLevelRequestParams

        # logging/setLevel (MCP 2025): registered directly, so the SDK's deprecation warning for the
        # constructor argument (logging is per request in 2026-07-28) is not raised for 2025 clients.
        self.server.add_request_handler("logging/setLevel", SetLevelRequestParams, self._set_level)
        #: The lowest level sent to 2025 clients (``None``: every level), set by ``logging/setLevel``.
        self.log_level: LogLevel | None = None
        # Signs the approvals a 2026-07-28 client echoes back in requestState (not forgeable by it).
        self._state_key = secrets.token_bytes(32)
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        #: The stateless revisions (2026-07-28): per-request logs, multi-round-trip approvals.
        self.modern_versions = frozenset(MODERN_PROTOCOL_VERSIONS)

    def tool_list(self) -> list[dict[str, Any]]:
        """The ``tools/list`` entries now: the tools the scope's prompt assembly puts on the wire.

        ``registry.assemble(scope)`` decides, so the scope's presentation does:
        ``native`` lists every visible tool; ``code`` lists only ``run_code``;
        ``both`` lists the tools and ``run_code``. Where ``run_code`` is listed,
        its description is followed by the assembly's prompt sections (the
        ``tools:code-only`` rule and the ``tools:sdk`` SDK), because a tool's
        description is the one text every MCP client shows its model.
        Each tool's output schema is its definition's (``outputSchema`` as
        :func:`to_mcp_tools` publishes it).

        Raised errors: what ``assemble`` raises (a non-native presentation
        without a code runtime: ``dsh_codegen: mode "<mode>" requires a code
        runtime ...``).
        """
        assembly = self.registry.assemble(self._scope)
        sections = "\n\n".join(
            section.text for section in sorted(assembly.sections, key=lambda s: s.order) if section.text
        )
        outputs: dict[str, Any] = {entry.name: entry.output_schema for entry in self.registry.catalog(self._scope)}
        entries: list[dict[str, Any]] = []
        for schema in assembly.tools:
            entry = dict(schema)
            name = schema["name"]
            if name == RUN_CODE_NAME:
                run_code = self.registry.get(RUN_CODE_NAME, self._scope)
                if run_code is not None and run_code.output is not None:
                    entry["output_schema"] = _plain(run_code.output.schema)  # already JSON Schema
                if sections:
                    entry["description"] = f"{schema['description']}\n\n{sections}"
            elif name in outputs:
                entry["output_schema"] = outputs[name]
            entries.append(entry)
        return to_mcp_tools(entries)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        from mcp.types import ListToolsResult, Tool

        return ListToolsResult(tools=[Tool.model_validate(entry) for entry in self.tool_list()])

    async def _set_level(self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        from mcp.types import EmptyResult

        self.log_level = params.level
        return EmptyResult()

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        controller = AbortController()
        call_id = f"mcp:{ctx.request_id if ctx.request_id is not None else next(self._calls)}"
        arguments: Any = {} if params.arguments is None else params.arguments
        execution = ToolExecutionInput(call_id, params.name, arguments, controller.signal, self.agent)
        events = _CallEvents(self, ctx, call_id)
        approval = _client_approval(self, ctx, params)
        try:
            with watch_tool_events(events.listen):
                with approval_channel(approval) if approval is not None else contextlib.nullcontext():
                    result = await self.registry.execute(execution)
        except asyncio.CancelledError:
            # notifications/cancelled (or the connection closing): the registry has already
            # aborted the body's signal and waited for it; make the caller's signal agree.
            controller.abort()
            events.discard()
            raise
        await events.flush()  # progress and logs go out before the result
        if isinstance(approval, _RoundTripApproval) and approval.questions:
            return approval.input_required()
        return self._to_mcp_result(params.name, result)

    def _to_mcp_result(self, name: str, result: ToolExecutionResult) -> CallToolResult:
        from mcp.types import CallToolResult

        content = [_content_block(block) for block in result.content]
        # MCP has no channel for additional contexts (the user messages a harness appends after the
        # result, such as the images of a Code Mode run's sub-calls): their blocks follow the content.
        for context in result.additional_contexts:
            content.extend(_content_block(block) for block in context["content"])
        structured: dict[str, Any] | None = None
        if isinstance(result, ToolSuccess):
            definition = self.registry.get(name, self._scope)
            output = None if definition is None or definition.output is None else definition.output.schema
            published = mcp_output_schema(output)
            if published is not None:
                value = _plain(result.value)
                structured = value if published is output else {"result": value}
        payload = {"content": content, "structuredContent": structured, "isError": result.is_error}
        refusal = utf8_refusal(payload)
        if refusal is not None:
            # The SDK's writer could not encode it: the client would never get an answer.
            text = f'Error: the result of tool "{name}" cannot be sent: {refusal}'
            payload = {"content": [{"type": "text", "text": text}], "isError": True}
        return CallToolResult.model_validate(payload)

    async def run(self, read_stream: Any, write_stream: Any) -> None:
        """Serve one MCP connection over an SDK stream pair until the client closes it.

        Cancellation: cancelling this coroutine closes the connection; calls in
        flight are cancelled, so their bodies are aborted and awaited by the
        registry before it returns.
        """
        await self.server.run(read_stream, write_stream, self.server.create_initialization_options())

    async def run_stdio(self) -> None:
        """Serve over this process's stdin/stdout (one client) until stdin closes.

        Cancellation: as :meth:`run`.
        """
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            await self.run(read_stream, write_stream)

    async def run_streamable_http(self, *, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp") -> None:
        """Serve MCP's streamable HTTP transport on ``host:port`` (``path``) with uvicorn until cancelled.

        Cancellation: cancelling this coroutine asks uvicorn to shut down
        (stop listening, close connections, give open requests at most 5 s),
        waits for that, even through further cancellations, then re-raises.
        """
        import uvicorn

        app = self.server.streamable_http_app(streamable_http_path=path, host=host)
        config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=5
        )
        server = uvicorn.Server(config)
        serving = asyncio.ensure_future(server.serve())
        try:
            await asyncio.shield(serving)
        except asyncio.CancelledError:
            server.should_exit = True
            while not serving.done():
                try:
                    await asyncio.shield(serving)
                except asyncio.CancelledError:
                    continue
                except Exception:  # noqa: BLE001 - a failing shutdown must not hide the cancellation
                    break
            raise


def _plain(value: Any) -> Any:
    from dsh_codegen.json import snapshot_json

    return snapshot_json(value, freeze=False)


def _content_block(block: Mapping[str, Any]) -> dict[str, Any]:
    """Our content block as an MCP content block.

    Text and image map one to one; an ``audio``, ``resource`` or
    ``resource_link`` block (what ``import_mcp_tools`` keeps from a server)
    passes through when it has MCP's shape for that type; any other block
    becomes its JSON text.
    """
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        return {"type": "image", "data": block["data"], "mimeType": block["mimeType"]}
    plain = _plain(block)
    if kind in ("audio", "resource", "resource_link"):
        from mcp.types import AudioContent, EmbeddedResource, ResourceLink
        from pydantic import BaseModel, ValidationError

        models: dict[str, type[BaseModel]] = {
            "audio": AudioContent,
            "resource": EmbeddedResource,
            "resource_link": ResourceLink,
        }
        model = models[kind]
        try:
            model.model_validate(plain)
        except ValidationError:
            pass
        else:
            return dict(plain)
    return {"type": "text", "text": json.dumps(plain, ensure_ascii=False)}


class _CallEvents:
    """The progress and log events of one served call, sent to its client in the order reported.

    ``listen`` may be called from the call's body in any thread (a sync body
    runs in a worker); it queues the event on the server's loop, and one
    sender task sends them, so notifications keep their order. Progress is
    sent only for the served call itself (a Code Mode run's sub-calls have
    their own numbering, and MCP requires one token's progress to increase);
    logs of nested calls are sent too, named by their tool.
    """

    def __init__(self, server: McpToolServer, ctx: ServerRequestContext[Any, Any], call_id: str) -> None:
        self._server = server
        self._ctx = ctx
        self._call_id = call_id
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        # Made on the first event: most calls report nothing.
        self._queue: asyncio.Queue[ToolEvent | None] | None = None
        self._sender: asyncio.Task[None] | None = None
        self._from_threads = False

    def listen(self, event: ToolEvent) -> None:
        if isinstance(event, ToolProgress) and event.execution.call_id != self._call_id:
            return
        if threading.get_ident() == self._thread:
            self._enqueue(event)
        else:
            self._from_threads = True
            self._loop.call_soon_threadsafe(self._enqueue, event)

    def _enqueue(self, event: ToolEvent) -> None:
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._sender = asyncio.ensure_future(self._send_all(self._queue))
        self._queue.put_nowait(event)

    async def _send_all(self, queue: asyncio.Queue[ToolEvent | None]) -> None:
        while (event := await queue.get()) is not None:
            try:
                await self._send(event)
            except Exception:  # noqa: BLE001 - a notification that cannot be sent never fails the call
                _log.debug(
                    "dsh_codegen: serve_mcp could not send a %s notification", type(event).__name__, exc_info=True
                )

    async def _send(self, event: ToolEvent) -> None:
        session = self._ctx.session
        if utf8_refusal(event.message if isinstance(event, ToolProgress) else event.data) is not None:
            _log.warning(
                "dsh_codegen: serve_mcp dropped a %s of %r holding a lone surrogate",
                type(event).__name__,
                event.execution.name,
            )
            return
        if isinstance(event, ToolProgress):
            await session.report_progress(event.progress, event.total, event.message)  # a no-op without a token
            return
        assert isinstance(event, ToolLog)
        if event.level not in _allowed_log_levels(self._server, self._ctx):
            return
        from mcp.types import LoggingMessageNotification, LoggingMessageNotificationParams

        logger = event.logger if event.logger is not None else event.execution.name
        params = LoggingMessageNotificationParams(level=event.level, data=_plain(event.data), logger=logger)
        await session.send_notification(
            LoggingMessageNotification(params=params), related_request_id=self._ctx.request_id
        )

    async def flush(self) -> None:
        """Send what is queued (events reported from worker threads included) and stop the sender.

        Cancellation: cancelling this coroutine cancels the sender; what was
        not sent yet is dropped.
        """
        if self._from_threads:
            await asyncio.sleep(0)  # let the call_soon_threadsafe callbacks of workers run first
        if self._queue is None or self._sender is None:
            return
        self._queue.put_nowait(None)
        try:
            await self._sender
        except asyncio.CancelledError:
            self._sender.cancel()
            raise

    def discard(self) -> None:
        if self._sender is not None:
            self._sender.cancel()


def _allowed_log_levels(server: McpToolServer, ctx: ServerRequestContext[Any, Any]) -> frozenset[str]:
    """The log levels this request may receive.

    MCP 2026-07-28: the levels the request opted in to (its ``_meta`` log
    level; none without it). MCP 2025: the levels at or above the last
    ``logging/setLevel`` (every level before one).
    """
    from mcp.server.connection import allowed_log_levels

    if ctx.protocol_version in server.modern_versions:
        return frozenset(allowed_log_levels(ctx.protocol_version, ctx.meta))
    lowest = server.log_level
    return frozenset(LOG_LEVELS if lowest is None else LOG_LEVELS[LOG_LEVELS.index(lowest) :])


def _approval_message(request: ApprovalRequest) -> str:
    message = f'Allow the tool "{request.tool_name}" to run?'
    return message if not request.reason else f"{message} {request.reason}"


#: An approval asks for no value: the client's user accepts, declines or cancels.
_NO_FIELDS: dict[str, Any] = {"type": "object", "properties": {}}
_ANSWERS = {"accept": "allowed-once", "decline": "rejected", "cancel": "cancelled"}


def _client_approval(
    server: McpToolServer, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
) -> _ElicitedApproval | _RoundTripApproval | None:
    """The approval channel to the client's user for this call, or ``None`` (the registry's service answers).

    A client that declared the elicitation capability (form mode) is asked:
    on MCP 2025 with an ``elicitation/create`` request during the call, on
    2026-07-28 through the multi-round-trip flow (:class:`_RoundTripApproval`).
    """
    capabilities = ctx.session.client_capabilities
    elicitation = None if capabilities is None else capabilities.elicitation
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return None
    if ctx.protocol_version in server.modern_versions:
        return _RoundTripApproval(server, params)
    if not ctx.session.can_send_request:
        return None
    return _ElicitedApproval(ctx)


class _ElicitedApproval:
    """Asks an MCP 2025 client's user about an ``Ask`` with ``elicitation/create`` (a form with no fields).

    ``accept`` allows the call once, ``decline`` rejects it, ``cancel`` (or a
    client that fails the request) cancels it; the call's signal aborting
    cancels the question.
    """

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ctx = ctx

    async def request(self, request: ApprovalRequest) -> str:
        session = self._ctx.session
        asking = asyncio.ensure_future(
            session.elicit_form(_approval_message(request), _NO_FIELDS, related_request_id=self._ctx.request_id)
        )
        remove = request.signal.add_listener(lambda _signal: asking.cancel())
        try:
            result = await asking
        except asyncio.CancelledError:
            if request.signal.aborted:
                return "cancelled"
            raise
        except Exception:  # noqa: BLE001 - a client that cannot answer leaves the call unapproved
            _log.debug("dsh_codegen: serve_mcp's elicitation for an approval failed", exc_info=True)
            return "cancelled"
        finally:
            remove()
        return _ANSWERS.get(result.action, "cancelled")


class _RoundTripApproval:
    """Asks an MCP 2026-07-28 client's user about ``Ask`` decisions through the multi-round-trip flow.

    The protocol is stateless: the server cannot wait for the user inside the
    request. So a round answers every approval it has no answer for with
    ``"unavailable"``, and the call's result becomes an ``InputRequiredResult``
    holding the question (an ``elicitation/create`` form without fields). The
    client asks its user and sends the call again with the answer and the
    echoed ``requestState``, which carries the earlier answers, signed with a
    key of this server so a client cannot forge them; the call then runs from
    the start and each approval already answered (same tool, same reason: a
    retry has new call ids, and the policy's reason is what the user read)
    takes its answer. A Code Mode run that asks about several sub-calls takes
    one round per question.
    """

    def __init__(self, server: McpToolServer, params: CallToolRequestParams) -> None:
        self._key = server._state_key
        self.answers: dict[str, str] = _verified_answers(self._key, params)
        self.questions: list[tuple[str, str]] = []

    async def request(self, request: ApprovalRequest) -> str:
        decision = _decision_key(request)
        answer = self.answers.get(decision)
        if answer is not None:
            return answer
        self.questions.append((decision, _approval_message(request)))
        return "unavailable"

    def input_required(self) -> InputRequiredResult:
        from mcp.types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

        decision, message = self.questions[0]
        state = json.dumps({"answers": self.answers, "asking": decision}, sort_keys=True)
        signature = hmac.new(self._key, state.encode(), hashlib.sha256).hexdigest()
        request = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=_NO_FIELDS))
        return InputRequiredResult(input_requests={APPROVAL_INPUT: request}, request_state=f"{signature}.{state}")


def _decision_key(request: ApprovalRequest) -> str:
    """What an answer is about: the tool and the reason the policy gave (a retry has new call ids)."""
    return json.dumps([request.tool_name, request.reason])


def _verified_answers(key: bytes, params: CallToolRequestParams) -> dict[str, str]:
    """The answers of earlier rounds (from a ``requestState`` this server signed), plus this round's."""
    state_text = params.request_state
    if state_text is None or "." not in state_text:
        return {}
    signature, _, state = state_text.partition(".")
    expected = hmac.new(key, state.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(signature, expected):
        return {}
    try:
        decoded = json.loads(state)
        answers = {str(k): str(v) for k, v in dict(decoded["answers"]).items()}
        asking = str(decoded["asking"])
    except (ValueError, KeyError, TypeError):
        return {}
    response = (params.input_responses or {}).get(APPROVAL_INPUT)
    action = getattr(response, "action", None)
    answers[asking] = _ANSWERS.get(action, "cancelled") if isinstance(action, str) else "cancelled"
    return answers


async def serve_mcp(
    registry: ToolRegistry,
    transport: Literal["stdio", "streamable-http"] = "stdio",
    *,
    scope: ToolScope | Hashable | None = None,
    name: str = "dsh_codegen",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
) -> None:
    """Serve ``registry``'s tools (as ``scope`` sees them) over MCP until the transport ends.

    ``"stdio"`` serves this process's stdin/stdout and returns when stdin
    closes; ``"streamable-http"`` serves HTTP on ``host:port`` at ``path``
    (loopback by default) until cancelled. Every call runs through
    ``registry.execute``. For embedding (another transport, an ASGI app),
    build a :class:`McpToolServer`.

    Raised errors: ``ImportError`` naming the extra and its install command
    (``pip install 'dsh_codegen[mcp]'``) when the ``mcp`` extra is not installed.

    Cancellation: cancelling this coroutine stops the server; calls in flight
    are cancelled and their bodies aborted and awaited by the registry.
    """
    require_extra("mcp.server.lowlevel", "mcp", "serve_mcp")
    server = McpToolServer(registry, scope=scope, name=name)
    if transport == "stdio":
        await server.run_stdio()
    elif transport == "streamable-http":
        await server.run_streamable_http(host=host, port=port, path=path)
    else:
        raise ValueError(f'transport must be "stdio" or "streamable-http", got {transport!r}')
