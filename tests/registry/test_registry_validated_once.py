"""A call that is classified (``execution_mode``) and then executed has its arguments validated once.

The loop helper and the Code Mode bridge both classify a call with
``registry.execution_mode(input)`` and then run the same input. Validations
are counted with ``sys.setprofile``: the pure validator's ``is_valid`` is a
Python function, so each call of it is a profiler event with its arguments
visible. The compiled validator's calls are not profiler events, so these
tests run in the pure pass; the registry code they check is the same in both
passes (only the validator twin differs).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

import dsh_codegen
from _registry_helpers import call, echo_tool, error_code, registry_with, text
from _shared_helpers import async_test
from dsh_codegen.json import FrozenJsonObject
from dsh_codegen.registry import AbortController, ToolCall, execute_tool_calls
from dsh_codegen.registry._loop import parse_call_arguments
from dsh_codegen.schema import _validator_py

pytestmark = pytest.mark.skipif(
    dsh_codegen.backend() == "compiled",
    reason="compiled validator calls are not profiler events; the pure pass counts them",
)

IS_VALID = _validator_py.CompiledValidator.is_valid.__code__


@contextmanager
def validations() -> Iterator[list[Any]]:
    """Every value passed to a validator's ``is_valid`` while the block runs."""
    seen: list[Any] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is IS_VALID:
            seen.append(frame.f_locals["value"])

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


def _tool() -> Any:
    # Output is a string: the only objects validated are the arguments.
    return echo_tool(is_concurrency_safe=lambda args: args["text"] != "exclusive")


def _arguments(seen: list[Any]) -> list[Any]:
    return [value for value in seen if type(value) is FrozenJsonObject]


@async_test
async def test_classified_then_executed_validates_the_arguments_once() -> None:
    registry = registry_with(_tool())
    request = call(arguments=parse_call_arguments('{"text": "hi"}'))
    with validations() as seen:
        assert registry.execution_mode(request) == "parallel"
        result = await registry.execute(request)
    assert text(result) == "echo:hi"
    assert [value is request.arguments for value in _arguments(seen)] == [True]

    # Executed alone, the arguments are validated too (once).
    again = call(arguments=parse_call_arguments('{"text": "ho"}'))
    with validations() as seen:
        assert text(await registry.execute(again)) == "echo:ho"
    assert [value is again.arguments for value in _arguments(seen)] == [True]


@async_test
async def test_invalid_arguments_are_still_rejected_after_a_valid_classification() -> None:
    registry = registry_with(_tool())
    valid = call(arguments=parse_call_arguments('{"text": "hi"}'))
    assert registry.execution_mode(valid) == "parallel"
    invalid = call(arguments=parse_call_arguments('{"text": 1}'))
    assert registry.execution_mode(invalid) == "exclusive"
    result = await registry.execute(invalid)
    assert error_code(result) == "INVALID_ARGS"
    # The remembered valid arguments stay valid (a frozen object never changes).
    assert text(await registry.execute(valid)) == "echo:hi"


@async_test
async def test_the_loop_helper_validates_each_call_once() -> None:
    registry = registry_with(_tool())
    calls = [ToolCall(f"c{i}", "echo", '{"text": "t%d"}' % i) for i in range(3)]
    with validations() as seen:
        results = await execute_tool_calls(registry, calls, signal=AbortController().signal)
    assert [text(result) for result in results] == ["echo:t0", "echo:t1", "echo:t2"]
    assert sorted(value["text"] for value in _arguments(seen)) == ["t0", "t1", "t2"]
