"""Instruction counts for bench_adapters (run under callgrind; see bench/README.md, "Adapters").

``python -m bench._callgrind_import VARIANT N``: imports ``add`` from an in-process
``MCPServer`` (the SDK's in-memory transport), then makes N calls of it, as
VARIANT: ``seam`` (``registry.execute`` of the imported tool as imported),
``noseam`` (the same definition without its ``finalize_content``) or ``direct``
(``session.call_tool``). Per-call instructions are the difference between two
runs with different N, divided by the difference of N.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys


async def main(variant: str, count: int) -> None:
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from dsh_codegen import AbortController, ToolExecutionInput, ToolRegistry
    from dsh_codegen.adapters import import_mcp_tools

    app = MCPServer("bench-sdk")

    @app.tool(description="Add two integers.")
    async def add(a: int, b: int) -> int:
        return a + b

    async with Client(app) as client:
        session = client.session
        registry = ToolRegistry()
        await import_mcp_tools(registry, session)
        if variant == "noseam":
            definition = registry.get("add")
            assert definition is not None
            registry = ToolRegistry()
            registry.register(dataclasses.replace(definition, finalize_content=None))
        signal = AbortController().signal
        for index in range(count + 1):  # one warm-up call in every run
            if variant == "direct":
                await session.call_tool("add", {"a": index, "b": 1})
            else:
                result = await registry.execute(ToolExecutionInput("c", "add", {"a": index, "b": 1}, signal))
                assert not result.is_error


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
