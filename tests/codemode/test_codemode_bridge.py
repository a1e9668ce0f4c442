"""Guarantees 128-150 (docs/guarantees.md) and issue 13's bridge list, with the in-process program runtime."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from _bridge_helpers import (
    ProgramRuntime,
    ToolCallError,
    async_test,
    code_registry,
    events,
    run_code,
    text,
    text_tool,
)
from dsh_codegen.codemode import CodeRunFailure, CodeRunRequest, CodeRunResult, CodeRunSuccess
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    UNSET,
    AbortController,
    AbortError,
    Accept,
    Block,
    Deny,
    ToolFailure,
    ToolOutput,
    ToolExecutionInput,
    ToolRegistry,
    ToolSuccess,
    define_tool,
    derive_messages,
)

START = "tool/code-dispatch-start"
SETTLE = "tool/code-dispatch"


def program(registry_runtime: ProgramRuntime, fn: Any) -> str:
    return registry_runtime.add(fn.__name__, fn)


# --- 128-129 bindings and the full pipeline -------------------------------------------


@async_test
async def test_b128_bindings_are_the_visible_tools_never_run_code() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"), text_tool("__class__"), text_tool("my-tool"))

    async def bound(tools: Any, print: Any) -> Any:
        odd = await tools["__class__"]({"text": "x"})
        exotic = await tools["my-tool"]({"text": "y"})
        try:
            await tools.raw(RUN_CODE_NAME, {"code": "bound", "description": "again"})
        except ToolCallError as exc:
            return [odd, exotic, exc.tool_name, exc.message]
        return "recursed"

    result = await run_code(registry, program(runtime, bound))
    assert runtime.requests[0].tool_names == ("__class__", "echo", "my-tool")
    assert result.value["result"] == ["__class__:x", "my-tool:y", "run_code", 'unknown tool "run_code"']
    assert len(runtime.requests) == 1  # no recursion


@async_test
async def test_b129_each_binding_call_runs_the_full_pipeline() -> None:
    registry, runtime, log = code_registry(text_tool("echo"))
    stages: list[str] = []

    async def pre(execution: Any, next: Any) -> Any:
        stages.append(f"pre:{execution.call_id}:{execution.parent is not None}")
        return await next()

    def guard(execution: Any) -> str | None:
        stages.append(f"guard:{execution.call_id}")
        return None

    async def wrap(dispatch: Any, next: Any) -> Any:
        stages.append(f"around:{dispatch.call_id}")
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        stages.append(f"post:{execution.call_id}")
        if execution.name == "echo":
            return Accept(value=result.value.upper())
        return await next()

    def observe(execution: Any, result: Any) -> None:
        stages.append(f"result:{execution.call_id}")

    registry.on_pre_execute(pre)
    registry.guard(guard)
    registry.wrap_execute(wrap)
    registry.on_post_execute(post)
    registry.on_result(observe)

    async def saw(tools: Any, print: Any) -> Any:
        one = await tools.echo({"text": "one"})
        print("saw " + one)
        return await tools.echo({"text": "two"})

    result = await run_code(registry, program(runtime, saw))
    assert text(result) == "saw ECHO:ONE\nECHO:TWO"
    sub = [s for s in stages if ":code:" in s]
    assert sub == [
        "pre:outer:code:1:True",
        "guard:outer:code:1",
        "around:outer:code:1",
        "post:outer:code:1",
        "result:outer:code:1",
        "pre:outer:code:2:True",
        "guard:outer:code:2",
        "around:outer:code:2",
        "post:outer:code:2",
        "result:outer:code:2",
    ]
    assert stages[0] == "pre:outer:False" and stages[-1] == "result:outer"
    # Only the curated outer output: the log has no tool/result for sub-calls.
    assert {e["type"] for e in log.events} == {START, SETTLE}


# --- 130-132 events -------------------------------------------------------------------


@async_test
async def test_b130_one_start_and_one_settle_event_per_started_sub_call() -> None:
    registry, runtime, log = code_registry(text_tool("echo"))

    async def calls(tools: Any, print: Any) -> Any:
        await tools.echo({"text": "a"})
        with pytest.raises(ToolCallError):
            await tools.echo(float("nan"))  # rejected: not numbered, not logged
        await tools.echo({"text": "b"})

    await run_code(registry, program(runtime, calls), call_id="c1")
    assert [(e["type"], e["subCallId"]) for e in log.events] == [
        (START, "c1:code:1"),
        (SETTLE, "c1:code:1"),
        (START, "c1:code:2"),
        (SETTLE, "c1:code:2"),
    ]
    start, settle = log.events[0], log.events[1]
    assert {k: start[k] for k in ("rootCallId", "parentCallId", "name", "arguments")} == {
        "rootCallId": "c1",
        "parentCallId": "c1",
        "name": "echo",
        "arguments": {"text": "a"},
    }
    assert settle["isError"] is False and settle["content"] == [{"type": "text", "text": "echo:a"}]
    assert start["time"] <= settle["time"] and "value" not in settle
    # The settle event names the call as its start event does, so either one renders the sub-call.
    assert {k: settle[k] for k in ("name", "arguments")} == {"name": "echo", "arguments": {"text": "a"}}


@async_test
async def test_b130_root_call_id_comes_from_the_outer_call() -> None:
    registry, runtime, log = code_registry(text_tool("echo"))

    async def one(tools: Any, print: Any) -> Any:
        await tools.echo({})

    await registry.execute(
        __import__("dsh_codegen").ToolExecutionInput(
            "inner-run",
            RUN_CODE_NAME,
            {"code": program(runtime, one), "description": "d"},
            AbortController().signal,
            agent="main",
            root_call_id="root-0",
        )
    )
    assert {(e["rootCallId"], e["parentCallId"], e["subCallId"]) for e in log.events} == {
        ("root-0", "inner-run", "inner-run:code:1")
    }


@async_test
async def test_b131_settle_events_carry_the_complete_rendered_content_and_no_meta() -> None:
    long = "x" * 100_000
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}

    def render(args: Any, value: Any) -> Any:
        return [{"type": "text", "text": long}, image]

    tool = define_tool(
        name="big",
        description="Big.",
        parameters={},
        output=ToolOutput(schema={"type": "integer"}, render=render, presentation_meta=lambda a, v: {"m": v}),
        execute=lambda args, run: asyncio.sleep(0, 7),
    )
    registry, runtime, log = code_registry(tool)
    metas: list[Any] = []
    registry.on_result(lambda execution, result: metas.append((execution.name, result.meta)))

    async def big(tools: Any, print: Any) -> Any:
        return await tools.big({})

    result = await run_code(registry, program(runtime, big))
    assert result.value == {"logs": [], "result": 7}
    (settle,) = events(log, SETTLE)
    assert settle["content"] == [{"type": "text", "text": long}, image]
    assert 7 not in settle.values()
    assert metas == [("big", UNSET), (RUN_CODE_NAME, UNSET)]
    assert result.meta is UNSET


@async_test
async def test_b132_a_throwing_dispatch_log_listener_is_contained(caplog: Any = None) -> None:
    registry, runtime, log = code_registry(text_tool("echo"))
    seen: list[str] = []

    def broken(event: Any) -> Any:
        seen.append(event["type"])
        raise RuntimeError("listener broke")

    async def tagging(event: Any) -> Any:
        await asyncio.sleep(0)
        return {**event, "tag": "t"}

    registry.on_code_dispatch_log(broken)
    registry.on_code_dispatch_log(tagging)
    registry.on_code_dispatch_log(lambda event: 42)  # not an event: skipped
    other = registry.scope("other")
    other.on_code_dispatch_log(lambda event: {**event, "other": True})

    async def one(tools: Any, print: Any) -> Any:
        return await tools.echo({"text": "a"})

    logger = logging.getLogger("dsh_codegen")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        result = await run_code(registry, program(runtime, one))
    finally:
        logger.removeHandler(handler)
    assert text(result) == "echo:a"
    assert seen == [START, SETTLE]
    assert [e["tag"] for e in log.events] == ["t", "t"]
    assert all("other" not in e for e in log.events)
    assert events(log, SETTLE)[0]["content"] == [{"type": "text", "text": "echo:a"}]
    assert sum("listener" in r.getMessage() for r in records) == 4


# --- 133-135 failures and arguments ---------------------------------------------------


@async_test
async def test_b133_failures_reach_the_program_as_tool_call_error_only() -> None:
    async def failing(args: Any, run: Any) -> Any:
        raise RuntimeError("deliberate failure")

    registry, runtime, log = code_registry(text_tool("fail", failing), text_tool("denied"), text_tool("throws"))
    posts: list[str] = []

    async def pre(execution: Any, next: Any) -> Any:
        if execution.name == "denied":
            return Deny("not allowed here")
        if execution.name == "throws":
            raise ValueError("policy exploded")
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        posts.append(execution.name)
        return await next()

    registry.on_pre_execute(pre)
    registry.on_post_execute(post)

    async def catches(tools: Any, print: Any) -> Any:
        caught = []
        for name in ("fail", "denied", "throws"):
            try:
                await tools[name]({})
            except ToolCallError as exc:
                caught.append(f"caught: {exc.message}")
                assert exc.tool_name == name and not hasattr(exc, "code") and not hasattr(exc, "content")
                assert exc.args == (exc.message,)
        return caught

    result = await run_code(registry, program(runtime, catches))
    assert result.value["result"] == [
        "caught: deliberate failure",
        "caught: not allowed here",
        "caught: policy exploded",
    ]
    assert "throws" not in posts and "denied" in posts  # a pre-execute throw skips post-execute
    settles = events(log, SETTLE)
    assert [e["isError"] for e in settles] == [True, True, True]
    assert settles[2]["content"] == [{"type": "text", "text": "Error: policy exploded"}]


@async_test
async def test_b134_non_lossless_arguments_reject_before_dispatch() -> None:
    ran: list[Any] = []

    async def body(args: Any, run: Any) -> Any:
        ran.append(args)
        return "ran"

    registry, runtime, log = code_registry(text_tool("echo", body))

    class Odd(dict):  # type: ignore[type-arg]
        pass

    class Raising(Mapping[str, Any]):
        """A third-party runtime's mapping whose every read raises: the snapshot never reads it."""

        def __getitem__(self, key: str) -> Any:
            raise RuntimeError("getter throws")

        def __iter__(self) -> Any:
            raise RuntimeError("getter throws")

        def __len__(self) -> int:
            raise RuntimeError("getter throws")

    bad = [
        UNSET,
        float("nan"),
        float("inf"),
        -0.0,
        {"a": object()},
        {1: "x"},
        print,
        {"s": {1, 2}},
        Odd(),
        Raising(),
        {"nested": Raising()},
    ]

    async def lossy(tools: Any, print: Any) -> Any:
        messages = []
        for value in bad:
            try:
                await tools.echo(value)
            except ToolCallError as exc:
                messages.append(exc.message)
        cyclic: list[Any] = []
        cyclic.append(cyclic)
        try:
            await tools.echo(cyclic)
        except ToolCallError as exc:
            messages.append(exc.message)
        return messages

    result = await run_code(registry, program(runtime, lossy))
    assert result.value["result"] == [
        "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
    ] * (len(bad) + 1)
    assert ran == [] and log.events == []


