"""Per-call overhead of ``registry.execute`` beside the bare body and two peers.

One trivial tool with a 5-property argument object (``a`` string, ``b``
integer, ``c`` number, ``d`` boolean, ``e`` array of strings) returning a
small object. Every variant starts from the model's raw argument text, so
each pays for JSON parsing:

- ``bare body``: ``json.loads`` + the body coroutine, nothing else;
- ``dsh execute``: ``parse_call_arguments`` + ``registry.execute`` (argument
  snapshot and freeze, validation, pipeline, output snapshot, validation and
  render, final materialization, exactly-once accounting), no listeners;
- ``dsh data steps alone (no pipeline)``: the same data work as ``dsh
  execute`` (resolve, argument validation, run context, the body stepped as
  the trampoline steps it, output snapshot, validation and render) with no
  orchestration around it (``_data_steps``): the floor under the pipeline;
- ``dsh execute + 5 hooks``: the same with one pre-execute listener, one
  guard, one ``wrap_execute`` wrapper, one post-execute listener and one
  ``on_result`` observer;
- ``dsh execute_tool_calls``: the loop helper over one call, and over ten
  calls (not concurrency-safe, so serial) reported per call (task, gate,
  ordering, no log);
- ``openai-agents function_tool``: ``FunctionTool.on_invoke_tool(ctx, text)``
  with a reused ``ToolContext`` and tracing disabled (pydantic validation of
  the arguments, the call, no output validation), no model;
- ``pydantic-ai FunctionToolset``: ``args_validator.validate_json(text)`` then
  ``FunctionToolset.call_tool`` with a ``RunContext`` whose model is the
  never-called ``TestModel`` (the lightest public path without an agent run).

``dsh execute`` returns the result already rendered for the model (the
``ToolSuccess`` carries the content blocks made by the tool's ``render``);
both peers' calls above return the body's raw value, and their frameworks
turn it into model-facing text later in the run loop. So each peer has a
second row, the same call plus that peer's own rendering of the returned
value, done by the peer's code exactly as its run loop does it:

- ``openai-agents function_tool + output item``: ``ItemHelpers.tool_call_output_item``
  (what ``agents/run_internal/tool_execution.py`` calls with the tool's
  ``output_json_schema`` / output type adapter, both ``None`` here): the
  ``function_call_output`` item whose ``output`` is ``str(value)``;
- ``pydantic-ai FunctionToolset + ToolReturnPart text``: the
  ``ToolReturnPart`` its tool execution builds from the value
  (``_tool_execution.py``), then ``model_response_str()``, the JSON text its
  model adapters send as the tool result.

The rendered rows compare the same output form as ``dsh execute`` (a return
value turned into what the model is sent); the plain rows compare a call that
stops earlier than ours.

Timing: each sample runs a batch of 200 calls inside one event loop
(``asyncio`` loop entry is paid once per batch, not per call). The variants
are sampled round-robin, one batch of each per round, 61 rounds, and the
median per call is reported: load drift on a shared machine hits every
variant alike, and a batch that another process preempted (a whole scheduler
quantum, several microseconds per call) is an outlier the median ignores.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench._util import format_seconds, ratio_table

ARGUMENTS = {"a": "hello", "b": 42, "c": 2.5, "d": True, "e": ["x", "y", "z"]}
RAW = json.dumps(ARGUMENTS)
BATCH = 200
#: The row of the data work of a plain ``execute`` without the pipeline around it.
STEPS = "dsh data steps alone (no pipeline)"


async def body(args: Any, run: Any = None) -> dict[str, Any]:
    return {"a": args["a"], "n": args["b"] + len(args["e"])}


def _batch_runner(loop: asyncio.AbstractEventLoop, one: Callable[[], Awaitable[Any]]) -> Callable[[], None]:
    async def batch() -> None:
        for _ in range(BATCH):
            await one()

    return lambda: loop.run_until_complete(batch())


def _round_robin(runners: dict[str, Callable[[], None]], rounds: int = 61) -> dict[str, float]:
    """Median seconds per batch of each runner, sampled round-robin.

    On a shared machine the load drifts over seconds; taking one sample of
    every variant per round (instead of all samples of one variant, then the
    next) spreads that drift over all of them, so the ratios stay honest.
    """
    for run in runners.values():
        run()  # warm-up (also surfaces errors before timing)
    samples: dict[str, list[float]] = {name: [] for name in runners}
    # Move everything alive now (the peers' imports: about 200,000 objects) out of the
    # collector's reach: the collection before each sample then walks only the garbage
    # of the previous sample instead of the whole heap, which would flush the CPU
    # caches before every sample and add a cold start (about 0.7 us per call here) to
    # every variant alike.
    gc.collect()
    gc.freeze()
    try:
        for _ in range(rounds):
            for name, run in runners.items():
                # Start each sample from a collected heap: the loop-helper variants
                # leave cyclic garbage (tasks, futures) that would otherwise pile up
                # while the collector is paused and slow down whatever runs next.
                gc.collect()
                gc_was_enabled = gc.isenabled()
                gc.disable()
                try:
                    start = time.perf_counter()
                    run()
                    samples[name].append(time.perf_counter() - start)
                finally:
                    if gc_was_enabled:
                        gc.enable()
    finally:
        gc.unfreeze()
    return {name: statistics.median(values) for name, values in samples.items()}


def echo5_tool() -> Any:
    """The benchmarked tool: ``echo5`` over ``ARGUMENTS``'s five fields, returning a small object.

    Built from names every tree of the registry has (``bench_otel`` builds it
    against an older tree too).
    """
    from dsh_codegen.registry import ToolOutput, define_tool

    return define_tool(
        name="echo5",
        description="Echo five fields.",
        parameters={
            "a": {"type": "string", "required": True},
            "b": {"type": "integer", "required": True},
            "c": {"type": "number", "required": True},
            "d": {"type": "boolean", "required": True},
            "e": {"type": "array", "items": {"type": "string"}, "required": True},
        },
        output=ToolOutput(
            schema={
                "type": "object",
                "properties": {"a": {"type": "string", "required": True}, "n": {"type": "integer", "required": True}},
                "additionalProperties": False,
            },
            render=lambda args, value: [{"type": "text", "text": f"{value['a']} {value['n']}"}],
        ),
        execute=body,
    )


def _dsh_variants(loop: asyncio.AbstractEventLoop) -> list[tuple[str, Callable[[], Awaitable[Any]], int]]:
    from dsh_codegen.registry import AbortController, ToolExecutionInput
    from dsh_codegen.registry._loop import ToolCall, execute_tool_calls, parse_call_arguments
    from dsh_codegen.registry._registry import ToolRegistry
    from dsh_codegen.registry._results import ToolSuccess

    tool = echo5_tool()
    signal = AbortController().signal

    plain = ToolRegistry()
    plain.register(tool)
    hooked = ToolRegistry()
    hooked.register(tool)

    async def pre(execution: Any, next: Any) -> Any:
        return await next()

    async def wrapper(dispatch: Any, next: Any) -> Any:
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        return await next()

    hooked.on_pre_execute(pre)
    hooked.guard(lambda execution: None)
    hooked.wrap_execute(wrapper)
    hooked.on_post_execute(post)
    hooked.on_result(lambda execution, result: None)

    async def check(registry: Any) -> None:
        result = await registry.execute(ToolExecutionInput("c1", "echo5", parse_call_arguments(RAW), signal))
        assert isinstance(result, ToolSuccess), result

    loop.run_until_complete(check(plain))
    floor = loop.run_until_complete(
        _data_steps(plain)(ToolExecutionInput("c1", "echo5", parse_call_arguments(RAW), signal))
    )
    assert floor == loop.run_until_complete(
        plain.execute(ToolExecutionInput("c1", "echo5", parse_call_arguments(RAW), signal))
    ), floor
    loop.run_until_complete(check(hooked))

    def run_plain() -> Awaitable[Any]:
        return plain.execute(ToolExecutionInput("c1", "echo5", parse_call_arguments(RAW), signal))

    def run_hooked() -> Awaitable[Any]:
        return hooked.execute(ToolExecutionInput("c1", "echo5", parse_call_arguments(RAW), signal))

    data_steps = _data_steps(plain)

    def run_data_steps() -> Awaitable[Any]:
        return data_steps(ToolExecutionInput("c1", "echo5", parse_call_arguments(RAW), signal))

    one_call = [ToolCall("c1", "echo5", RAW)]
    ten_calls = [ToolCall(f"c{i}", "echo5", RAW) for i in range(10)]

    def run_loop_one() -> Awaitable[Any]:
        return execute_tool_calls(plain, one_call, signal=signal)

    def run_loop_ten() -> Awaitable[Any]:
        return execute_tool_calls(plain, ten_calls, signal=signal)

    return [
        ("dsh execute", run_plain, 1),
        (STEPS, run_data_steps, 1),
        ("dsh execute + 5 hooks", run_hooked, 1),
        ("dsh execute_tool_calls, 1 call", run_loop_one, 1),
        ("dsh execute_tool_calls, 10 calls (per call)", run_loop_ten, 10),
    ]


def _data_steps(registry: Any) -> Callable[[Any], Awaitable[Any]]:
    """The data work of one plain ``execute`` on ``registry``, with no orchestration around it: the floor under the pipeline.

    What ``dsh execute`` does to its input and its value, step for step, with
    the registry's own functions: resolve the tool, validate the arguments,
    make the execution and the run context, step the body through the trampoline's
    ``body_steps``, snapshot and validate the value, render it, snapshot the
    content, build the ``ToolSuccess``. Left out is everything the pipeline
    decides and keeps: the input's type checks, the listener snapshot and the
    call state, the signal checks, the cancellation shield of a body that
    suspends, finalization and observers. ``dsh execute`` less this row is what
    the orchestration costs.
    """
    from dsh_codegen.json import snapshot_json
    from dsh_codegen.json._json import snapshot_content
    from dsh_codegen.registry._execution import FollowingRunContext, ToolExecution, ToolExecutionToken
    from dsh_codegen.registry.pipeline._call import CallSettlement
    from dsh_codegen.registry._results import ToolSuccess
    from dsh_codegen.registry.pipeline._trampoline import DONE, body_steps

    async def steps(input: Any) -> Any:
        compiled = registry.resolve(input.name, ())
        args = input.arguments
        if not compiled.args_validator.is_valid(args):
            raise AssertionError("invalid arguments")
        execution = ToolExecution(ToolExecutionToken(), input.call_id, input.name, args, input.signal, None, None, None)
        holder = CallSettlement(None)
        run = FollowingRunContext(execution, input.signal)
        body = body_steps(holder, compiled.execute(args, run))
        if next(body, DONE) is not DONE:
            raise AssertionError("the body suspended")
        run._release()
        frozen = snapshot_json(holder.value)
        if not compiled.output_validator.is_valid(frozen):
            raise AssertionError("invalid output")
        return ToolSuccess(frozen, snapshot_content(compiled.render(args, frozen)))

    return steps


def _openai_agents(loop: asyncio.AbstractEventLoop, render: bool = False) -> Callable[[], Awaitable[Any]] | str:
    """The peer's call; with ``render``, followed by its run loop's output item for the value."""
    try:
        from agents import function_tool, set_tracing_disabled
        from agents.items import ItemHelpers
        from agents.tool_context import ToolContext
        from openai.types.responses import ResponseFunctionToolCall
    except ImportError as exc:  # pragma: no cover - optional peer
        return f"not installed ({exc.name})"
    set_tracing_disabled(True)

    @function_tool
    async def echo5(a: str, b: int, c: float, d: bool, e: list[str]) -> dict[str, Any]:
        """Echo five fields."""
        return {"a": a, "n": b + len(e)}

    context: Any = ToolContext(context=None, tool_name="echo5", tool_call_id="c1", tool_arguments=RAW)
    result = loop.run_until_complete(echo5.on_invoke_tool(context, RAW))
    assert result == {"a": "hello", "n": 45}, result
    if not render:

        def one() -> Awaitable[Any]:
            return echo5.on_invoke_tool(context, RAW)

        return one

    # The model's call item, as the run loop holds it (made once, like RAW).
    tool_call = ResponseFunctionToolCall(arguments=RAW, call_id="c1", name="echo5", type="function_call")
    schema = echo5.output_json_schema
    adapter = echo5._output_type_adapter

    async def rendered() -> Any:
        value = await echo5.on_invoke_tool(context, RAW)
        return ItemHelpers.tool_call_output_item(
            tool_call, value, output_json_schema=schema, output_type_adapter=adapter
        )

    item = loop.run_until_complete(rendered())
    assert item["output"] == "{'a': 'hello', 'n': 45}", item
    return rendered


def _pydantic_ai(loop: asyncio.AbstractEventLoop, render: bool = False) -> Callable[[], Awaitable[Any]] | str:
    """The peer's call; with ``render``, followed by its ``ToolReturnPart``'s model-facing text."""
    try:
        from pydantic_ai import RunContext
        from pydantic_ai.messages import ToolReturnPart
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage
    except ImportError as exc:  # pragma: no cover - optional peer
        return f"not installed ({exc.name})"

    async def echo5(a: str, b: int, c: float, d: bool, e: list[str]) -> dict[str, Any]:
        """Echo five fields."""
        return {"a": a, "n": b + len(e)}

    toolset: Any = FunctionToolset([echo5])
    context: Any = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    tool = loop.run_until_complete(toolset.get_tools(context))["echo5"]

    async def one() -> Any:
        args = tool.args_validator.validate_json(RAW)
        return await toolset.call_tool("echo5", args, context, tool)

    result = loop.run_until_complete(one())
    assert result == {"a": "hello", "n": 45}, result
    if not render:
        return one

    async def rendered() -> Any:
        args = tool.args_validator.validate_json(RAW)
        value = await toolset.call_tool("echo5", args, context, tool)
        return ToolReturnPart(tool_name="echo5", content=value, tool_call_id="c1").model_response_str()

    text = loop.run_until_complete(rendered())
    assert text == '{"a":"hello","n":45}', text
    return rendered


#: The peer rows: each peer's call alone, and the call plus the peer's own rendering for the model.
PEERS: list[tuple[str, Callable[[asyncio.AbstractEventLoop, bool], Callable[[], Awaitable[Any]] | str], bool]] = [
    ("openai-agents function_tool", _openai_agents, False),
    ("openai-agents function_tool + output item", _openai_agents, True),
    ("pydantic-ai FunctionToolset", _pydantic_ai, False),
    ("pydantic-ai FunctionToolset + ToolReturnPart text", _pydantic_ai, True),
]


def main() -> None:
    loop = asyncio.new_event_loop()
    try:
        runners: dict[str, Callable[[], None]] = {}
        per_batch: dict[str, int] = {}
        missing: dict[str, str] = {}

        async def bare() -> Any:
            return await body(json.loads(RAW))

        runners["bare body"] = _batch_runner(loop, bare)
        per_batch["bare body"] = BATCH
        for name, one, calls_each in _dsh_variants(loop):
            runners[name] = _batch_runner(loop, one)
            per_batch[name] = BATCH * calls_each
        for name, make, render in PEERS:
            peer = make(loop, render)
            if isinstance(peer, str):
                missing[name] = peer
            else:
                runners[name] = _batch_runner(loop, peer)
                per_batch[name] = BATCH
        timed = {name: value / per_batch[name] for name, value in _round_robin(runners).items()}
    finally:
        loop.close()
    rows: list[tuple[str, float | str]] = [(name, value) for name, value in timed.items()]
    rows.extend(missing.items())
    print(
        ratio_table(
            "registry: per-call time, trivial 5-property tool (median, round-robin)", rows, baseline="bare body"
        )
    )
    for peer, _make, _render in PEERS:
        if peer in timed:
            for ours in ("dsh execute", "dsh execute + 5 hooks", STEPS):
                print(f"  {ours} / {peer}: {timed[ours] / timed[peer]:.2f}x")
    orchestration = timed["dsh execute"] - timed[STEPS]
    print(f"  orchestration of a plain call (dsh execute less the data steps alone): {format_seconds(orchestration)}")


def callgrind(variant: str, count: int) -> None:
    """``count`` calls of one variant (plus one warm-up) in one event loop, for instruction counts.

    ``python -m bench.bench_registry VARIANT N`` under ``valgrind --tool=callgrind``;
    per-call instructions are the difference of two runs with different N,
    divided by the difference of N (start-up and imports cancel out). VARIANT
    is ``execute``, ``steps`` (the data steps alone), ``hooks`` (five hooks), ``loop`` (``execute_tool_calls``,
    one call), ``openai`` or ``pydantic`` (the peer's call), ``openai-render``
    or ``pydantic-render`` (the call plus the peer's own rendering).
    """
    loop = asyncio.new_event_loop()
    try:
        peers = {"openai": _openai_agents, "pydantic": _pydantic_ai}
        if variant.removesuffix("-render") in peers:
            make = peers[variant.removesuffix("-render")]
            peer = make(loop, variant.endswith("-render"))
            if isinstance(peer, str):
                raise SystemExit(f"{variant}: {peer}")
            one = peer
        else:
            names = {
                "execute": "dsh execute",
                "steps": STEPS,
                "hooks": "dsh execute + 5 hooks",
                "loop": "dsh execute_tool_calls, 1 call",
            }
            one = {name: run for name, run, _ in _dsh_variants(loop)}[names[variant]]

        async def calls() -> None:
            for _ in range(count + 1):
                await one()

        loop.run_until_complete(calls())
    finally:
        loop.close()


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3:
        callgrind(sys.argv[1], int(sys.argv[2]))
    else:
        main()
