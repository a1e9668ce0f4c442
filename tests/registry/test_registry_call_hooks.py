"""on_execute call hooks: entered once at entry, settled exactly once with the final result, in the call's context."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

import pytest

from _registry_helpers import async_test, call, echo_tool, error_code, registry_with, text
from dsh_codegen.registry import (
    TOOL_ABORTED,
    AbortController,
    Deny,
    ToolExecution,
    ToolExecutionResult,
    ToolRunContext,
)

pytestmark = pytest.mark.once  # orchestration only: nothing here depends on the schema twin

CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("CURRENT", default="outside")


class Recorder:
    """A hook recording what it saw, and the settles of the calls it entered."""

    def __init__(self, label: str = "hook", log: list[str] | None = None) -> None:
        self.label = label
        self.log = log if log is not None else []
        self.entered: list[ToolExecution] = []
        self.settled: list[tuple[ToolExecutionResult | None, BaseException | None]] = []

    def __call__(self, execution: ToolExecution) -> Any:
        self.entered.append(execution)
        self.log.append(f"enter {self.label} {execution.call_id}")

        def settle(result: ToolExecutionResult | None, error: BaseException | None) -> None:
            self.settled.append((result, error))
            self.log.append(f"settle {self.label} {execution.call_id}")

        return settle


@async_test
async def test_a_hook_spans_the_call_and_settles_once_with_the_result_observers_saw() -> None:
    log: list[str] = []
    registry = registry_with(echo_tool())
    hook = Recorder(log=log)
    registry.on_execute(hook)
    observed: list[tuple[Any, Any]] = []

    def observer(execution: Any, result: Any) -> None:
        log.append("observer")
        observed.append((execution, result))

    registry.on_result(observer)
    result = await registry.execute(call(call_id="c7"))
    assert text(result) == "echo:hi"
    assert log == ["enter hook c7", "observer", "settle hook c7"]
    [(execution, seen)] = observed
    assert hook.entered == [execution]  # the one execution every listener sees
    assert hook.settled == [(result, None)] and seen is result


@async_test
async def test_entry_failures_and_denials_are_entered_and_settled_too() -> None:
    registry = registry_with(echo_tool())
    hook = Recorder()
    registry.on_execute(hook)
    lossy = await registry.execute(call(arguments={"text": {1, 2}}, call_id="lossy"))
    registry.on_pre_execute(lambda execution, next: Deny("no echo today"))
    denied = await registry.execute(call(call_id="denied"))
    assert [execution.call_id for execution in hook.entered] == ["lossy", "denied"]
    assert hook.settled == [(lossy, None), (denied, None)]
    assert lossy.is_error and denied.is_error and denied.error.message == "no echo today"  # type: ignore[union-attr]


@pytest.mark.parametrize("stop", ["cancel the task", "abort the signal"])
@async_test
async def test_a_stopped_call_settles_once_with_its_aborted_result(stop: str) -> None:
    controller = AbortController()
    started = asyncio.Event()

    async def slow(args: Any, run: ToolRunContext) -> str:
        started.set()
        await run.signal.wait()
        return "late"

    registry = registry_with(echo_tool(execute=slow))
    hook = Recorder()
    registry.on_execute(hook)
    task = asyncio.ensure_future(registry.execute(call(signal=controller.signal)))
    await started.wait()
    if stop == "cancel the task":
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        controller.abort()
        await task
    [(result, error)] = hook.settled
    assert result is not None and error_code(result) == TOOL_ABORTED
    if stop == "cancel the task":
        assert isinstance(error, asyncio.CancelledError)
    else:
        assert error is None and result is task.result()


class Escape(SystemExit):
    """Ends the process: with KeyboardInterrupt, the one kind of exception a body raises that leaves execute."""


@async_test
async def test_an_exception_escaping_execute_settles_with_no_result() -> None:
    async def body(args: Any, run: ToolRunContext) -> str:
        raise Escape("out")

    registry = registry_with(echo_tool(execute=body))
    hook = Recorder()
    registry.on_execute(hook)
    with pytest.raises(Escape) as caught:
        await registry.execute(call())
    assert hook.settled == [(None, caught.value)]


@async_test
async def test_hooks_enter_in_order_and_settle_in_reverse_order() -> None:
    log: list[str] = []
    registry = registry_with(echo_tool())
    registry.on_execute(Recorder("a", log))
    registry.on_execute(Recorder("b", log))
    await registry.execute(call(call_id="c"))
    assert log == ["enter a c", "enter b c", "settle b c", "settle a c"]


@async_test
async def test_the_hook_runs_in_the_calls_context_from_entry_to_settlement() -> None:
    seen: list[str] = []

    async def body(args: Any, run: ToolRunContext) -> str:
        seen.append(f"body {CURRENT.get()}")
        await asyncio.sleep(0)
        return "ok"

    def hook(execution: ToolExecution) -> Any:
        token = CURRENT.set(execution.call_id)

        def settle(result: Any, error: Any) -> None:
            seen.append(f"settle {CURRENT.get()}")
            CURRENT.reset(token)  # raises ValueError in any other context

        return settle

    registry = registry_with(echo_tool(execute=body))
    registry.on_execute(hook)
    registry.on_result(lambda execution, result: seen.append(f"observer {CURRENT.get()}"))
    await asyncio.gather(registry.execute(call(call_id="c1")), registry.execute(call(call_id="c2")))
    await registry.execute(call(call_id="c3"))
    assert CURRENT.get() == "outside"
    assert sorted(seen) == sorted(
        f"{where} {call_id}" for call_id in ("c1", "c2", "c3") for where in ("body", "observer", "settle")
    )


@async_test
async def test_a_hook_disposed_while_its_call_runs_still_settles_it_and_sees_no_later_call() -> None:
    gate = asyncio.Event()

    async def body(args: Any, run: ToolRunContext) -> str:
        await gate.wait()
        return "ok"

    registry = registry_with(echo_tool(execute=body))
    hook = Recorder()
    dispose = registry.on_execute(hook)
    task = asyncio.ensure_future(registry.execute(call(call_id="first")))
    await asyncio.sleep(0)
    dispose()
    gate.set()
    first = await task
    await registry.execute(call(call_id="second"))
    assert [execution.call_id for execution in hook.entered] == ["first"]
    assert hook.settled == [(first, None)]


@async_test
async def test_a_scoped_hook_sees_only_the_calls_of_its_chain() -> None:
    registry = registry_with(echo_tool())
    scope = registry.scope("agent-a")
    hook = Recorder()
    scope.on_execute(hook)
    await registry.execute(call(call_id="global"))
    await registry.execute(call(call_id="other", agent="agent-b"))
    await registry.execute(call(call_id="mine", agent="agent-a"))
    scope.dispose()
    await registry.execute(call(call_id="after", agent="agent-a"))
    assert [execution.call_id for execution in hook.entered] == ["mine"]
    assert len(hook.settled) == 1


@async_test
async def test_raising_hooks_and_settles_are_logged_and_change_nothing(caplog: pytest.LogCaptureFixture) -> None:
    registry = registry_with(echo_tool())
    kept = Recorder()

    def raising_hook(execution: Any) -> Any:
        raise RuntimeError("hook broke")

    def odd_hook(execution: Any) -> Any:
        return "not callable"

    def raising_settle_hook(execution: Any) -> Any:
        def settle(result: Any, error: Any) -> None:
            raise ValueError("settle broke")

        return settle

    for hook in (raising_hook, kept, odd_hook, raising_settle_hook):
        registry.on_execute(hook)
    with caplog.at_level(logging.WARNING, logger="dsh_codegen"):
        result = await registry.execute(call())
    assert text(result) == "echo:hi"
    assert kept.settled == [(result, None)]
    messages = [record.getMessage() for record in caplog.records]
    assert any("raised: hook broke" in message for message in messages)
    assert any("returned str, not a callable or None" in message for message in messages)
    assert any("raised: settle broke" in message for message in messages)


def test_a_hook_must_be_synchronous() -> None:
    registry = registry_with(echo_tool())

    async def hook(execution: Any) -> None:
        return None

    with pytest.raises(TypeError, match=r"on_execute\(\): listener must be synchronous"):
        registry.on_execute(hook)
    with pytest.raises(TypeError, match=r"on_execute\(\): listener must be callable"):
        registry.on_execute("no")  # type: ignore[arg-type]
