"""The loop helper and the policies against the real ToolRegistry (behaviours 151-156)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from dsh_codegen.registry import (
    UNSET,
    AbortController,
    Accept,
    Deny,
    ToolExecutionInput,
    ToolFailure,
    ToolRegistry,
    ToolSuccess,
)
from dsh_codegen.registry._definitions import ToolOutput, define_tool
from dsh_codegen.registry._loop import ToolCall, execute_tool_calls
from dsh_codegen.registry._session_log import (
    JsonlSessionLog,
    MemorySessionLog,
    derive_messages,
    read_session_log,
    replay_result,
)
from dsh_codegen.registry.policies import ToolMetrics, metrics_policy, retry_policy, timeout_policy

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def code(result: Any) -> str | None:
    assert isinstance(result, ToolFailure), result
    return None if result.error.info is None else result.error.info.code


def text(result: Any) -> str:
    return str(result.content[0]["text"])


Body = Callable[[Any, Any], Coroutine[Any, Any, Any]]


def make_tool(
    name: str,
    body: Body,
    *,
    safe: Callable[[Any], Any] | None = None,
    timeout_ms: float | None = None,
    present_call: Any = None,
) -> Any:
    return define_tool(
        name=name,
        description=f"{name} tool",
        parameters={"x": {"type": "integer"}},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}]),
        execute=body,
        is_concurrency_safe=safe,
        timeout_ms=timeout_ms,
        present_call=present_call,
    )


class Trace:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.running: set[str] = set()
        self.max_running = 0

    def phase(self, kind: str) -> list[str]:
        return [call_id for k, call_id in self.events if k == kind]

    def body(self, delay: float = 0.0, value: str = "ok") -> Body:
        async def execute(args: Any, run: Any) -> Any:
            self.events.append(("start", run.call_id))
            self.running.add(run.call_id)
            self.max_running = max(self.max_running, len(self.running))
            try:
                if delay:
                    waiter = asyncio.ensure_future(run.signal.wait())
                    try:
                        await asyncio.wait([waiter], timeout=delay)
                    finally:
                        waiter.cancel()
                        await asyncio.gather(waiter, return_exceptions=True)
                return value
            finally:
                self.running.discard(run.call_id)
                self.events.append(("end", run.call_id))

        return execute

    def observe(self, registry: ToolRegistry) -> None:
        async def pre(execution: Any, next: Any) -> Any:
            self.events.append(("pre", execution.call_id))
            return await next()

        async def post(execution: Any, result: Any, next: Any) -> Any:
            self.events.append(("post", execution.call_id))
            return await next()

        registry.on_pre_execute(pre)
        registry.on_post_execute(post)
        registry.on_result(lambda execution, result: self.events.append(("result", execution.call_id)))


def always(_args: Any) -> bool:
    return True


# -- 153 -----------------------------------------------------------------------------


def test_153_real_registry_safe_siblings_overlap_and_exclusive_forms_a_barrier() -> None:
    trace = Trace()
    registry = ToolRegistry()
    registry.register(make_tool("safe", trace.body(0.01), safe=always))
    registry.register(make_tool("mut", trace.body(0.01)))  # no classifier: exclusive
    calls = [ToolCall(f"c{i}", name, "{}") for i, name in enumerate(["safe", "safe", "mut", "safe", "safe"])]
    results = run(execute_tool_calls(registry, calls, signal=AbortController().signal))
    assert all(isinstance(r, ToolSuccess) for r in results)
    starts_and_ends = [(k, c) for k, c in trace.events if k in ("start", "end")]
    assert starts_and_ends == [
        ("start", "c0"), ("start", "c1"), ("end", "c0"), ("end", "c1"),
        ("start", "c2"), ("end", "c2"),
        ("start", "c3"), ("start", "c4"), ("end", "c3"), ("end", "c4"),
    ]  # fmt: skip


def test_153_real_registry_reclassifies_after_each_commit() -> None:
    trace = Trace()
    registry = ToolRegistry()
    flag = {"safe": False}
    registry.register(make_tool("first", trace.body(0.005), safe=always))
    registry.register(make_tool("flip", trace.body(0.005), safe=lambda args: flag["safe"]))

    async def post(execution: Any, result: Any, next: Any) -> Any:
        if execution.call_id == "c0":
            flag["safe"] = True  # c0's commit makes "flip" concurrency-safe
        return await next()

    registry.on_post_execute(post)
    calls = [ToolCall("c0", "first", "{}"), ToolCall("c1", "flip", "{}"), ToolCall("c2", "flip", "{}")]
    run(execute_tool_calls(registry, calls, signal=AbortController().signal))
    assert [(k, c) for k, c in trace.events if k in ("start", "end")] == [
        ("start", "c0"), ("end", "c0"), ("start", "c1"), ("start", "c2"), ("end", "c1"), ("end", "c2"),
    ]  # fmt: skip


def test_153_real_registry_cap_and_serial() -> None:
    for cap, expected in ((2, 2), (1, 1)):
        trace = Trace()
        registry = ToolRegistry()
        registry.register(make_tool("safe", trace.body(0.003), safe=always))
        calls = [ToolCall(f"c{i}", "safe", "{}") for i in range(6)]
        run(execute_tool_calls(registry, calls, signal=AbortController().signal, max_parallel=cap))
        assert trace.max_running == expected


# -- 154 -----------------------------------------------------------------------------


def test_154_real_registry_phases_and_events_follow_model_order() -> None:
    trace = Trace()
    registry = ToolRegistry()
    registry.register(make_tool("slow", trace.body(0.03, "slow"), safe=always))
    registry.register(make_tool("fast", trace.body(0.0, "fast"), safe=always))
    trace.observe(registry)

    def context(source: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "text", "text": source}], "source": source}

    async def add_context(execution: Any, result: Any, next: Any) -> Any:
        await next()
        return Accept(additional_contexts=[context(f"after {execution.call_id}")])

    registry.on_post_execute(add_context)
    log = MemorySessionLog()
    calls = [ToolCall("a", "slow", "{}"), ToolCall("b", "fast", "{}"), ToolCall("c", "fast", "{}")]
    results = run(execute_tool_calls(registry, calls, signal=AbortController().signal, log=log))
    assert trace.phase("end") == ["b", "c", "a"]  # bodies finished out of order
    assert trace.phase("pre") == ["a", "b", "c"]
    assert trace.phase("post") == ["a", "b", "c"]
    assert trace.phase("result") == ["a", "b", "c"]
    assert [r.additional_contexts[0]["source"] for r in results] == ["after a", "after b", "after c"]
    assert [e["callId"] for e in log.events if e["type"] == "tool/result"] == ["a", "b", "c"]
    messages = derive_messages(log.events)
    assert [m.get("source") for m in messages[4:]] == ["after a", "after b", "after c"]
    assert [m["role"] for m in messages] == ["assistant", "tool", "tool", "tool", "user", "user", "user"]


# -- 155 -----------------------------------------------------------------------------


def test_155_real_registry_abort_drains_started_and_synthesizes_unstarted() -> None:
    trace = Trace()
    registry = ToolRegistry()
    registry.register(make_tool("safe", trace.body(5), safe=always))
    registry.register(make_tool("mut", trace.body(5)))
    trace.observe(registry)
    controller = AbortController()
    log = MemorySessionLog()
    calls = [ToolCall(f"c{i}", name, "{}") for i, name in enumerate(["safe", "safe", "mut", "safe"])]

    async def main() -> list[Any]:
        asyncio.get_running_loop().call_later(0.02, controller.abort)
        return await execute_tool_calls(registry, calls, signal=controller.signal, log=log)

    results = run(main())
    assert [code(r) for r in results] == ["ABORTED", "ABORTED", "ABORTED_BEFORE_DISPATCH", "ABORTED_BEFORE_DISPATCH"]
    assert [text(r) for r in results[2:]] == ["Error: tool call aborted before dispatch"] * 2
    assert trace.phase("result") == ["c0", "c1"]  # synthetic results are not observed
    assert trace.running == set()
    assert [(e["type"], e["callId"]) for e in log.events][4:] == [
        ("tool/call", "c2"), ("tool/result", "c2"), ("tool/call", "c3"), ("tool/result", "c3"),
    ]  # fmt: skip


def test_cancelling_the_caller_task_with_the_real_registry_leaves_nothing_running() -> None:
    trace = Trace()
    registry = ToolRegistry()
    registry.register(make_tool("safe", trace.body(5), safe=always))
    trace.observe(registry)

    async def main() -> None:
        calls = [ToolCall(f"c{i}", "safe", "{}") for i in range(4)]
        task = asyncio.create_task(execute_tool_calls(registry, calls, signal=AbortController().signal, max_parallel=3))
        for _ in range(100):
            await asyncio.sleep(0)
            if len(trace.running) == 3:
                break
        assert trace.running == {"c0", "c1", "c2"}
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert trace.running == set()
        assert asyncio.all_tasks() == {asyncio.current_task()}

    run(main())
    assert trace.phase("result") == ["c0", "c1", "c2"]


# -- 156 -----------------------------------------------------------------------------


def test_156_real_registry_raw_strings_parsed_invalid_json_fails_validation() -> None:
    seen: list[Any] = []

    async def body(args: Any, run: Any) -> Any:
        seen.append(dict(args))
        return "ok"

    registry = ToolRegistry()
    registry.register(make_tool("t", body))
    calls = [
        ToolCall("a", "t", ""),
        ToolCall("b", "t", '{"x": 3}'),
        ToolCall("c", "t", "{x: 3"),
        ToolCall("d", "t", '{"x": NaN}'),
    ]
    results = run(execute_tool_calls(registry, calls, signal=AbortController().signal))
    assert seen == [{}, {"x": 3}]
    assert isinstance(results[0], ToolSuccess) and isinstance(results[1], ToolSuccess)
    assert code(results[2]) == "INVALID_ARGS" and code(results[3]) == "INVALID_ARGS"
    assert text(results[2]) == 'Error: invalid arguments: "arguments" must be an object'


def test_session_log_replays_presenters_without_the_value(tmp_path: Path) -> None:
    def present(args: Any) -> Any:
        return {"card": "generic", "title": f"x={args.get('x')}", "kind": "execute"}

    def present_result(args: Any, result: Any) -> Any:
        return {
            "card": "generic",
            "title": f"x={args.get('x')}",
            "kind": "execute",
            "rawOutput": result.content[0]["text"],
        }

    async def body(args: Any, run: Any) -> Any:
        return "secret canonical value"

    registry = ToolRegistry()
    registry.register(
        define_tool(
            name="t",
            description="t",
            parameters={"x": {"type": "integer"}},
            output=ToolOutput(
                schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": "shown"}]
            ),
            execute=body,
            present_call=present,
            present_result=present_result,
        )
    )
    live: list[Any] = []
    registry.on_result(
        lambda execution, result: live.append(registry.get("t").result_view(execution.arguments, result))
    )  # type: ignore[union-attr]
    path = tmp_path / "session.jsonl"
    with JsonlSessionLog(path) as log:
        run(execute_tool_calls(registry, [ToolCall("a", "t", '{"x": 7}')], signal=AbortController().signal, log=log))
    events = read_session_log(path).events
    assert "secret canonical value" not in path.read_text()
    call_event = next(e for e in events if e["type"] == "tool/call")
    definition = registry.get(call_event["name"])
    assert definition is not None
    assert definition.call_view(call_event["arguments"]) == {"card": "generic", "title": "x=7", "kind": "execute"}
    assert derive_messages(events)[1]["content"] == [{"type": "text", "text": "shown"}]
    result_event = next(e for e in events if e["type"] == "tool/result")
    replayed = replay_result(result_event)
    assert isinstance(replayed, ToolSuccess) and replayed.value is UNSET
    assert definition.result_view(call_event["arguments"], replayed) == live[0]


def test_replay_result_rebuilds_failures() -> None:
    registry = ToolRegistry()
    log = MemorySessionLog()
    run(execute_tool_calls(registry, [ToolCall("a", "nope", "{}")], signal=AbortController().signal, log=log))
    replayed = replay_result(log.events[1])
    assert isinstance(replayed, ToolFailure)
    assert replayed.error.message == 'unknown tool "nope"'
    assert replayed.error.info is not None and replayed.error.info.code == "UNKNOWN_TOOL"
    assert replayed.content == [{"type": "text", "text": 'Error: unknown tool "nope"'}]
    with pytest.raises(TypeError):
        replayed.content.append({"type": "text", "text": "x"})  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="needs a tool/result event"):
        replay_result(log.events[0])
    with pytest.raises(ValueError, match="error.message must be a str"):
        replay_result({"type": "tool/result", "isError": True, "content": []})


# -- 151-152: timeout policy on the real registry -----------------------------------


def _probe_registry(timeout_ms: float | None, body: Body, **policy: Any) -> tuple[ToolRegistry, dict[str, Any]]:
    seen: dict[str, Any] = {}
    registry = ToolRegistry()
    registry.register(make_tool("t", body, timeout_ms=timeout_ms))
    timeout_policy(registry, **policy)

    async def probe(dispatch: Any, next: Any) -> Any:
        seen["wrapper_signal"] = dispatch.signal
        return await next()

    async def post(execution: Any, result: Any, next: Any) -> Any:
        seen["post_signal"] = execution.signal
        return await next()

    registry.wrap_execute(probe)
    registry.on_post_execute(post)
    return registry, seen


async def _instant(args: Any, run: Any) -> Any:
    return "done"


def test_151_real_registry_unbudgeted_tool_is_delegated_untouched() -> None:
    registry, seen = _probe_registry(None, _instant)
    caller = AbortController().signal
    result = run(registry.execute(ToolExecutionInput("c1", "t", {}, caller)))
    assert isinstance(result, ToolSuccess)
    assert seen["wrapper_signal"] is caller and seen["post_signal"] is caller


def test_151_real_registry_budgeted_tool_sees_a_derived_signal_post_sees_the_callers() -> None:
    registry, seen = _probe_registry(1000, _instant)
    caller = AbortController().signal
    result = run(registry.execute(ToolExecutionInput("c1", "t", {}, caller)))
    assert isinstance(result, ToolSuccess)
    assert seen["wrapper_signal"] is not caller and not seen["wrapper_signal"].aborted
    assert seen["post_signal"] is caller


async def _until_aborted_then_succeed(args: Any, run: Any) -> Any:
    await run.signal.wait()
    return "finished anyway"


def test_152_real_registry_deadline_gives_tool_timeout() -> None:
    registry, _ = _probe_registry(5, _until_aborted_then_succeed)
    result = run(registry.execute(ToolExecutionInput("c1", "t", {}, AbortController().signal)))
    assert code(result) == "TOOL_TIMEOUT"
    assert text(result) == "Error: tool call timed out after 5ms"
    assert isinstance(result, ToolFailure) and result.error.info is not None
    assert result.error.info.name == "ToolTimeoutError"


def test_152_real_registry_caller_abort_first_stays_aborted() -> None:
    registry, _ = _probe_registry(200, _until_aborted_then_succeed)
    controller = AbortController()

    async def main() -> Any:
        asyncio.get_running_loop().call_later(0.005, controller.abort)
        return await registry.execute(ToolExecutionInput("c1", "t", {}, controller.signal))

    assert code(run(main())) == "ABORTED"


def test_152_real_registry_timeout_first_then_caller_abort_stays_tool_timeout() -> None:
    async def slow_wind_down(args: Any, run: Any) -> Any:
        await run.signal.wait()
        await asyncio.sleep(0.03)
        return "late"

    registry, _ = _probe_registry(2, slow_wind_down)
    controller = AbortController()

    async def main() -> Any:
        asyncio.get_running_loop().call_later(0.015, controller.abort)
        return await registry.execute(ToolExecutionInput("c1", "t", {}, controller.signal))

    assert code(run(main())) == "TOOL_TIMEOUT"


def test_default_timeout_on_a_scope_applies_only_to_that_agent() -> None:
    registry = ToolRegistry()
    registry.register(make_tool("t", _until_aborted_then_succeed))
    scope = registry.scope("agent-1")
    timeout_policy(scope, default_timeout_ms=5)

    async def main() -> tuple[Any, Any]:
        scoped = await registry.execute(ToolExecutionInput("c1", "t", {}, AbortController().signal, agent="agent-1"))
        controller = AbortController()
        asyncio.get_running_loop().call_later(0.02, controller.abort)
        unscoped = await registry.execute(ToolExecutionInput("c2", "t", {}, controller.signal))
        return scoped, unscoped

    scoped, unscoped = run(main())
    assert code(scoped) == "TOOL_TIMEOUT"
    assert code(unscoped) == "ABORTED"


def test_retry_and_metrics_on_the_real_registry() -> None:
    attempts: list[int] = []

    async def flaky(args: Any, run: Any) -> Any:
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("transient")
        return "third time lucky"

    registry = ToolRegistry()
    registry.register(make_tool("flaky", flaky))
    metrics = ToolMetrics()
    metrics_policy(registry, metrics)  # outermost: one dispatch as the pipeline sees it
    retry_policy(registry, max_attempts=3)
    observed: list[Any] = []
    registry.on_result(lambda execution, result: observed.append(result))
    result = run(registry.execute(ToolExecutionInput("c1", "flaky", {}, AbortController().signal)))
    assert isinstance(result, ToolSuccess) and result.value == "third time lucky"
    assert len(attempts) == 3 and len(observed) == 1
    stats = metrics.snapshot()["flaky"]
    assert stats.calls == 1 and stats.failures == 0


def test_retry_does_not_retry_denied_or_unknown_calls() -> None:
    registry = ToolRegistry()
    calls: list[int] = []

    async def body(args: Any, run: Any) -> Any:
        calls.append(1)
        return "x"

    registry.register(make_tool("t", body))
    retry_policy(registry, max_attempts=5)

    async def deny(execution: Any, next: Any) -> Any:
        return Deny("no")

    dispose = registry.on_pre_execute(deny)
    assert text(run(registry.execute(ToolExecutionInput("c1", "t", {}, AbortController().signal)))) == "Error: no"
    dispose()
    result = run(registry.execute(ToolExecutionInput("c2", "nope", {}, AbortController().signal)))
    assert code(result) == "UNKNOWN_TOOL"
    assert calls == []


def test_signal_type_is_checked_before_the_registry_is_touched() -> None:
    with pytest.raises(TypeError):
        run(execute_tool_calls(ToolRegistry(), [ToolCall("a", "t", "")], signal=None))  # type: ignore[arg-type]


def test_unknown_tools_and_guard_denials_go_through_the_loop_as_results() -> None:
    trace = Trace()
    registry = ToolRegistry()
    registry.register(make_tool("t", trace.body()))
    registry.guard(lambda execution: "guarded" if execution.call_id == "b" else None)
    trace.observe(registry)
    log = MemorySessionLog()
    calls = [ToolCall("a", "nope", "{}"), ToolCall("b", "t", "{}"), ToolCall("c", "t", "{}")]
    results = run(execute_tool_calls(registry, calls, signal=AbortController().signal, log=log))
    assert text(results[0]) == 'Error: unknown tool "nope"' and code(results[0]) == "UNKNOWN_TOOL"
    assert text(results[1]) == "Error: guarded"
    assert isinstance(results[2], ToolSuccess)
    assert trace.phase("result") == ["a", "b", "c"]
    assert [e["isError"] for e in log.events if e["type"] == "tool/result"] == [True, True, False]
