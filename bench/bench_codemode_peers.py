"""One ``run_code`` call end to end, on each runtime and on a peer, interleaved in one run.

Contenders, each a whole ``run_code`` tool call through its framework:

- ``fork server``, ``spawn``, ``Monty``: ``ToolRegistry(mode="code").execute(run_code)`` with
  ``PythonSubprocessRuntime`` (fork server; plain spawn) or ``MontyRuntime``, pre-flight as each
  runtime has it by default; the full pipeline around the run and around every binding call.
- ``harness CodeMode``: pydantic-ai-harness's ``CodeMode`` (its Monty sandbox) in a pydantic-ai
  ``Agent`` whose ``FunctionModel`` asks for one ``run_code`` call, then answers; the figure is that
  agent run minus a run of the same agent that answers at once (measured in the same round), so it is
  the ``run_code`` call alone.
- ``bare spawn``: ``python -I -c pass``, what starting any fresh interpreter costs.

Programs: ``empty``; ``one call``; ``10 sequential`` calls; ``100 gathered`` calls; ``1 MB print``
(one line of 1,000,000 characters). The tool answers at once (``{"echo": n}``).

Every round runs each program once on each contender, the contenders in a rotating order, so the
machine's drifting load falls on all of them alike; a figure is the median over the rounds, and the
ratios are medians of per-round ratios to the fork server. Then the pre-flight check's own cost: a
typical 20-line program against the 61-tool SDK of ``data/catalog60.json``, against Python's parse of
the same text and against an empty fork-server run.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench._util import format_seconds, median_time

from dsh_codegen.codegen import load_catalog
from dsh_codegen.codemode import MontyRuntime, PythonSubprocessRuntime
from dsh_codegen.codemode._preflight import preflight_findings
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    AbortController,
    ToolExecutionInput,
    ToolOutput,
    ToolRegistry,
    ToolSuccess,
    define_tool,
)

ROUNDS = 9
#: Our programs (``tools.echo({...})``) and the harness's (its tools take keyword arguments, and a
#: program's value is its last expression).
PROGRAMS: dict[str, tuple[str, str]] = {
    "empty": ("pass", "None"),
    "one call": ("return await tools.echo({'n': 1})", "await echo(n=1)"),
    "10 sequential": (
        "for i in range(10):\n    await tools.echo({'n': i})",
        "for i in range(10):\n    await echo(n=i)",
    ),
    "100 gathered": (
        "import asyncio\nawait asyncio.gather(*[tools.echo({'n': i}) for i in range(100)])",
        "import asyncio\nawait asyncio.gather(*[echo(n=i) for i in range(100)])",
    ),
    "1 MB print": ("print('x' * 1_000_000)", "print('x' * 1_000_000)"),
}
TYPICAL_20 = """import asyncio
status = await tools.git_status({'path': '.'})
changed = [f for f in status['files']][:5]
print('branch', status['branch'], 'changed', len(changed))
found = await tools.grep({'pattern': 'TODO', 'path': 'src', 'glob': '*.py'})
reads = await asyncio.gather(*[tools.read_file({'path': m['path'], 'limit': 50}) for m in found['matches'][:3]])
for r in reads:
    print(r['path'], r['total_lines'], r['truncated'])
tests = await tools.run_tests({'paths': ['tests'], 'fail_fast': True})
if tests['failed']:
    for failure in tests['failures'][:3]:
        print('FAIL', failure)
