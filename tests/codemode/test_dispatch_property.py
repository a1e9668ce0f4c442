"""Property test on the real runtimes: every binding call a program makes is dispatched exactly once
and settled exactly once, however the program holds it (issue 34).

A program is a random sequence of statements, each making one or more calls of one tool, every call
with its own number: awaited, gathered, wrapped in a task (awaited later, or never), or not awaited
at all; some calls fail (the program catches what it awaits). It runs through a real registry
(``run_code``, the whole pipeline, a session log), and then:

- the tool's body ran once for each number the program used;
- the log has exactly one ``tool/code-dispatch-start`` and one ``tool/code-dispatch`` per number,
  with the same sub-call id;
- the run succeeded and returned how many calls it made.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dsh_codegen.codemode import MontyRuntime, PythonSubprocessRuntime
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    AbortController,
    MemorySessionLog,
    ToolExecutionInput,
    ToolOutput,
    ToolRegistry,
    ToolSuccess,
    define_tool,
)

pytestmark = pytest.mark.once


@dataclass(frozen=True)
class Statement:
    how: str  # "await", "gather", "task", "task-unawaited", "unawaited"
    calls: int
    fails: bool


statements = st.builds(
    Statement,
    how=st.sampled_from(["await", "gather", "task", "task-unawaited", "unawaited"]),
    calls=st.integers(1, 3),
    fails=st.booleans(),
)
programs = st.lists(statements, min_size=1, max_size=6)


def render(program: list[Statement]) -> tuple[str, int]:
    """The program's text and how many calls it makes (numbered from 0, in the order it makes them)."""
    lines = ["import asyncio", "held = []"]
    n = 0

    def call(fails: bool) -> str:
        nonlocal n
        text = f"tools.t({{'i': {n}, 'fail': {fails}}})"
        n += 1
        return text

    for statement in program:
        fails = statement.fails
        if statement.how == "await":
            for _ in range(statement.calls):
                lines += ["try:", f"    await {call(fails)}", "except ToolCallError:", "    pass"]
        elif statement.how == "gather":
            # Only calls that succeed are gathered (a failure would end the gather, not the calls).
            made = ", ".join(call(False) for _ in range(statement.calls))
            lines.append(f"await asyncio.gather({made})")
        elif statement.how == "task":
            for _ in range(statement.calls):
                lines.append(f"held.append(asyncio.create_task({call(fails)}))")
            lines += [
                "for task in held:",
                "    try:",
                "        await task",
                "    except ToolCallError:",
                "        pass",
                "held = []",
            ]
        elif statement.how == "task-unawaited":
            for _ in range(statement.calls):
                lines.append(f"asyncio.create_task({call(fails)})")
        else:
            for _ in range(statement.calls):
                lines.append(call(fails))
    lines.append(f"return {n}")
    return "\n".join(lines), n


def _tool(bodies: Counter[int]) -> Any:
    async def t(args: Any, run: Any) -> Any:
        bodies[args["i"]] += 1
        await asyncio.sleep(0.001 * (args["i"] % 3))
        if args["fail"]:
            raise ValueError(f"call {args['i']} failed")
        return args["i"]

    return define_tool(
        name="t",
        description="Count a call.",
        parameters={"i": {"type": "integer", "required": True}, "fail": {"type": "boolean", "required": True}},
        output=ToolOutput(
            schema={"type": "integer"}, render=lambda args, value: [{"type": "text", "text": str(value)}]
        ),
        execute=t,
        is_concurrency_safe=True,
    )


async def _check(runtime: Any, program: list[Statement]) -> None:
    code, made = render(program)
    bodies: Counter[int] = Counter()
    log = MemorySessionLog()
    registry = ToolRegistry(mode="code", code_runtime=runtime, log=log)
    registry.register(_tool(bodies))
    result = await registry.execute(
        ToolExecutionInput(
            "p",
            RUN_CODE_NAME,
            {"code": code, "description": "a random program"},
            AbortController().signal,
            agent="main",
        )
    )
    assert isinstance(result, ToolSuccess), (code, result.content)
    assert result.value["result"] == made, code
    assert bodies == Counter(range(made)), code  # each body once
    starts = Counter(
        (e["subCallId"], e["arguments"]["i"]) for e in log.events if e["type"] == "tool/code-dispatch-start"
    )
    settles = Counter((e["subCallId"], e["arguments"]["i"]) for e in log.events if e["type"] == "tool/code-dispatch")
    assert sorted(i for _, i in starts) == list(range(made)), code  # dispatched exactly once each
    assert starts == settles and set(starts.values()) <= {1}, code  # settled exactly once each, same ids


RUNTIMES: dict[str, Callable[[], Any]] = {
    "subprocess": lambda: PythonSubprocessRuntime(start="fork-server"),
    "monty": lambda: MontyRuntime(),
}


@pytest.mark.parametrize("name", RUNTIMES)
def test_every_call_is_dispatched_once_and_settled_once(name: str) -> None:
    if name == "monty":
        pytest.importorskip("pydantic_monty")
    with asyncio.Runner() as runner:
        runtime = RUNTIMES[name]()

        @settings(max_examples=40, deadline=None, database=None)
        @given(programs)
        # More unawaited calls than max_parallel_sub_calls (10): the last ones were queued, then abandoned.
        @example([Statement("unawaited", 3, False)] * 2 + [Statement("task-unawaited", 3, True)] * 2)
        def check(program: list[Statement]) -> None:
            runner.run(_check(runtime, program))

        try:
            check()
        finally:
            runner.run(runtime.aclose())
