"""The order of checks: arguments are validated before any policy sees the call (issue 35).

For a tool whose arguments the registry validates (``define_tool``, ``@tool``,
``ToolDefinition(validates_arguments=True)``, imported tools with a schema), an
invalid call is decided at entry: no pre-execute listener, approval, guard,
wrapper or post-execute listener runs, and no human is asked to approve a call
that cannot run. Finalize and observers still see the one result. Raw tools
own their validation and keep the policies-first order.
"""

from __future__ import annotations

from typing import Any

from _registry_helpers import call, echo_tool, error_code, raw_tool, registry_with, text
from _shared_helpers import async_test, render_text
from dsh_codegen.adapters import tool_from_schema
from dsh_codegen.registry import (
    ApprovalRequest,
    Ask,
    ToolDefinition,
    ToolExecution,
    ToolExecutionResult,
    ToolOutput,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    tool,
)


class RecordingApproval:
    def __init__(self) -> None:
        self.requests: list[ApprovalRequest] = []

    async def request(self, request: ApprovalRequest) -> str:
        self.requests.append(request)
        return "allowed-once"


def _watch(registry: ToolRegistry, ran: list[str]) -> list[ToolExecutionResult]:
    """Every policy appends its name to ``ran``; returns the list the observer fills."""
    observed: list[ToolExecutionResult] = []

    async def pre(execution: ToolExecution, next: Any) -> Any:
        ran.append("pre")
        return Ask("a human must approve")

    def guard(execution: ToolExecution) -> str | None:
        ran.append("guard")
        # The guard of docs/adapters.md: it compares, so it needs a number.
        return "no negative numbers" if execution.arguments.get("a", 0) < 0 else None

    async def wrapper(dispatch: Any, next: Any) -> Any:
        ran.append("wrapper")
        return await next()

    def post(execution: ToolExecution, result: Any, next: Any) -> Any:
        ran.append("post")
        return next()

    registry.on_pre_execute(pre)
    registry.guard(guard)
    registry.wrap_execute(wrapper)
    registry.on_post_execute(post)
    registry.on_result(lambda execution, result: observed.append(result))
    return observed


async def _add(args: Any, run: ToolRunContext) -> Any:
    return args["a"] + args["b"]


def _define() -> ToolDefinition:
    return define_tool(
        name="add",
        description="Add two integers.",
        parameters={"a": {"type": "integer", "required": True}, "b": {"type": "integer", "required": True}},
        output=ToolOutput(schema={"type": "integer"}, render=render_text),
        execute=_add,
    )


def _typed() -> ToolDefinition:
    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return add


def _schema_entry() -> ToolDefinition:
    return ToolDefinition(
        name="add",
        description="Add two integers.",
        parameters={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        output=ToolOutput(schema={"type": "integer"}, render=render_text),
        execute=_add,
        validates_arguments=True,
    )


def _imported() -> ToolDefinition:
    schema = {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }
    return tool_from_schema(schema, _add, output_schema={"type": "integer"})


@async_test
async def test_an_invalid_call_reaches_no_policy_for_every_validating_kind_of_tool() -> None:
    for make in (_define, _typed, _schema_entry, _imported):
        approval = RecordingApproval()
        registry = registry_with(make(), approval=approval)
        ran: list[str] = []
        observed = _watch(registry, ran)
        result = await registry.execute(call("add", {"a": "x", "b": 1}, agent=None))
        # Before: the guard compared "x" < 0 and the call failed with its TypeError text.
        assert text(result) == 'Error: invalid arguments: "a" must be an integer', make.__name__
        assert error_code(result) == "INVALID_ARGS"
        assert ran == [], make.__name__
        assert approval.requests == []
        assert observed == [result]
        # A valid call goes through every stage, in the usual order.
        ran.clear()
        scoped = registry.scope("agent-1")
        valid = await registry.execute(call("add", {"a": 2, "b": 3}, agent="agent-1"))
        assert text(valid) == "5"
        assert ran == ["pre", "guard", "wrapper", "post"]
        assert len(approval.requests) == 1
        scoped.dispose()


@async_test
async def test_no_human_is_asked_to_approve_a_call_that_cannot_run() -> None:
    approval = RecordingApproval()
    registry = registry_with(_define(), approval=approval)
    registry.on_pre_execute(lambda execution, next: Ask("spend money?"))
    registry.scope("agent-1")
    result = await registry.execute(call("add", {"a": 1}, agent="agent-1"))
    assert text(result) == 'Error: invalid arguments: missing required property "b"'
    assert approval.requests == []


@async_test
async def test_finalize_and_observers_see_an_invalid_call_once() -> None:
    finalized: list[ToolExecutionResult] = []

    def finalize(execution: ToolExecution, result: ToolExecutionResult) -> None:
        finalized.append(result)
        return None

    registry = registry_with(echo_tool(finalize_content=finalize))
    observed: list[ToolExecutionResult] = []
    registry.on_result(lambda execution, result: observed.append(result))
    result = await registry.execute(call("echo", {"text": 5}))
    assert text(result) == 'Error: invalid arguments: "text" must be a string'
    assert finalized == [result] and observed == [result]


@async_test
async def test_a_raw_tool_keeps_the_policies_first_order() -> None:
    # A raw definition owns its validation: its policies see the call first, as before.
    seen: list[Any] = []

    async def body(args: Any, run: ToolRunContext) -> Any:
        if not isinstance(args.get("a"), int):
            raise ValueError("a must be an integer")
        return args["a"]

    registry = registry_with(raw_tool("raw", execute=body))
    registry.guard(lambda execution: seen.append(execution.arguments) or None)
    result = await registry.execute(call("raw", {"a": "x"}))
    assert text(result) == "Error: a must be an integer"
    assert seen == [{"a": "x"}]


@async_test
async def test_a_tool_replaced_after_entry_validates_the_arguments_again() -> None:
    # Entry validated against the tool it saw; a listener swaps the tool before dispatch,
    # and the new tool's schema decides.
    registry = ToolRegistry()
    dispose_old = registry.register(echo_tool("t"))

    async def number_body(args: Any, run: ToolRunContext) -> Any:
        return str(args["text"])

    replacement = define_tool(
        name="t",
        description="The replacement.",
        parameters={"text": {"type": "integer", "required": True}},
        output=ToolOutput(schema={"type": "string"}, render=render_text),
        execute=number_body,
    )

    def swap(execution: ToolExecution, next: Any) -> Any:
        dispose_old()
        registry.register(replacement)
        return next()

    registry.on_pre_execute(swap)
    result = await registry.execute(call("t", {"text": "hi"}))
    assert text(result) == 'Error: invalid arguments: "text" must be an integer'
    assert error_code(result) == "INVALID_ARGS"