out = await tools.bash({'command': 'ls -la', 'timeout_ms': 5000})
print(out['stdout'][:200], out['exit_code'])
issue = await tools.github_create_issue({'repo': 'me/x', 'title': 'TODOs', 'body': str(len(found['matches']))})
await tools.slack_post({'channel': '#dev', 'text': f"filed {issue['url']}"})
summary = {'changed': len(changed), 'todos': found['total'], 'issue': issue['number']}
note = await tools.memory_store({'key': 'last-run', 'value': summary})
print('stored', note['stored'])
return summary
"""

Runner = Callable[[str], Awaitable[float]]


def _echo_tool() -> Any:
    async def echo(args: Any, run: Any) -> Any:
        return {"echo": args["n"]}

    return define_tool(
        name="echo",
        description="Echo a number.",
        parameters={"n": {"type": "integer", "required": True}},
        output=ToolOutput(
            schema={"type": "object", "additionalProperties": True, "properties": {}},
            render=lambda args, value: [{"type": "text", "text": str(value)}],
        ),
        execute=echo,
        is_concurrency_safe=True,
    )


def _registry_runner(runtime: Any) -> Runner:
    registry = ToolRegistry(mode="code", code_runtime=runtime)
    registry.register(_echo_tool())

    async def run(program: str) -> float:
        code = PROGRAMS[program][0]
        start = time.perf_counter()
        result = await registry.execute(
            ToolExecutionInput("b", RUN_CODE_NAME, {"code": code, "description": "bench"}, AbortController().signal)
        )
        elapsed = time.perf_counter() - start
        if not isinstance(result, ToolSuccess):
            raise RuntimeError(f"{program}: {result.content}")
        return elapsed

    return run


def _harness_runner() -> Runner | str:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai_harness import CodeMode
    except ImportError as error:
        return f"not installed ({error.name}; pip install -e '.[bench]')"
    code = {"program": ""}

    def model(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1 and code["program"]:
            return ModelResponse(parts=[ToolCallPart("run_code", {"code": code["program"]})])
        return ModelResponse(parts=[TextPart("done")])

    agent: Any = Agent(FunctionModel(model), capabilities=[CodeMode()])

    @agent.tool_plain
    async def echo(n: int) -> dict[str, int]:
        """Echo a number."""
        return {"echo": n}

    async def timed(program: str) -> float:
        code["program"] = program
        start = time.perf_counter()
        await agent.run("go")
        return time.perf_counter() - start

    async def run(program: str) -> float:
        with_call = await timed(PROGRAMS[program][1])
        return with_call - await timed("")  # the same agent answering at once

    return run


async def _bare_spawn(_program: str) -> float:
    start = time.perf_counter()
    await asyncio.to_thread(subprocess.run, [sys.executable, "-I", "-c", "pass"], check=True)
    return time.perf_counter() - start


async def _rounds(contenders: dict[str, Runner]) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {name: {program: [] for program in PROGRAMS} for name in contenders}
    names = list(contenders)
    for program in PROGRAMS:  # warm-up: starts the fork server and the pools
        for name in names:
            await contenders[name](program)
    for index in range(ROUNDS):
        order = names[index % len(names) :] + names[: index % len(names)]
        for program in PROGRAMS:
            for name in order:
                times[name][program].append(await contenders[name](program))
    return times


def _preflight_lines(empty_run_s: float) -> list[str]:
    catalog = tuple(load_catalog(Path(__file__).with_name("data") / "catalog60.json"))
    names = tuple(sorted(entry.name for entry in catalog))
    assert preflight_findings(TYPICAL_20, names, catalog) == []
    check = median_time(lambda: preflight_findings(TYPICAL_20, names, catalog), repeat=9)
    import ast

    parse = median_time(lambda: ast.parse(TYPICAL_20), repeat=9)
    return [
        f"pre-flight check, a 20-line program against {len(catalog)} tools: {format_seconds(check)}"
        f" = {check / parse:.2f}x Python's parse of it ({format_seconds(parse)})"
        f" = {check / empty_run_s:.3f}x an empty fork-server run_code call (target < 1 ms)",
    ]


async def _main() -> None:
    contenders: dict[str, Runner] = {}
    closers = []
    for name, runtime in (
        ("fork server", PythonSubprocessRuntime(start="fork-server")),
        ("spawn", PythonSubprocessRuntime(start="spawn")),
        ("Monty", MontyRuntime()),
    ):
        contenders[name] = _registry_runner(runtime)
        closers.append(runtime)
    harness = _harness_runner()
    if isinstance(harness, str):
        print(f"harness CodeMode: {harness}")
    else:
        contenders["harness CodeMode"] = harness
    contenders["bare spawn"] = _bare_spawn
    try:
        times = await _rounds(contenders)
    finally:
        for runtime in closers:
            await runtime.aclose()
    medians = {
        name: {program: statistics.median(samples) for program, samples in rows.items()} for name, rows in times.items()
    }
    width = max(len(name) for name in contenders)
    print(
        f"run_code end to end: median of {ROUNDS} interleaved rounds (and the median per-round ratio to the fork server)"
    )
    print(f"  {'':<{width}}  " + "  ".join(f"{program:>22}" for program in PROGRAMS))
    base = times["fork server"]
    for name in contenders:
        cells = []
        for program in PROGRAMS:
            ratio = statistics.median(a / b for a, b in zip(times[name][program], base[program]))
            cells.append(f"{format_seconds(medians[name][program])} ({ratio:.2f}x)")
        print(f"  {name:<{width}}  " + "  ".join(f"{cell:>22}" for cell in cells))
    for line in _preflight_lines(medians["fork server"]["empty"]):
        print(line)


def main() -> None:
    asyncio.run(_main())


if __name__ == "__main__":
    main()
