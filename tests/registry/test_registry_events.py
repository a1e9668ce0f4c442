"""``run.report_progress`` / ``run.log`` and ``watch_tool_events``: events reach the caller's listeners."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from dsh_codegen import (
    AbortController,
    ToolEvent,
    ToolExecutionInput,
    ToolLog,
    ToolProgress,
    ToolRegistry,
    ToolSuccess,
    define_tool,
    watch_tool_events,
)
from dsh_codegen.registry import ToolOutput

from _shared_helpers import RecordingApprovals


def registry_with(body: Any) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(
        define_tool(
            name="work",
            description="Reports while it works.",
            parameters={},
            output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}]),
            execute=body,
        )
    )
    return registry


def execute(registry: ToolRegistry) -> Any:
    return asyncio.run(registry.execute(ToolExecutionInput("c1", "work", {}, AbortController().signal)))


def test_events_reach_every_enclosing_listener_in_order() -> None:
    async def body(args: Any, run: Any) -> str:
        run.report_progress(1, 4, "a quarter")
        run.log("info", {"step": 1}, logger="worker")
        await asyncio.to_thread(run.report_progress, 4, 4)  # a worker thread reports too
        return "done"

    registry = registry_with(body)
    outer: list[ToolEvent] = []
    inner: list[ToolEvent] = []

    async def main() -> Any:
        with watch_tool_events(outer.append):
            with watch_tool_events(inner.append):
                return await registry.execute(ToolExecutionInput("c1", "work", {}, AbortController().signal))

    result = asyncio.run(main())
    assert isinstance(result, ToolSuccess)
    assert outer == inner and len(outer) == 3
    first, second, third = outer
    assert isinstance(first, ToolProgress) and (first.progress, first.total, first.message) == (1, 4, "a quarter")
    assert isinstance(second, ToolLog) and (second.level, second.data, second.logger) == ("info", {"step": 1}, "worker")
    assert isinstance(third, ToolProgress) and (third.progress, third.total, third.message) == (4, 4, None)
    assert {event.execution.call_id for event in outer} == {"c1"}


def test_without_a_listener_a_report_is_a_no_op_and_a_raising_listener_never_fails_the_body() -> None:
    async def body(args: Any, run: Any) -> str:
        run.report_progress(0.5)
        run.log("debug", "quiet")
        return "done"

    registry = registry_with(body)
    assert isinstance(execute(registry), ToolSuccess)

    def broken(event: ToolEvent) -> None:
        raise RuntimeError("listener bug")

    async def main() -> Any:
        with watch_tool_events(broken):
            return await registry.execute(ToolExecutionInput("c1", "work", {}, AbortController().signal))

    assert isinstance(asyncio.run(main()), ToolSuccess)


@pytest.mark.parametrize(
    ("report", "message"),
    [
        (lambda run: run.report_progress(True), "progress must be a number, got bool"),
        (lambda run: run.report_progress(math.nan), "progress must be finite, got nan"),
        (lambda run: run.report_progress(1, "9"), "total must be a number, got str"),
        (lambda run: run.report_progress(1, None, 7), "message must be a string or None, got int"),
        (lambda run: run.log("loud", "x"), "run.log() level must be one of debug, info, notice"),
        (lambda run: run.log("info", math.inf), "not lossless JSON"),
    ],
)
def test_bad_reports_raise_in_the_body_with_or_without_a_listener(report: Any, message: str) -> None:
    async def body(args: Any, run: Any) -> str:
        report(run)
        return "unreachable"

    result = execute(registry_with(body))
    assert result.is_error and message in result.error.message


def test_an_approval_channel_answers_asks_of_calls_started_inside_it() -> None:
    from dsh_codegen import Ask, approval_channel

    async def body(args: Any, run: Any) -> str:
        return "done"

    configured = RecordingApprovals("rejected")
    registry = registry_with(body)
    registry.approval = configured
    registry.on_pre_execute(lambda execution, next: Ask("sure?"))
    channel = RecordingApprovals("allowed-once")

    async def main() -> tuple[Any, Any]:
        with approval_channel(channel):
            inside = await registry.execute(ToolExecutionInput("c1", "work", {}, AbortController().signal))
        outside = await registry.execute(ToolExecutionInput("c2", "work", {}, AbortController().signal, "agent"))
        return inside, outside

    inside, outside = asyncio.run(main())
    # Inside: the channel answers, and no agent is needed to route the question.
    assert isinstance(inside, ToolSuccess) and [r.call_id for r in channel.asked] == ["c1"]
    # Outside: the registry's configured service, as before.
    assert outside.is_error and outside.error.message == 'the user rejected tool "work"'
    assert [r.call_id for r in configured.asked] == ["c2"]
