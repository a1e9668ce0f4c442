"""Shared pieces of the runtime tests: a small table of fake tools behind a real dispatch function.

``FakeTools.dispatch`` is a genuine caller of the ``CodeRunRequest`` protocol
(it submits at once, numbers the calls and returns futures), standing in for
the bridge: no part of the runtime is mocked.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dsh_codegen.codemode._processes import CHILD_SCRIPT
from dsh_codegen.registry.code_runtime import CodeRunRequest, CodeRunResult, ToolCallError
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


def request(
    code: str, tools: FakeTools, signal: AbortSignal | None = None, names: tuple[str, ...] = TOOL_NAMES
) -> CodeRunRequest:
    return CodeRunRequest(code, names, tools.dispatch, signal or AbortController().signal, "call-1")


def run_sync(main: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(main())  # type: ignore[arg-type]


#: In the command line of every process a ``CommandRuntime`` test starts that is not a child (so the
#: leak check finds those too).
COMMAND_MARKER = "dsh-command-test"
#: What marks our processes: the child script's path, or the child's module or the marker above
#: together with this checkout's interpreter (another checkout's test run on the same machine runs
#: the same module with its own interpreter: its processes are not ours).
_OURS = (CHILD_SCRIPT.encode(),)
_OURS_WITH_INTERPRETER = (b"dsh_codegen.codemode.child", COMMAND_MARKER.encode())
_INTERPRETER = sys.executable.encode()


def our_processes() -> list[str]:
    """Every live or zombie process started from this checkout's child script (or by a command test),
    with its state: ``"<pid> <state> <command line>"``.

    Under pytest-xdist the other workers run child scripts of their own at the same time: a process
    that descends from a sibling worker is theirs and is left out. Orphans (reparented away from
    every worker) still count, whoever leaked them: an orphan is a leak in any test.
    """
    return [f"{pid} {state} {command}" for pid, state, command, _orphan in _scan()]


#: How long a new orphan may take to exit before it counts as leaked. Whose an orphan was is lost
#: with its parent: it may be a sibling worker's, on its way out (the child of a fork server a
#: program killed, which that worker's host finishes off; the workers of a Ray node a test killed).
ORPHAN_GRACE_S = 10.0


def leaked_processes(before: list[str]) -> list[str]:
    """The processes of :func:`our_processes` that were not there in ``before``, each known by its pid
    and command line (its state changes while it lives).

    A new process that descends from this worker counts at once: a runtime leaves nothing behind when
    its run or ``aclose`` returns. New orphans are given :data:`ORPHAN_GRACE_S` to exit first.
    """
    known = {_without_state(line) for line in before}
    deadline = time.monotonic() + ORPHAN_GRACE_S
    while True:
        new = [(pid, state, command, orphan) for pid, state, command, orphan in _scan() if (pid, command) not in known]
        if not any(orphan for *_, orphan in new) or time.monotonic() > deadline:
            return [f"{pid} {state} {command}" for pid, state, command, _orphan in new]
        time.sleep(0.05)


def _without_state(line: str) -> tuple[int, str]:
    pid, _state, command = line.split(" ", 2)
    return int(pid), command


def _scan() -> list[tuple[int, str, str, bool]]:
    """Our processes (see :func:`our_processes`) as ``(pid, state, command, orphan)``."""
    parents: dict[int, int] = {}
    children: list[tuple[int, str, str]] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry)] = int(fields[1])
        if any(mark in cmdline for mark in _OURS) or (
            _INTERPRETER in cmdline and any(mark in cmdline for mark in _OURS_WITH_INTERPRETER)
        ):
            children.append((int(entry), fields[0], cmdline.replace(b"\0", b" ").decode(errors="replace")))
    siblings = _sibling_workers(parents)
    me = {os.getpid()}
    return [
        (pid, state, command, not _descends_from(pid, me, parents))
        for pid, state, command in children
        if not _descends_from(pid, siblings, parents) and not _a_siblings_zygote(command)
    ]


def _a_siblings_zygote(command: str) -> bool:
    """Whether ``command`` is a fork server (or a child it forked) of another pytest-xdist worker: its
    directory argument lies under that worker's base temporary directory (``.../popen-gw1/...``). A child
    whose fork server a program killed is reparented away from the worker while the host, which holds a
    pidfd of it, finishes it off: it is that worker's to account for, not an orphan of this one's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return worker is not None and "/popen-gw" in command and f"/popen-{worker}/" not in command


def _sibling_workers(parents: dict[int, int]) -> set[int]:
    """The other pytest-xdist workers: the children of this worker's controller but this one."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return set()
    controller, me = os.getppid(), os.getpid()
    return {pid for pid, parent in parents.items() if parent == controller and pid != me}


def _descends_from(pid: int, ancestors: set[int], parents: dict[int, int]) -> bool:
    seen = set()
    while pid > 1 and pid not in seen:
        if pid in ancestors:
            return True
        seen.add(pid)
        pid = parents.get(pid, 0)
    return False


async def run_code(code: str, start: str, tools: FakeTools | None = None, **options: Any) -> CodeRunResult:
    from dsh_codegen.codemode import PythonSubprocessRuntime

    tools = tools or FakeTools()
    async with PythonSubprocessRuntime(start=start, **options) as runtime:  # type: ignore[arg-type]
        return await runtime.run(request(code, tools))
