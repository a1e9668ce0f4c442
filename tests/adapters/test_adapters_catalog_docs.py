"""Catalog documents in every tool format, and catalogs straight from a running MCP server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_codegen import CatalogError, ToolSchemaEntry, render_py_sdk
from dsh_codegen.adapters import (
    catalog_from_mcp_command,
    detect_catalog_format,
    load_catalog_document,
    load_catalog_file,
    to_anthropic_tools,
    to_mcp_tools,
    to_openai_tools,
)

from _adapters_helpers import HERE

SCHEMAS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {"name": "ping", "description": "", "parameters": {"type": "object", "properties": {}}},
]
EXPECTED = [ToolSchemaEntry(s["name"], s["description"], s["parameters"], None) for s in SCHEMAS]
# An MCP tool without an outputSchema answers text: the catalog types its value a string, as
# import_mcp_tools returns it.
EXPECTED_MCP = [dataclasses.replace(entry, output_schema={"type": "string"}) for entry in EXPECTED]


@pytest.mark.parametrize(
    ("document", "kind"),
    [
        (SCHEMAS, "catalog"),
        ({"tools": to_mcp_tools(SCHEMAS)}, "mcp"),
        (to_mcp_tools(SCHEMAS), "mcp"),
        (to_openai_tools(SCHEMAS), "openai"),
        (to_openai_tools(SCHEMAS, api="responses"), "openai"),
        (to_anthropic_tools(SCHEMAS), "anthropic"),
    ],
)
def test_each_format_is_detected_and_loaded(document: Any, kind: str) -> None:
    expected = EXPECTED_MCP if kind == "mcp" else EXPECTED
    assert detect_catalog_format(document) == kind
    assert load_catalog_document(document) == expected
    assert load_catalog_document(document, format=kind) == expected  # type: ignore[arg-type]


def test_mcp_output_schema_becomes_the_entry_output_schema() -> None:
    output = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    [entry] = load_catalog_document(
        {"tools": [{"name": "r", "inputSchema": {"type": "object"}, "outputSchema": output}]}
    )
    assert entry.output_schema == output
    assert "class ROutput(TypedDict):" in render_py_sdk([entry])


def test_mixed_and_unknown_documents_are_catalog_errors() -> None:
    mixed = [to_mcp_tools(SCHEMAS)[0], to_anthropic_tools(SCHEMAS)[0]]
    with pytest.raises(
        CatalogError, match=r"tools.json: cannot tell the tool format: the entries look like anthropic, mcp"
    ):
        load_catalog_document(mixed, source="tools.json")
    with pytest.raises(CatalogError, match=r'an MCP tools/list result with a "tools" array'):
        load_catalog_document({"functions": []})
    with pytest.raises(CatalogError, match=r"unknown format"):
        load_catalog_document([], format="yaml")  # type: ignore[arg-type]
    with pytest.raises(CatalogError, match=r"schema dependency"):
        load_catalog_document(
            to_anthropic_tools(
                [{"name": "x", "description": "", "parameters": {"dependencies": {"a": {"type": "object"}}}}]
            )
        )


def test_load_catalog_file_reads_files_and_text(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": to_mcp_tools(SCHEMAS)}), encoding="utf-8")
    assert load_catalog_file(path) == EXPECTED_MCP
    assert load_catalog_file(json.dumps(to_openai_tools(SCHEMAS))) == EXPECTED
    with pytest.raises(CatalogError, match=r"cannot read the catalog"):
        load_catalog_file(tmp_path / "missing.json")


@pytest.mark.once
def test_catalog_from_a_running_mcp_server(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    env = {"SDK_SERVER_DIR": str(tmp_path), "PYTHONPATH": ":".join(sys.path)}
    catalog = asyncio.run(catalog_from_mcp_command([sys.executable, str(HERE / "sdk_server.py")], env=env))
    by_name = {entry.name: entry for entry in catalog}
    assert {"add", "greet", "locate", "fail", "slow", "die"} <= set(by_name)
    assert by_name["add"].output_schema is not None and by_name["greet"].output_schema == {"type": "string"}
    assert "$defs" in by_name["locate"].parameters
    text = render_py_sdk(catalog)
    assert "async def add(self, args: AddArgs) -> AddOutput:" in text


@pytest.mark.once
def test_catalog_from_a_command_that_cannot_start() -> None:
    pytest.importorskip("mcp")
    with pytest.raises(CatalogError, match=r"^--mcp /nonexistent/server: cannot start the MCP server"):
        asyncio.run(catalog_from_mcp_command(["/nonexistent/server"]))


@pytest.mark.once
def test_catalog_from_a_server_that_never_answers_times_out() -> None:
    pytest.importorskip("mcp")
    silent = [sys.executable, "-c", "import time; time.sleep(60)"]
    with pytest.raises(CatalogError) as caught:
        asyncio.run(catalog_from_mcp_command(silent, timeout=0.5))
    assert str(caught.value).endswith(
        ": the MCP server did not answer within 0.5 s (initialize and tools/list); "
        "check the command, or allow more time (--mcp-timeout)"
    )
