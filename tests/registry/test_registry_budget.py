"""A tool body's value past the JSON walk budget becomes a failure result of the call (issue 12).

The registry snapshots every value a body returns (``snapshot_json``, with its
default budget of ten million values). A value that shares a list with itself 27
levels deep describes 2**28 - 1 values; the snapshot stops at the budget with
``JsonBudgetError`` (a ``ValueError``, not a ``LosslessJsonError``), which the
output path already turns into an ``INVALID_TOOL_OUTPUT`` failure naming the
budget: no registry change was needed, these tests pin it. Renderers that call
the JSON writers (``run_code``'s does) fail the same way through
``output.render failed``. The call returns, so the event loop runs on: a task
scheduled beside the call gets to run after it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _registry_helpers import async_test, call, error_code, raw_tool, registry_with, text
from dsh_codegen.json import render_json_pretty
from dsh_codegen.registry import ToolFailure


def _doubling(levels: int) -> list[Any]:
    value: list[Any] = [0]
    for _ in range(levels):
        value = [value, value]
    return value


def returning(value: Any) -> Any:
    async def body(args: Any, run: Any) -> Any:
        return value

    return body


# The default budget is ten million values: the compiled twin checks them in about a second,
# the pure twin in tens of seconds, and the registry path is the same for both, so run once.
@pytest.mark.once
@async_test
async def test_a_value_past_the_default_budget_is_an_invalid_output_failure() -> None:
    registry = registry_with(raw_tool(execute=returning(_doubling(27))))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    beside = asyncio.create_task(ticker())
    result = await registry.execute(call("raw", {}))
    await asyncio.sleep(0)
    beside.cancel()
    with pytest.raises(asyncio.CancelledError):
        await beside
    assert isinstance(result, ToolFailure)
    assert error_code(result) == "INVALID_TOOL_OUTPUT"
    message = text(result)
    assert message.startswith(
        'Error: tool "raw" returned invalid output: value snapshot failed: JSON walk budget exceeded at "value['
    )
    assert message.endswith("more than 10000000 values visited (max_nodes=10000000)")
    assert ticks >= 1


@async_test
async def test_a_renderer_past_its_text_budget_is_an_invalid_output_failure() -> None:
    chunk = "a" * 1000

    def render(_args: Any, value: Any) -> list[dict[str, str]]:
        return [{"type": "text", "text": render_json_pretty(value, max_chars=10_000)}]

    registry = registry_with(raw_tool(execute=returning([chunk] * 100), render=render))
    result = await registry.execute(call("raw", {}))
    assert error_code(result) == "INVALID_TOOL_OUTPUT"
    assert text(result) == (
        'Error: tool "raw" returned invalid output: output.render failed: JSON walk budget exceeded at '
        '"value[9]": more than 10000 characters written (max_chars=10000)'
    )


@async_test
async def test_a_value_within_the_budget_still_succeeds() -> None:
    registry = registry_with(raw_tool(execute=returning(_doubling(12))))
    result = await registry.execute(call("raw", {}))
    assert not result.is_error
