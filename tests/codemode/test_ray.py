"""``RayRuntime`` on a real local Ray cluster: a head and two more nodes, on 127.0.0.1 only.

The cluster is Ray's own in-process utility (``ray.cluster_utils.Cluster``), kept on
loopback by the settings below, made before Ray is imported: with
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` Ray takes the loopback address as the node's
address instead of rewriting ``127.0.0.1`` to the machine's outward one; usage
statistics are off and no dashboard starts (its usage module is what probes a cloud
metadata address). Nothing here runs ``ray stop``: the cluster is ended by its own
handle. The runtime tests' autouse fixture checks that no process of the child script
(the fork servers on the nodes, their children) outlives a test.
"""

from __future__ import annotations

import os

# Before Ray is imported (it reads them at import).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

import asyncio  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

ray = pytest.importorskip("ray", reason="the ray extra is not installed on this Python: RayRuntime is not tested")

from _runtime_helpers import FakeTools, request  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from dsh_codegen.codemode import RayRuntime  # noqa: E402
from dsh_codegen.registry import (  # noqa: E402
    AbortController,
    MemorySessionLog,
    ToolExecutionInput,
    ToolOutput,
    ToolRegistry,
    define_tool,
)
from dsh_codegen.registry.code_runtime import CodeRunFailure, CodeRunSuccess  # noqa: E402

pytestmark = [pytest.mark.once, pytest.mark.ray, pytest.mark.xdist_group("ray")]

