"""Code Mode runtimes side by side: the same programs on every runtime, in one run.

Programs: ``empty``; ``one call`` (one binding call); ``100 sequential`` calls;
``100 gathered`` safe calls under ``asyncio.gather``. Runtimes:
``PythonSubprocessRuntime`` with the fork server and with plain spawn,
``MontyRuntime``, smolagents' ``LocalPythonExecutor`` (in-process and
unconfined, tools as plain functions: it has no ``await``, so no gathered row),
and a bare ``python -I -c pass`` spawn as the process baseline. Every figure is
the median of whole runs, measured from the host (``run()`` to its return).

The tools answer through the same dispatch function a bridge would call, from a
table of fake tools that resolve at once; ``in-process dispatch`` is that
dispatch awaited in a plain loop, the floor for a binding call's round trip.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench._util import format_seconds, median_time

from dsh_codegen.codegen import load_catalog
from dsh_codegen.codemode import MontyRuntime, PythonSubprocessRuntime
from dsh_codegen.codemode._preflight import preflight_findings
from dsh_codegen.registry._code_runtime import CodeRunRequest, CodeRunSuccess
from dsh_codegen.registry.cancel import AbortController

PROGRAMS = {
    "empty": "pass",
    "one call": "return await tools.echo({'n': 1})",
    "100 sequential": "for i in range(100):\n    await tools.echo({'n': i})",
    "100 gathered": "import asyncio\nawait asyncio.gather(*[tools.echo({'n': i}) for i in range(100)])",
}
SMOL_PROGRAMS = {
    "empty": "pass",
    "one call": "echo({'n': 1})",
    "100 sequential": "for i in range(100):\n    echo({'n': i})",
}


def _dispatch(name: str, args: Any) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_result({"echo": args})
    return future


def _request(code: str) -> CodeRunRequest:
    return CodeRunRequest(code, ("echo",), _dispatch, AbortController().signal, "bench")


async def _median(fn: Callable[[], Awaitable[object]], samples: int) -> float:
    await fn()  # warm-up (and starts a pool or fork server)
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def _runtime_row(runtime: Any, samples: int) -> dict[str, float | str]:
    row: dict[str, float | str] = {}
    async with runtime:
        for name, code in PROGRAMS.items():
            async def once(code: str = code) -> None:
                result = await runtime.run(_request(code))
                if not isinstance(result, CodeRunSuccess):
                    raise RuntimeError(f"{name}: {result}")
            try:
                row[name] = await _median(once, samples)
            except RuntimeError as error:
                row[name] = f"failed: {error}"[:60]
    return row


def _smolagents_row(samples: int) -> dict[str, float | str]:
    try:
        from smolagents.local_python_executor import LocalPythonExecutor
    except ImportError:
        return {name: "not installed (pip install -e '.[bench]')" for name in PROGRAMS}
    row: dict[str, float | str] = {}
    for name, code in SMOL_PROGRAMS.items():
        times = []
        for index in range(samples + 1):
            executor = LocalPythonExecutor(additional_authorized_imports=[])  # a fresh state per run
            executor.send_tools({"echo": lambda args: {"echo": args}})  # type: ignore[dict-item]
            start = time.perf_counter()
            executor(code)
            if index:
                times.append(time.perf_counter() - start)
        row[name] = statistics.median(times)
    row["100 gathered"] = "n/a (no await)"
    return row


def _bare_spawn(samples: int) -> float:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def _in_process_dispatch(calls: int = 100) -> float:
    async def once() -> None:
        for i in range(calls):
            await _dispatch("echo", {"n": i})

    return await _median(once, 50) / calls


async def _concurrent(runtime: PythonSubprocessRuntime, count: int, samples: int) -> tuple[float, float]:
    async with runtime:
        one = await _median(lambda: runtime.run(_request("pass")), samples)
        many = await _median(lambda: asyncio.gather(*(runtime.run(_request("pass")) for _ in range(count))), 3)
    return one, many


def _preflight_cost() -> tuple[float, int, int]:
    """Median seconds of one pre-flight check of a 40-line program against the 60-tool catalog."""
    from pathlib import Path

    catalog = tuple(load_catalog(Path(__file__).with_name("data") / "catalog60.json"))
    names = tuple(sorted(entry.name for entry in catalog))
    lines = []
    for index in range(10):
        lines.append(f"r{index} = await tools.bash({{'command': 'ls {index}', 'timeout_ms': {index}}})")
        lines.append(f"print(r{index}['stdout'])")
        lines.append(f"await tools.nope{index}({{}})" if index == 9 else "x = 1")
        lines.append(f"await tools['{names[index]}']({{'a': [1, 2, {{'b': None}}]}})")
    code = "\n".join(lines)
    found = preflight_findings(code, names, catalog)
    return median_time(lambda: preflight_findings(code, names, catalog)), len(lines), len(found)


def _cell(value: float | str) -> str:
    return format_seconds(value) if isinstance(value, float) else value


async def _main() -> None:
    rows: dict[str, dict[str, float | str]] = {
        "subprocess, fork server": await _runtime_row(PythonSubprocessRuntime(start="fork-server"), 15),
        "subprocess, spawn": await _runtime_row(PythonSubprocessRuntime(start="spawn"), 7),
        "MontyRuntime": await _runtime_row(MontyRuntime(), 15),
        "smolagents LocalPythonExecutor": _smolagents_row(15),
    }
    bare = _bare_spawn(9)
    floor = await _in_process_dispatch()
    width = max(len(name) for name in rows)
    print("Code Mode runtimes: median wall time per run, host side")
    print(f"  {'':<{width}}  " + "  ".join(f"{name:>15}" for name in PROGRAMS))
    for runtime_name, row in rows.items():
        print(f"  {runtime_name:<{width}}  " + "  ".join(f"{_cell(row[name]):>15}" for name in PROGRAMS))
    print(f"  {'bare python -I -c pass':<{width}}  {format_seconds(bare):>15}")
    print()
    empty_fork = rows["subprocess, fork server"]["empty"]
    if isinstance(empty_fork, float):
        print(f"empty run, fork server vs bare spawn: {empty_fork / bare:.3f}x (target <= 0.1x)")
    print(f"in-process dispatch (the floor of a binding call): {format_seconds(floor)} per call")
    for runtime_name, row in rows.items():
        sequential, empty = row["100 sequential"], row["empty"]
        if isinstance(sequential, float) and isinstance(empty, float):
            per_call = (sequential - empty) / 100
            print(f"  binding round trip, {runtime_name}: {format_seconds(per_call)} per call,"
                  f" {format_seconds(per_call - floor)} above in-process dispatch (target <= 100 us)")
    cost, lines, found = _preflight_cost()
    print(f"pre-flight check of a {lines}-line program against 60 tools: {format_seconds(cost)}"
          f" ({found} findings)")
    one, many = await _concurrent(PythonSubprocessRuntime(start="fork-server"), 50, 9)
    print(f"50 concurrent empty runs, fork server: {format_seconds(many)} vs one run {format_seconds(one)}:"
          f" {many / one:.2f}x (target <= 3x on 2 cores)")


def main() -> None:
    asyncio.run(_main())


if __name__ == "__main__":
    main()
