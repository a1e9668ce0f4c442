"""A registry served over MCP stdio by ``serve_mcp`` (run as ``python served_registry.py``).

Its tools and policies are what tests/adapters/test_adapters_mcp_serve.py checks
through the SDK's own client: a guard, a timeout policy and an observer that
writes to stderr, so every call is seen to run the whole pipeline.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from typing import Any

from dsh_codegen import ToolOutput, ToolRegistry, define_tool, timeout_policy
from dsh_codegen.adapters import serve_mcp

from text_tool import text_tool


def build_registry() -> ToolRegistry:
    registry = ToolRegistry()

    async def add(args: dict[str, int], run: object) -> dict[str, int]:
        return {"sum": args["a"] + args["b"]}

    async def shout(args: dict[str, str], run: object) -> str:
        return args["text"].upper()

    async def slow(args: dict[str, float], run: object) -> str:
        await asyncio.sleep(args["seconds"])
        return "done"

    async def secret(args: object, run: object) -> str:
        return "never"

    async def wait(args: object, run: Any) -> str:
        # Waits until aborted (its sleep is then cancelled), and records that the abort reached it.
        markers = Path(os.environ.get("SDK_SERVER_DIR", "."))
        (markers / "wait-started").write_text("1")
        try:
            while not run.signal.aborted:
                await asyncio.sleep(0.01)
        finally:
            (markers / "wait-aborted").write_text(str(run.signal.reason))
        return "stopped"

    registry.register(
        define_tool(
            name="add",
            description="Add two integers.",
            parameters={"a": {"type": "integer", "required": True}, "b": {"type": "integer", "required": True}},
            output=ToolOutput(
                schema={
                    "type": "object",
                    "properties": {"sum": {"type": "integer", "required": True}},
                    "additionalProperties": False,
                },
                render=lambda args, value: [{"type": "text", "text": f"{args['a']} + {args['b']} = {value['sum']}"}],
            ),
            execute=add,
        )
    )
    registry.register(text_tool("shout", "Upper-case a text.", shout))
    registry.register(
        text_tool(
            "slow", "Sleep, then answer.", slow, {"seconds": {"type": "number", "required": True}}, timeout_ms=300
        )
    )
    registry.register(text_tool("secret", "Denied by a guard.", secret, {}))
    registry.register(text_tool("wait", "Wait until aborted.", wait, {}))
    registry.guard(lambda execution: "secret is off limits" if execution.name == "secret" else None)
    timeout_policy(registry)
    registry.on_result(
        lambda execution, result: print(f"observed {execution.name} {result.is_error}", file=sys.stderr, flush=True)
    )
    return registry


if __name__ == "__main__":
    if os.environ.get("SDK_SERVER_DIR"):
        (Path(os.environ["SDK_SERVER_DIR"]) / "pid").write_text(str(os.getpid()))
    asyncio.run(serve_mcp(build_registry(), "stdio"))
