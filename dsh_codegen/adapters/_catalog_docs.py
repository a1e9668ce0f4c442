"""Catalogs for the code generator from foreign tool lists and from a running MCP server.

``load_catalog_document`` accepts, besides our own catalog format (a list of
``{name, description, parameters, output_schema}``), an MCP ``tools/list``
result (``{"tools": [...]}``, or its list of tools), an OpenAI tools list
(either layout) and an Anthropic tools list, detected from their keys or named
with ``format=``. ``catalog_from_mcp_command`` starts an MCP server over stdio,
lists its tools and stops it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dsh_codegen._extras import require_extra
from dsh_codegen.codegen import CatalogError, ToolSchemaEntry, catalog_from_json, read_catalog_json

if TYPE_CHECKING:
    from dsh_codegen.adapters._formats import ToolNote, ToolSchema

__all__ = [
    "CatalogFormat",
    "catalog_from_mcp_command",
    "detect_catalog_format",
    "load_catalog_document",
    "load_catalog_file",
]

CatalogFormat = Literal["auto", "catalog", "mcp", "openai", "anthropic"]
_FORMATS: tuple[str, ...] = ("auto", "catalog", "mcp", "openai", "anthropic")


def _kind_of(item: object) -> str | None:
    if not isinstance(item, Mapping):
        return None
    if "inputSchema" in item:
        return "mcp"
    if "input_schema" in item:
        return "anthropic"
    if isinstance(item.get("function"), Mapping) or item.get("type") == "function":
        return "openai"
    if "name" in item:
        return "catalog"
    return None


def detect_catalog_format(data: object) -> str:
    """``"catalog"``, ``"mcp"``, ``"openai"`` or ``"anthropic"`` for a parsed document.

    A ``{"tools": [...]}`` object is MCP; a list is judged by its entries
    (``inputSchema``: MCP, ``input_schema``: Anthropic, ``{"type": "function"}``
    or a ``function`` object: OpenAI, otherwise our catalog), and every entry
    must agree. An empty list is an (empty) catalog.

    Raised errors: ``ValueError`` for a document none of these describe, or a
    list mixing them.
    """
    if isinstance(data, Mapping):
        if isinstance(data.get("tools"), list):
            return "mcp"
        raise ValueError('an object document must be an MCP tools/list result with a "tools" array')
    if not isinstance(data, list):
        raise ValueError("a tool list must be a JSON array (or an MCP tools/list result object)")
    kinds = {_kind_of(item) for item in data}
    if not kinds:
        return "catalog"
    if len(kinds) > 1 or None in kinds:
        found = ", ".join(sorted(k or "unknown" for k in kinds))
        raise ValueError(f"cannot tell the tool format: the entries look like {found}; name it with --format")
    [kind] = kinds
    assert kind is not None
    return kind


def load_catalog_document(
    data: object,
    *,
    format: CatalogFormat = "auto",
    source: str = "<catalog>",
    notes: list[ToolNote] | None = None,
) -> list[ToolSchemaEntry]:
    """Catalog entries from a parsed document in any supported format (see the module docstring).

    Foreign forms of JSON Schema are lowered (notes appended to ``notes``);
    MCP ``outputSchema`` becomes the entry's output schema, and an MCP tool
    without one gets ``{"type": "string"}`` (its value is its text, as
    ``import_mcp_tools`` returns it).

    Raised errors: :class:`CatalogError` naming ``source`` (an unknown or
    mixed format, a malformed entry, a schema form that cannot be kept).
    """
    if format not in _FORMATS:
        raise CatalogError(source, f"unknown format {format!r} (known: {', '.join(_FORMATS)})")
    try:
        kind = detect_catalog_format(data) if format == "auto" else format
        if kind == "catalog":
            return catalog_from_json(data, source=source)
        schemas = _foreign_schemas(kind, data, notes, source)
    except CatalogError:
        raise
    except (ValueError, TypeError) as error:
        raise CatalogError(source, str(error)) from None
    if kind == "mcp":
        from dsh_codegen.adapters._formats import mcp_value_schema

        # An MCP tool without an outputSchema answers text: its value is a string (as imported).
        return [
            ToolSchemaEntry(schema["name"], schema["description"], schema["parameters"], mcp_value_schema(schema))
            for schema in schemas
        ]
    return [
        ToolSchemaEntry(schema["name"], schema["description"], schema["parameters"], schema.get("output_schema"))
        for schema in schemas
    ]


def _foreign_schemas(kind: str, data: object, notes: list[ToolNote] | None, source: str) -> list[ToolSchema]:
    """The tool schemas of an MCP, OpenAI or Anthropic document, lowered to the dialect.

    The format converters (lowering, strict mode, the schema layer) are imported
    here, on first use: a run on our own catalog format loads none of them.
    """
    from dsh_codegen.adapters._formats import from_anthropic_tools, from_mcp_tools, from_openai_tools
    from dsh_codegen.schema import JsonSchemaError

    try:
        if kind == "mcp":
            return from_mcp_tools(data if isinstance(data, Mapping) else _list(data), notes=notes)
        if kind == "openai":
            return from_openai_tools(_list(data), notes=notes)
        return from_anthropic_tools(_list(data), notes=notes)
    except JsonSchemaError as error:
        raise CatalogError(source, error.message) from None


def _first_leaf(error: BaseException) -> BaseException:
    """The first non-group exception inside (anyio task groups wrap what their tasks raise)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _list(data: object) -> list[Any]:
    if not isinstance(data, list):
        raise ValueError("the tool list must be a JSON array")
    return data


