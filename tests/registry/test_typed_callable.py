"""``@tool`` keeps the function callable (issue 39): users unit-test the body by calling it."""

from __future__ import annotations

import asyncio
import inspect

from _typed_helpers import async_test, run_tool, text

from dsh_codegen.registry import ToolDefinition, ToolRegistry, TypedTool, tool


@tool
async def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool(name="shout", description="Upper-case a text.")
def shout(text: str) -> str:
    return text.upper()


def test_the_decorated_name_is_a_definition_and_still_the_function() -> None:
    assert isinstance(add, TypedTool) and isinstance(add, ToolDefinition)
    # Called directly: the function as written (no validation, no pipeline).
    assert asyncio.run(add(2, b=3)) == 5
    assert asyncio.run(add("x", "y")) == "xy"  # type: ignore[arg-type]  # not validated: the body runs as written
    assert shout("hi") == "HI"
    assert add.__wrapped__ is add.function and inspect.iscoroutinefunction(add.__wrapped__)
    assert str(inspect.signature(add)) == "(a: 'int', b: 'int' = 1) -> 'int'"
    assert inspect.unwrap(shout).__name__ == "shout"


@async_test
async def test_registering_it_still_runs_the_pipeline() -> None:
    result = await run_tool(add, {"a": 2})
    assert (result.is_error, text(result)) == (False, "3")
    invalid = await run_tool(add, {"a": "two"})
    assert text(invalid) == 'Error: invalid arguments: "a" must be an integer'
    registry = ToolRegistry()
    registry.register(shout)
    assert registry.get("shout") is shout