LOOPBACK = "127.0.0.1"
#: Every node this module starts: loopback, no dashboard, a small object store.
NODE = {"node_ip_address": LOOPBACK, "object_store_memory": 80 << 20}
#: The pool's actors go to the nodes that carry this resource (not the head).
SANDBOX = {"resources": {"dsh_sandbox": 1}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    # The head runs no actor (no CPU of its own to offer); two nodes carry the sandboxes. Node deaths
    # are noticed within about two seconds (Ray's default health check takes 15 or more).
    config = {"health_check_period_ms": 500, "health_check_failure_threshold": 3, "health_check_timeout_ms": 500}
    cluster = Cluster(
        initialize_head=True,
        head_node_args={**NODE, "num_cpus": 0, "include_dashboard": False, "_system_config": config},
    )
    try:
        for _ in range(2):
            cluster.add_node(**NODE, num_cpus=2, resources={"dsh_sandbox": 100})
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _nodes_on_loopback_only(cluster: Cluster) -> list[str]:
    return [node["NodeManagerAddress"] for node in ray.nodes() if node["Alive"]]


def _actor_processes() -> list[str]:
    """The pool's actor processes still alive on this machine (every node of the cluster is here)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if b"CodeModeNode" in cmdline:
                found.append(entry + " " + cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def _until(condition: Any, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _registry(runtime: RayRuntime, log: MemorySessionLog | None = None) -> ToolRegistry:
    registry = ToolRegistry(mode="code", code_runtime=runtime, log=log, max_parallel_sub_calls=4)

    async def lookup(args: Any, run: Any) -> Any:
        await asyncio.sleep(0.01)
        return {"key": args["key"], "value": len(args["key"])}

    render = ToolOutput(schema={"type": "object"}, render=lambda args, value: [{"type": "text", "text": str(value)}])
    registry.register(
        define_tool(
            name="lookup",
            description="Look a key up.",
            parameters={"key": {"type": "string"}},
            execute=lookup,
            output=render,
            is_concurrency_safe=True,
        )
    )

    async def delete(args: Any, run: Any) -> Any:
        return {"deleted": args["key"]}

    registry.register(
        define_tool(
            name="delete",
            description="Delete a key.",
            parameters={"key": {"type": "string"}},
            execute=delete,
            output=render,
        )
    )
    return registry


async def _run_code(registry: ToolRegistry, code: str, call_id: str = "c1") -> Any:
    return await registry.execute(
        ToolExecutionInput(
            call_id, "run_code", {"code": code, "description": "d"}, AbortController().signal, agent="main"
        )
    )


def test_the_cluster_is_on_loopback_only(cluster: Cluster) -> None:
    assert _nodes_on_loopback_only(cluster) == [LOOPBACK] * 3


def test_twenty_concurrent_runs_with_sub_calls_spread_over_the_actors(cluster: Cluster) -> None:
    program = (
        "import asyncio, os\n"
        "values = await asyncio.gather(*(tools.lookup({'key': k}) for k in ('a', 'bb', 'ccc')))\n"
        "return {'sum': sum(v['value'] for v in values), 'fork_server': os.getppid()}"
    )

    async def main() -> list[Any]:
        async with RayRuntime(actors=4, actor_options=SANDBOX, wall_timeout_s=60) as runtime:
            registry = _registry(runtime)
            results = await asyncio.gather(*(_run_code(registry, program, f"c{n}") for n in range(20)))
            return [(result.is_error, result.value) for result in results]

    results = asyncio.run(main())
    assert all(not is_error and value["result"]["sum"] == 6 for is_error, value in results), results
    # Each actor holds one fork server: the 20 runs went to all four (least busy first).
    assert len({value["result"]["fork_server"] for _, value in results}) == 4
    assert _until(lambda: _actor_processes() == []), _actor_processes()


def test_a_guard_denies_a_sub_call_made_on_a_remote_node_and_the_host_logs_it(cluster: Cluster) -> None:
    async def main() -> tuple[Any, list[dict[str, Any]]]:
        log = MemorySessionLog()
        async with RayRuntime(actor_options=SANDBOX) as runtime:
            registry = _registry(runtime, log)
            registry.guard(lambda execution: "deleting is not allowed here" if execution.name == "delete" else None)
            code = (
                "try:\n    await tools.delete({'key': 'a'})\nexcept ToolCallError as e:\n"
                "    return [e.toolName, e.message, (await tools.lookup({'key': 'a'}))['value']]"
            )
            result = await _run_code(registry, code)
        return result.value, [event for event in log.events if event["type"] == "tool/code-dispatch"]

    value, events = asyncio.run(main())
    assert value == {"logs": [], "result": ["delete", "deleting is not allowed here", 1]}
    assert [(event["name"], event["isError"]) for event in events] == [("delete", True), ("lookup", False)]
    assert events[0]["content"] == [{"type": "text", "text": "Error: deleting is not allowed here"}]


def test_failure_kinds_and_texts_are_the_local_runtimes(cluster: Cluster) -> None:
    programs = {
        "print('bye')\nimport os\nos._exit(3)": CodeRunFailure(
            "worker-exit", "the program process exited with code 3 before completing", ("bye",)
        ),
        "await tools.fail({})": CodeRunFailure(
            "exception", "ToolCallError: tools.fail failed: deliberate failure (line 1)"
        ),
        "while True:\n    pass": CodeRunFailure("timeout", "the program ran past its wall-clock budget of 1 s"),
        "import os\nos.write(4, b'[1]\\n')\nimport time\ntime.sleep(5)": CodeRunFailure(
            "invalid-output", "the program process broke the protocol (a frame that is not an object with a type)"
        ),
        "import os\nreturn [os.getcwd() == os.environ['HOME'], os.listdir('.')]": CodeRunSuccess((), [True, []]),
    }

    async def main() -> list[Any]:
        async with RayRuntime(actor_options=SANDBOX, wall_timeout_s=1) as runtime:
            return [await runtime.run(request(code, FakeTools())) for code in programs]

    assert asyncio.run(main()) == list(programs.values())


def test_a_program_that_floods_output(cluster: Cluster) -> None:
    flood_logs = "for i in range(20000):\n    print('x' * 100)\nreturn 'done'"
    flood_raw = "import os\nfor i in range(2000):\n    os.write(1, b'y' * 65536)\nreturn 'drained'"
    flood_frame = "import os\nwhile True:\n    os.write(4, b'z' * 65536)"

    async def main() -> list[Any]:
        async with RayRuntime(
            actor_options=SANDBOX, max_log_bytes=10_000, max_output_bytes=100_000, wall_timeout_s=30
        ) as runtime:
            return [await runtime.run(request(code, FakeTools())) for code in (flood_logs, flood_raw, flood_frame)]

    logs, raw, frame = asyncio.run(main())
    assert logs.result == "done" and len(logs.logs) == 101
    assert logs.logs[-1] == "[output truncated: the program printed more than 10000 bytes]"
    assert raw == CodeRunSuccess((), "drained")  # 125 MiB written to fd 1 on the node, read and dropped there
    assert frame == CodeRunFailure("invalid-output", "the program process broke the protocol (an oversized frame)")


def test_abort_mid_run_stops_the_program_on_its_node(cluster: Cluster) -> None:
    async def main() -> Any:
        controller = AbortController()
        tools = FakeTools()
        async with RayRuntime(actor_options=SANDBOX) as runtime:
            task = asyncio.ensure_future(
                runtime.run(request("print('working')\nawait tools.hang({})", tools, controller.signal))
            )
            while not tools.calls:
                await asyncio.sleep(0.01)
            controller.abort()
            return await task

    assert asyncio.run(main()) == CodeRunFailure("abort", "the run was aborted", ("working",))


def test_a_node_killed_mid_run_is_a_worker_exit_and_its_actor_is_replaced(cluster: Cluster) -> None:
    doomed = cluster.add_node(**NODE, num_cpus=1, resources={"dsh_doomed": 10})

    async def main() -> tuple[Any, Any, int]:
        tools = FakeTools()
        async with RayRuntime(actor_options={"resources": {"dsh_doomed": 1}}, wall_timeout_s=60) as runtime:
            task = asyncio.ensure_future(runtime.run(request("print('started')\nawait tools.hang({})", tools)))
            while not tools.calls:
                await asyncio.sleep(0.01)
            cluster.remove_node(doomed)  # on this thread (Ray's node handling wants the main one): a few seconds
            lost = await task
            # The replacement waits for a node that can hold it; one comes.
            cluster.add_node(**NODE, num_cpus=1, resources={"dsh_doomed": 10})
            after = await runtime.run(request("return 'on the new node'", FakeTools()))
            return lost, after, runtime.replaced

    lost, after, replaced = asyncio.run(main())
    assert lost.kind == "worker-exit" and lost.logs == ("started",)
    assert lost.message.startswith("the Ray actor running the program died ("), lost.message
    assert (after, replaced) == (CodeRunSuccess((), "on the new node"), 1)
    assert _until(lambda: _actor_processes() == []), _actor_processes()


def test_aclose_leaves_nothing_on_any_node(cluster: Cluster) -> None:
    async def main() -> Any:
        runtime = RayRuntime(actors=2, actor_options=SANDBOX, spares_per_actor=3)
        await runtime.start()
        running = asyncio.ensure_future(runtime.run(request("import time\ntime.sleep(60)", FakeTools())))
        await asyncio.sleep(0.5)
        await runtime.aclose()
        return await running

    assert asyncio.run(main()) == CodeRunFailure("worker-exit", "the runtime was closed during the run")
    # The fork servers and their children are gone now (the autouse fixture checks); the actors' processes
    # are killed by Ray as it is told to, and go within moments.
    assert _until(lambda: _actor_processes() == []), _actor_processes()


def test_parallel_sub_calls_keep_the_hosts_concurrency_classes(cluster: Cluster) -> None:
    running = {"safe": 0, "alone": 0}
    most = {"safe": 0, "alone": 0}

    def tool(name: str, safe: bool) -> Any:
        async def body(args: Any, run: Any) -> Any:
            running[name] += 1
            most[name] = max(most[name], running[name])
            await asyncio.sleep(0.05)
            running[name] -= 1
            return {"ok": args["n"]}

        return define_tool(
            name=name,
            description=name,
            parameters={"n": {"type": "integer"}},
            execute=body,
            is_concurrency_safe=safe,
            output=ToolOutput(schema={"type": "object"}, render=lambda a, v: [{"type": "text", "text": str(v)}]),
        )

    async def main() -> Any:
        async with RayRuntime(actor_options=SANDBOX) as runtime:
            registry = ToolRegistry(mode="code", code_runtime=runtime, max_parallel_sub_calls=3)
            registry.register(tool("safe", True))
            registry.register(tool("alone", False))
            code = (
                "import asyncio\n"
                "a = await asyncio.gather(*(tools.safe({'n': n}) for n in range(6)))\n"
                "b = await asyncio.gather(*(tools.alone({'n': n}) for n in range(3)))\n"
                "return len(a) + len(b)"
            )
            return (await _run_code(registry, code)).value

    assert asyncio.run(main()) == {"logs": [], "result": 9}
    # Gathered on a remote node, scheduled on the host: safe calls overlap up to the bound, the others run alone.
    assert most == {"safe": 3, "alone": 1}
