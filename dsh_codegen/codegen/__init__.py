"""Layer 3, code generation: type text, SDK prompt texts, SDK files, catalogs.

Re-exports only (see DESIGN.md and docs/codegen.md).
"""

from dsh_codegen.codegen._catalog import CatalogError, ToolSchemaEntry, catalog_from_json, load_catalog
from dsh_codegen.codegen._markdown import render_catalog_markdown
from dsh_codegen.codegen._py import json_schema_to_py
from dsh_codegen.codegen._sdk import render_py_sdk, render_sdk_module, render_ts_sdk
from dsh_codegen.codegen._ts import json_schema_to_ts

__all__ = [
    "CatalogError",
    "ToolSchemaEntry",
    "catalog_from_json",
    "json_schema_to_py",
    "json_schema_to_ts",
    "load_catalog",
    "render_catalog_markdown",
    "render_py_sdk",
    "render_sdk_module",
    "render_ts_sdk",
]
