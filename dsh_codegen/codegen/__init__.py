"""Layer 3, code generation: type text, SDK prompt texts, SDK files, catalogs.

Re-exports only (house rule 4, docs/contributing.md; docs/codegen.md), and lazily, the way
``dsh_codegen/__init__.py`` does it: a TypeScript render does not import the
Python modules, nor a Python render the TypeScript ones. Each output is written
by the one module named for it (docs/codegen.md, "One way to render code").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_codegen._lazy import lazy_exports

if TYPE_CHECKING:
    from dsh_codegen.codegen._catalog import (
        CatalogError,
        ToolSchemaEntry,
        catalog_from_json,
        load_catalog,
        read_catalog_json,
    )
    from dsh_codegen.codegen._catalog_markdown import render_catalog_markdown
    from dsh_codegen.codegen._degraded import Degradation, degraded_nodes
    from dsh_codegen.codegen._py_sdk import render_py_sdk
    from dsh_codegen.codegen._py_types import json_schema_to_py
    from dsh_codegen.codegen._sdk_files import render_sdk_module
    from dsh_codegen.codegen._ts_sdk import render_ts_sdk
    from dsh_codegen.codegen._ts_types import json_schema_to_ts

#: Public name -> the private module that defines it.
_EXPORTS: dict[str, str] = {
    "CatalogError": "_catalog",
    "ToolSchemaEntry": "_catalog",
    "catalog_from_json": "_catalog",
    "load_catalog": "_catalog",
    "read_catalog_json": "_catalog",
    "Degradation": "_degraded",
    "degraded_nodes": "_degraded",
    "render_catalog_markdown": "_catalog_markdown",
    "json_schema_to_py": "_py_types",
    "render_py_sdk": "_py_sdk",
    "render_sdk_module": "_sdk_files",
    "render_ts_sdk": "_ts_sdk",
    "json_schema_to_ts": "_ts_types",
}

__all__ = [
    "CatalogError",
    "Degradation",
    "ToolSchemaEntry",
    "catalog_from_json",
    "degraded_nodes",
    "json_schema_to_py",
    "json_schema_to_ts",
    "load_catalog",
    "read_catalog_json",
    "render_catalog_markdown",
    "render_py_sdk",
    "render_sdk_module",
    "render_ts_sdk",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
