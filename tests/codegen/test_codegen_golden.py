"""Golden files: each case's outputs, byte for byte (house rule 10, docs/contributing.md).

Regenerate on purpose only: ``DSH_CODEGEN_REGENERATE_GOLDEN=1 pytest
tests/codegen/test_codegen_golden.py``, then read the diff. Headers carry
``<version>`` instead of the package version.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from codegen_helpers import CASES, VERSION_MARK, case_names
from dsh_codegen import __version__
from dsh_codegen.codegen import (
    ToolSchemaEntry,
    load_catalog,
    render_catalog_markdown,
    render_py_sdk,
    render_sdk_module,
    render_ts_sdk,
)

pytestmark = pytest.mark.once

OUTPUTS: dict[str, Callable[[list[ToolSchemaEntry]], str]] = {
    "ts_sdk.md": render_ts_sdk,
    "py_sdk.md": render_py_sdk,
    "sdk.ts": lambda catalog: render_sdk_module(catalog, "typescript"),
    "sdk.py": lambda catalog: render_sdk_module(catalog, "python"),
    "catalog.md": render_catalog_markdown,
}
REGENERATE = os.environ.get("DSH_CODEGEN_REGENERATE_GOLDEN") == "1"


@pytest.mark.parametrize("output", sorted(OUTPUTS))
@pytest.mark.parametrize("case", case_names())
def test_golden_output(case: str, output: str) -> None:
    catalog = load_catalog(CASES / case / "catalog.json")
    text = OUTPUTS[output](catalog).replace(f"dsh_codegen {__version__}.", f"dsh_codegen {VERSION_MARK}.")
    golden = CASES / case / output
    if REGENERATE:
        golden.write_bytes(text.encode("utf-8"))
    assert text.encode("utf-8") == golden.read_bytes()


def test_every_case_has_every_output() -> None:
    for case in case_names():
        present = {path.name for path in (CASES / case).iterdir()}
        assert set(OUTPUTS) <= present, case


def _fenced_block(text: str, opener: str) -> str:
    start = text.index(opener + "\n") + len(opener) + 1
    return text[start : text.index("```", start)]


SDK_TEXT_TS_EXAMPLE = """interface ToolArgsMap {
  /** Exotic name. */
  "my-mcp.tool": Record<string, JsonValue>;
  /** Read a file from disk. */
  read_file: {
    /** Absolute file path */
    path: string;
    limit?: number;
  } & Record<string, JsonValue>;
}

interface ToolOutputMap {
  "my-mcp.tool": string[];
  read_file: {
    text: string;
    lines?: number;
  };
}
"""

SDK_TEXT_PY_EXAMPLE = '''from typing import Any, Literal, NotRequired, Protocol, TypedDict

class ToolCallError(Exception):
    toolName: str
    message: str

class ListArgs(TypedDict):
    mode: Literal["a", "b"]
    # Additional keys beyond those declared are allowed.

class ReadFileArgs(TypedDict):
    # Absolute file path
    path: str
    limit: NotRequired[int]
    # Additional keys beyond those declared are allowed.

class ReadFileOutput(TypedDict):
    text: str
    lines: NotRequired[int]

class Tools(Protocol):
    async def list(self, args: ListArgs) -> str | None: ...
    # tools["my-mcp.tool"](args: dict[str, Any]) -> list[str]
    #   Exotic name.
    async def read_file(self, args: ReadFileArgs) -> ReadFileOutput:
        """Read a file from disk."""

tools: Tools
'''


def test_contract_section5_example_is_reproduced() -> None:
    catalog = [entry for entry in load_catalog(CASES / "contract_example" / "catalog.json") if entry.name != "list"]
    assert SDK_TEXT_TS_EXAMPLE in _fenced_block(render_ts_sdk(catalog), "```ts")


def test_contract_section6_example_is_reproduced() -> None:
    catalog = load_catalog(CASES / "contract_example" / "catalog.json")
    assert _fenced_block(render_py_sdk(catalog), "```python") == SDK_TEXT_PY_EXAMPLE


def test_empty_catalog_shapes() -> None:
    ts = render_ts_sdk([])
    assert "interface ToolArgsMap {}\n\ninterface ToolOutputMap {}\n" in ts
    py = _fenced_block(render_py_sdk([]), "```python")
    assert py == (
        "from typing import Protocol\n\nclass ToolCallError(Exception):\n    toolName: str\n    message: str\n\n"
        "class Tools(Protocol):\n    pass\n\ntools: Tools\n"
    )


def test_ts_prompt_layout() -> None:
    text = render_ts_sdk(load_catalog(CASES / "contract_example" / "catalog.json"))
    lines = text.split("\n")
    assert lines[0] == "## Writing code for run_code"
    assert lines[1] == ""
    assert lines[2].startswith("Pass `run_code` two required arguments") and lines[2].endswith("Inside the program:")
    assert [line[:2] for line in lines[3:7]] == ["- "] * 4
    assert lines[7:11] == ["", "The available tools:", "", "```ts"]
    block = _fenced_block(text, "```ts")
    assert block.startswith(
        "type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }\n\n"
    )
    assert block.endswith(
        "type ToolName = keyof ToolOutputMap\n\n"
        "declare class ToolCallError extends Error {\n"
        '  readonly name: "ToolCallError";\n'
        "  readonly toolName: ToolName;\n"
        "}\n\n"
        "declare const tools: {\n"
        "  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;\n"
        "}\n"
    )
    assert text.endswith("}\n```\n")


def test_py_prompt_layout() -> None:
    text = render_py_sdk([])
    lines = text.split("\n")
    assert lines[0] == "## Writing code for run_code"
    assert "`tools` and `ToolCallError`" in lines[2] and "`FooArgs(field=1)`, which raises `NameError`" in lines[2]
    assert lines[2].endswith("Inside the program:")
    assert [line[:2] for line in lines[3:7]] == ["- "] * 4
    assert lines[7:11] == ["", "The available tools:", "", "```python"]


@pytest.mark.parametrize("case", case_names())
def test_python_prompt_block_is_valid_python(case: str) -> None:
    import ast

    block = _fenced_block(render_py_sdk(load_catalog(CASES / case / "catalog.json")), "```python")
    tree = ast.parse(block)
    assert isinstance(tree.body[-1], ast.AnnAssign)  # tools: Tools
    compile(block, f"<{case} prompt>", "exec")
