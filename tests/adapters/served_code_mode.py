"""Code Mode served over MCP stdio by ``serve_mcp`` (run as ``python served_code_mode.py registry|scope``).

``registry``: a ``ToolRegistry(mode="code")``; ``scope``: a native registry
whose served scope ``present_as("code")``. Either way the MCP client sees one
tool, ``run_code``, and each program's ``await tools.x(...)`` runs through the
whole pipeline: a guard, an observer writing to stderr, the session log.

Environment: ``SDK_SERVER_DIR`` (marker files ``pid``, ``wait-started``, ``wait-aborted``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from dsh_codegen import ToolOutput, ToolRegistry, define_tool
from dsh_codegen.adapters import serve_mcp
from dsh_codegen.codemode import PythonSubprocessRuntime

MARKERS = Path(os.environ.get("SDK_SERVER_DIR", "."))


async def add(args: Any, run: Any) -> dict[str, int]:
    return {"sum": args["a"] + args["b"]}


async def secret(args: Any, run: Any) -> str:
    return "never"


async def wait(args: Any, run: Any) -> str:
    # Waits until aborted (its sleep is then cancelled), and records that the abort reached it.
    (MARKERS / "wait-started").write_text("1")
    try:
        while not run.signal.aborted:
            await asyncio.sleep(0.01)
    finally:
        (MARKERS / "wait-aborted").write_text(str(run.signal.reason))
    return "stopped"


def text(args: Any, value: Any) -> list[dict[str, str]]:
    return [{"type": "text", "text": str(value)}]


def build(mode: str) -> tuple[ToolRegistry, Any]:
    registry = ToolRegistry(mode="code" if mode == "registry" else "native", code_runtime=PythonSubprocessRuntime())
    scope = None
    if mode == "scope":
        scope = registry.scope("mcp")
        scope.present_as("code")
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
                render=text,
            ),
            execute=add,
        )
    )
    registry.register(
        define_tool(
            name="secret",
            description="Denied by a guard.",
            parameters={},
            output=ToolOutput(schema={"type": "string"}, render=text),
            execute=secret,
        )
    )
    registry.register(
        define_tool(
            name="wait",
            description="Wait until aborted.",
            parameters={},
            output=ToolOutput(schema={"type": "string"}, render=text),
            execute=wait,
        )
    )
    registry.guard(lambda execution: "secret is off limits" if execution.name == "secret" else None)
    registry.on_result(
        lambda execution, result: print(
            f"observed {execution.name} {result.is_error} parent={execution.parent is not None}",
            file=sys.stderr,
            flush=True,
        )
    )
    return registry, scope


if __name__ == "__main__":
    (MARKERS / "pid").write_text(str(os.getpid()))
    registry, scope = build(sys.argv[1])
    asyncio.run(serve_mcp(registry, "stdio", scope=scope))
