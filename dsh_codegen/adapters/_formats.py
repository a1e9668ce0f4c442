"""Tool formats: OpenAI (Chat Completions and Responses), Anthropic and MCP, out and back in.

``to_*`` take what ``registry.schemas()`` returns (``{name, description,
parameters}`` dicts; catalog entries work too) and return plain JSON in the
published layout. ``from_*`` take such JSON and return the same
``{name, description, parameters}`` dicts, with the foreign forms of JSON
Schema lowered to the dialect (see ``_lowering``); each change is appended to
``notes`` when a list is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dsh_codegen.adapters._lowering import SchemaNote, lower_json_schema
from dsh_codegen.adapters._strict import StrictSchemaError, strict_parameters, unstrict_parameters
from dsh_codegen.json import snapshot_json

__all__ = [
    "ToolNote",
    "from_anthropic_tools",
    "from_mcp_tools",
    "from_openai_tools",
    "to_anthropic_tools",
    "to_mcp_tools",
    "to_openai_tools",
]

ToolSchema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolNote:
    """A lowering note of one tool: ``tool`` (its name), ``part`` (``parameters`` or ``output_schema``) and ``note``."""

    tool: str
    part: str
    note: SchemaNote

    def __str__(self) -> str:
        return f'tool "{self.tool}" {self.part}: {self.note.message}'


def _fields(schema: object) -> tuple[str, str, Any, Any]:
    """``(name, description, parameters, output_schema)`` of a schema dict or a catalog entry."""
    if isinstance(schema, Mapping):
        name = schema.get("name")
        description = schema.get("description", "")
        parameters = schema.get("parameters", {"type": "object"})
        output = schema.get("output_schema")
    else:
        name = getattr(schema, "name", None)
        description = getattr(schema, "description", "")
        parameters = getattr(schema, "parameters", {"type": "object"})
        output = getattr(schema, "output_schema", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"a tool schema needs a non-empty string name, got {name!r}")
    if not isinstance(description, str):
        raise ValueError(f'tool "{name}": description must be a string')
    return (
        name,
        description,
        snapshot_json(parameters, freeze=False),
        (None if output is None else snapshot_json(output, freeze=False)),
    )


def to_openai_tools(
    schemas: Iterable[object],
    *,
    strict: bool | Literal["auto"] = False,
    api: Literal["chat", "responses"] = "chat",
) -> list[dict[str, Any]]:
    """OpenAI function tools for ``schemas``.

    ``api="chat"`` gives the Chat Completions layout ``{"type": "function",
    "function": {name, description, parameters[, strict]}}``; ``"responses"``
    the Responses layout ``{"type": "function", name, description, parameters,
    strict}``. ``strict=True`` converts every tool's parameters to strict mode
    (``_strict``) and raises :class:`StrictSchemaError` for one that cannot be;
    ``strict="auto"`` converts those that can and leaves the others non-strict.
    """
    if api not in ("chat", "responses"):
        raise ValueError(f'api must be "chat" or "responses", got {api!r}')
    if strict not in (True, False, "auto"):
        raise ValueError(f'strict must be True, False or "auto", got {strict!r}')
    out: list[dict[str, Any]] = []
    for schema in schemas:
        name, description, parameters, _ = _fields(schema)
        is_strict = False
        if strict is not False:
            try:
                parameters = strict_parameters(name, parameters)
                is_strict = True
            except StrictSchemaError:
                if strict is True:
                    raise
        function: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
        if api == "chat":
            if is_strict:
                function["strict"] = True
            out.append({"type": "function", "function": function})
        else:
            out.append({"type": "function", **function, "strict": is_strict})
    return out


def to_anthropic_tools(schemas: Iterable[object]) -> list[dict[str, Any]]:
    """Anthropic Messages API tools: ``{name, description, input_schema}`` per schema."""
    out: list[dict[str, Any]] = []
    for schema in schemas:
        name, description, parameters, _ = _fields(schema)
        out.append({"name": name, "description": description, "input_schema": parameters})
    return out


def to_mcp_tools(schemas: Iterable[object]) -> list[dict[str, Any]]:
    """MCP ``tools/list`` entries: ``{name, description, inputSchema[, outputSchema]}``.

    ``outputSchema`` is given for a catalog entry (``registry.catalog()``)
    whose output schema is an object schema; MCP structured content is always
    an object (``serve_mcp`` wraps other outputs as ``{"result": ...}``).
    """
    out: list[dict[str, Any]] = []
    for schema in schemas:
        name, description, parameters, output = _fields(schema)
        tool: dict[str, Any] = {"name": name, "description": description, "inputSchema": parameters}
        wrapped = mcp_output_schema(output)
        if wrapped is not None:
            tool["outputSchema"] = wrapped
        out.append(tool)
    return out


def mcp_value_schema(schema: Mapping[str, Any]) -> Any:
    """The schema of an MCP tool's value, for what ``from_mcp_tools`` gives: its output schema, else a string.

    The one rule for both sides: ``import_mcp_tools`` returns a tool's
    structured content when it publishes an ``outputSchema`` and its text
    content (a string) when it does not, so the SDK a registry of imported
    tools renders and the catalog of the same ``tools/list`` (``sdk --mcp``,
    ``load_catalog_document``) type the value alike.
    """
    output = schema.get("output_schema")
    return {"type": "string"} if output is None else output


def mcp_output_schema(output: Any) -> dict[str, Any] | None:
    """The MCP ``outputSchema`` for a catalog output schema (``None``: any JSON, published as text only)."""
    if output is None or output == {} or output is True:
        return None
    if isinstance(output, dict) and output.get("type") == "object":
        return output
    return {"type": "object", "properties": {"result": output}, "required": ["result"], "additionalProperties": False}


def _lowered(name: str, part: str, schema: object, notes: list[ToolNote] | None) -> Any:
    lowered = lower_json_schema(schema)
    if notes is not None:
        notes.extend(ToolNote(name, part, note) for note in lowered.notes)
    return lowered.schema


def _entry(item: object, where: str) -> dict[str, Any]:
    if hasattr(item, "model_dump"):
        item = item.model_dump(by_alias=True, exclude_none=True, mode="json")
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} must be an object, got {type(item).__name__}")
    return dict(item)


def _name_and_description(entry: Mapping[str, Any], where: str) -> tuple[str, str]:
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}.name must be a non-empty string")
    description = entry.get("description") or ""
    if not isinstance(description, str):
        raise ValueError(f"{where}.description must be a string")
    return name, description


def from_openai_tools(tools: Iterable[object], *, notes: list[ToolNote] | None = None) -> list[ToolSchema]:
    """``{name, description, parameters}`` dicts from OpenAI function tools (either layout).

    Accepts the Chat Completions layout, the Responses layout and bare
    function definitions ``{name, description, parameters}``. A tool marked
    ``strict: true`` has its strict form undone (``unstrict_parameters``: a
    required-and-nullable property becomes optional), so a tool registered
    from it with ``relax_strict_nulls=True`` drops those ``null``s before
    validation and its body sees its defaults.
    """
    out: list[ToolSchema] = []
    for index, item in enumerate(tools):
        where = f"tools[{index}]"
        entry = _entry(item, where)
        if entry.get("type") not in (None, "function"):
            raise ValueError(f'{where}.type is {entry.get("type")!r}; only "function" tools convert')
        function = entry.get("function")
        if isinstance(function, Mapping):
            entry, where = dict(function), f"{where}.function"
        name, description = _name_and_description(entry, where)
        parameters = entry.get("parameters")
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        parameters = _lowered(name, "parameters", parameters, notes)
        if entry.get("strict") is True:
            parameters = unstrict_parameters(parameters)
        out.append({"name": name, "description": description, "parameters": parameters})
    return out


def from_anthropic_tools(tools: Iterable[object], *, notes: list[ToolNote] | None = None) -> list[ToolSchema]:
    """``{name, description, parameters}`` dicts from Anthropic tools (``{name, description, input_schema}``).

    Server tools (entries with a ``type`` other than ``"custom"``, such as
    ``web_search_20250305``) have no schema to convert and are rejected.
    """
    out: list[ToolSchema] = []
    for index, item in enumerate(tools):
        where = f"tools[{index}]"
        entry = _entry(item, where)
        if entry.get("type") not in (None, "custom"):
            raise ValueError(f"{where}.type is {entry.get('type')!r}; only custom tools (with an input_schema) convert")
        name, description = _name_and_description(entry, where)
        if "input_schema" not in entry:
            raise ValueError(f"{where}.input_schema is required")
        parameters = _lowered(name, "parameters", entry["input_schema"], notes)
        out.append({"name": name, "description": description, "parameters": parameters})
    return out


def from_mcp_tools(
    tools: Iterable[object] | Mapping[str, Any], *, notes: list[ToolNote] | None = None
) -> list[ToolSchema]:
    """``{name, description, parameters[, output_schema]}`` dicts from MCP tools.

    Takes a ``tools/list`` result (``{"tools": [...]}``), a list of its
    entries, or ``mcp.types.Tool`` objects. ``output_schema`` is present only
    for tools that publish an ``outputSchema``.
    """
    if isinstance(tools, Mapping):
        listed = tools.get("tools")
        if not isinstance(listed, list):
            raise ValueError('an MCP tools/list result needs a "tools" array')
        tools = listed
    out: list[ToolSchema] = []
    for index, item in enumerate(tools):
        where = f"tools[{index}]"
        entry = _entry(item, where)
        name, description = _name_and_description(entry, where)
        if "inputSchema" not in entry:
            raise ValueError(f"{where}.inputSchema is required")
        schema: ToolSchema = {
            "name": name,
            "description": description,
            "parameters": _lowered(name, "parameters", entry["inputSchema"], notes),
        }
        if entry.get("outputSchema") is not None:
            schema["output_schema"] = _lowered(name, "output_schema", entry["outputSchema"], notes)
        out.append(schema)
    return out
