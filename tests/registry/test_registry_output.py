"""Guarantees 57-66 (docs/guarantees.md): output contract, ``finalize_content``, ``on_result``."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from _registry_helpers import async_test, call, echo_tool, error_code, raw_tool, registry_with, text
from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject
from dsh_codegen.registry import (
    UNSET,
    Block,
    Deny,
    ToolExecution,
    ToolExecutionResult,
    ToolFailure,
    ToolOutput,
    ToolRegistry,
    ToolSuccess,
    define_tool,
)


def returning(value: Any) -> Any:
    async def body(args: Any, run: Any) -> Any:
        return value

    return body


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (object(), "value is not lossless JSON"),
        (float("nan"), "value is not lossless JSON"),
        ({"k": {1, 2}}, "value is not lossless JSON"),
        (5, '"value" must be a string'),
        (None, '"value" must be a string'),
    ],
)
@async_test
async def test_b57_body_value_is_snapshotted_and_validated(value: Any, message: str) -> None:
    registry = registry_with(echo_tool(execute=returning(value)))
    result = await registry.execute(call())
    assert text(result) == f'Error: tool "echo" returned invalid output: {message}'
    assert error_code(result) == "INVALID_TOOL_OUTPUT"
    assert isinstance(result, ToolFailure)


def projector_tool(render: Any, meta: Any = None) -> Any:
    return define_tool(
        name="proj",
        description="d",
        parameters={},
        output=ToolOutput(schema={"type": "string"}, render=render, presentation_meta=meta),
        execute=returning("v"),
    )


def broken(_a: Any, _v: Any) -> Any:
    raise RuntimeError("projector broke")


@pytest.mark.parametrize(
    ("render", "meta", "violations"),
    [
        (broken, None, "output.render failed: projector broke"),
        (
            lambda a, v: [{"type": "text", "text": print}],
            None,
            "output.render returned non-lossless JSON",
        ),
        (lambda a, v: "plain string", None, "output.render must return a list of content blocks"),
        (
            lambda a, v: [{"type": "text", "text": v}],
            broken,
            "output.presentation_meta failed: projector broke",
        ),
        (
            lambda a, v: [{"type": "text", "text": v}],
            lambda a, v: {"when": object()},
            "output.presentation_meta returned non-lossless JSON",
        ),
        (
            broken,
            broken,
            "output.render failed: projector broke; output.presentation_meta failed: projector broke",
        ),
    ],
)
@async_test
async def test_b58_failing_projections_fail_the_call(render: Any, meta: Any, violations: str) -> None:
    registry = registry_with(projector_tool(render, meta))
    observed: list[ToolExecutionResult] = []
    registry.on_result(lambda e, r: observed.append(r))
    result = await registry.execute(call("proj", {}))
    assert text(result) == f'Error: tool "proj" returned invalid output: {violations}'
    assert error_code(result) == "INVALID_TOOL_OUTPUT"
    assert isinstance(result, ToolFailure)
    assert observed == [result]


@async_test
async def test_b59_meta_only_when_declared_and_not_for_nested_calls() -> None:
    with_meta = projector_tool(lambda a, v: [{"type": "text", "text": v}], lambda a, v: {"chars": len(v)})
    registry = registry_with(with_meta, echo_tool())
    top = await registry.execute(call("proj", {}))
    assert isinstance(top, ToolSuccess) and top.meta == {"chars": 1}
    plain = await registry.execute(call())
    assert isinstance(plain, ToolSuccess) and plain.meta is UNSET
    tokens: list[Any] = []
    registry.on_pre_execute(lambda e, n: tokens.append(e.token) or n())
    await registry.execute(call())
    nested = await registry.execute(call("proj", {}, parent=tokens[0]))
    assert isinstance(nested, ToolSuccess) and nested.meta is UNSET


@async_test
async def test_b60_conclude_turn_marks_only_successes() -> None:
    async def concluding(args: Any, run: Any) -> str:
        run.conclude_turn()
        return "done"

    async def concluding_failure(args: Any, run: Any) -> str:
        run.conclude_turn()
        raise RuntimeError("failed")

    registry = registry_with(echo_tool(execute=concluding), echo_tool("bad", execute=concluding_failure))
    ok = await registry.execute(call())
    assert isinstance(ok, ToolSuccess) and ok.concludes_turn is True
    bad = await registry.execute(call("bad"))
    assert isinstance(bad, ToolFailure) and not hasattr(bad, "concludes_turn")
    plain = await registry_with(echo_tool()).execute(call())
    assert isinstance(plain, ToolSuccess) and plain.concludes_turn is False

    # A composite forwards the marker only from a successful nested result.
    async def composite(args: Any, run: Any) -> str:
        nested = await registry.execute(call(parent=run.token))
        if isinstance(nested, ToolSuccess) and nested.concludes_turn:
            run.conclude_turn()
        return "composite"

    registry.register(echo_tool("composite", execute=composite))
    forwarded = await registry.execute(call("composite"))
    assert isinstance(forwarded, ToolSuccess) and forwarded.concludes_turn is True
    registry.on_post_execute(
        lambda e, r, n: Block([{"type": "text", "text": "blocked"}]) if e.parent is not None else n()
    )
    blocked = await registry.execute(call("composite"))
    assert isinstance(blocked, ToolSuccess) and blocked.concludes_turn is False


@async_test
async def test_b61_finalize_runs_exactly_once_for_every_outcome() -> None:
    calls: list[str] = []

    def finalize(execution: ToolExecution, result: ToolExecutionResult) -> Any:
        calls.append(text(result))
        return None

    async def explode(args: Any, run: Any) -> Any:
        raise RuntimeError("boom")

    registry = registry_with(
        echo_tool(finalize_content=finalize),
        echo_tool("boom", execute=explode, finalize_content=finalize),
    )
    ok = await registry.execute(call())
    assert text(ok) == "echo:hi"  # None keeps the content
    await registry.execute(call("boom"))
    await registry.execute(call(arguments={"text": 1}))  # invalid arguments
    await registry.execute(call(arguments={"f": print}))  # lossy arguments: skips post-execute
    dispose = registry.on_pre_execute(lambda e, n: Deny("denied"))
    await registry.execute(call())
    dispose()

    def pre_raises(execution: Any, next: Any) -> Any:
        raise RuntimeError("pre broke")

    dispose = registry.on_pre_execute(pre_raises)  # skips post-execute
    await registry.execute(call())
    dispose()
    assert calls == [
        "echo:hi",
        "Error: boom",
        'Error: invalid arguments: "text" must be a string',
        'Error: tool execution arguments must be losslessly JSON-serializable: at "arguments.f", type builtin_function_or_method is not a JSON type',
        "Error: denied",
        "Error: pre broke",
    ]

    raised: list[int] = []

    def raising(execution: Any, result: Any) -> Any:
        raised.append(1)
        raise ValueError("finalizer broke")

    other = registry_with(echo_tool(finalize_content=raising))
    result = await other.execute(call())
    assert text(result) == "Error: finalizer broke"
    assert isinstance(result, ToolFailure) and result.error.info is None
    assert raised == [1]


@async_test
async def test_b62_finalize_is_snapshotted_and_changes_only_content() -> None:
    def finalize(execution: Any, result: Any) -> Any:
        return [{"type": "text", "text": "final: " + text(result)}]

    registry = ToolRegistry()
    dispose = registry.register(echo_tool(finalize_content=finalize))

    def post(execution: Any, result: Any, next: Any) -> Any:
        dispose()  # the tool disappears mid-pipeline
        return next()

    registry.on_post_execute(post)
    result = await registry.execute(call())
    assert isinstance(result, ToolSuccess)
    assert text(result) == "final: echo:hi"
    assert result.value == "echo:hi"
    assert result.meta is UNSET


@async_test
async def test_b63_materialization_errors_reach_finalize() -> None:
    def finalize(execution: Any, result: Any) -> Any:
        return [{"type": "text", "text": text(result)[:24]}]

    tool = define_tool(
        name="meta",
        description="d",
        parameters={},
        output=ToolOutput(
            schema={"type": "string"},
            render=lambda a, v: [{"type": "text", "text": v}],
            presentation_meta=lambda a, v: {"bad": float("inf")},
        ),
        execute=returning("v"),
        finalize_content=finalize,
    )
    registry = registry_with(tool)
    result = await registry.execute(call("meta", {}))
    assert isinstance(result, ToolFailure)
    assert text(result) == 'Error: tool "meta" retur'
    assert result.error.message.endswith("output.presentation_meta returned non-lossless JSON")


@async_test
async def test_b64_on_result_sees_the_returned_frozen_result_once() -> None:
    observed: list[tuple[ToolExecution, ToolExecutionResult]] = []
    registry = registry_with(raw_tool("raw", execute=returning({"a": [1, {"b": 2}]})))
    registry.on_result(lambda e, r: observed.append((e, r)))
    result = await registry.execute(call("raw", {"x": [1]}))
    assert len(observed) == 1
    execution, seen = observed[0]
    assert seen is result
    assert isinstance(result, ToolSuccess)
    assert type(result.value) is FrozenJsonObject
    assert type(result.value["a"]) is FrozenJsonArray
    assert type(result.content) is FrozenJsonArray
    assert type(execution.arguments) is FrozenJsonObject
    with pytest.raises(TypeError):
        result.value["a"][1]["b"] = 3


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot print")


@async_test
async def test_b65_observer_failures_are_contained_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = registry_with(echo_tool())
    seen: list[str] = []

    def sync_raises(e: Any, r: Any) -> None:
        raise RuntimeError("sync observer")

    async def async_raises(e: Any, r: Any) -> None:
        raise RuntimeError("async observer")

    def unprintable(e: Any, r: Any) -> None:
        raise Unprintable()

    registry.on_result(sync_raises)
    registry.on_result(async_raises)
    registry.on_result(unprintable)
    registry.on_result(lambda e, r: seen.append("last"))
    with caplog.at_level(logging.WARNING, logger="dsh_codegen"):
        result = await registry.execute(call())
    assert text(result) == "echo:hi"
    assert seen == ["last"]
    messages = [r.getMessage() for r in caplog.records if r.name == "dsh_codegen"]
    assert len(messages) == 3
    assert "sync observer" in messages[0]
    assert "async observer" in messages[1]
    assert "<unprintable thrown value>" in messages[2]
    assert all(r.levelno == logging.WARNING for r in caplog.records)


@async_test
async def test_b66_observers_cannot_transform_the_result() -> None:
    registry = registry_with(echo_tool())
    replacement = ToolSuccess("other", [{"type": "text", "text": "other"}])
    registry.on_result(lambda e, r: replacement)

    async def async_observer(e: Any, r: Any) -> Any:
        return replacement

    registry.on_result(async_observer)
    result = await registry.execute(call())
    assert text(result) == "echo:hi"
    assert result is not replacement
