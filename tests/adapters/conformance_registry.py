"""The tools the official MCP conformance suite's server scenarios call, as a registry served by ``serve_mcp``.

``@modelcontextprotocol/conformance server --url ...`` calls tools by fixed names
(``test_simple_text``, ``test_image_content``, ...). Each is written here with
our own API (``define_tool`` / ``tool_from_schema``, ``run.log``,
``run.report_progress``, an ``Ask`` policy), so the suite checks what a user's
registry gets from ``serve_mcp``. Run as ``python conformance_registry.py PORT``
it serves streamable HTTP on ``127.0.0.1:PORT`` at ``/mcp`` until killed.

What the suite asks that a tool registry does not carry (sampling, a body's own
elicitation forms, completion, resources, prompts) is not written here;
docs/adapters.md says which scenarios pass and why the others do not apply.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from dsh_codegen import Allow, Ask, ToolOutput, ToolRegistry, define_tool
from dsh_codegen.adapters import serve_mcp, tool_from_schema

#: A 1x1 PNG and a tiny WAV header, base64.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAFUok9dAAAAAElFTkSuQmCC"
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
IMAGE = {"type": "image", "data": PIXEL, "mimeType": "image/png"}


def blocks_tool(name: str, description: str, blocks: list[dict[str, Any]]) -> Any:
    """A tool without arguments whose content is ``blocks`` (its value is ``null``)."""

    async def execute(args: Any, run: Any) -> None:
        return None

    return define_tool(
        name=name,
        description=description,
        parameters={},
        output=ToolOutput(schema={"type": "null"}, render=lambda args, value: blocks),
        execute=execute,
    )


def text_tool(name: str, description: str, execute: Any, parameters: dict[str, Any] | None = None) -> Any:
    return define_tool(
        name=name,
        description=description,
        parameters=parameters or {},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}]),
        execute=execute,
    )


def build_registry() -> ToolRegistry:
    registry = ToolRegistry()
    register = registry.register
    register(
        blocks_tool(
            "test_simple_text",
            "Simple text.",
            [{"type": "text", "text": "This is a simple text response for testing."}],
        )
    )
    register(blocks_tool("test_image_content", "An image.", [IMAGE]))
    register(
        blocks_tool("test_audio_content", "An audio clip.", [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])
    )
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    register(
        blocks_tool("test_embedded_resource", "An embedded resource.", [{"type": "resource", "resource": resource}])
    )
    mixed = {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": '{"test":"data","value":123}',
    }
    register(
        blocks_tool(
            "test_multiple_content_types",
            "Text, an image and a resource.",
            [{"type": "text", "text": "Multiple content types test:"}, IMAGE, {"type": "resource", "resource": mixed}],
        )
    )

    async def with_logging(args: Any, run: Any) -> str:
        run.log("info", "Tool execution started")
        await asyncio.sleep(0.05)
        run.log("info", "Tool processing data")
        await asyncio.sleep(0.05)
        run.log("info", "Tool execution completed")
        return "Logged three messages."

    register(text_tool("test_tool_with_logging", "Logs three messages.", with_logging))

    async def failing(args: Any, run: Any) -> str:
        raise RuntimeError("This tool intentionally returns an error for testing")

    register(text_tool("test_error_handling", "Always fails.", failing))

    async def with_progress(args: Any, run: Any) -> str:
        for step in (0, 50, 100):
            run.report_progress(step, 100)
            await asyncio.sleep(0.05)
        return "Reported progress three times."

    register(text_tool("test_tool_with_progress", "Reports progress.", with_progress))

    async def confirmed(args: Any, run: Any) -> str:
        return f"User confirmed: {args['message']}"

    register(
        text_tool(
            "test_elicitation",
            "Runs after the user approves it (an Ask decision, asked through elicitation).",
            confirmed,
            {"message": {"type": "string", "required": True}},
        )
    )
    registry.on_pre_execute(
        lambda execution, next: Ask(execution.arguments["message"]) if execution.name == "test_elicitation" else Allow()
    )

    async def echo(args: Any, run: Any) -> Any:
        return args

    register(
        tool_from_schema(
            {
                "name": "json_schema_2020_12_tool",
                "description": "Tool with JSON Schema 2020-12 features",
                "parameters": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {
                        "address": {
                            "type": "object",
                            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                        }
                    },
                    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                    "additionalProperties": False,
                },
            },
            echo,
        )
    )
    return registry


if __name__ == "__main__":
    asyncio.run(serve_mcp(build_registry(), "streamable-http", port=int(sys.argv[1])))
