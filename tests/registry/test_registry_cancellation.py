"""Guarantees 67-77 (docs/guarantees.md) and asyncio cancellation of the awaiting task."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from _registry_helpers import async_test, call, echo_tool, error_code, registry_with, text
from dsh_codegen.json import FrozenJsonObject
from dsh_codegen.registry import (
    AbortController,
    AbortError,
    AbortSignal,
    Accept,
    Deny,
    ToolError,
    ToolExecution,
    ToolExecutionResult,
    ToolFailure,
    ToolRegistry,
    ToolSuccess,
)

ABORTED_BEFORE = "Error: tool call aborted before dispatch"
ABORTED = "Error: tool call aborted"


def ctx(source: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": source}], "source": source}


async def spin_until(predicate: Any) -> None:
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


def assert_aborted_before_dispatch(result: ToolExecutionResult) -> None:
    assert isinstance(result, ToolFailure)
    assert text(result) == ABORTED_BEFORE
    assert result.error.message == "tool call aborted before dispatch"
    assert result.error.info is not None
    assert (result.error.info.name, result.error.info.code) == (
        "AbortError",
        "ABORTED_BEFORE_DISPATCH",
    )


def assert_aborted(result: ToolExecutionResult) -> None:
    assert isinstance(result, ToolFailure)
    assert text(result) == ABORTED
    assert result.error.message == "tool call aborted"
    assert result.error.info is not None
    assert (result.error.info.name, result.error.info.code) == ("AbortError", "ABORTED")


class Recorder:
    def __init__(self) -> None:
        self.ran: list[str] = []

    async def body(self, args: Any, run: Any) -> str:
        self.ran.append("body")
        return "x"


async def abort_while_a_hook_waits(register: Callable[[ToolRegistry, asyncio.Event], object]) -> None:
    """Abort the caller while the hook ``register`` installs waits on the event before delegating."""
    recorder = Recorder()
    registry = registry_with(echo_tool(execute=recorder.body))
    release = asyncio.Event()
    register(registry, release)
    controller = AbortController()
    task = asyncio.ensure_future(registry.execute(call(signal=controller.signal)))
    await asyncio.sleep(0)
    controller.abort()
    release.set()
    assert_aborted_before_dispatch(await task)
    assert recorder.ran == []


@async_test
async def test_b67_abort_while_pre_execute_awaits() -> None:
    def register(registry: ToolRegistry, release: asyncio.Event) -> object:
        async def slow_pre(execution: ToolExecution, next: Any) -> Any:
            await release.wait()
            return await next()

        return registry.on_pre_execute(slow_pre)

    await abort_while_a_hook_waits(register)


@async_test
async def test_b68_pre_execute_denial_or_error_after_cancel_is_kept() -> None:
    registry = registry_with(echo_tool())
    release = asyncio.Event()
    outcome: dict[str, Any] = {"deny": True}

    async def slow_pre(execution: ToolExecution, next: Any) -> Any:
        await release.wait()
        if outcome["deny"]:
            return Deny("denied late")
        raise RuntimeError("policy failed late")

    registry.on_pre_execute(slow_pre)
    for deny, expected in ((True, "Error: denied late"), (False, "Error: policy failed late")):
        outcome["deny"] = deny
        release.clear()
        controller = AbortController()
        task = asyncio.ensure_future(registry.execute(call(signal=controller.signal)))
        await asyncio.sleep(0)
        controller.abort()
        release.set()
        assert text(await task) == expected


@async_test
async def test_b69_abort_while_a_wrapper_waits_before_delegating() -> None:
    def register(registry: ToolRegistry, release: asyncio.Event) -> object:
        async def wrap(dispatch: Any, next: Any) -> Any:
            await release.wait()
            return await next()

        return registry.wrap_execute(wrap)

    await abort_while_a_hook_waits(register)


@async_test
async def test_b70_wrapper_supplying_an_aborted_signal() -> None:
    recorder = Recorder()
    registry = registry_with(echo_tool(execute=recorder.body))
    registry.wrap_execute(lambda d, n: n(signal=AbortSignal.aborted_signal("budget gone")))
    assert_aborted_before_dispatch(await registry.execute(call()))
    assert recorder.ran == []


@async_test
async def test_b71_cancel_overtaking_a_wrapper_short_circuit_success() -> None:
    recorder = Recorder()
    registry = registry_with(echo_tool(execute=recorder.body))
    controller = AbortController()

    async def wrap(dispatch: Any, next: Any) -> Any:
        controller.abort()
        return ToolSuccess("cached", [{"type": "text", "text": "cached"}], additional_contexts=[ctx("wrapper")])

    registry.wrap_execute(wrap)
    result = await registry.execute(call(signal=controller.signal))
    assert_aborted_before_dispatch(result)
    assert [c["source"] for c in result.additional_contexts] == ["wrapper"]
    assert recorder.ran == []


@async_test
async def test_b72_abort_after_the_body_completed_gives_aborted() -> None:
    async def body(args: Any, run: Any) -> str:
        run.defer_context(ctx("deferred"))
        return "done"

    # during a wrapper, after next() returned
    registry = registry_with(echo_tool(execute=body))
    controller = AbortController()

    async def wrap(dispatch: Any, next: Any) -> Any:
        result = await next()
        controller.abort()
        return result

    registry.wrap_execute(wrap)
    result = await registry.execute(call(signal=controller.signal))
    assert_aborted(result)
    assert [c["source"] for c in result.additional_contexts] == ["deferred"]

    # during post-execute
    other = registry_with(echo_tool(execute=body))
    controller = AbortController()

    def post(execution: Any, result: Any, next: Any) -> Any:
        controller.abort()
        return Accept(additional_contexts=[ctx("post")])

    other.on_post_execute(post)
    result = await other.execute(call(signal=controller.signal))
    assert_aborted(result)
    assert [c["source"] for c in result.additional_contexts] == ["deferred", "post"]


@async_test
async def test_b73_specific_failures_settling_after_cancel_are_kept() -> None:
    class ToolOwnedError(Exception):
        code = "TOOL_STOPPED"

    async def cooperative(args: Any, run: Any) -> str:
        await run.signal.wait()
        raise ToolOwnedError("stopped by its own rules")

    registry = registry_with(echo_tool(execute=cooperative))
    controller = AbortController()
    task = asyncio.ensure_future(registry.execute(call(signal=controller.signal)))
    await asyncio.sleep(0)
    controller.abort()
    result = await task
    assert text(result) == "Error: stopped by its own rules"
    assert error_code(result) == "TOOL_STOPPED"

    # a wrapper failure settling after cancel
    wrapped = registry_with(echo_tool())
    controller = AbortController()

    async def failing_wrapper(dispatch: Any, next: Any) -> Any:
        await next()
        controller.abort()
        return ToolFailure(ToolError("wrapper says no"), [{"type": "text", "text": "Error: wrapper says no"}])

    wrapped.wrap_execute(failing_wrapper)
    assert text(await wrapped.execute(call(signal=controller.signal))) == "Error: wrapper says no"

    # a post-policy failure settling after cancel
    posted = registry_with(echo_tool())
    controller = AbortController()

    def post(execution: Any, result: Any, next: Any) -> Any:
        controller.abort()
        raise RuntimeError("post policy failed")

    posted.on_post_execute(post)
    assert text(await posted.execute(call(signal=controller.signal))) == "Error: post policy failed"

    # a body re-raising the caller's abort reason is the plain ABORTED outcome
    async def forwarding(args: Any, run: Any) -> str:
        await run.signal.wait()
        run.signal.throw_if_aborted()
        return "unreachable"

    forwarded = registry_with(echo_tool(execute=forwarding))
    controller = AbortController()
    task = asyncio.ensure_future(forwarded.execute(call(signal=controller.signal)))
    await asyncio.sleep(0)
    controller.abort()
    assert_aborted(await task)


@async_test
async def test_b74_an_uncooperative_started_body_is_awaited() -> None:
    release = asyncio.Event()
    finished: list[str] = []

    async def stubborn(args: Any, run: Any) -> str:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                pass  # ignores its cancellation and its signal
        finished.append("body")
        return "late"

    registry = registry_with(echo_tool(execute=stubborn))
    controller = AbortController()
    task = asyncio.ensure_future(registry.execute(call(signal=controller.signal)))
    await asyncio.sleep(0)
    controller.abort()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not task.done()
    release.set()
    result = await task
    assert finished == ["body"]
    assert_aborted(result)


@async_test
async def test_b75_pre_aborted_entry_skips_every_phase() -> None:
    recorder = Recorder()
    registry = registry_with(echo_tool(execute=recorder.body))
    phases: list[str] = []
    observed: list[tuple[ToolExecution, ToolExecutionResult]] = []
    registry.on_pre_execute(lambda e, n: phases.append("pre") or n())
    registry.guard(lambda e: phases.append("guard") or None)  # type: ignore[func-returns-value]
    registry.wrap_execute(lambda d, n: phases.append("wrap") or n())
    registry.on_post_execute(lambda e, r, n: phases.append("post") or n())
    registry.on_result(lambda e, r: observed.append((e, r)))
    signal = AbortSignal.aborted_signal()
    arguments = {"text": "hi", "n": [1]}
    result = await registry.execute(call(arguments=arguments, signal=signal))
    assert_aborted_before_dispatch(result)
    assert phases == [] and recorder.ran == []
    assert len(observed) == 1
    execution, seen = observed[0]
    assert seen is result
    assert execution.signal is signal
    assert type(execution.arguments) is FrozenJsonObject and execution.arguments == arguments
    assert type(arguments) is dict


@async_test
async def test_b76_argument_failure_wins_over_a_pre_aborted_signal() -> None:
    registry = registry_with(echo_tool())
    result = await registry.execute(call(arguments={"f": print}, signal=AbortSignal.aborted_signal()))
    assert text(result).startswith("Error: tool execution arguments must be losslessly JSON-serializable: ")


@async_test
async def test_b77_pre_aborted_collapsed_call_is_aborted_not_unknown() -> None:
    registry = registry_with(echo_tool(), mode="code")
    collapsed = await registry.execute(call())
    assert error_code(collapsed) == "UNKNOWN_TOOL"
    assert text(collapsed) == (
        'Error: unknown tool "echo": only `run_code` is callable directly \u2014 call `echo`'
        " from inside a `run_code` program instead"
    )
    aborted = await registry.execute(call(signal=AbortSignal.aborted_signal()))
    assert_aborted_before_dispatch(aborted)


# --- asyncio cancellation of the task awaiting execute() --------------------------------


@async_test
async def test_task_cancel_during_body_records_aborted_and_reraises() -> None:
    started = asyncio.Event()
    state: dict[str, Any] = {}

    async def body(args: Any, run: Any) -> str:
        state["signal"] = run.signal
        run.defer_context(ctx("deferred"))
        started.set()
        try:
            # The body never sees the CancelledError: it learns from its signal.
            await run.signal.wait()
        finally:
            state["settled"] = True
        return "unreachable"

    finalized: list[str] = []
    registry = registry_with(echo_tool(execute=body, finalize_content=lambda e, r: finalized.append(text(r))))
    observed: list[ToolExecutionResult] = []
    registry.on_result(lambda e, r: observed.append(r))
    task = asyncio.ensure_future(registry.execute(call()))
    await started.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("execute() must re-raise CancelledError")
    assert task.cancelled()
    assert state["settled"] is True
    assert state["signal"].aborted
    assert isinstance(state["signal"].reason, AbortError)
    assert len(observed) == 1
    assert_aborted(observed[0])
    assert [c["source"] for c in observed[0].additional_contexts] == ["deferred"]
    assert finalized == [ABORTED]


@async_test
async def test_task_cancel_before_dispatch_records_aborted_before_dispatch() -> None:
    recorder = Recorder()
    registry = registry_with(echo_tool(execute=recorder.body))
    entered = asyncio.Event()

    async def slow_pre(execution: Any, next: Any) -> Any:
        entered.set()
        await asyncio.sleep(10)
        return await next()

    registry.on_pre_execute(slow_pre)
    post_seen: list[str] = []
    registry.on_post_execute(lambda e, r, n: post_seen.append("post") or n())
    observed: list[ToolExecutionResult] = []
    registry.on_result(lambda e, r: observed.append(r))
    task = asyncio.ensure_future(registry.execute(call()))
    await entered.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert recorder.ran == []
    assert post_seen == []
    assert len(observed) == 1
    assert_aborted_before_dispatch(observed[0])


@async_test
async def test_second_cancellation_during_cleanup_does_not_orphan_the_body() -> None:
    started = asyncio.Event()
    cleanup_started = asyncio.Event()
    cleanup_release = asyncio.Event()
    state: list[str] = []

    async def body(args: Any, run: Any) -> str:
        started.set()
        await run.signal.wait()
        state.append("aborted")
        cleanup_started.set()
        try:
            while not cleanup_release.is_set():
                try:
                    await cleanup_release.wait()  # slow cleanup
                except asyncio.CancelledError:
                    state.append("second cancellation")  # cancels the cleanup's await, as asyncio would
        finally:
            state.append("cleanup over")
        raise RuntimeError("stopped")

    registry = registry_with(echo_tool(execute=body))
    observed: list[ToolExecutionResult] = []

    async def slow_observer(execution: Any, result: Any) -> None:
        observed.append(result)

    registry.on_result(slow_observer)
    task = asyncio.ensure_future(registry.execute(call()))
    await started.wait()
    task.cancel()
    await cleanup_started.wait()
    task.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()  # still waiting for the body to settle
    assert state == ["aborted", "second cancellation"]
    cleanup_release.set()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert state == ["aborted", "second cancellation", "cleanup over"]
    assert len(observed) == 1
    # The body's own failure is more specific than ABORTED and is kept.
    assert isinstance(observed[0], ToolFailure)
    assert observed[0].error.message == "stopped"


class OrderedGate:
    """A gate whose commit waits for a release event (like a scheduler keeping model order)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.release_commit = asyncio.Event()
        self.release_commit.set()

    @contextlib.asynccontextmanager
    async def policy(self) -> AsyncIterator[None]:
        self.events.append("policy:enter")
        yield
        self.events.append("policy:exit")

    @contextlib.asynccontextmanager
    async def commit(self) -> AsyncIterator[None]:
        await self.release_commit.wait()
        self.events.append("commit:enter")
        yield
        self.events.append("commit:exit")


