"""Code Mode's dispatch bridge: per-binding-call overhead, and the pool's parallelism.

Measured with an in-process runtime (the program is a Python coroutine run in
the same event loop), so the process boundary is excluded and the figures are
the bridge's own: building the sub-call, scheduling it in the per-run pool,
running the full pipeline, committing, and resolving the program's future.

- per binding call (process CPU time, which the machine's other load does not
  inflate; the work is CPU-bound and never sleeps):
  ``(run of N sequential calls - run of 0 calls) / N``,
  beside one native ``registry.execute`` of the same tool (the target is at
  most 2x), one table per tool: an exclusive tool (it runs alone), a
  concurrency-safe tool (classified per call; no listeners, so no gate), and
  the exclusive tool with dispatch events written to a ``MemorySessionLog``
  (the call has an agent; the log's own JSON copy of each event dominates).
- 100 gathered calls to a tool sleeping 50 ms with the default pool of 10,
  beside the ideal 10 x 50 ms (the target is within 1.2x).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from bench._util import format_seconds, ratio_table
from dsh_codegen.codemode import CodeRunRequest, CodeRunResult, CodeRunSuccess
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    UNSET,
    AbortController,
    MemorySessionLog,
    ToolExecutionInput,
    ToolOutput,
    ToolRegistry,
    define_tool,
)

CALLS = 200
ARGS = {"text": "hello"}


class InProcessRuntime:
    """Runs ``programs[request.code](dispatch)`` in the event loop (no process boundary)."""

    language = "python"

    def __init__(self) -> None:
        self.programs: dict[str, Any] = {}

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run the program. Cancellation: propagates (the benchmark never cancels)."""
        result = await self.programs[request.code](request.dispatch)
        return CodeRunSuccess((), UNSET if result is None else result)


def _registry(runtime: InProcessRuntime, log: MemorySessionLog | None = None) -> ToolRegistry:
    registry = ToolRegistry(mode="both", code_runtime=runtime, log=log)

    async def echo(args: Any, run: Any) -> Any:
        return args["text"]

    async def sleepy(args: Any, run: Any) -> Any:
        await asyncio.sleep(0.05)
        return args["text"]

    for name, body, safe in (("echo", echo, None), ("echo_safe", echo, True), ("sleepy", sleepy, True)):
        registry.register(
            define_tool(
                name=name,
                description="Echo.",
                parameters={"text": {"type": "string", "required": True}},
                output=ToolOutput(schema={"type": "string"}, render=lambda a, v: [{"type": "text", "text": v}]),
                execute=body,
                is_concurrency_safe=(lambda args: True) if safe else None,
            )
        )
    return registry


def _sequential(name: str, count: int) -> Any:
    async def program(dispatch: Any) -> Any:
        for _ in range(count):
            await dispatch(name, ARGS)

    return program


async def _time_runs(
    registry: ToolRegistry, code: str, agent: Any, rounds: int, clock: Any = time.process_time
) -> float:
    signal = AbortController().signal
    samples = []
    for _ in range(rounds):
        start = clock()
        result = await registry.execute(
            ToolExecutionInput("outer", RUN_CODE_NAME, {"code": code, "description": "bench"}, signal, agent=agent)
        )
        samples.append(clock() - start)
        assert not result.is_error, result.content
    return statistics.median(samples)


async def _time_native(registry: ToolRegistry, name: str, rounds: int) -> float:
    signal = AbortController().signal
    input = ToolExecutionInput("native", name, ARGS, signal)
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(CALLS):
            await registry.execute(input)
        samples.append((time.process_time() - start) / CALLS)
    return statistics.median(samples)


async def _overhead() -> tuple[list[tuple[str, float | str]], list[tuple[str, float | str]]]:
    runtime = InProcessRuntime()
    plain = _registry(runtime)
    logged = _registry(runtime, MemorySessionLog())
    runtime.programs["empty"] = _sequential("echo", 0)
    for name in ("echo", "echo_safe"):
        runtime.programs[name] = _sequential(name, CALLS)
    rows: dict[str, float] = {}
    rounds = 31
    # Interleave the variants round by round so drift hits them alike.
    totals: dict[str, list[float]] = {}
    for _ in range(rounds):
        for label, registry, code, agent in (
            ("empty", plain, "empty", None),
            ("empty logged", logged, "empty", "main"),
            ("bridge: exclusive tool", plain, "echo", None),
            ("bridge: safe tool", plain, "echo_safe", None),
            ("bridge: exclusive tool, events logged", logged, "echo", "main"),
        ):
            totals.setdefault(label, []).append(await _time_runs(registry, code, agent, 1))
        totals.setdefault("native", []).append(await _time_native(plain, "echo", 1))
        totals.setdefault("native safe", []).append(await _time_native(plain, "echo_safe", 1))
        logged_log = logged.log
        assert isinstance(logged_log, MemorySessionLog)
        logged_log.clear()
    medians = {label: statistics.median(values) for label, values in totals.items()}
    rows["native registry.execute (exclusive tool)"] = medians["native"]
    rows["native registry.execute (safe tool)"] = medians["native safe"]
    for label in ("bridge: exclusive tool", "bridge: safe tool"):
        rows[label] = (medians[label] - medians["empty"]) / CALLS
    rows["bridge: exclusive tool, events logged"] = (
        medians["bridge: exclusive tool, events logged"] - medians["empty logged"]
    ) / CALLS
    exclusive = [
        (label, rows[label])
        for label in (
            "native registry.execute (exclusive tool)",
            "bridge: exclusive tool",
            "bridge: exclusive tool, events logged",
        )
    ]
    safe = [(label, rows[label]) for label in ("native registry.execute (safe tool)", "bridge: safe tool")]
    return exclusive, safe


async def _gathered() -> tuple[float, float]:
    runtime = InProcessRuntime()
    registry = _registry(runtime)

    async def gathered(dispatch: Any) -> Any:
        await asyncio.gather(*(dispatch("sleepy", ARGS) for _ in range(100)))

    runtime.programs["gathered"] = gathered
    seconds = await _time_runs(registry, "gathered", None, 5, time.perf_counter)
    return seconds, 10 * 0.05


def main() -> None:
    exclusive, safe = asyncio.run(_overhead())
    print(
        ratio_table(
            f"Per binding call, CPU time ({CALLS} sequential calls per run, medians of 31 interleaved rounds)",
            exclusive,
            baseline="native registry.execute (exclusive tool)",
        )
    )
    print()
    print(ratio_table("The same rounds, a concurrency-safe tool", safe, baseline="native registry.execute (safe tool)"))
    seconds, ideal = asyncio.run(_gathered())
    print()
    print("100 gathered calls to a tool sleeping 50 ms, default pool of 10 (median of 5 runs)")
    print(
        f"  run_code: {format_seconds(seconds)}  ideal 10 x 50 ms: {format_seconds(ideal)}"
        f"  ratio {seconds / ideal:.3f}x (target <= 1.2x)"
    )


if __name__ == "__main__":
    main()
