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

The three targets are measured as interleaved pairs (the two sides alternate,
the order flipping every round, and the figure is the median of the per-round
ratios or differences), because the machine is shared and its load drifts
between minutes: empty fork-server run against a bare spawn; a binding call as
(100 sequential calls - one call) / 99 against the floor; 50 concurrent empty
runs against one. The CPU time of an empty run and of one binding call, summed
over every process they involve (host, fork server, child), is printed beside
them: it depends on the load far less than wall time, and on 2 cores 50 runs
cannot finish faster than 25 times an empty run's.
"""

from __future__ import annotations

import asyncio
import os
import resource
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
from dsh_codegen.registry.code_runtime import CodeRunRequest, CodeRunSuccess
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


_FORK_FLOOR = """
import importlib.util, os, statistics, sys, time
if len(sys.argv) > 1:  # the fork server's code and imports, without its loop
    spec = importlib.util.spec_from_file_location("_child_floor", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
def batch(count):
    start = time.perf_counter()
    pids = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    return time.perf_counter() - start
batch(50)
print(statistics.median(batch(1) for _ in range(41)), statistics.median(batch(50) for _ in range(21)))
"""


def _fork_floor(child_code: bool) -> tuple[float, float]:
    """Median seconds of one and of 50 bare forks (each child exits at once, all reaped).

    Measured in a fresh ``python -I`` process, with ``child_code`` after loading
    ``_child.py`` as the fork server does (its imports and definitions, not its
    loop): the least any fork-per-run design pays, with no run directory, no
    pipes and no program.
    """
    import dsh_codegen.codemode._child as child

    command = [sys.executable, "-I", "-c", _FORK_FLOOR] + ([child.__file__] if child_code else [])
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


async def _in_process_dispatch(calls: int = 100) -> float:
    async def once() -> None:
        for i in range(calls):
            await _dispatch("echo", {"n": i})

    return await _median(once, 50) / calls


async def _paired(
    first: Callable[[], Awaitable[float]], second: Callable[[], Awaitable[float]], rounds: int
) -> list[tuple[float, float]]:
    """``rounds`` pairs of (first, second) seconds, the two alternating and the order flipping each round."""
    await first()  # warm-up
    await second()
    pairs = []
    for index in range(rounds):
        if index % 2:
            b = await second()
            a = await first()
        else:
            a = await first()
            b = await second()
        pairs.append((a, b))
    return pairs


async def _timed(fn: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def _spawn_once() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
    return time.perf_counter() - start


def _ratio(pairs: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Medians of each side and of the per-round ratios."""
    return (
        statistics.median(a for a, _ in pairs),
        statistics.median(b for _, b in pairs),
        statistics.median(a / b for a, b in pairs),
    )


async def _targets() -> list[str]:
    lines = []
    async with PythonSubprocessRuntime(start="fork-server") as runtime:

        async def empty() -> float:
            return await _timed(lambda: runtime.run(_request("pass")))

        empty_s, bare_s, ratio = _ratio(await _paired(empty, _spawn_once, 15))
        lines.append(
            f"empty run, fork server {format_seconds(empty_s)} vs bare spawn {format_seconds(bare_s)}:"
            f" {ratio:.3f}x (paired median; target <= 0.1x)"
        )

        async def sequential() -> float:
            return await _timed(lambda: runtime.run(_request(PROGRAMS["100 sequential"])))

        async def one() -> float:
            return await _timed(lambda: runtime.run(_request(PROGRAMS["one call"])))

        pairs = await _paired(sequential, one, 11)
        per_call = statistics.median((a - b) / 99 for a, b in pairs)
        floor = await _in_process_dispatch()
        lines.append(
            f"binding round trip, fork server: {format_seconds(per_call)} per call (paired median),"
            f" {format_seconds(per_call - floor)} above in-process dispatch ({format_seconds(floor)});"
            " target <= 100 us"
        )

        async def many() -> float:
            return await _timed(lambda: asyncio.gather(*(runtime.run(_request("pass")) for _ in range(50))))

        many_s, one_s, ratio = _ratio(await _paired(many, empty, 5))
        lines.append(
            f"50 concurrent empty runs, fork server: {format_seconds(many_s)} vs one run"
            f" {format_seconds(one_s)}: {ratio:.2f}x (paired median; target <= 3x on 2 cores)"
        )
        # The floor under that target: forks whose children exit at once (no program, pipes or run
        # directory), what any design that gives each run a process of its own pays at least.
        for label, child_code in (("holding the fork server's code", True), ("of a bare interpreter", False)):
            fork_one, fork_fifty = _fork_floor(child_code)
            lines.append(
                f"floor, forks {label}: 1 in {format_seconds(fork_one)}, 50 in"
                f" {format_seconds(fork_fifty)} = {fork_fifty / one_s:.2f}x one empty run"
            )
    cpu = await _cpu_per_empty_run(100)
    lines.append(
        f"CPU per empty fork-server run, all processes: {format_seconds(cpu)}"
        f" (so 50 runs need at least {format_seconds(cpu * 25)} on 2 cores)"
    )
    lines.append(
        f"CPU per binding call, all processes: {format_seconds(await _cpu_per_call(10, 100))}"
        " (runs of 100 sequential calls minus empty runs)"
    )
    return lines


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)  # the fork server, once reaped, with its children
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


async def _cpu_per_empty_run(runs: int) -> float:
    """CPU seconds of ``runs`` empty runs minus those of one, each on a fresh runtime closed afterwards."""

    async def session(count: int) -> float:
        before = _cpu_seconds()
        async with PythonSubprocessRuntime(start="fork-server") as runtime:
            for _ in range(count):
                await runtime.run(_request("pass"))
        return _cpu_seconds() - before

    return (await session(runs + 1) - await session(1)) / runs


async def _cpu_per_call(runs: int, calls: int) -> float:
    """CPU seconds per binding call, all processes: ``runs`` runs of ``calls`` sequential calls minus as many empty runs."""

    async def session(code: str) -> float:
        before = _cpu_seconds()
        async with PythonSubprocessRuntime(start="fork-server") as runtime:
            for _ in range(runs):
                await runtime.run(_request(code))
        return _cpu_seconds() - before

    code = f"for i in range({calls}):\n    await tools.echo({{'n': i}})"
    return (await session(code) - await session("pass")) / (runs * calls)


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
    width = max(len(name) for name in rows)
    print("Code Mode runtimes: median wall time per run, host side")
    print(f"  {'':<{width}}  " + "  ".join(f"{name:>15}" for name in PROGRAMS))
    for runtime_name, row in rows.items():
        print(f"  {runtime_name:<{width}}  " + "  ".join(f"{_cell(row[name]):>15}" for name in PROGRAMS))
    print(f"  {'bare python -I -c pass':<{width}}  {format_seconds(bare):>15}")
    print()
    for runtime_name, row in rows.items():
        sequential, single = row["100 sequential"], row["one call"]
        if isinstance(sequential, float) and isinstance(single, float):
            print(f"  per binding call from the medians, {runtime_name}: {format_seconds((sequential - single) / 99)}")
    print(f"  pre-flight check of a {_preflight_line()}")
    print()
    print(f"load average before the targets: {_load()}")
    for line in await _targets():
        print(line)
    print(f"load average after: {_load()}")


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _preflight_line() -> str:
    cost, lines, found = _preflight_cost()
    return f"{lines}-line program against 60 tools: {format_seconds(cost)}, {found} findings"


def main() -> None:
    asyncio.run(_main())


if __name__ == "__main__":
    main()
