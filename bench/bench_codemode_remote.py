"""Code Mode past one process: ``RayRuntime`` and ``CommandRuntime`` against the local fork server.

One local Ray cluster (Ray's own ``ray.cluster_utils.Cluster``: a head that runs
nothing and two nodes, on 127.0.0.1 only, no dashboard, no usage statistics) and,
in one interleaved run (each round runs every side once, the order rotating), the
figures issue 38 asks for:

- an empty run, p50 and p99, on the local fork server (``PythonSubprocessRuntime``),
  ``RayRuntime`` and ``CommandRuntime`` (``python -I -S _child.py stdio``, the child
  as a script, and ``python -m dsh_codegen.codemode.child``), as ratios to the fork
  server's; the goal for Ray: p50 within 3x;
- a sub-call's round trip, p50 and p99: the time between two consecutive calls of a
  program awaiting one call after another, seen by the host's dispatch (the answer
  out, the child's next call in), against one bare call of a Ray actor on the same
  cluster awaited the same way (the engine's floor); the goal for Ray: p50 within 2x;
- throughput: 200 short runs (one call each) started together, on the fork server and
  on ``RayRuntime`` with its actors on one node, then on two.

Ratios only mean something within one run: the machine is shared, its load drifts.
``python -m bench codemode_remote`` (needs the ``ray`` extra; says so and skips
without it). ``DSH_BENCH_ROUNDS`` sets the rounds of the empty runs (default 100; the round trips take a
tenth as many runs of 50 calls each).
"""

from __future__ import annotations

import os

# Before Ray is imported: the loopback address stays the nodes' address; no usage statistics.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import asyncio  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from dsh_codegen.codemode import CommandRuntime, PythonSubprocessRuntime  # noqa: E402
from dsh_codegen.codemode._processes import CHILD_SCRIPT  # noqa: E402
from dsh_codegen.registry.code_runtime import CodeRunRequest, CodeRunSuccess  # noqa: E402
from dsh_codegen.registry.cancel import AbortController  # noqa: E402

NODE = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 << 20}
SEQUENTIAL = 50


class _Calls:
    """A dispatch answering at once, recording when each call arrived (the round trips are the gaps)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def dispatch(self, name: str, args: Any) -> asyncio.Future[Any]:
        self.times.append(time.perf_counter())
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result({"echo": args})
        return future


async def _run(runtime: Any, code: str, calls: _Calls | None = None) -> float:
    calls = calls or _Calls()
    request = CodeRunRequest(code, ("echo",), calls.dispatch, AbortController().signal, "bench")
    start = time.perf_counter()
    result = await runtime.run(request)
    elapsed = time.perf_counter() - start
    if not isinstance(result, CodeRunSuccess):
        raise RuntimeError(f"{runtime!r}: {result}")
    return elapsed


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"


def _table(title: str, samples: dict[str, list[float]], baseline: str) -> None:
    base50, base99 = _p(samples[baseline], 0.5), _p(samples[baseline], 0.99)
    print(f"\n{title} (n = {len(samples[baseline])} each)")
    print(f"  {'':42} {'p50':>11} {'p99':>11} {'p50 ratio':>10} {'p99 ratio':>10}")
    for name, values in samples.items():
        p50, p99 = _p(values, 0.5), _p(values, 0.99)
        print(f"  {name:42} {_ms(p50)} {_ms(p99)} {p50 / base50:9.2f}x {p99 / base99:9.2f}x")


async def _interleaved(sides: dict[str, Callable[[], Awaitable[list[float]]]], rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for side in sides.values():  # warm-up: pools, fork servers, spares, the first imports
        await side()
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name] += await sides[name]()
    return samples


async def _throughput(runtime: Any, runs: int = 200) -> float:
    await _run(runtime, "return await tools.echo({})")
    start = time.perf_counter()
    await asyncio.gather(*(_run(runtime, "return await tools.echo({})") for _ in range(runs)))
    return runs / (time.perf_counter() - start)


def _raylet_of(pid: int, raylets: dict[int, str]) -> str:
    """The node whose raylet ``pid`` descends from (the cluster's nodes are all processes of this machine)."""
    while pid > 1:
        if pid in raylets:
            return raylets[pid]
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return "?"


async def _placement(runtime: Any, raylets: dict[int, str]) -> str:
    """How many of the runtime's actors are on each node (asked of the programs' fork servers)."""
    seen: set[int] = set()
    for _ in range(4 * runtime.actors):
        calls = _Calls()
        request = CodeRunRequest(
            "import os\nreturn os.getppid()", ("echo",), calls.dispatch, AbortController().signal, "bench"
        )
        result = await runtime.run(request)
        assert isinstance(result, CodeRunSuccess) and isinstance(result.result, int)
        seen.add(result.result)
    per_node: dict[str, int] = {}
    for zygote in seen:
        node = _raylet_of(zygote, raylets)
        per_node[node] = per_node.get(node, 0) + 1
    return ", ".join(f"{count} on {node}" for node, count in sorted(per_node.items()))


def main() -> None:
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError:
        print("skipped: the ray extra is not installed (pip install 'dsh_codegen[ray]')")
        return
    from dsh_codegen.codemode import RayRuntime

    rounds = int(os.environ.get("DSH_BENCH_ROUNDS", "100"))
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    started = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={**NODE, "num_cpus": 0, "include_dashboard": False})
    try:
        node_a = cluster.add_node(**NODE, num_cpus=2, resources={"dsh_a": 100, "dsh_node": 100})
        node_b = cluster.add_node(**NODE, num_cpus=2, resources={"dsh_b": 100, "dsh_node": 100})
        ray.init(address=cluster.address, log_to_driver=False)
        raylets = {
            node.all_processes["raylet"][0].process.pid: name for node, name in ((node_a, "node A"), (node_b, "node B"))
        }
        print(f"cluster: head (no CPUs) + 2 nodes on 127.0.0.1, up in {time.monotonic() - started:.1f} s")
        asyncio.run(_measure(ray, RayRuntime, rounds, raylets))
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


