"""MCP out: a registry served over stdio to any MCP client, every call running the whole pipeline.

Run by ``examples/mcp_roundtrip.py`` (or any MCP client: ``python examples/mcp_server.py`` speaks MCP on
its stdin and stdout). Needs ``pip install 'dsh-codegen[mcp]'``.
"""

from __future__ import annotations

import asyncio

from dsh_codegen import ToolRegistry, timeout_policy, tool
from dsh_codegen.adapters import serve_mcp


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(timeout_ms=2_000)
async def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def build_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(add)
    registry.register(shout)
    timeout_policy(registry)  # shout's timeout_ms is enforced for MCP clients too
    return registry


if __name__ == "__main__":
    asyncio.run(serve_mcp(build_registry(), "stdio"))
