"""MCP in and out: start the server of ``mcp_server.py``, import its tools into a registry, call them.

``import_mcp_tools`` registers each tool of a live MCP session as a registry tool (here under the
prefix ``calc.``), so policies, guards, timeouts and observers apply to them as to local tools, and a
Code Mode program could call them as ``await tools["calc.add"](...)``.

Run: ``python examples/mcp_roundtrip.py`` (needs ``pip install 'dsh-codegen[mcp]'``).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from dsh_codegen import AbortController, ToolExecutionInput, ToolRegistry
from dsh_codegen.adapters import import_mcp_tools

SERVER = Path(__file__).with_name("mcp_server.py")


async def main() -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            registry = ToolRegistry()
            imported = await import_mcp_tools(registry, session, prefix="calc.")
            print("imported:", sorted(schema["name"] for schema in registry.schemas()))
            calls = [("calc.add", {"a": 2, "b": 3}), ("calc.shout", {"text": "hello"}), ("calc.add", {"a": "two", "b": 1})]
            for index, (name, arguments) in enumerate(calls):
                call = ToolExecutionInput(f"call_{index}", name, arguments, AbortController().signal)
                result = await registry.execute(call)
                print(f"{name} -> {result.content[0]['text']}")
            imported.dispose()  # before the session closes


if __name__ == "__main__":
    asyncio.run(main())
