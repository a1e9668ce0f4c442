"""Layer 6, adapters: foreign schema forms, tool formats, MCP in and out (re-exports only; see docs/adapters.md).

The names are re-exported lazily, the way ``dsh_codegen/__init__.py`` does it:
a caller that needs only the catalog-format detection (the command line's
``--catalog``) does not import the MCP server or the registry layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_codegen._lazy import lazy_exports

if TYPE_CHECKING:
    from dsh_codegen.adapters._catalog_docs import (
        catalog_from_mcp_command,
        detect_catalog_format,
        load_catalog_document,
        load_catalog_file,
    )
    from dsh_codegen.adapters._formats import (
        ToolNote,
        from_anthropic_tools,
        from_mcp_tools,
        from_openai_tools,
        to_anthropic_tools,
        to_mcp_tools,
        to_openai_tools,
    )
    from dsh_codegen.adapters._lowering import LoweredSchema, SchemaNote, lower_json_schema
    from dsh_codegen.adapters._mcp_import import (
        McpElicitation,
        McpImport,
        McpToolError,
        import_mcp_tools,
        mcp_elicitation_callback,
    )
    from dsh_codegen.adapters._mcp_serve import McpToolServer, serve_mcp
    from dsh_codegen.adapters._mcp_wire import mcp_http_client
    from dsh_codegen.adapters._schema_tools import render_value_as_text, tool_from_schema
    from dsh_codegen.adapters._strict import StrictSchemaError, relax_strict_arguments

#: Public name -> the private module that defines it.
_EXPORTS: dict[str, str] = {
    "catalog_from_mcp_command": "_catalog_docs",
    "detect_catalog_format": "_catalog_docs",
    "load_catalog_document": "_catalog_docs",
    "load_catalog_file": "_catalog_docs",
    "ToolNote": "_formats",
    "from_anthropic_tools": "_formats",
    "from_mcp_tools": "_formats",
    "from_openai_tools": "_formats",
    "to_anthropic_tools": "_formats",
    "to_mcp_tools": "_formats",
    "to_openai_tools": "_formats",
    "LoweredSchema": "_lowering",
    "SchemaNote": "_lowering",
    "lower_json_schema": "_lowering",
    "McpElicitation": "_mcp_import",
    "McpImport": "_mcp_import",
    "McpToolError": "_mcp_import",
    "import_mcp_tools": "_mcp_import",
    "mcp_elicitation_callback": "_mcp_import",
    "mcp_http_client": "_mcp_wire",
    "McpToolServer": "_mcp_serve",
    "serve_mcp": "_mcp_serve",
    "render_value_as_text": "_schema_tools",
    "tool_from_schema": "_schema_tools",
    "StrictSchemaError": "_strict",
    "relax_strict_arguments": "_strict",
}

__all__ = [
    "LoweredSchema",
    "McpElicitation",
    "McpImport",
    "McpToolError",
    "McpToolServer",
    "SchemaNote",
    "StrictSchemaError",
    "ToolNote",
    "catalog_from_mcp_command",
    "detect_catalog_format",
    "from_anthropic_tools",
    "from_mcp_tools",
    "from_openai_tools",
    "import_mcp_tools",
    "load_catalog_document",
    "load_catalog_file",
    "lower_json_schema",
    "mcp_elicitation_callback",
    "mcp_http_client",
    "relax_strict_arguments",
    "render_value_as_text",
    "serve_mcp",
    "to_anthropic_tools",
    "to_mcp_tools",
    "to_openai_tools",
    "tool_from_schema",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
