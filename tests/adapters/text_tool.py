"""``text_tool``: a tool whose value is one string, shown to the model as one text block.

served_registry.py builds its string tools with it, and test_adapters_build.py
copies this file into its throwaway project (``myapp/text_tool.py``), so it
imports nothing but dsh_codegen.
"""

from __future__ import annotations

from typing import Any

from dsh_codegen import ToolDefinition, ToolOutput, define_tool

TEXT_OUTPUT = ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}])


def text_tool(
    name: str, description: str, execute: Any, parameters: dict[str, Any] | None = None, **options: Any
) -> ToolDefinition:
    """``define_tool`` with a string output; ``parameters`` default to one required string ``text``."""
    if parameters is None:
        parameters = {"text": {"type": "string", "required": True}}
    return define_tool(
        name=name, description=description, parameters=parameters, output=TEXT_OUTPUT, execute=execute, **options
    )
