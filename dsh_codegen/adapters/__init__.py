"""Layer 6, adapters: foreign schema forms, tool formats, MCP in and out (re-exports only; see docs/adapters.md)."""

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
from dsh_codegen.adapters._mcp_serve import McpToolServer, serve_mcp
from dsh_codegen.adapters._mcp_import import McpImport, McpToolError, import_mcp_tools
from dsh_codegen.adapters._schema_tools import render_value_as_text, tool_from_schema
from dsh_codegen.adapters._strict import StrictSchemaError, relax_strict_arguments

__all__ = [
    "LoweredSchema",
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
    "relax_strict_arguments",
    "render_value_as_text",
    "serve_mcp",
    "to_anthropic_tools",
    "to_mcp_tools",
    "to_openai_tools",
    "tool_from_schema",
]
