"""Tools built from JSON-schema definitions (what ``from_*`` return) and a body."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from dsh_codegen.json import snapshot_json
from dsh_codegen.registry import ToolDefinition, ToolOutput, ToolRunContext
from dsh_codegen.schema import JsonSchemaObject

__all__ = ["render_value_as_text", "tool_from_schema"]

Execute = Callable[[Any, ToolRunContext], Awaitable[Any]]


def render_value_as_text(args: object, value: object) -> list[dict[str, Any]]:
    """One text block: a string as it is, any other value as compact JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return [{"type": "text", "text": text}]


def tool_from_schema(
    schema: Mapping[str, Any],
    execute: Execute,
    *,
    output_schema: object = None,
    render: Callable[[Any, Any], Sequence[Mapping[str, Any]]] | None = None,
    relax_strict_nulls: bool = False,
    timeout_ms: float | None = None,
    is_concurrency_safe: Callable[[Any], object] | None = None,
    finalize_content: Callable[[Any, Any], Sequence[Mapping[str, Any]] | None] | None = None,
    name: str | None = None,
) -> ToolDefinition:
    """A ``ToolDefinition`` for a ``{name, description, parameters[, output_schema]}`` dict and a body.

    The registry validates the arguments against ``parameters`` before the
    body (``INVALID_ARGS``), as for ``define_tool``. ``output_schema``
    (default: the dict's ``output_schema``, else any JSON) is enforced on the
    body's value; ``render`` defaults to :func:`render_value_as_text`. ``name``
    overrides the dict's name (a prefixed import); ``finalize_content`` is the
    definition's (``define_tool``'s meaning).

    With ``relax_strict_nulls=True`` (tools from OpenAI strict definitions),
    the registry drops the ``null`` of each optional property whose schema
    does not admit ``null`` before validating, so the body sees its default
    (``ToolDefinition.relax_strict_nulls``; ``ToolRegistry(relax_strict_nulls=True)``
    does it for every tool of a registry).

    Raised errors: ``JsonSchemaError`` when ``parameters`` or the output
    schema is outside what the schema core accepts, at registration (which
    compiles both validators once; compiling here too would double the cost
    of an import).
    """
    parameters = snapshot_json(schema.get("parameters", {"type": "object"}), freeze=False)
    if output_schema is None:
        output_schema = schema.get("output_schema")
    output: JsonSchemaObject = {} if output_schema is None else snapshot_json(output_schema, freeze=False)
    tool_name = schema["name"] if name is None else name
    return ToolDefinition(
        name=tool_name,
        description=schema.get("description", ""),
        parameters=parameters,
        output=ToolOutput(output, render or render_value_as_text),
        execute=execute,
        timeout_ms=timeout_ms,
        is_concurrency_safe=is_concurrency_safe,
        finalize_content=finalize_content,
        validates_arguments=True,
        relax_strict_nulls=relax_strict_nulls,
    )
