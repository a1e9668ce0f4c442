"""Guarantees 49-56 (docs/guarantees.md): post-execute decisions and additional contexts."""

from __future__ import annotations

import dataclasses
from typing import Any

from _registry_helpers import async_test, call, echo_tool, error_code, registry_with, text
from dsh_codegen.registry import (
    Accept,
    Block,
    ToolDefinition,
    ToolFailure,
    ToolOutput,
    ToolRegistry,
    ToolSuccess,
    define_tool,
)


def ctx(source: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": source}], "source": source}


async def length_body(args: Any, run: Any) -> Any:
    return {"length": len(args["text"])}


def length_tool() -> ToolDefinition:
    return define_tool(
        name="length",
        description="Length of text.",
        parameters={"text": {"type": "string", "required": True}},
        output=ToolOutput(
            schema={
                "type": "object",
                "properties": {"length": {"type": "integer", "required": True}},
                "additionalProperties": False,
            },
            render=lambda a, v: [{"type": "text", "text": f"{v['length']} chars"}],
            presentation_meta=lambda a, v: {"long": v["length"] > 3},
        ),
        execute=length_body,
    )


@async_test
async def test_b49_accept_content_replaces_presentation_only() -> None:
    registry = registry_with(length_tool())
    registry.on_post_execute(lambda e, r, n: Accept(content=[{"type": "text", "text": "redacted"}]))
    result = await registry.execute(call("length", {"text": "hello"}))
    assert isinstance(result, ToolSuccess)
    assert text(result) == "redacted"
    assert result.value == {"length": 5}
    assert result.meta == {"long": True}


@async_test
async def test_b50_accept_value_revalidates_rerenders_and_recomputes_meta() -> None:
    registry = registry_with(length_tool())
    registry.on_post_execute(lambda e, r, n: Accept(value={"length": 2}))
    result = await registry.execute(call("length", {"text": "hello"}))
    assert isinstance(result, ToolSuccess)
    assert result.value == {"length": 2}
    assert text(result) == "2 chars"
    assert result.meta == {"long": False}


@async_test
async def test_b51_accept_both_or_an_invalid_value_fails() -> None:
    registry = registry_with(length_tool())
    dispose = registry.on_post_execute(
        lambda e, r, n: Accept(content=[{"type": "text", "text": "x"}], value={"length": 1})
    )
    result = await registry.execute(call("length", {"text": "hello"}))
    assert text(result) == "Error: tools/post-execute accept decision cannot replace both value and content"
    assert isinstance(result, ToolFailure) and result.error.info is None
    dispose()
    registry.on_post_execute(lambda e, r, n: Accept(value={"length": "two"}))
    result = await registry.execute(call("length", {"text": "hello"}))
    assert text(result) == ('Error: tool "length" returned invalid output: "value.length" must be an integer')
    assert error_code(result) == "INVALID_TOOL_OUTPUT"
    assert isinstance(result, ToolFailure)
    assert not any(f.name == "value" for f in dataclasses.fields(result))


@async_test
async def test_b52_value_replacement_on_failure_or_unregistered_tool() -> None:
    async def fail(args: Any, run: Any) -> Any:
        raise RuntimeError("nope")

    registry = registry_with(echo_tool("failing", execute=fail))
    registry.on_post_execute(lambda e, r, n: Accept(value="replacement"))
    result = await registry.execute(call("failing"))
    assert text(result) == "Error: tools/post-execute cannot replace the value of a failed result"

    other = ToolRegistry()
    dispose = other.register(echo_tool())

    def post(execution: Any, result: Any, next: Any) -> Any:
        dispose()
        return Accept(value="replacement")

    other.on_post_execute(post)
    result = await other.execute(call())
    assert text(result) == 'Error: unknown tool "echo"'
    assert error_code(result) == "UNKNOWN_TOOL"


@async_test
async def test_b53_block_turns_feedback_into_a_valueless_failure() -> None:
    registry = registry_with(echo_tool())
    feedback = [
        {"type": "text", "text": "first line"},
        {"type": "reasoning", "data": "..."},
        {"type": "text", "text": "last line"},
    ]
    dispose = registry.on_post_execute(lambda e, r, n: Block(feedback))
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure)
    assert result.error.message == "first line\n[reasoning content]\nlast line"
    assert result.error.info is None
    assert list(result.content) == feedback  # verbatim, no "Error: " prefix
    assert not hasattr(result, "value")
    dispose()
    registry.on_post_execute(lambda e, r, n: Block([]))
    result = await registry.execute(call())
    assert isinstance(result, ToolFailure)
    assert result.error.message == "tool result blocked by post-execute policy"
    assert list(result.content) == []


@async_test
async def test_b54_lossy_feedback_fails() -> None:
    registry = registry_with(echo_tool())
    registry.on_post_execute(lambda e, r, n: Block([{"type": "text", "text": object()}]))
    result = await registry.execute(call())
    assert text(result) == "Error: tool result must be losslessly JSON-serializable"
    assert isinstance(result, ToolFailure) and result.error.info is None


@async_test
async def test_b55_contexts_are_ordered_deferred_wrapper_post() -> None:
    async def body(args: Any, run: Any) -> str:
        run.defer_context(ctx("deferred"))
        return "x"

    registry = registry_with(echo_tool(execute=body))

    async def wrap(dispatch: Any, next: Any) -> Any:
        result = await next()
        return dataclasses.replace(result, additional_contexts=(*result.additional_contexts, ctx("wrapper")))

    registry.wrap_execute(wrap)
    registry.on_post_execute(lambda e, r, n: Accept(additional_contexts=[ctx("post")]))
    result = await registry.execute(call())
    assert not result.is_error
    assert [c["source"] for c in result.additional_contexts] == ["deferred", "wrapper", "post"]


@async_test
async def test_b56_block_discards_deferred_contexts_and_a_throw_keeps_them() -> None:
    async def body(args: Any, run: Any) -> str:
        run.defer_context(ctx("deferred"))
        return "x"

    registry = registry_with(echo_tool(execute=body))
    registry.on_post_execute(
        lambda e, r, n: Block([{"type": "text", "text": "no"}], additional_contexts=[ctx("block")])
    )
    result = await registry.execute(call())
    assert [c["source"] for c in result.additional_contexts] == ["block"]

    async def composite(args: Any, run: Any) -> str:
        run.defer_context(ctx("nested"))
        raise RuntimeError("composite failed")

    thrown = registry_with(echo_tool(execute=composite))
    result = await thrown.execute(call())
    assert text(result) == "Error: composite failed"
    assert [c["source"] for c in result.additional_contexts] == ["nested"]
