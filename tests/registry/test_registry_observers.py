"""on_result observers: sync and async mixed, failures logged, order kept, exactly once each."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import pytest

from _registry_helpers import async_test, call, echo_tool, registry_with, text
from dsh_codegen.registry import ToolExecutionResult


def _run_mixed(caplog: pytest.LogCaptureFixture) -> tuple[list[str], ToolExecutionResult, Any]:
    seen: list[str] = []
    results: list[ToolExecutionResult] = []

    async def main() -> tuple[ToolExecutionResult, Any]:
        registry = registry_with(echo_tool())

        def sync_ok(execution: Any, result: Any) -> None:
            seen.append("sync1")
            results.append(result)

        def sync_raises(execution: Any, result: Any) -> None:
            seen.append("sync2")
            raise RuntimeError("observer one failed")

        async def async_ok(execution: Any, result: Any) -> None:
            await asyncio.sleep(0)
            seen.append("async3")
            results.append(result)

        async def async_raises(execution: Any, result: Any) -> None:
            seen.append("async4")
            raise ValueError("observer two failed")

        def sync_after(execution: Any, result: Any) -> str:
            seen.append("sync5")
            results.append(result)
            return "ignored return value"

        async def async_last(execution: Any, result: Any) -> None:
            seen.append("async6")

        for fn in (sync_ok, sync_raises, async_ok, async_raises, sync_after, async_last):
            registry.on_result(fn)
        result = await registry.execute(call())
        return result, registry

    with caplog.at_level(logging.WARNING, logger="dsh_codegen"):
        result, registry = asyncio.run(main())
    assert all(r is result for r in results)
    return seen, result, registry


def test_mixed_observers_run_in_order_once_and_failures_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen, result, _ = _run_mixed(caplog)
    assert seen == ["sync1", "sync2", "async3", "async4", "sync5", "async6"]
    assert text(result) == "echo:hi"
    messages = [r.getMessage() for r in caplog.records]
    assert any("observer one failed" in m for m in messages)
    assert any("observer two failed" in m for m in messages)


@async_test
async def test_an_observer_raising_cancelled_error_does_not_stop_the_others() -> None:
    seen: list[str] = []
    registry = registry_with(echo_tool())

    def cancels(execution: Any, result: Any) -> None:
        seen.append("cancels")
        raise asyncio.CancelledError()

    async def later(execution: Any, result: Any) -> None:
        seen.append("later")

    def last(execution: Any, result: Any) -> None:
        seen.append("last")

    registry.on_result(cancels)
    registry.on_result(later)
    registry.on_result(last)
    task = asyncio.ensure_future(registry.execute(call()))
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()  # the cancellation is reported after every observer ran
    assert seen == ["cancels", "later", "last"]


@async_test
async def test_all_sync_observers_and_disposed_ones() -> None:
    seen: list[str] = []
    registry = registry_with(echo_tool())
    registry.on_result(lambda e, r: seen.append("a"))
    dispose = registry.on_result(lambda e, r: seen.append("b"))
    registry.on_result(lambda e, r: seen.append("c"))
    dispose()
    assert text(await registry.execute(call())) == "echo:hi"
    assert seen == ["a", "c"]