def load_catalog_file(
    path_or_text: str | os.PathLike[str], *, format: CatalogFormat = "auto", notes: list[ToolNote] | None = None
) -> list[ToolSchemaEntry]:
    """:func:`load_catalog_document` of a file (or of JSON text starting with ``[`` or ``{``).

    Raised errors: :class:`CatalogError` naming the file (unreadable, not
    UTF-8, invalid JSON, or as :func:`load_catalog_document`).
    """
    source, document = read_catalog_json(path_or_text, openers="[{")
    return load_catalog_document(document, format=format, source=source, notes=notes)


async def catalog_from_mcp_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    notes: list[ToolNote] | None = None,
    timeout: float = 30.0,
) -> list[ToolSchemaEntry]:
    """Start the MCP server ``argv`` over stdio, list its tools, stop it, and return them as a catalog.

    ``argv`` is a list (no shell); ``env`` defaults to the SDK's safe subset of
    this process's environment. ``timeout`` (seconds) bounds the start-up: the
    ``initialize`` handshake and the ``tools/list`` pages together. The server
    is stopped and reaped before this returns or raises.

    Raised errors: :class:`CatalogError` (source ``--mcp <command>``) when the
    server cannot be started, does not answer within ``timeout`` (``the MCP
    server did not answer within 30 s``), fails to initialise or lists tools
    that cannot be converted; ``ImportError`` naming the extra and its install
    command when the ``mcp`` extra is not installed.

    Cancellation: cancelling this coroutine closes the session and stops the
    server (the SDK terminates, then kills, and reaps it).
    """
    require_extra("mcp", "mcp", "--mcp (an MCP server's tools)")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from dsh_codegen.adapters._mcp_import import list_all_tools

    if not argv:
        raise CatalogError("--mcp", "the MCP server command is empty")
    import shlex

    source = "--mcp " + shlex.join(argv)
    params = StdioServerParameters(
        command=argv[0],
        args=list(argv[1:]),
        env=None if env is None else dict(env),
        cwd=None if cwd is None else Path(cwd),
    )
    answered = False
    try:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                with anyio.move_on_after(timeout):
                    await session.initialize()
                    tools = await list_all_tools(session)
                    answered = True
    except Exception as caught:  # noqa: BLE001 - any SDK/transport failure is reported with its source
        error = _first_leaf(caught)
        if isinstance(error, OSError):
            raise CatalogError(source, f"cannot start the MCP server: {error.strerror or error}") from None
        raise CatalogError(source, f"the MCP server failed: {type(error).__name__}: {error}") from None
    if not answered:
        raise CatalogError(
            source,
            f"the MCP server did not answer within {timeout:g} s (initialize and tools/list); "
            "check the command, or allow more time (--mcp-timeout)",
        )
    dumped = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]
    return load_catalog_document({"tools": dumped}, format="mcp", source=source, notes=notes)
