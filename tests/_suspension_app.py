"""A small application for the suspension tests: the same registry in every process.

Each tool body appends one line ``<tool> <call id>`` to ``runs.txt`` in the
work directory, so a test counts how often each body ran across processes.
``delete`` asks for approval; the approval service answers ``deferred``.

Run as a script: ``suspend <dir>`` runs the batch and writes the suspension's
JSON to ``<dir>/suspension.json``; ``resume <dir> <decision>`` resumes it and
writes the results to ``<dir>/results.json``. Both log to ``<dir>/log.jsonl``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from dsh_codegen.registry import (
    AbortController,
    ApprovalRequest,
    Ask,
    JsonlSessionLog,
    Suspension,
    ToolCall,
    ToolCallsSuspended,
    ToolOutput,
    ToolRegistry,
    define_tool,
    execute_tool_calls,
    resume_tool_calls,
)
from dsh_codegen.registry._session_log import result_fields

ASKING = frozenset({"delete"})


class Deferring:
    """An approval service that answers every request later (``"deferred"``), recording the requests."""

    def __init__(self, answer: str = "deferred") -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    async def request(self, request: ApprovalRequest) -> str:
        self.requests.append(request)
        return self.answer


class RandomDeferring:
    """Defers each call's first approval request when ``defer`` says so; answers later requests inline."""

    def __init__(self, defer: set[str], answers: dict[str, str]) -> None:
        self.defer = defer
        self.answers = answers

    async def request(self, request: ApprovalRequest) -> str:
        if request.call_id in self.defer:
            self.defer.discard(request.call_id)
            return "deferred"
        return self.answers[request.call_id]


async def resume_until_done(
    registry: ToolRegistry, suspension: Suspension, answers: dict[str, str], shuffle: Any, log: Any
) -> list[Any]:
    """Resume (through the JSON text each time) with ``answers`` by (sub-)call id, decisions in a shuffled order, until the batch ends."""
    while True:
        suspension = Suspension.from_json(suspension.to_json())
        pending = list(suspension.pending)
        shuffle.shuffle(pending)
        decisions = {p.approval_id: answers[p.sub_call_id or p.call_id] for p in pending}
        try:
            return await resume_tool_calls(registry, suspension, decisions, signal=AbortController().signal, log=log)
        except ToolCallsSuspended as again:
            suspension = again.suspension


def build_registry(
    work: Path,
    approval: Any = None,
    *,
    asking: frozenset[str] = ASKING,
    parallel: bool = True,
    tools: tuple[str, ...] = ("read", "delete", "note"),
    note_parameters: Any = None,
) -> ToolRegistry:
    registry = ToolRegistry(approval=approval if approval is not None else Deferring())
    runs = work / "runs.txt"

    def tool(name: str) -> Any:
        async def execute(args: Any, run: Any) -> Any:
            with runs.open("a") as out:
                out.write(f"{name} {run.call_id}\n")
            await asyncio.sleep(0)
            return f"{name}:{args['x']}"

        return define_tool(
            name=name,
            description=f"{name} tool",
            parameters=note_parameters if name == "note" and note_parameters else {"x": {"type": "integer"}},
            output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}]),
            execute=execute,
            is_concurrency_safe=parallel,
        )

    for name in tools:
        registry.register(tool(name))

    def ask(execution: Any, next: Any) -> Any:
        if execution.name in asking:
            return Ask(f"{execution.name} needs a human")
        return next()

    registry.on_pre_execute(ask)
    return registry


CALLS = [
    ToolCall("c1", "read", '{"x": 1}'),
    ToolCall("c2", "delete", '{"x": 2}'),
    ToolCall("c3", "note", '{"x": 3}'),
    ToolCall("c4", "read", '{"x": 4}'),
]


def runs(work: Path) -> list[str]:
    path = work / "runs.txt"
    return path.read_text().splitlines() if path.exists() else []


def results_json(results: list[Any]) -> list[Any]:
    return [json.loads(json.dumps(result_fields(result))) for result in results]


async def _suspend(work: Path) -> None:
    registry = build_registry(work)
    with JsonlSessionLog(work / "log.jsonl") as log:
        try:
            await execute_tool_calls(registry, CALLS, signal=AbortController().signal, log=log, agent="main")
        except ToolCallsSuspended as suspended:
            (work / "suspension.json").write_text(suspended.suspension.to_json())
            return
    raise SystemExit("the batch was not suspended")


async def _resume(work: Path, decision: str) -> None:
    registry = build_registry(work)
    suspension = Suspension.from_json((work / "suspension.json").read_text())
    decisions = {item.approval_id: decision for item in suspension.pending}
    with JsonlSessionLog(work / "log.jsonl") as log:
        results = await resume_tool_calls(registry, suspension, decisions, signal=AbortController().signal, log=log)
    (work / "results.json").write_text(json.dumps(results_json(results)))


# -- Code Mode: the same tools, called by one run_code program --------------------------------------

PROGRAM = """
a = await tools.read({"x": 1})
try:
    b = await tools.delete({"x": 2})
except ToolCallError as error:
    b = "refused: " + error.message
c = await tools.note({"x": 3})
print(a, b, c)
return [a, b, c]
"""

CODE_CALLS = [ToolCall("r1", "run_code", {"code": PROGRAM, "description": "read, delete, note"})]


def code_runtime(kind: str) -> Any:
    if kind == "monty":
        from dsh_codegen.codemode import MontyRuntime

        return MontyRuntime()
    from dsh_codegen.codemode import PythonSubprocessRuntime

    return PythonSubprocessRuntime()


def build_code_registry(work: Path, runtime: Any, log: Any, approval: Any = None, **options: Any) -> ToolRegistry:
    registry = build_registry(work, approval, **options)
    registry.log = log
    registry.set_code_runtime(runtime, mode="code")
    return registry


async def _code_suspend(work: Path, kind: str) -> None:
    async with code_runtime(kind) as runtime:
        with JsonlSessionLog(work / "log.jsonl") as log:
            registry = build_code_registry(work, runtime, log)
            try:
                await execute_tool_calls(registry, CODE_CALLS, signal=AbortController().signal, log=log, agent="main")
            except ToolCallsSuspended as suspended:
                (work / "suspension.json").write_text(suspended.suspension.to_json())
                return
    raise SystemExit("the run was not suspended")


async def _code_resume(work: Path, kind: str, decision: str) -> None:
    suspension = Suspension.from_json((work / "suspension.json").read_text())
    decisions = {item.approval_id: decision for item in suspension.pending}
    async with code_runtime(kind) as runtime:
        with JsonlSessionLog(work / "log.jsonl") as log:
            registry = build_code_registry(work, runtime, log)
            results = await resume_tool_calls(registry, suspension, decisions, signal=AbortController().signal, log=log)
    (work / "results.json").write_text(json.dumps(results_json(results)))


if __name__ == "__main__":
    command, directory = sys.argv[1], Path(sys.argv[2])
    if command == "suspend":
        asyncio.run(_suspend(directory))
    elif command == "resume":
        asyncio.run(_resume(directory, sys.argv[3]))
    elif command == "code-suspend":
        asyncio.run(_code_suspend(directory, sys.argv[3]))
    else:
        asyncio.run(_code_resume(directory, sys.argv[3], sys.argv[4]))
