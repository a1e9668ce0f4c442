"""dsh_codegen.otel: one execute_tool span per call, read back from the real SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from _shared_helpers import async_test, render_text
from dsh_codegen.codemode import PythonSubprocessRuntime
from dsh_codegen.otel import instrument
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    AbortController,
    Block,
    Deny,
    ToolCall,
    ToolExecutionInput,
    ToolOutput,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    execute_tool_calls,
    timeout_policy,
)

pytestmark = pytest.mark.once  # orchestration only: nothing here depends on the schema twin

Body = Callable[[Any, ToolRunContext], Awaitable[Any]]


class Traced:
    """A registry instrumented with a real SDK tracer provider that exports to memory."""

    def __init__(self, **options: Any) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")
        self.registry = ToolRegistry(**options)
        self.dispose = instrument(self.registry, tracer_provider=self.provider)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def only(self, name: str) -> ReadableSpan:
        [span] = [span for span in self.spans() if span.name == name]
        return span


def tool(name: str = "echo", body: Body | None = None, **extra: Any) -> Any:
    async def echo(args: Any, run: ToolRunContext) -> str:
        return "echo:" + args["text"]

    return define_tool(
        name=name,
        description=f"The {name} tool.",
        parameters={"text": {"type": "string", "required": True}},
        output=ToolOutput(schema={"type": "string"}, render=render_text),
        execute=body or echo,
        **extra,
    )


def call(name: str = "echo", *, call_id: str = "c1", signal: Any = None, agent: Any = None, **arguments: Any) -> Any:
    return ToolExecutionInput(call_id, name, arguments or {"text": "hi"}, signal or AbortController().signal, agent)


def events(span: ReadableSpan) -> list[tuple[str, dict[str, Any]]]:
    return [(event.name, dict(event.attributes or {})) for event in span.events]


def parent_id(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


ALLOWED_AND_DISPATCHED = [
    ("dsh_codegen.pre_execute", {"dsh_codegen.decision": "allow"}),
    ("dsh_codegen.dispatch", {}),
    ("dsh_codegen.dispatch.end", {"dsh_codegen.outcome": "success"}),
    ("dsh_codegen.post_execute", {"dsh_codegen.decision": "accept"}),
]


@async_test
async def test_a_call_is_one_execute_tool_span_under_the_current_span() -> None:
    traced = Traced()
    traced.registry.register(tool())
    with traced.tracer.start_as_current_span("agent turn") as outer:
        result = await traced.registry.execute(call(call_id="call_1", agent="planner"))
        assert trace.get_current_span() is outer  # the call's span is current only during the call
    assert not result.is_error
    span = traced.only("execute_tool echo")
    assert span.kind is SpanKind.INTERNAL
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.agent.name": "planner",
        "gen_ai.tool.description": "The echo tool.",
    }
    assert span.status.status_code is StatusCode.UNSET
    assert events(span) == ALLOWED_AND_DISPATCHED
    assert parent_id(span) == outer.get_span_context().span_id
    assert span.context.trace_id == outer.get_span_context().trace_id


@async_test
async def test_the_span_is_current_for_the_body_so_its_own_spans_nest_under_it() -> None:
    traced = Traced()

    async def body(args: Any, run: ToolRunContext) -> str:
        with traced.tracer.start_as_current_span("http get"):
            await asyncio.sleep(0)
        return "done"

    traced.registry.register(tool(body=body))
    await traced.registry.execute(call())
    inner, outer = traced.spans()
    assert inner.name == "http get" and outer.name == "execute_tool echo"
    assert parent_id(inner) == outer.context.span_id
    assert parent_id(outer) is None


@async_test
async def test_parallel_calls_of_the_loop_helper_each_carry_their_own_span_into_their_body() -> None:
    traced = Traced()
    both_started = asyncio.Event()
    in_flight = 0

    async def body(args: Any, run: ToolRunContext) -> str:
        nonlocal in_flight
        in_flight += 1
        if in_flight == 2:
            both_started.set()
        with traced.tracer.start_as_current_span(f"inner {args['text']}"):
            await asyncio.wait_for(both_started.wait(), 10)  # both bodies are in flight at once
        return args["text"]

    traced.registry.register(tool(body=body, is_concurrency_safe=lambda args: True))
    calls = [ToolCall("a", "echo", '{"text": "a"}'), ToolCall("b", "echo", '{"text": "b"}')]
    with traced.tracer.start_as_current_span("agent turn") as outer:
        results = await execute_tool_calls(traced.registry, calls, signal=AbortController().signal)
    assert [result.value for result in results] == ["a", "b"]  # type: ignore[union-attr]
    for call_id in ("a", "b"):
        [span] = [s for s in traced.spans() if s.attributes and s.attributes.get("gen_ai.tool.call.id") == call_id]
        assert parent_id(span) == outer.get_span_context().span_id
        assert parent_id(traced.only(f"inner {call_id}")) == span.context.span_id


class Escape(SystemExit):
    """Ends the process: with KeyboardInterrupt, the one kind of exception a body raises that leaves execute."""


class RateLimited(Exception):
    code = "RATE_LIMITED"


async def _hang_until_aborted(args: Any, run: ToolRunContext) -> str:
    await run.signal.wait()
    return "late"


async def _raise_value_error(args: Any, run: ToolRunContext) -> str:
    raise ValueError("boom")


async def _raise_coded(args: Any, run: ToolRunContext) -> str:
    raise RateLimited("slow down")


async def _raise_escape(args: Any, run: ToolRunContext) -> str:
    raise Escape("out of here")


async def _stop(how: str, traced: Traced, controller: AbortController) -> Any:
    """Run one call of the ``hang`` tool and stop it ``how``; return its result (or the exception it raised)."""
    task = asyncio.ensure_future(traced.registry.execute(call("hang", signal=controller.signal)))
    await asyncio.sleep(0.01)
    if how == "abort":
        controller.abort()
    else:
        task.cancel()
    try:
        return await task
    except asyncio.CancelledError as exc:
        return exc


# (scenario, tool name, error.type, status description, the stage events)
FAILURES = [
    # A denial still reaches post-execute.
    (
        "denied by a pre-execute listener",
        "echo",
        "denied",
        "not today",
        [("dsh_codegen.pre_execute", {"dsh_codegen.decision": "deny"}), ALLOWED_AND_DISPATCHED[3]],
    ),
    ("denied by a guard", "guarded", "denied", "guarded tool", [ALLOWED_AND_DISPATCHED[0], ALLOWED_AND_DISPATCHED[3]]),
    # A policy that raises is no refusal, and skips post-execute.
    ("a raising guard", "raising", "_OTHER", "guard broke", [ALLOWED_AND_DISPATCHED[0]]),
    (
        "timed out",
        "sleepy",
        "TOOL_TIMEOUT",
        "tool call timed out after 20ms",
        [
            *ALLOWED_AND_DISPATCHED[:2],
            ("dsh_codegen.dispatch.end", {"dsh_codegen.outcome": "failure"}),
            ("dsh_codegen.post_execute", {"dsh_codegen.decision": "accept"}),
        ],
    ),
    (
        "aborted by its caller",
        "hang",
        "ABORTED",
        "tool call aborted",
        [
            *ALLOWED_AND_DISPATCHED[:2],
            ("dsh_codegen.dispatch.end", {"dsh_codegen.outcome": "success"}),
            ("dsh_codegen.post_execute", {"dsh_codegen.decision": "accept"}),
        ],
    ),
    (
        "its task cancelled",
        "hang",
        "ABORTED",
        "tool call aborted",
        [
            *ALLOWED_AND_DISPATCHED[:2],
            ("dsh_codegen.dispatch.end", {"dsh_codegen.outcome": "cancelled"}),
            ("dsh_codegen.cancelled", {}),
        ],
    ),
    (
        "a throwing body",
        "boom",
        "tool_error",
        "boom",
        [
            *ALLOWED_AND_DISPATCHED[:2],
            ("dsh_codegen.dispatch.end", {"dsh_codegen.outcome": "failure"}),
            ("dsh_codegen.post_execute", {"dsh_codegen.decision": "accept"}),
        ],
    ),
    (
        "a body raising a coded error",
        "coded",
        "RATE_LIMITED",
        "slow down",
        [
            *ALLOWED_AND_DISPATCHED[:2],
            ("dsh_codegen.dispatch.end", {"dsh_codegen.outcome": "failure"}),
            ("dsh_codegen.post_execute", {"dsh_codegen.decision": "accept"}),
        ],
    ),
    (
        "blocked by a post-execute listener",
        "blocked",
        "blocked",
        "withheld",
        [*ALLOWED_AND_DISPATCHED[:3], ("dsh_codegen.post_execute", {"dsh_codegen.decision": "block"})],
    ),
    (
        "unknown tool",
        "missing",
        "UNKNOWN_TOOL",
        'unknown tool "missing"',
        [
            *ALLOWED_AND_DISPATCHED[:2],
            ("dsh_codegen.dispatch.end", {"dsh_codegen.outcome": "failure"}),
            ("dsh_codegen.post_execute", {"dsh_codegen.decision": "accept"}),
        ],
    ),
    (
        "a body raising past execute",
        "escape",
        "Escape",
        "out of here",
        [*ALLOWED_AND_DISPATCHED[:2], ("dsh_codegen.dispatch.end", {"dsh_codegen.outcome": "error"})],
    ),
]


@pytest.mark.parametrize(
    ("scenario", "name", "error_type", "description", "stages"), FAILURES, ids=[row[0] for row in FAILURES]
)
@async_test
async def test_a_failed_call_ends_its_span_once_with_the_error_type_and_status(
    scenario: str,
    name: str,
    error_type: str,
    description: str,
    stages: list[Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    traced = Traced()
    registry = traced.registry
    registry.register(tool())
    registry.register(tool("guarded"))
    registry.register(tool("sleepy", _hang_until_aborted, timeout_ms=20))
    registry.register(tool("hang", _hang_until_aborted))
    registry.register(tool("boom", _raise_value_error))
    registry.register(tool("coded", _raise_coded))
    registry.register(tool("blocked"))
    registry.register(tool("escape", _raise_escape))
    registry.on_pre_execute(
        lambda e, next: Deny("not today") if scenario.startswith("denied by a pre") and e.call_id == "c1" else next()
    )
    registry.register(tool("raising"))

    def guard(execution: Any) -> str | None:
        if execution.name == "raising":
            raise RuntimeError("guard broke")
        return "guarded tool" if execution.name == "guarded" else None

    registry.guard(guard)
    registry.on_post_execute(
        lambda e, r, next: Block([{"type": "text", "text": "withheld"}]) if e.name == "blocked" else next()
    )
    timeout_policy(registry)
    controller = AbortController()
    with caplog.at_level(logging.WARNING):
        if name == "hang":
            outcome = await _stop("abort" if "caller" in scenario else "cancel", traced, controller)
            assert isinstance(outcome, asyncio.CancelledError) == ("cancelled" in scenario)
        elif name == "escape":
            with pytest.raises(Escape):
                await registry.execute(call(name))
        else:
            assert (await registry.execute(call(name))).is_error
        # A call after the failure is traced as usual: nothing was left current or half-open.
        assert not (await registry.execute(call(call_id="after"))).is_error
    failed, after = traced.spans()
    assert failed.name == f"execute_tool {name}" and after.name == "execute_tool echo"
    assert failed.end_time is not None and failed.context.span_id != after.context.span_id
    assert parent_id(after) is None  # the failed call's span did not stay current
    assert failed.attributes is not None and failed.attributes["error.type"] == error_type
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description == description
    stage_events = [event for event in events(failed) if event[0] != "exception"]
    assert stage_events == stages
    if name == "escape":
        [exception] = [event for event in failed.events if event.name == "exception"]
        assert exception.attributes is not None and exception.attributes["exception.message"] == "out of here"
    # Ended exactly once: the SDK warns on a second end().
    assert [r.getMessage() for r in caplog.records if "ended span" in r.getMessage()] == []


@async_test
async def test_an_entry_failure_is_a_span_with_no_stage_events() -> None:
    traced = Traced()
    traced.registry.register(tool())
    result = await traced.registry.execute(call(text={1, 2}))
    assert result.is_error
    span = traced.only("execute_tool echo")
    assert span.attributes is not None and span.attributes["error.type"] == "_OTHER"
    assert span.status.description == (
        'tool execution arguments must be losslessly JSON-serializable: at "arguments.text", type set is not a JSON type'
    )
    assert events(span) == []


@async_test
async def test_a_caller_aborted_before_entry_gets_aborted_before_dispatch() -> None:
    traced = Traced()
    traced.registry.register(tool())
    controller = AbortController()
    controller.abort()
    await traced.registry.execute(call(signal=controller.signal))
    span = traced.only("execute_tool echo")
    assert span.attributes is not None and span.attributes["error.type"] == "ABORTED_BEFORE_DISPATCH"


# --- Code Mode ---------------------------------------------------------------------------------------


async def _run_code(traced: Traced, code: str, signal: Any = None) -> Any:
    return await traced.registry.execute(
        ToolExecutionInput(
            "run1", RUN_CODE_NAME, {"code": code, "description": "test"}, signal or AbortController().signal, "main"
        )
    )


@pytest.mark.parametrize("overlap", [3])
@async_test
async def test_parallel_sub_calls_are_children_of_run_code_and_their_bodies_nest_under_each(overlap: int) -> None:
    async with PythonSubprocessRuntime() as runtime:
        traced = Traced(mode="code", code_runtime=runtime)
        in_flight = 0
        most = 0
        everyone_started = asyncio.Event()

        async def fetch(args: Any, run: ToolRunContext) -> str:
            nonlocal in_flight, most
            in_flight += 1
            most = max(most, in_flight)
            if in_flight == overlap:
                everyone_started.set()
            with traced.tracer.start_as_current_span(f"inner {args['text']}"):
                # Every sub-call is in flight at once before any of them goes on.
                await asyncio.wait_for(everyone_started.wait(), 10)
                await asyncio.sleep(0)
            in_flight -= 1
            return args["text"]

        traced.registry.register(tool("fetch", fetch, is_concurrency_safe=lambda args: True))
        code = (
            "import asyncio\n"
            f"got = await asyncio.gather(*(tools.fetch({{'text': str(i)}}) for i in range({overlap})))\n"
            "return got"
        )
        with traced.tracer.start_as_current_span("agent turn") as outer:
            result = await _run_code(traced, code)
    assert not result.is_error, result
    assert result.value["result"] == [str(i) for i in range(overlap)]  # type: ignore[index]
    assert most == overlap
    run_code = traced.only("execute_tool run_code")
    assert parent_id(run_code) == outer.get_span_context().span_id
    assert run_code.attributes is not None and run_code.attributes["dsh_codegen.code_mode.sub_calls"] == overlap
    subs = {
        span.attributes["gen_ai.tool.call.id"]: span
        for span in traced.spans()  # type: ignore[index]
        if span.name == "execute_tool fetch"
    }
    assert sorted(subs) == [f"run1:code:{n}" for n in range(1, overlap + 1)]
    for n in range(overlap):
        sub = subs[f"run1:code:{n + 1}"]
        assert parent_id(sub) == run_code.context.span_id
        assert sub.attributes is not None and sub.attributes["dsh_codegen.root_call_id"] == "run1"
        # The body's own span nests under its own sub-call, though all ran at once in other tasks.
        assert parent_id(traced.only(f"inner {n}")) == sub.context.span_id


@async_test
async def test_an_aborted_run_ends_the_run_and_its_sub_call_spans_once(caplog: pytest.LogCaptureFixture) -> None:
    async with PythonSubprocessRuntime() as runtime:
        traced = Traced(mode="code", code_runtime=runtime)
        started = asyncio.Event()

        async def hang(args: Any, run: ToolRunContext) -> str:
            started.set()
            await run.signal.wait()
            return "late"

        traced.registry.register(tool("hang", hang))
        controller = AbortController()
        with caplog.at_level(logging.WARNING):
            task = asyncio.ensure_future(_run_code(traced, "return await tools.hang({'text': 'x'})", controller.signal))
            await asyncio.wait_for(started.wait(), 10)
            controller.abort()
            result = await task
    assert result.is_error
    sub, run_code = traced.spans()
    assert (sub.name, run_code.name) == ("execute_tool hang", "execute_tool run_code")
    assert parent_id(sub) == run_code.context.span_id
    assert run_code.attributes is not None and run_code.attributes["error.type"] == "ABORTED"
    assert sub.attributes is not None and sub.attributes["error.type"] == "ABORTED"
    assert [r.getMessage() for r in caplog.records if "ended span" in r.getMessage()] == []


def _everything_recorded(spans: list[ReadableSpan]) -> str:
    parts: list[str] = []
    for span in spans:
        parts += [span.name, str(span.status.description), repr(dict(span.attributes or {}))]
        parts += [repr((event.name, dict(event.attributes or {}))) for event in span.events]
    return "\n".join(parts)


@pytest.mark.parametrize("record_logs", [False, True])
@pytest.mark.parametrize("fails", [False, True], ids=["run succeeds", "run fails"])
@async_test
async def test_a_runs_logs_are_recorded_only_when_asked(record_logs: bool, fails: bool) -> None:
    async with PythonSubprocessRuntime() as runtime:
        registry = ToolRegistry(mode="code", code_runtime=runtime)
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        instrument(registry, tracer_provider=provider, record_logs=record_logs)
        code = "print('secret line one')\nprint('secret line two')\n" + (
            "raise RuntimeError('program failed')" if fails else "return 7"
        )
        result = await registry.execute(
            ToolExecutionInput("run1", RUN_CODE_NAME, {"code": code, "description": "t"}, AbortController().signal)
        )
    assert result.is_error == fails
    [span] = exporter.get_finished_spans()
    recorded = _everything_recorded([span])
    assert ("secret line" in recorded) == record_logs
    if record_logs:
        assert span.attributes is not None
        assert list(span.attributes["dsh_codegen.code_mode.logs"]) == [
            "secret line one",  # type: ignore[arg-type]
            "secret line two",
        ]
    if fails:
        assert span.status.description == "code run failed (exception): RuntimeError: program failed (line 3)"
        assert span.attributes is not None and span.attributes["error.type"] == "CODE_RUN_FAILED"


# --- instrument() and its disposer ------------------------------------------------------------------------


@async_test
async def test_instrumenting_twice_is_instrumenting_once_and_disposing_twice_is_disposing_once() -> None:
    traced = Traced()
    registry = traced.registry
    registry.register(tool())
    assert instrument(registry, tracer_provider=traced.provider) is traced.dispose
    await registry.execute(call(call_id="one"))
    assert len(traced.spans()) == 1  # one span, not one per instrument() call
    with pytest.raises(ValueError, match="already instrumented with other options"):
        instrument(registry, tracer_provider=traced.provider, record_logs=True)
    with pytest.raises(ValueError, match="already instrumented with other options"):
        instrument(registry)
    traced.dispose()
    traced.dispose()
    await registry.execute(call(call_id="two"))
    assert len(traced.spans()) == 1
    again = instrument(registry, tracer_provider=traced.provider, record_logs=True)
    assert again is not traced.dispose
    await registry.execute(call(call_id="three"))
    assert [span.attributes["gen_ai.tool.call.id"] for span in traced.spans()] == ["one", "three"]  # type: ignore[index]
    again()


@async_test
async def test_after_dispose_nothing_is_recorded_and_a_call_in_flight_still_ends_its_span() -> None:
    traced = Traced()
    release = asyncio.Event()

    async def body(args: Any, run: ToolRunContext) -> str:
        await release.wait()
        return "ok"

    traced.registry.register(tool(body=body))
    traced.registry.register(tool("quick"))
    in_flight = asyncio.ensure_future(traced.registry.execute(call(call_id="in-flight")))
    await asyncio.sleep(0)
    traced.dispose()
    await traced.registry.execute(call("quick", call_id="after"))
    release.set()
    assert not (await in_flight).is_error
    [span] = traced.spans()
    assert span.attributes is not None and span.attributes["gen_ai.tool.call.id"] == "in-flight"
    assert span.status.status_code is StatusCode.UNSET
    # Its post-execute listener was disposed with the rest (the wrapper already running still reports).
    assert events(span) == ALLOWED_AND_DISPATCHED[:3]


def test_an_instrumented_registry_is_freed_like_any_other() -> None:
    registry = ToolRegistry()
    instrument(registry, tracer_provider=TracerProvider())
    gone = weakref.ref(registry)
    del registry
    gc.collect()
    assert gone() is None


def test_instrument_refuses_what_is_not_a_registry() -> None:
    with pytest.raises(TypeError, match="instrument\\(\\) expects a ToolRegistry, got ToolScope"):
        instrument(ToolRegistry().scope("a"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="record_logs must be a bool, got str"):
        instrument(ToolRegistry(), record_logs="yes")  # type: ignore[arg-type]


def test_without_the_api_package_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['opentelemetry'] = None; import dsh_codegen.otel"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert "ImportError: dsh_codegen.otel needs the OpenTelemetry API" in done.stderr
    assert "pip install 'dsh_codegen[otel]'" in done.stderr
