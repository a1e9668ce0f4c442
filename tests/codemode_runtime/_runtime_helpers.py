"""Shared pieces of the runtime tests: a small table of fake tools behind a real dispatch function.

``FakeTools.dispatch`` is a genuine caller of the ``CodeRunRequest`` protocol
(it submits at once, numbers the calls and returns futures), standing in for
the bridge: no part of the runtime is mocked.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dsh_codegen.codemode._processes import CHILD_SCRIPT
from dsh_codegen.registry._code_runtime import CodeRunRequest, CodeRunResult, ToolCallError
from dsh_codegen.registry.cancel import AbortController, AbortSignal

STARTS = ("fork-server", "spawn")
TOOL_NAMES = ("__class__", "__getattr__", "echo", "fail", "hang", "my-tool", "slow")


class FakeTools:
    """Fake tools: ``echo`` returns ``{"echo": args}``, ``fail`` raises, ``hang`` never settles,
    ``slow`` settles after ``args["s"]`` seconds, the exotic names echo their own name."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.pending: list[asyncio.Future[Any]] = []

    def dispatch(self, name: str, args: Any) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self.calls.append((name, args))
        if name == "fail":
            future.set_exception(ToolCallError(name, "deliberate failure"))
        elif name == "hang":
            self.pending.append(future)
        elif name == "slow":
            loop.call_later(float(args.get("s", 0.05)), lambda: future.done() or future.set_result(args.get("v")))
        elif name in ("__class__", "__getattr__", "my-tool"):
            future.set_result(name)
        else:
            future.set_result({"echo": args})
        return future


def request(code: str, tools: FakeTools, signal: AbortSignal | None = None,
            names: tuple[str, ...] = TOOL_NAMES) -> CodeRunRequest:
    return CodeRunRequest(code, names, tools.dispatch, signal or AbortController().signal, "call-1")


def run_sync(main: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(main())  # type: ignore[arg-type]


def our_processes() -> list[str]:
    """Every live or zombie process started from this checkout's child script, with its state."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if CHILD_SCRIPT.encode() in cmdline:
            state = stat.rsplit(")", 1)[1].split()[0]
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry} {state} {command}")
    return found


async def run_code(code: str, start: str, tools: FakeTools | None = None, **options: Any) -> CodeRunResult:
    from dsh_codegen.codemode import PythonSubprocessRuntime

    tools = tools or FakeTools()
    async with PythonSubprocessRuntime(start=start, **options) as runtime:  # type: ignore[arg-type]
        return await runtime.run(request(code, tools))