@async_test
async def test_gate_wraps_policy_and_commit_and_never_the_body() -> None:
    gate = OrderedGate()

    async def body(args: Any, run: Any) -> str:
        gate.events.append("body")
        return "x"

    registry = registry_with(echo_tool(execute=body))
    registry.on_pre_execute(lambda e, n: gate.events.append("pre") or n())
    registry.on_post_execute(lambda e, r, n: gate.events.append("post") or n())
    registry.on_result(lambda e, r: gate.events.append("result"))
    result = await registry.execute(call(), gate=gate)
    assert text(result) == "x"
    assert gate.events == [
        "policy:enter",
        "pre",
        "policy:exit",
        "body",
        "commit:enter",
        "post",
        "result",
        "commit:exit",
    ]
    # A pre-aborted call never enters the policy gate but commits once.
    gate.events.clear()
    result = await registry.execute(call(signal=AbortSignal.aborted_signal()), gate=gate)
    assert_aborted_before_dispatch(result)
    assert gate.events == ["commit:enter", "result", "commit:exit"]


@async_test
async def test_cancel_while_waiting_for_the_commit_gate_still_observes_once() -> None:
    gate = OrderedGate()
    gate.release_commit.clear()
    registry = registry_with(echo_tool())
    observed: list[ToolExecutionResult] = []
    registry.on_result(lambda e, r: observed.append(r))
    task = asyncio.ensure_future(registry.execute(call(), gate=gate))
    await spin_until(lambda: "policy:exit" in gate.events)
    await asyncio.sleep(0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert len(observed) == 1
    assert_aborted(observed[0])
    assert "commit:enter" not in gate.events


@async_test
async def test_signal_primitives() -> None:
    controller = AbortController()
    signal = controller.signal
    calls: list[object] = []
    remove = signal.add_listener(lambda s: calls.append(("first", s.reason)))
    signal.add_listener(lambda s: calls.append(("second", s.reason)))
    remove()
    remove()
    fused = AbortSignal.any([signal, AbortController().signal])
    waiter = asyncio.ensure_future(fused.wait())
    await asyncio.sleep(0)
    assert not signal.aborted and signal.reason is None
    signal.throw_if_aborted()
    controller.abort("why")
    controller.abort("ignored")
    assert signal.aborted and signal.reason == "why"
    assert calls == [("second", "why")]
    assert await waiter == "why"
    assert fused.aborted and fused.reason == "why"
    try:
        AbortSignal.aborted_signal().throw_if_aborted()
    except AbortError as exc:
        assert exc.code == "ABORTED"
    else:
        raise AssertionError("throw_if_aborted must raise")
    late = signal.add_listener(lambda s: calls.append("late"))
    late()
    assert calls == [("second", "why")]
    timed = AbortSignal.timeout(0.001)
    reason = await timed.wait()
    assert isinstance(reason, TimeoutError)
    born = AbortSignal.any([AbortSignal.aborted_signal("early"), AbortController().signal])
    assert born.aborted and born.reason == "early"
    assert ToolRegistry().schemas() == []


def test_aborted_is_one_property_that_a_derived_signal_answers_by_polling() -> None:
    # A plain signal, and a derived one that polls its source; no method twin of the property.
    from dsh_codegen.registry.cancel import derive_signal, release_signal

    controller = AbortController()
    derived = derive_signal((controller.signal,))
    released = derive_signal((AbortController().signal,))
    release_signal(released)
    assert (controller.signal.aborted, derived.aborted, released.aborted) == (False, False, False)
    controller.abort("why")
    assert controller.signal.aborted
    assert derived.aborted and derived.reason == "why"
    assert not released.aborted
    assert AbortSignal.aborted_signal().aborted
    assert not hasattr(AbortSignal, "is_aborted")


@async_test
async def test_finished_calls_leave_nothing_on_the_caller_signal() -> None:
    fired: list[int] = []

    async def listening(args: Any, run: Any) -> str:
        run.signal.add_listener(lambda s: fired.append(1))
        return "x"

    registry = registry_with(echo_tool(execute=listening))
    controller = AbortController()
    for _ in range(50):
        assert text(await registry.execute(call(signal=controller.signal))) == "x"
    assert controller.signal._listeners in (None, {})
    controller.abort()
    assert fired == []  # the finished bodies' signals no longer follow the caller


def test_a_derived_signal_released_after_its_source_aborted_reads_aborted() -> None:
    # Nobody listened, so nothing polled the source before the release: the release settles it.
    from dsh_codegen.registry.cancel import derive_signal, release_signal

    source = AbortController()
    derived = derive_signal((source.signal,))
    source.abort("stop")
    release_signal(derived)
    assert derived.aborted and derived.reason == "stop"
    untouched = derive_signal((AbortController().signal,))
    release_signal(untouched)
    assert not untouched.aborted
