"""The Markdown tool catalog (the ``dsh-codegen catalog`` command)."""

from __future__ import annotations

from collections.abc import Iterable

from dsh_codegen.codegen._catalog import ToolSchemaEntry, sorted_catalog
from dsh_codegen.codegen._jsontext import JsonTextError, dumps_pretty
from dsh_codegen.codegen._literals import md_code, md_text

__all__ = ["render_catalog_markdown"]


def _schema_block(schema: object) -> str:
    try:
        return dumps_pretty(schema)
    except JsonTextError as error:
        # Still a readable page: say what is wrong instead of failing the whole catalog.
        return f"// not JSON: {error}"


def render_catalog_markdown(catalog: Iterable[ToolSchemaEntry]) -> str:
    """A Markdown page listing each tool (sorted by name): name, description,
    parameter schema and output schema as pretty JSON.

    Names are shown in code spans (JSON-quoted when not plain), descriptions
    collapsed to one inert paragraph. Schemas nested deeper than 8 levels are
    printed compactly. Never raises for odd schemas.
    """
    entries = sorted_catalog(catalog)
    count = f"{len(entries)} tool{'' if len(entries) == 1 else 's'}, sorted by name."
    return f"# Tool catalog\n\n{count}\n" + "".join(map(_tool_section, entries))


def _tool_section(entry: ToolSchemaEntry) -> str:
    """One tool's section: its heading, its description paragraph (when it has one),
    its parameter schema and its output schema (or "any JSON value")."""
    description = md_text(entry.description)
    paragraph = f"{description}\n\n" if description else ""
    if entry.output_schema is None:
        output = "Output: any JSON value.\n"
    else:
        output = f"Output:\n\n```json\n{_schema_block(entry.output_schema)}\n```\n"
    return (
        f"\n## {md_code(entry.name)}\n\n{paragraph}"
        f"Parameters:\n\n```json\n{_schema_block(entry.parameters)}\n```\n\n{output}"
    )
