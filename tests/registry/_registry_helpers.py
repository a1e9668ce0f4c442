"""Small builders shared by the registry tests (only the public registry API)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from _shared_helpers import async_test, render_text  # noqa: F401 (re-exported for this directory's tests)
from dsh_codegen.registry import (
    AbortController,
    AbortSignal,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailure,
    ToolOutput,
    ToolRegistry,
    ToolRunContext,
    define_tool,
)


async def echo_body(args: Any, run: ToolRunContext) -> Any:
    return "echo:" + args["text"]


def echo_tool(
    name: str = "echo",
    *,
    execute: Callable[[Any, ToolRunContext], Awaitable[Any]] = echo_body,
    output_schema: Any = None,
    **extra: Any,
) -> ToolDefinition:
    """A ``define_tool`` tool: one required string ``text``, string output rendered as text."""
    return define_tool(
        name=name,
        description=f"The {name} tool.",
        parameters={"text": {"type": "string", "required": True}},
        output=ToolOutput(
            schema=output_schema if output_schema is not None else {"type": "string"},
            render=render_text,
        ),
        execute=execute,
        **extra,
    )


def raw_tool(
    name: str = "raw",
    *,
    execute: Callable[[Any, ToolRunContext], Awaitable[Any]] | None = None,
    parameters: Any = None,
    output_schema: Any = None,
    render: Callable[[Any, Any], Any] = render_text,
    **extra: Any,
) -> ToolDefinition:
    """A raw definition (JSON schema, no registry-side argument validation), any JSON output."""

    async def default(args: Any, run: ToolRunContext) -> Any:
        return args

    return ToolDefinition(
        name=name,
        description=f"The raw {name} tool.",
        parameters=parameters if parameters is not None else {"type": "object"},
        output=ToolOutput(schema=output_schema if output_schema is not None else {}, render=render),
        execute=execute or default,
        **extra,
    )


def call(
    name: str = "echo",
    arguments: Any = None,
    *,
    signal: AbortSignal | None = None,
    call_id: str = "c1",
    agent: Any = None,
    parent: Any = None,
) -> ToolExecutionInput:
    return ToolExecutionInput(
        call_id=call_id,
        name=name,
        arguments={"text": "hi"} if arguments is None else arguments,
        signal=signal if signal is not None else AbortController().signal,
        agent=agent,
        parent=parent,
    )


def text(result: ToolExecutionResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert block["type"] == "text"
    value = block["text"]
    assert isinstance(value, str)
    return value


def error_code(result: ToolExecutionResult) -> str | None:
    assert isinstance(result, ToolFailure), result
    info = result.error.info
    return None if info is None else info.code


def registry_with(*tools: ToolDefinition, **options: Any) -> ToolRegistry:
    registry = ToolRegistry(**options)
    for tool in tools:
        registry.register(tool)
    return registry
