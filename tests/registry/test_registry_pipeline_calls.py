"""What a call's objects are, and when the pipeline reads the registry's state.

Results, run contexts and fused signals are what their constructors make;
the listeners are read when the call's coroutine starts (not at
``execute()``), so a listener registered or disposed in between applies;
a suspended body is driven to its value.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import gc
from pathlib import Path
from typing import Any

import pytest

from dsh_codegen.registry import (
    AbortSignal,
    Deny,
    ToolExecution,
    ToolError,
    ToolExecutionToken,
    ToolFailure,
    ToolRunContext,
    ToolSuccess,
)
from dsh_codegen.registry._execution import FollowingRunContext

from _registry_helpers import async_test, call, echo_tool, error_code, registry_with, text


def _slots(kind: type) -> set[str]:
    names: set[str] = set()
    for klass in kind.__mro__:
        names.update(getattr(klass, "__slots__", ()))
    names.discard("__weakref__")
    names.discard("__dict__")
    return names


@async_test
async def test_run_context_signal_and_result_are_what_their_constructors_make() -> None:
    seen: dict[str, Any] = {}

    async def body(args: Any, run: ToolRunContext) -> str:
        seen["run"] = run
        # Given at construction (made at entry), not made when first read: read it raw first.
        seen["execution_given"] = run._execution
        seen["signal"] = run.signal
        seen["aborted_inside"] = run.signal.aborted
        seen["sources_inside"] = run.signal._sources
        return "ok"

    registry = registry_with(echo_tool(execute=body))
    request = call()
    result = await registry.execute(request)

    assert type(result) is ToolSuccess
    assert result == ToolSuccess("ok", [{"type": "text", "text": "ok"}])
    assert dataclasses.replace(result, value="x").value == "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.value = "y"  # type: ignore[misc]
    assert repr(result).startswith("ToolSuccess(value='ok'")

    run = seen["run"]
    assert isinstance(run, ToolRunContext) and type(run) is FollowingRunContext
    assert run._deferred is None and run._concluded is False
    execution = run.execution
    assert type(execution) is ToolExecution and seen["execution_given"] is execution
    assert "_source" not in _slots(type(run))  # nothing to make the execution from later
    assert execution._fields == ToolExecution._fields
    assert type(execution.token) is ToolExecutionToken
    assert (execution.call_id, execution.name, execution.arguments) == ("c1", "echo", {"text": "hi"})
    assert (execution.signal, execution.agent, execution.parent, execution.root_call_id) == (
        request.signal,
        None,
        None,
        None,
    )
    assert execution == ToolExecution(*execution)

    signal = seen["signal"]
    assert type(signal) is AbortSignal
    assert seen["aborted_inside"] is False
    assert seen["sources_inside"] == (request.signal,)
    fresh = AbortSignal()
    for slot in _slots(AbortSignal):
        assert getattr(signal, slot) == getattr(fresh, slot), slot  # released: no sources left


def test_results_are_plain_frozen_slotted_dataclasses() -> None:
    # Every field lives in the instance's slots (no attribute dict, no default read from the class).
    for result in (ToolSuccess("v", ()), ToolFailure(ToolError("m"), ())):
        kind = type(result)
        assert not hasattr(result, "__dict__")
        assert set(kind.__slots__) == {field.name for field in dataclasses.fields(result)}
        for field in dataclasses.fields(result):
            assert field.name not in vars(kind) or type(vars(kind)[field.name]).__name__ == "member_descriptor"
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.content = ()  # type: ignore[misc]


def test_a_call_is_an_entry_record_no_stage_writes_and_one_settlement_record() -> None:
    from dsh_codegen.registry import pipeline
    from dsh_codegen.registry.pipeline._call import BodyCancellation, CallEntry, CallSettlement

    # What entry read, with the execution made then; how the call settles is one plain
    # record, its cancellation two fields: the error to re-raise, and what a running
    # body's driver saw.
    entry_fields = [field.name for field in dataclasses.fields(CallEntry)]
    assert entry_fields == [
        "registry",
        "execution",
        "chain",
        "compiled",
        "version",
        "listeners",
        "gate",
        "failure",
        "settlement",
    ]
    for record in (CallEntry, CallSettlement, BodyCancellation):
        assert set(vars(record)["__slots__"]) == {field.name for field in dataclasses.fields(record)}
    settlement = CallSettlement(None)
    assert not hasattr(settlement, "__dict__")
    names = {field.name for field in dataclasses.fields(settlement)}
    assert {name for name in names if "cancel" in name} == {"cancelled", "body_cancellation"}
    assert {field.name for field in dataclasses.fields(BodyCancellation)} == {"error", "task", "requests", "settled"}
    # The entry record never changes: no module of the pipeline assigns one of its fields
    # (it is not frozen, so that reading and building it stay cheap; this is what holds it).
    written = []
    for path in sorted(Path(pipeline.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            else:
                targets = []
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Store):
                        # (an object's own attributes, set in its __init__, are not the call's)
                        owner = part.value
                        if part.attr in entry_fields and not (isinstance(owner, ast.Name) and owner.id == "self"):
                            written.append(f"{path.name}:{part.lineno} .{part.attr}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                written.append(f"{path.name}:{node.lineno} setattr")
    assert written == []


@async_test
async def test_each_call_mints_its_own_token() -> None:
    tokens = []

    async def body(args: Any, run: ToolRunContext) -> str:
        tokens.append(run.token)
        return "ok"

    registry = registry_with(echo_tool(execute=body))
    for _ in range(3):
        await registry.execute(call())
    assert len({id(token) for token in tokens}) == 3


@async_test
async def test_the_body_and_the_observers_share_one_execution_even_after_the_call() -> None:
    # The execution is made at entry, once; a run context the body kept still reads
    # that same object once the call is over.
    kept: list[ToolRunContext] = []

    async def body(args: Any, run: ToolRunContext) -> str:
        kept.append(run)
        return "ok"

    observed: list[ToolExecution] = []
    registry = registry_with(echo_tool(execute=body))
    registry.on_result(lambda execution, result: observed.append(execution))
    request = call(call_id="c7")
    await registry.execute(request)
    [run] = kept
    assert run.execution is observed[0]
    assert (run.call_id, run.name, run.arguments, run.execution.signal) == (
        "c7",
        "echo",
        {"text": "hi"},
        request.signal,
    )


@async_test
async def test_a_plain_call_leaves_no_cyclic_garbage() -> None:
    # The call's records, its execution and its run context form no cycle: reference
    # counting frees them all when the call returns.
    kept: list[ToolRunContext] = []

    async def body(args: Any, run: ToolRunContext) -> str:
        if not kept:
            kept.append(run)
        return "ok"

    registry = registry_with(echo_tool(execute=body))
    await registry.execute(call())
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            assert text(await registry.execute(call())) == "ok"
        unreachable = gc.collect()
    finally:
        gc.enable()
    assert unreachable == 0
    assert kept[0].token is kept[0].execution.token  # the first call's kept context still reads


@async_test
async def test_an_observer_added_after_execute_but_before_the_await_sees_the_call() -> None:
    registry = registry_with(echo_tool())
    pending = registry.execute(call())  # no listener yet: the plain path was chosen
    observed: list[Any] = []
    registry.on_result(lambda execution, result: observed.append(result))
    result = await pending
    assert observed == [result]
    assert text(result) == "echo:hi"


@async_test
async def test_a_guard_added_after_execute_but_before_the_await_applies() -> None:
    ran: list[str] = []

    async def body(args: Any, run: ToolRunContext) -> str:
        ran.append("body")
        return "ok"

    registry = registry_with(echo_tool(execute=body))
    pending = registry.execute(call())
    registry.guard(lambda execution: "not now")
    result = await pending
    assert isinstance(result, ToolFailure)
    assert text(result) == "Error: not now"
    assert ran == []


@async_test
async def test_a_listener_removed_after_execute_but_before_the_await_does_not_run() -> None:
    registry = registry_with(echo_tool())
    dispose = registry.on_pre_execute(lambda execution, next: Deny("no"))
    pending = registry.execute(call())  # a listener: the Python stages were chosen
    dispose()
    result = await pending
    assert isinstance(result, ToolSuccess)


@async_test
async def test_a_body_that_suspends_is_driven_to_its_value() -> None:
    loop = asyncio.get_running_loop()
    gate: asyncio.Future[str] = loop.create_future()
    steps: list[str] = []

    async def body(args: Any, run: ToolRunContext) -> str:
        steps.append("start")
        await asyncio.sleep(0)
        steps.append("after sleep")
        value = await gate
        steps.append("after future")
        assert not run.signal.aborted
        return value

    registry = registry_with(echo_tool(execute=body))
    task = asyncio.ensure_future(registry.execute(call()))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert steps == ["start", "after sleep"]
    gate.set_result("late")
    result = await task
    assert text(result) == "late"
    assert steps == ["start", "after sleep", "after future"]


@async_test
async def test_a_body_returning_a_plain_future_is_awaited() -> None:
    loop = asyncio.get_running_loop()

    def body(args: Any, run: ToolRunContext) -> asyncio.Future[str]:
        future: asyncio.Future[str] = loop.create_future()
        loop.call_soon(future.set_result, "from a future")
        return future

    registry = registry_with(echo_tool(execute=body))  # type: ignore[arg-type]
    assert text(await registry.execute(call())) == "from a future"


@async_test
async def test_a_body_failing_before_or_after_suspending_is_an_error_result() -> None:
    async def early(args: Any, run: ToolRunContext) -> str:
        raise ValueError("early")

    async def late(args: Any, run: ToolRunContext) -> str:
        await asyncio.sleep(0)
        raise ValueError("late")

    registry = registry_with(echo_tool("early", execute=early), echo_tool("late", execute=late))
    assert text(await registry.execute(call("early"))) == "Error: early"
    assert text(await registry.execute(call("late"))) == "Error: late"


@async_test
async def test_cancelling_a_plain_call_while_its_body_is_suspended() -> None:
    finalized: list[Any] = []
    loop = asyncio.get_running_loop()
    release: asyncio.Future[None] = loop.create_future()

    async def body(args: Any, run: ToolRunContext) -> str:
        await asyncio.sleep(0)
        try:
            await loop.create_future()  # the registry cancels this await (and aborts the signal)
        except asyncio.CancelledError:
            assert run.signal.aborted
        await release  # the body finishes its own way; the registry waits
        return "finished anyway"

    def finalize(execution: Any, result: Any) -> None:
        finalized.append(result)

    registry = registry_with(echo_tool(execute=body, finalize_content=finalize))
    task = asyncio.ensure_future(registry.execute(call()))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0)
    assert not task.done()  # the body has not settled yet
    release.set_result(None)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(finalized) == 1
    assert error_code(finalized[0]) == "ABORTED"


@async_test
async def test_lossy_arguments_and_a_pre_aborted_signal_still_finalize_once() -> None:
    from dsh_codegen.registry import AbortController

    finalized: list[Any] = []
    registry = registry_with(echo_tool(finalize_content=lambda execution, result: finalized.append(result)))
    lossy = await registry.execute(call(arguments={"text": float("nan")}))
    assert (
        text(lossy)
        == 'Error: tool execution arguments must be losslessly JSON-serializable: at "arguments.text", NaN is not a JSON number'
    )
    controller = AbortController()
    controller.abort()
    aborted = await registry.execute(call(signal=controller.signal))
    assert error_code(aborted) == "ABORTED_BEFORE_DISPATCH"
    assert finalized == [lossy, aborted]


def test_call_descriptions_are_the_same_named_tuples_however_they_are_built() -> None:
    from dsh_codegen.registry import AbortController, ToolExecutionInput

    signal = AbortController().signal
    positional = ToolExecutionInput("c1", "echo", {"text": "hi"}, signal)
    keywords = ToolExecutionInput(call_id="c1", name="echo", arguments={"text": "hi"}, signal=signal)
    full = ToolExecutionInput("c1", "echo", {"text": "hi"}, signal, "agent", None, "root")
    assert type(positional) is ToolExecutionInput and type(full) is ToolExecutionInput
    assert positional == keywords == ("c1", "echo", {"text": "hi"}, signal, None, None, None)
    assert (full.agent, full.parent, full.root_call_id) == ("agent", None, "root")
    assert positional._replace(name="other").name == "other"
    assert ToolExecutionInput._make(tuple(full)) == full
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'signal'"):
        ToolExecutionInput("c1", "echo", {})  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes from 5 to 8 positional arguments but 9 were given"):
        ToolExecutionInput("c1", "echo", {}, signal, None, None, None, "extra")  # type: ignore[call-arg]


@async_test
async def test_a_guard_disposed_after_execute_but_before_the_await_does_not_run() -> None:
    registry = registry_with(echo_tool())
    dispose = registry.guard(lambda execution: "blocked")
    assert isinstance(await registry.execute(call()), ToolFailure)
    pending = registry.execute(call())
    dispose()
    result = await pending
    assert isinstance(result, ToolSuccess)
    assert text(result) == "echo:hi"


@async_test
async def test_the_fused_signal_made_late_is_the_one_an_early_one_would_be() -> None:
    from dsh_codegen.registry import AbortController

    kept: dict[str, ToolRunContext] = {}
    controller = AbortController()

    async def untouched(args: Any, run: ToolRunContext) -> str:
        kept["untouched"] = run  # never looks at run.signal while it runs
        controller.abort("stop")
        return "done"

    async def watching(args: Any, run: ToolRunContext) -> str:
        kept["watching"] = run
        assert not run.signal.aborted
        controller2.abort("stop")
        assert run.signal.aborted and run.signal.reason == "stop"
        return "done"

    registry = registry_with(echo_tool("untouched", execute=untouched), echo_tool("watching", execute=watching))
    first = await registry.execute(call("untouched", signal=controller.signal))
    assert error_code(first) == "ABORTED"
    # Released before anyone looked: like an eager fused signal nobody polled, it never aborted.
    late = kept["untouched"].signal
    assert late.aborted is False and late._sources is None
    controller2 = AbortController()
    second = await registry.execute(call("watching", signal=controller2.signal))
    assert error_code(second) == "ABORTED"
    made = kept["watching"].signal
    assert made.aborted and made.reason == "stop" and made._sources is None
