"""``serve_mcp`` and ``McpToolServer``: a registry's visible tools as an MCP server.

Every ``tools/call`` runs ``registry.execute`` (the whole pipeline: argument
validation, pre-execute policies and approval, guards, around-dispatch
wrappers such as ``timeout_policy``, post-execute, ``finalize_content`` and
the result observers). The ``mcp`` package is imported when a server is built.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from dsh_codegen._extras import require_extra
from dsh_codegen.adapters._formats import mcp_output_schema, to_mcp_tools
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    AbortController,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolScope,
    ToolSuccess,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.context import ServerRequestContext
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams

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
        version: str = "",
        instructions: str | None = None,
    ) -> None:
        require_extra("mcp.server.lowlevel", "mcp", "McpToolServer")
        from mcp.server.lowlevel import Server

        self.registry = registry
        self.agent: Hashable | None = scope.agent if isinstance(scope, ToolScope) else scope
        self._scope = scope
        self._calls = itertools.count(1)
        self.server: Server[Any] = Server(
            name,
            version=version,
            instructions=instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

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

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        controller = AbortController()
        call_id = f"mcp:{ctx.request_id if ctx.request_id is not None else next(self._calls)}"
        arguments: Any = {} if params.arguments is None else params.arguments
        execution = ToolExecutionInput(call_id, params.name, arguments, controller.signal, self.agent)
        try:
            result = await self.registry.execute(execution)
        except asyncio.CancelledError:
            # notifications/cancelled (or the connection closing): the registry has already
            # aborted the body's signal and waited for it; make the caller's signal agree.
            controller.abort()
            raise
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
        return CallToolResult.model_validate(
            {"content": content, "structuredContent": structured, "isError": result.is_error}
        )

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