@pytest.mark.once  # the bridge's handling is under test; both json twins' budgets are tested in tests/json
@async_test
async def test_b134_arguments_past_the_snapshot_budget_reject_before_dispatch() -> None:
    # The only other way a snapshot of binding arguments fails: more than the
    # default max_nodes (10,000,000) values, shared references counted each time.
    registry, runtime, log = code_registry(text_tool("echo"))
    row = [0] * 1000
    huge = {"text": "x", "rows": [row] * 10_000}

    async def oversized(tools: Any, print: Any) -> Any:
        try:
            await tools.echo(huge)
        except ToolCallError as exc:
            print(exc.message)
        return await tools.echo({"text": "after"})

    result = await run_code(registry, program(runtime, oversized))
    (message,) = result.value["logs"]
    assert message.startswith("tool arguments are too large: JSON walk budget exceeded at ")
    assert message.endswith("(max_nodes=10000000)")
    assert result.value["result"] == "echo:after"
    # Nothing dispatched or logged for it, and it did not use a number.
    assert [e["subCallId"] for e in events(log, START)] == ["outer:code:1"]


@async_test
async def test_b135_tool_and_log_get_identical_immutable_copies() -> None:
    attempts: list[str] = []

    async def body(args: Any, run: Any) -> Any:
        try:
            args["nested"]["k"] = "changed"
        except TypeError:
            attempts.append("frozen")
        return "ok"

    registry, runtime, log = code_registry(
        define_tool(
            name="mut",
            description="M.",
            parameters={"nested": {"type": "json"}},
            output=ToolOutput(schema={"type": "string"}, render=lambda a, v: [{"type": "text", "text": v}]),
            execute=body,
        )
    )

    async def mutates(tools: Any, print: Any) -> Any:
        args = {"nested": {"k": "original"}}
        future = tools.mut(args)
        args["nested"]["k"] = "program changed it"
        return await future

    await run_code(registry, program(runtime, mutates))
    assert attempts == ["frozen"]
    assert events(log, START)[0]["arguments"] == {"nested": {"k": "original"}}


