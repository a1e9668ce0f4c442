"""MCP servers for ``bench_adapters`` (run as ``python -m bench._mcp_servers MODE``).

Modes: ``registry`` (our ``serve_mcp`` over a registry with one ``add`` tool,
the whole pipeline), ``sdk`` (the same tool served by the SDK's own
``MCPServer``), ``lowlevel`` (the SDK's low-level ``Server`` answering without
any validation: the transport's floor), ``many`` (100 tools served by ``serve_mcp``, for the import
benchmark), ``code`` (the ``add`` registry in ``mode="code"`` with ``PythonSubprocessRuntime``: one
``run_code`` tool). ``registry-http PORT`` and ``sdk-http PORT`` serve the first two over streamable
HTTP on ``127.0.0.1:PORT`` at ``/mcp`` (uvicorn on both sides) until killed.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any


def _registry(count: int, **options: Any) -> Any:
    from dsh_codegen import ToolOutput, ToolRegistry, define_tool

    registry = ToolRegistry(**options)

    async def add(args: Any, run: Any) -> dict[str, int]:
        return {"result": args["a"] + args["b"]}

    output = ToolOutput(
        schema={
            "type": "object",
            "properties": {"result": {"type": "integer", "required": True}},
            "additionalProperties": False,
        },
        render=lambda args, value: [{"type": "text", "text": str(value["result"])}],
    )
    for index in range(count):
        registry.register(
            define_tool(
                name="add" if count == 1 else f"add_{index:03d}",
                description="Add two integers.",
                parameters={"a": {"type": "integer", "required": True}, "b": {"type": "integer", "required": True}},
                output=output,
                execute=add,
            )
        )
    return registry


def sdk_add_server() -> Any:
    """The SDK's ``MCPServer`` serving ``add`` as an ``async def`` tool (no worker-thread hop): the ``sdk``
    mode serves it over stdio, and ``bench_adapters`` calls it in process."""
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("bench-sdk")

    @app.tool(description="Add two integers.")
    async def add(a: int, b: int) -> int:
        return a + b

    return app


async def _lowlevel() -> None:
    """The floor: the SDK's low-level Server answering add with no validation at all."""
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    output = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(
            tools=[Tool(name="add", description="Add two integers.", input_schema=schema, output_schema=output)]
        )

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        total = params.arguments["a"] + params.arguments["b"]
        return CallToolResult(content=[TextContent(type="text", text=str(total))], structured_content={"result": total})

    server = Server("bench-lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(mode: str, *args: str) -> None:
    if mode == "sdk-http":
        sdk_add_server().run("streamable-http", host="127.0.0.1", port=int(args[0]))
        return
    if mode == "registry-http":
        from dsh_codegen.adapters import serve_mcp

        asyncio.run(serve_mcp(_registry(1), "streamable-http", port=int(args[0])))
        return
    if mode == "sdk":
        sdk_add_server().run("stdio")
        return
    if mode == "lowlevel":
        asyncio.run(_lowlevel())
        return
    from dsh_codegen.adapters import serve_mcp

    if mode == "code":
        from dsh_codegen.codemode import PythonSubprocessRuntime

        asyncio.run(serve_mcp(_registry(1, mode="code", code_runtime=PythonSubprocessRuntime()), "stdio"))
        return
    asyncio.run(serve_mcp(_registry(100 if mode == "many" else 1), "stdio"))


if __name__ == "__main__":
    main(*sys.argv[1:])