async def _measure(ray: Any, ray_runtime: Any, rounds: int, raylets: dict[int, str]) -> None:
    class Ping:
        async def ping(self, value: bytes) -> bytes:
            return value

    script = [sys.executable, "-I", "-S", CHILD_SCRIPT, "stdio"]
    module = [sys.executable, "-m", "dsh_codegen.codemode.child"]
    local = PythonSubprocessRuntime()
    remote = ray_runtime(actors=2, actor_options={"resources": {"dsh_node": 1}})
    command = CommandRuntime(script)
    command_module = CommandRuntime(module)
    pinger = ray.remote(Ping).options(resources={"dsh_node": 1}).remote()
    await pinger.ping.remote(b"")
    await remote.start()
    try:
        print(f"RayRuntime: 2 actors ({await _placement(remote, raylets)}), 2 spare processes each")

        async def one(runtime: Any) -> list[float]:
            return [await _run(runtime, "pass")]

        empty = await _interleaved(
            {
                "local fork server (PythonSubprocessRuntime)": lambda: one(local),
                "RayRuntime": lambda: one(remote),
                "CommandRuntime, child as a script": lambda: one(command),
                "CommandRuntime, python -m ...child": lambda: one(command_module),
            },
            rounds,
        )
        _table("empty run, end to end (run() to its return)", empty, "local fork server (PythonSubprocessRuntime)")
        print(
            f"  goal: RayRuntime p50 within 3x the fork server's: "
            f"{_p(empty['RayRuntime'], 0.5) / _p(empty['local fork server (PythonSubprocessRuntime)'], 0.5):.2f}x"
        )

        code = f"for i in range({SEQUENTIAL}):\n    await tools.echo({{'n': i}})"

        async def gaps(runtime: Any) -> list[float]:
            calls = _Calls()
            await _run(runtime, code, calls)
            return [b - a for a, b in zip(calls.times, calls.times[1:])]

        async def bare() -> list[float]:
            times = []
            for _ in range(SEQUENTIAL - 1):
                start = time.perf_counter()
                await pinger.ping.remote(b'{"t":"ok","id":1,"value":{"echo":{"n":1}}}\n')
                times.append(time.perf_counter() - start)
            return times

        trips = await _interleaved(
            {
                "local fork server": lambda: gaps(local),
                "RayRuntime": lambda: gaps(remote),
                "CommandRuntime, child as a script": lambda: gaps(command),
                "one bare Ray actor call (the floor)": bare,
            },
            max(10, rounds // 10),
        )
        _table("sub-call round trip (answer out, next call in)", trips, "local fork server")
        floor = _p(trips["one bare Ray actor call (the floor)"], 0.5)
        print(
            f"  goal: RayRuntime p50 within 2x one bare actor call's: {_p(trips['RayRuntime'], 0.5) / floor:.2f}x "
            f"(p99 {_p(trips['RayRuntime'], 0.99) / _p(trips['one bare Ray actor call (the floor)'], 0.99):.2f}x)"
        )
    finally:
        await remote.aclose()
        await command.aclose()
        await command_module.aclose()
        ray.kill(pinger)

    print("\nthroughput: 200 runs of one call each, started together")
    local_rate = await _throughput(local)
    print(f"  {'local fork server':42} {local_rate:8.1f} runs/s  1.00x")
    for label, actors, options in (
        ("RayRuntime, 1 node, 2 actors", 2, {"resources": {"dsh_a": 1}}),
        ("RayRuntime, 2 nodes, 4 actors", 4, {"resources": {"dsh_node": 1}}),
    ):
        async with ray_runtime(actors=actors, actor_options=options) as runtime:
            placed = await _placement(runtime, raylets)
            rate = await _throughput(runtime)
        print(f"  {label:42} {rate:8.1f} runs/s  {rate / local_rate:.2f}x  (actors: {placed})")
    await local.aclose()


if __name__ == "__main__":
    main()
