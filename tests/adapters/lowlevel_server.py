"""An MCP server written with the SDK's low-level ``Server``, run over stdio.

What the SDK's ``MCPServer`` cannot publish or do, written by hand: a task-only
tool (``execution.taskSupport: "required"``), a tool with an ``outputSchema``
whose content is an image (the structured content holds the same base64), a
tool answering ``[text, image, text]``, a tool that reports progress, and a tool
that asks its user to confirm (elicitation): on a 2026-07-28 connection through
the multi-round-trip flow (an ``InputRequiredResult``, then the retry with the
answer), on a 2025 connection as a request of its own.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

#: A 1x1 transparent PNG, base64 (what the tests compare).
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAFUok9dAAAAAElFTkSuQmCC"
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sure": {"type": "boolean", "default": True}},
}
EMPTY = {"type": "object", "properties": {}}

TOOLS = [
    types.Tool(
        name="batch",
        description="Runs only as a task.",
        input_schema=EMPTY,
        execution=types.ToolExecution(task_support="required"),
    ),
    types.Tool(
        name="photo",
        description="An image, with the same image in the structured content.",
        input_schema=EMPTY,
        output_schema={
            "type": "object",
            "properties": {"data": {"type": "string"}, "mimeType": {"type": "string"}},
            "required": ["data", "mimeType"],
        },
    ),
    types.Tool(name="mixed", description="Text, an image, text.", input_schema=EMPTY),
    types.Tool(name="steps", description="Reports progress three times.", input_schema=EMPTY),
    types.Tool(
        name="pick",
        description="An enum with an object member (the Python SDK types it Any: the CLI warns).",
        input_schema={"type": "object", "properties": {"choice": {"enum": ["a", {"b": 1}]}}},
    ),
    types.Tool(
        name="confirm",
        description="Asks the user to confirm.",
        input_schema={"type": "object", "properties": {"what": {"type": "string"}}, "required": ["what"]},
    ),
]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    image = types.ImageContent(type="image", data=PIXEL, mime_type="image/png")
    if params.name == "photo":
        return types.CallToolResult(content=[image], structured_content={"data": PIXEL, "mimeType": "image/png"})
    if params.name == "mixed":
        return types.CallToolResult(content=[text("before"), image, text("after")])
    if params.name == "steps":
        for step in (0, 50, 100):
            await ctx.session.report_progress(step, 100, f"step {step}")
            await anyio.sleep(0.01)
        return types.CallToolResult(content=[text("done")])
    if params.name == "pick":
        return types.CallToolResult(content=[text(json.dumps((params.arguments or {}).get("choice")))])
    if params.name == "confirm":
        what = (params.arguments or {}).get("what", "")
        message = f"Really {what}?"
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            answers = params.input_responses or {}
            if "sure" not in answers:
                request = types.ElicitRequest(
                    params=types.ElicitRequestFormParams(message=message, requested_schema=CONFIRM_SCHEMA)
                )
                return types.InputRequiredResult(input_requests={"sure": request}, request_state="asked")
            answer = types.ElicitResult.model_validate(answers["sure"].model_dump(by_alias=True))
        else:
            answer = await ctx.session.elicit_form(message, CONFIRM_SCHEMA, related_request_id=ctx.request_id)
        return types.CallToolResult(content=[text(f"{answer.action} {json.dumps(answer.content, sort_keys=True)}")])
    return types.CallToolResult(content=[text(f"no tool {params.name}")], is_error=True)


async def main() -> None:
    server: Server[Any] = Server("lowlevel-test-server", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