# --- 136-139 the pool -----------------------------------------------------------------


class Gauge:
    """Counts bodies in flight and remembers the highest count."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.order: list[str] = []

    def tool(self, name: str, *, safe: bool | None, delay: float = 0.005) -> Any:
        """``safe=None``: no ``is_concurrency_safe`` at all (exclusive whatever the arguments)."""

        async def body(args: Any, run: Any) -> Any:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.order.append(f"start {name}{args.get('text', '')}")
            await asyncio.sleep(delay)
            self.order.append(f"end {name}{args.get('text', '')}")
            self.now -= 1
            return name

        return text_tool(name, body, safe=safe)


@async_test
async def test_b136_safe_calls_overlap_up_to_the_cap() -> None:
    gauge = Gauge()
    registry, runtime, _ = code_registry(gauge.tool("s", safe=True), max_parallel_sub_calls=2)

    async def gathered(tools: Any, print: Any) -> Any:
        return await asyncio.gather(*(tools.s({"text": str(i)}) for i in range(3)))

    await run_code(registry, program(runtime, gathered))
    assert gauge.peak == 2
    assert gauge.order[:2] == ["start s0", "start s1"]
    assert gauge.order.index("start s2") > gauge.order.index("end s0")  # the 3rd waits for a slot


@async_test
async def test_b137_an_exclusive_call_drains_the_pool_runs_alone_and_bars_later_calls() -> None:
    gauge = Gauge()
    registry, runtime, log = code_registry(gauge.tool("s", safe=True), gauge.tool("x", safe=False))
    commits: list[str] = []

    async def post(execution: Any, result: Any, next: Any) -> Any:
        commits.append(f"post {execution.name}{execution.arguments.get('text', '')}")
        await asyncio.sleep(0.002)
        return await next()

    registry.on_post_execute(post)

    async def mixed(tools: Any, print: Any) -> Any:
        return await asyncio.gather(
            tools.s({"text": "1"}), tools.s({"text": "2"}), tools.x({"text": "3"}), tools.s({"text": "4"})
        )

    await run_code(registry, program(runtime, mixed))
    order = gauge.order
    assert order.index("start x3") > max(order.index("end s1"), order.index("end s2"))
    assert order.index("start s4") > order.index("end x3")
    # The later call starts only after the exclusive call's post-execute committed.
    assert commits.index("post x3") < commits.index("post s4")
    assert order == ["start s1", "start s2", "end s1", "end s2", "start x3", "end x3", "start s4", "end s4"]
    # Started means dispatched: the exclusive call starts after both safe calls settled, and the
    # next call only after the exclusive one settled.
    assert [(e["type"], e["subCallId"][-1]) for e in log.events] == [
        (START, "1"),
        (START, "2"),
        (SETTLE, "1"),
        (SETTLE, "2"),
        (START, "3"),
        (SETTLE, "3"),
        (START, "4"),
        (SETTLE, "4"),
    ]


@async_test
async def test_b136_b139_without_listeners_safe_calls_overlap_and_commit_in_submission_order() -> None:
    # No pipeline listener, guard or finalizer: the calls run without a gate; the pool
    # still commits (settle event, context, the program's future) in submission order.
    gauge = Gauge()
    registry, runtime, log = code_registry(
        gauge.tool("slow", safe=True, delay=0.02), gauge.tool("fast", safe=True, delay=0.001)
    )
    resolved: list[str] = []

    async def both(tools: Any, print: Any) -> Any:
        futures = [tools.slow({}), tools.fast({})]
        for name, future in zip(("slow", "fast"), futures):
            future.add_done_callback(lambda _f, name=name: resolved.append(name))
        return await asyncio.gather(*futures)

    result = await run_code(registry, program(runtime, both))
    assert result.value["result"] == ["slow", "fast"]
    assert gauge.peak == 2
    assert gauge.order == ["start slow", "start fast", "end fast", "end slow"]
    assert [e["name"] for e in events(log, SETTLE)] == ["slow", "fast"]
    assert resolved == ["slow", "fast"]


@async_test
async def test_a_gated_call_after_an_ungated_one_does_not_wait_for_its_body() -> None:
    # Call 1 starts while no listener exists (no gate, so no pre-execute turn to hold);
    # a pre-execute listener registered before call 2 gives call 2 a gate, whose
    # policy turn must not wait for call 1's body.
    gauge = Gauge()
    registry, runtime, _ = code_registry(gauge.tool("s", safe=True, delay=0.02))
    seen: list[str] = []

    async def pre(execution: Any, next: Any) -> Any:
        seen.append(execution.call_id)
        return await next()

    async def mixed(tools: Any, print: Any) -> Any:
        first = tools.s({"text": "1"})
        await asyncio.sleep(0)  # call 1 enters its pipeline (at once on 3.12+, in this loop round on 3.11)
        registry.on_pre_execute(pre)
        return await asyncio.gather(first, tools.s({"text": "2"}))

    result = await run_code(registry, program(runtime, mixed))
    assert result.value["result"] == ["s", "s"]
    assert seen == ["outer:code:2"]
    assert gauge.order == ["start s1", "start s2", "end s1", "end s2"]


@async_test
async def test_a_call_started_on_an_idle_pool_is_classified_only_if_it_suspends() -> None:
    classified: list[str] = []

    def classify(args: Any) -> bool:
        classified.append(args.get("text", ""))
        return True

    async def body(args: Any, run: Any) -> Any:
        if args.get("text") == "wait":
            await asyncio.sleep(0.005)
        return "done"

    registry, runtime, _ = code_registry(text_tool("t", body, is_concurrency_safe=classify))

    async def calls(tools: Any, print: Any) -> Any:
        await tools.t({"text": "at once"})  # finishes inside dispatch: never classified
        first = tools.t({"text": "wait"})  # suspends: classified then, so the next may overlap
        second = tools.t({"text": "wait"})
        return await asyncio.gather(first, second)

    result = await run_code(registry, program(runtime, calls))
    assert result.value["result"] == ["done", "done"]
    assert classified == ["wait", "wait"]


@async_test
async def test_the_classification_follows_registry_changes_during_a_run() -> None:
    # "t" has no classifier (exclusive whatever its arguments, which the pool remembers);
    # a body replaces it with a concurrency-safe "t", and the next calls overlap.
    gauge = Gauge()
    registry, runtime, _ = code_registry()
    dispose = registry.register(gauge.tool("t", safe=None))

    async def swap(args: Any, run: Any) -> Any:
        dispose()
        registry.register(gauge.tool("t", safe=True))
        return "swapped"

    registry.register(text_tool("swap", swap))

    async def swaps(tools: Any, print: Any) -> Any:
        await asyncio.gather(tools.t({"text": "a"}), tools.t({"text": "b"}))
        before = gauge.peak
        await tools.swap({})
        gauge.peak = 0
        await asyncio.gather(tools.t({"text": "c"}), tools.t({"text": "d"}))
        return [before, gauge.peak]

    result = await run_code(registry, program(runtime, swaps))
    assert result.value["result"] == [1, 2]


@async_test
async def test_b138_exclusive_calls_under_gather_run_serially_in_submission_order() -> None:
    gauge = Gauge()
    registry, runtime, _ = code_registry(gauge.tool("x", safe=False))

    async def serial(tools: Any, print: Any) -> Any:
        return await asyncio.gather(*(tools.x({"text": str(i)}) for i in range(4)))

    await run_code(registry, program(runtime, serial))
    assert gauge.peak == 1
    assert gauge.order == [f"{what} x{i}" for i in range(4) for what in ("start", "end")]


@async_test
async def test_b139_pre_execute_never_overlaps_and_commits_keep_submission_order() -> None:
    registry, runtime, log = code_registry(
        text_tool("slow", lambda a, r: asyncio.sleep(0.02, "slow"), safe=True),
        text_tool("fast", safe=True),
    )
    trace: list[str] = []

    async def pre(execution: Any, next: Any) -> Any:
        if execution.parent is None:
            return await next()
        trace.append(f"pre+ {execution.name}")
        if execution.name == "slow":
            await asyncio.sleep(0.01)  # a slow policy on call 1 delays call 2's pre-execute
        trace.append(f"pre- {execution.name}")
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        if execution.parent is not None:
            trace.append(f"post {execution.name}")
            return Accept(additional_contexts=[{"role": "user", "content": [], "source": execution.name}])
        return await next()

    registry.on_pre_execute(pre)
    registry.on_post_execute(post)

    async def both(tools: Any, print: Any) -> Any:
        return await asyncio.gather(tools.slow({}), tools.fast({}))

    result = await run_code(registry, program(runtime, both))
    assert trace == ["pre+ slow", "pre- slow", "pre+ fast", "pre- fast", "post slow", "post fast"]
    assert [c["source"] for c in result.additional_contexts] == ["slow", "fast"]
    assert [e["name"] for e in events(log, SETTLE)] == ["slow", "fast"]


# --- 140-141 forwarding ---------------------------------------------------------------


@async_test
async def test_b140_contexts_and_images_are_deferred_in_submission_order() -> None:
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}

    async def with_context(args: Any, run: Any) -> Any:
        run.defer_context({"role": "user", "content": [{"type": "text", "text": args["text"]}], "source": "t"})
        await asyncio.sleep(0.01 if args["text"] == "first" else 0)
        return args["text"]

    def picture_render(args: Any, value: Any) -> Any:
        return [{"type": "text", "text": "picture"}, image]

    picture = define_tool(
        name="picture",
        description="P.",
        parameters={},
        output=ToolOutput(schema={"type": "string"}, render=picture_render),
        execute=lambda a, r: asyncio.sleep(0, "p"),
    )
    blocked = define_tool(
        name="blocked",
        description="B.",
        parameters={},
        output=ToolOutput(schema={"type": "string"}, render=picture_render),
        execute=lambda a, r: asyncio.sleep(0, "b"),
    )
    registry, runtime, _ = code_registry(text_tool("ctx", with_context, safe=True), picture, blocked)

    async def post(execution: Any, result: Any, next: Any) -> Any:
        if execution.name == "blocked":
            return Block([{"type": "text", "text": "no pictures"}])
        return await next()

    registry.on_post_execute(post)

    async def deferring(tools: Any, print: Any) -> Any:
        await asyncio.gather(tools.ctx({"text": "first"}), tools.ctx({"text": "second"}))
        await tools.picture({})
        try:
            await tools.blocked({})
        except ToolCallError:
            pass
        raise RuntimeError("the program fails later")

    result = await run_code(registry, program(runtime, deferring))
    assert isinstance(result, ToolFailure)
    assert text(result).startswith("Error: code run failed (exception): RuntimeError: the program fails later")
    contexts = result.additional_contexts
    assert [c["source"] for c in contexts] == ["t", "t", "tools-code-mode"]
    assert [c["content"][0]["text"] for c in contexts[:2]] == ["first", "second"]
    assert contexts[2]["content"] == [image] and contexts[2]["role"] == "user"
    assert contexts[2]["meta"] == {"subCallId": "outer:code:3", "toolName": "picture"}


@async_test
async def test_b141_a_nested_concludes_turn_is_forwarded_only_from_successes() -> None:
    async def concluding(args: Any, run: Any) -> Any:
        run.conclude_turn()
        return "done"

    registry, runtime, _ = code_registry(text_tool("finish", concluding), text_tool("blocked", concluding))
    registry.on_post_execute(lambda e, r, n: Block([{"type": "text", "text": "no"}]) if e.name == "blocked" else n())

    async def finishes(tools: Any, print: Any) -> Any:
        return await tools.finish({})

    async def blocked(tools: Any, print: Any) -> Any:
        try:
            await tools.blocked({})
        except ToolCallError:
            return "blocked"

    async def finishes_then_fails(tools: Any, print: Any) -> Any:
        await tools.finish({})
        raise RuntimeError("later")

    done = await run_code(registry, program(runtime, finishes))
    assert isinstance(done, ToolSuccess) and done.concludes_turn
    not_done = await run_code(registry, program(runtime, blocked))
    assert isinstance(not_done, ToolSuccess) and not not_done.concludes_turn
    failed = await run_code(registry, program(runtime, finishes_then_fails))
    assert failed.is_error


# --- 142-146 settlement ---------------------------------------------------------------


@async_test
async def test_b142_settlement_aborts_in_flight_abandons_queued_and_drains() -> None:
    finished: list[str] = []
    aborted: list[str] = []

    async def hangs(args: Any, run: Any) -> Any:
        try:
            await run.signal.wait()
            aborted.append(str(run.signal.reason))
            raise run.signal.reason
        finally:
            finished.append("hangs")

    registry, runtime, log = code_registry(text_tool("hang", hangs), text_tool("later"))

    async def slow_commit(execution: Any, result: Any, next: Any) -> Any:
        if execution.parent is not None:
            await asyncio.sleep(0.01)  # a commit in progress when the run settles
            finished.append(f"post {execution.name}")
        return await next()

    registry.on_post_execute(slow_commit)
    futures: list[Any] = []

    async def leaves(tools: Any, print: Any) -> Any:
        futures.append(tools.hang({}))
        futures.append(tools.later({}))  # queued behind the exclusive call
        await asyncio.sleep(0.005)
        return "left"

    result = await run_code(registry, program(runtime, leaves))
    assert text(result) == "left"
    assert finished == ["hangs", "post hang"]  # drained, commit included, before run_code returned
    assert aborted == ["run_code settled"]
    assert [(e["type"], e["name"]) for e in log.events] == [(START, "hang"), (SETTLE, "hang")]
    assert events(log, SETTLE)[0]["content"] == [{"type": "text", "text": "Error: tool call aborted"}]
    with pytest.raises(ToolCallError, match=r"^run_code run is over \(run_code settled\); later tool call abandoned$"):
        futures[1].result()
    with pytest.raises(ToolCallError, match=r"result discarded$"):
        futures[0].result()
    assert runtime.requests[0].signal.aborted  # the run-scoped signal fires on settlement


@async_test
async def test_b143_outer_abort_mid_run() -> None:
    controller = AbortController()
    started = asyncio.Event()
    late: list[str] = []

    async def hangs(args: Any, run: Any) -> Any:
        started.set()
        await run.signal.wait()
        raise run.signal.reason

    registry, runtime, log = code_registry(text_tool("hang", hangs), text_tool("later"))

    async def aborted(tools: Any, print: Any) -> Any:
        first = tools.hang({})
        queued = tools.later({})
        try:
            await first
        except asyncio.CancelledError:
            try:
                await tools.later({})
            except ToolCallError as exc:
                late.append(exc.message)
            for future in (first, queued):
                late.append(str(future.exception()) if future.done() and not future.cancelled() else "pending")
            raise

    async def abort_soon() -> None:
        await started.wait()
        controller.abort()

    task = asyncio.ensure_future(abort_soon())
    result = await run_code(registry, program(runtime, aborted), signal=controller.signal)
    await task
    assert isinstance(result, ToolFailure)
    assert text(result) == "Error: tool call aborted"
    assert result.error.info is not None and result.error.info.code == "ABORTED"
    assert late[0] == "run_code run is over (This operation was aborted); later not dispatched"
    assert late[2] == "run_code run is over (This operation was aborted); later tool call abandoned"
    assert [(e["type"], e["name"]) for e in log.events] == [(START, "hang"), (SETTLE, "hang")]


@pytest.mark.parametrize("reason", [None, "user pressed stop", AbortError("user pressed stop"), 42])
@async_test
async def test_b143_an_outer_abort_is_aborted_whatever_its_reason(reason: Any) -> None:
    controller = AbortController()
    registry, runtime, _ = code_registry(text_tool("echo"))

    async def forever(tools: Any, print: Any) -> Any:
        print("before")
        await tools.echo({"text": "a"})
        await asyncio.sleep(10)

    asyncio.get_running_loop().call_later(0.01, controller.abort, reason)
    result = await run_code(registry, program(runtime, forever), signal=controller.signal)
    assert isinstance(result, ToolFailure)
    assert result.error.info is not None and result.error.info.code == "ABORTED", text(result)


@async_test
async def test_b143_a_wrapper_abort_is_reported_as_code_run_failed_abort() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"))
    printed = asyncio.Event()  # the wrapper aborts once the program has printed (no clock to race)

    async def wrap(dispatch: Any, next: Any) -> Any:
        if dispatch.name != RUN_CODE_NAME:
            return await next()
        own = AbortController()

        async def abort_once_printed() -> None:
            await printed.wait()
            own.abort()

        aborter = asyncio.ensure_future(abort_once_printed())
        try:
            return await next(signal=own.signal)
        finally:
            aborter.cancel()

    registry.wrap_execute(wrap)

    async def forever(tools: Any, print: Any) -> Any:
        print("before")
        printed.set()
        await asyncio.sleep(10)

    result = await run_code(registry, program(runtime, forever))
    assert text(result) == "Error: code run failed (abort): the run was aborted\nCaptured output:\nbefore"
    assert result.error.info is not None and result.error.info.code == "CODE_RUN_FAILED"


@async_test
async def test_b144_pre_aborted_outer_call_never_invokes_the_runtime() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"))
    result = await run_code(registry, "anything", signal=AbortController.__new__(AbortController) and _aborted())
    assert text(result) == "Error: tool call aborted before dispatch"
    assert runtime.requests == []


def _aborted() -> Any:
    controller = AbortController()
    controller.abort()
    return controller.signal


class RaisingRuntime(ProgramRuntime):
    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        self.requests.append(request)
        self.future = request.dispatch("hang", {})
        await asyncio.sleep(0.005)
        raise RuntimeError("runtime broke")


@async_test
async def test_b145_a_runtime_that_raises_still_reaches_quiescence() -> None:
    settled: list[str] = []

    async def hangs(args: Any, run: Any) -> Any:
        await run.signal.wait()
        settled.append("aborted")
        raise run.signal.reason

    runtime = RaisingRuntime()
    registry, _, log = code_registry(text_tool("hang", hangs), runtime=runtime)
    result = await run_code(registry, "p")
    assert text(result) == "Error: runtime broke"
    assert settled == ["aborted"]
    assert [e["type"] for e in log.events] == [START, SETTLE]
    assert events(log, SETTLE)[0]["isError"] is True


@async_test
async def test_b146_without_an_agent_sub_dispatch_works_unlogged() -> None:
    registry, runtime, log = code_registry(text_tool("echo"))

    async def one(tools: Any, print: Any) -> Any:
        return await tools.echo({"text": "a"})

    result = await run_code(registry, program(runtime, one), agent=None)
    assert text(result) == "echo:a" and log.events == []


@async_test
async def test_b147_a_tool_unregistered_after_enumeration_is_unknown() -> None:
    ran: list[str] = []

    async def body(args: Any, run: Any) -> Any:
        ran.append("ran")
        return "ran"

    registry, runtime, _ = code_registry()
    dispose = registry.register(text_tool("gone", body))

    async def late(tools: Any, print: Any) -> Any:
        binding = tools.gone
        dispose()
        try:
            await binding({})
        except ToolCallError as exc:
            return exc.message

    result = await run_code(registry, program(runtime, late))
    assert runtime.requests[0].tool_names == ("gone",)
    assert text(result) == 'unknown tool "gone"' and ran == []


# --- 148-150 output -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("logs", "value", "expected"),
    [
        (["printed"], None, "printed"),
        ([], "returned", "returned"),
        (["printed"], "returned", "printed\nreturned"),
        ([], None, "(run_code completed with no output)"),
        ([], {"n": 42, "ok": True}, '{\n  "n": 42,\n  "ok": true\n}'),
        ([], [], "[]"),
        ([], {}, "{}"),
        (["a", "b"], 2.0, "a\nb\n2.0"),
        ([], "", "(run_code completed with no output)"),
    ],
)
def test_b148_outer_rendering(logs: list[str], value: Any, expected: str) -> None:
    @async_test
    async def check() -> None:
        registry, runtime, _ = code_registry()

        async def emits(tools: Any, print: Any) -> Any:
            for line in logs:
                print(line)
            return value

        result = await run_code(registry, program(runtime, emits))
        assert text(result) == expected
        assert result.value == ({"logs": logs} if value is None else {"logs": logs, "result": value})

    check()


class NullRuntime(ProgramRuntime):
    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        return CodeRunSuccess((), None)


@async_test
async def test_b148_a_null_result_renders_as_null() -> None:
    registry, _, _ = code_registry(runtime=NullRuntime())
    result = await run_code(registry, "p")
    assert text(result) == "null" and result.value == {"logs": [], "result": None}


@async_test
async def test_b148_failure_rendering_with_captured_output() -> None:
    class Limited(ProgramRuntime):
        async def run(self, request: CodeRunRequest) -> CodeRunResult:
            return CodeRunFailure("output-limit", "outer output exceeded 8 bytes", ("captured before failure",))

    registry, _, _ = code_registry(runtime=Limited())
    result = await run_code(registry, "p")
    assert text(result) == (
        "Error: code run failed (output-limit): outer output exceeded 8 bytes\nCaptured output:\ncaptured before failure"
    )
    assert result.error.info is not None and (result.error.info.name, result.error.info.code) == (
        "CodeRunFailedError",
        "CODE_RUN_FAILED",
    )


@async_test
async def test_a_failure_lists_the_sub_calls_that_started_and_how_each_ended() -> None:
    async def slow(args: Any, run: Any) -> Any:
        await run.signal.wait()
        raise run.signal.reason

    async def broken(args: Any, run: Any) -> Any:
        raise OSError("disk full\nsecond line")

    registry, runtime, _ = code_registry(text_tool("write_note"), text_tool("my-tool", broken), text_tool("slow", slow))

    async def fails(tools: Any, print: Any) -> Any:
        await tools.write_note({"text": "a"})
        await tools.write_note({"text": "b" * 200})
        try:
            await tools["my-tool"]({})
        except ToolCallError:
            print("caught")
        with pytest.raises(ToolCallError):
            await tools.write_note(float("nan"))  # rejected: it never started, so it is not listed
        tools.slow({})
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    result = await run_code(registry, program(runtime, fails))
    assert text(result) == (
        "Error: code run failed (exception): ValueError: boom\n"
        "Tool calls the program started (their effects stay):\n"
        '1. tools.write_note({"text":"a"}): succeeded\n'
        f'2. tools.write_note({{"text":"{"b" * 88}...): succeeded\n'
        '3. tools["my-tool"]({}): failed: disk full\n'
        "4. tools.slow({}): aborted while it ran (it may have done part of its work)\n"
        "Captured output:\ncaught"
    )


@async_test
async def test_a_long_failure_report_lists_the_first_and_last_calls() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"))

    async def many(tools: Any, print: Any) -> Any:
        for i in range(25):
            await tools.echo({"text": str(i)})
        raise ValueError("late")

    lines = text(await run_code(registry, program(runtime, many))).splitlines()
    assert lines[2:] == [
        *(f'{i}. tools.echo({{"text":"{i - 1}"}}): succeeded' for i in range(1, 11)),
        "... 5 more ...",
        *(f'{i}. tools.echo({{"text":"{i - 1}"}}): succeeded' for i in range(16, 26)),
    ]
    # A failure before any call started has no list; neither has a success.
    runtime.add("early", lambda tools, print: _raise(ValueError("early")))
    assert text(await run_code(registry, "early")) == "Error: code run failed (exception): ValueError: early"


async def _raise(error: Exception) -> Any:
    raise error


@async_test
async def test_b149_blank_description_and_missing_runtime() -> None:
    registry, runtime, _ = code_registry()
    runtime.add("p", lambda tools, print: asyncio.sleep(0))
    blank = await run_code(registry, "p", description=" \t ")
    assert text(blank) == "Error: invalid description: expected a non-empty string"
    assert runtime.requests == []
    without = ToolRegistry(mode="code")
    missing = await run_code(without, "p")
    assert missing.is_error and "requires a code runtime" in text(missing)


@async_test
async def test_b150_dispatch_events_never_derive_model_messages() -> None:
    registry, runtime, log = code_registry(text_tool("echo"))

    async def one(tools: Any, print: Any) -> Any:
        return await tools.echo({"text": "a"})

    await run_code(registry, program(runtime, one))
    assert len(log.events) == 2
    assert derive_messages(log.events) == []


# --- issue 13: budget, hostile runtime answers, the run-scoped signal --------------------


@async_test
async def test_the_sub_call_budget_rejects_excess_calls_and_the_program_goes_on() -> None:
    registry, runtime, log = code_registry(text_tool("echo"), max_sub_calls=2)

    async def spends(tools: Any, print: Any) -> Any:
        out = [await tools.echo({"text": "1"}), await tools.echo({"text": "2"})]
        try:
            await tools.echo({"text": "3"})
        except ToolCallError as exc:
            out.append(exc.message)
        return out

    result = await run_code(registry, program(runtime, spends))
    assert result.value["result"] == [
        "echo:1",
        "echo:2",
        "tool call budget spent: a run_code program may make at most 2 tool calls; echo not dispatched",
    ]
    assert len(events(log, START)) == 2
    # Rejected (non-lossless) calls do not spend the budget; each run has its own.
    again = await run_code(registry, program(runtime, spends))
    assert again.value["result"][:2] == ["echo:1", "echo:2"]


@async_test
async def test_hostile_runtime_answers_become_errors() -> None:
    answers: list[Any] = [
        CodeRunSuccess(("ok", 3), UNSET),  # type: ignore[arg-type]
        CodeRunSuccess((), float("nan")),
        CodeRunFailure("mystery", "m"),  # type: ignore[arg-type]
        "not a result",
    ]

    class Hostile(ProgramRuntime):
        async def run(self, request: CodeRunRequest) -> CodeRunResult:
            return answers.pop(0)  # type: ignore[no-any-return]

    registry, _, _ = code_registry(runtime=Hostile())
    texts = [text(await run_code(registry, "p")) for _ in range(4)]
    assert texts == [
        "Error: code run failed (invalid-output): program completion must be lossless JSON",
        "Error: code run failed (invalid-output): program completion must be lossless JSON:"
        " result: NaN is not a JSON number",
        "Error: code run failed (invalid-output): m",
        "Error: code runtime returned str, not a CodeRunResult",
    ]


@async_test
async def test_a_timeout_failure_aborts_the_in_flight_sub_call() -> None:
    aborted: list[str] = []

    async def hangs(args: Any, run: Any) -> Any:
        await run.signal.wait()
        aborted.append("aborted")
        raise run.signal.reason

    class Budgeted(ProgramRuntime):
        async def run(self, request: CodeRunRequest) -> CodeRunResult:
            request.dispatch("hang", {})
            await asyncio.sleep(0.005)
            return CodeRunFailure("timeout", "wall time budget of 0.005s exceeded")

    registry, _, log = code_registry(text_tool("hang", hangs), runtime=Budgeted())
    result = await run_code(registry, "p")
    assert text(result) == (
        "Error: code run failed (timeout): wall time budget of 0.005s exceeded\n"
        "Tool calls the program started (their effects stay):\n"
        "1. tools.hang({}): aborted while it ran (it may have done part of its work)"
    )
    assert aborted == ["aborted"] and [e["type"] for e in log.events] == [START, SETTLE]


@async_test
async def test_a_program_cancelling_a_binding_aborts_or_abandons_it() -> None:
    seen: list[str] = []

    async def hangs(args: Any, run: Any) -> Any:
        await run.signal.wait()
        seen.append(str(run.signal.reason))
        raise run.signal.reason

    registry, runtime, log = code_registry(text_tool("hang", hangs), text_tool("echo"))

    async def cancels(tools: Any, print: Any) -> Any:
        running = tools.hang({})
        queued = tools.echo({"text": "never"})
        await asyncio.sleep(0.001)
        queued.cancel()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(running, 0.005)
        return await tools.echo({"text": "after"})

    result = await run_code(registry, program(runtime, cancels))
    assert text(result) == "echo:after"
    assert seen == ["tool call cancelled by the run_code program"]
    assert [(e["type"], e["subCallId"]) for e in log.events] == [
        (START, "outer:code:1"),
        (SETTLE, "outer:code:1"),
        (START, "outer:code:3"),
        (SETTLE, "outer:code:3"),
    ]


@async_test
async def test_a_call_abandoned_by_the_program_keeps_later_calls_in_turn() -> None:
    # Found by the property test: a queued exclusive call cancelled by the program must
    # not let the safe call behind it skip the pre-execute and commit turns of the one before.
    registry, runtime, _ = code_registry(
        text_tool("a", lambda args, run: asyncio.sleep(0.01, "a"), safe=True),
        text_tool("b"),
        text_tool("c", safe=True),
    )
    trace: list[str] = []

    async def pre(execution: Any, next: Any) -> Any:
        if execution.parent is not None:
            trace.append(f"pre+ {execution.name}")
            await asyncio.sleep(0.005)
            trace.append(f"pre- {execution.name}")
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        if execution.parent is not None:
            trace.append(f"post {execution.name}")
        return await next()

    registry.on_pre_execute(pre)
    registry.on_post_execute(post)

    async def abandons(tools: Any, print: Any) -> Any:
        first = tools.a({})
        tools.b({}).cancel()
        return await asyncio.gather(first, tools.c({}))

    result = await run_code(registry, program(runtime, abandons))
    assert result.value["result"] == ["a", "c:"]
    assert trace == ["pre+ a", "pre- a", "pre+ c", "pre- c", "post a", "post c"]


@async_test
async def test_the_request_carries_the_scopes_catalog_read_once_per_registry_version() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"), text_tool("hidden"))
    registry.scope("narrow").restrict(deny=["hidden"])
    runtime.add("p", lambda tools, print: asyncio.sleep(0))
    await run_code(registry, "p")
    await run_code(registry, "p")
    await run_code(registry, "p", agent="narrow")
    first, second, narrow = (request.catalog for request in runtime.requests)
    assert [entry.name for entry in first] == ["echo", "hidden"] and first[0].parameters["properties"] == {
        "text": {"type": "string"}
    }
    assert second is first  # unchanged registry: the same catalog (a pre-flight check compiles it once)
    assert [entry.name for entry in narrow] == ["echo"]
    registry.register(text_tool("later"))
    await run_code(registry, "p")
    assert [entry.name for entry in runtime.requests[-1].catalog] == ["echo", "hidden", "later"]


@pytest.mark.parametrize(("constant", "peak"), [(True, 3), (False, 1)])
@async_test
async def test_is_concurrency_safe_may_be_a_constant(constant: bool, peak: int) -> None:
    gauge = Gauge()
    tool = gauge.tool("s", safe=None)
    registry, runtime, _ = code_registry(text_tool("s", tool.execute, is_concurrency_safe=constant))
    native = ToolRegistry()
    native.register(text_tool("s", tool.execute, is_concurrency_safe=constant))
    assert native.execution_mode(ToolExecutionInput("c", "s", {}, AbortController().signal)) == (
        "parallel" if constant else "exclusive"
    )

    async def gathered(tools: Any, print: Any) -> Any:
        return await asyncio.gather(*(tools.s({"text": str(i)}) for i in range(3)))

    assert text(await run_code(registry, program(runtime, gathered))) == '[\n  "s",\n  "s",\n  "s"\n]'
    assert gauge.peak == peak


@async_test
async def test_a_queued_sub_call_runs_in_the_context_it_was_dispatched_from() -> None:
    # x1 waits in the queue behind the exclusive x0 and starts from x0's task once x0 commits;
    # it still sees the program's context, not what x0's body set in its own.
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[str] = []

    async def body(args: Any, run: Any) -> Any:
        seen.append(var.get())
        var.set("set by " + args["text"])
        await asyncio.sleep(0)
        return args["text"]

    registry, runtime, _ = code_registry(text_tool("x", body, safe=False))

    async def queued(tools: Any, print: Any) -> Any:
        var.set("the program's")
        return await asyncio.gather(tools.x({"text": "x0"}), tools.x({"text": "x1"}))

    result = await run_code(registry, program(runtime, queued))
    assert not result.is_error, result.content
    assert seen == ["the program's", "the program's"]
