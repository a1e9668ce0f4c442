"""Every Python example of docs/adapters.md runs as written (each as its own script)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from _shared_helpers import run_in_session

DOC = Path(__file__).resolve().parents[2] / "docs" / "adapters.md"
# A block marked `<!-- docs: fragment (why) -->` on the line before its fence is a piece of a program
# (tests/docs/test_docs_blocks.py says so too): not run.
BLOCKS = re.findall(r"(?<!-->\n)```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_the_page_has_an_example_per_adapter() -> None:
    text = "\n".join(BLOCKS)
    for name in (
        "lower_json_schema",
        "to_openai_tools",
        "to_anthropic_tools",
        "import_mcp_tools",
        "serve_mcp",
        "load_catalog_document",
        "PythonSubprocessRuntime",
    ):
        assert name in text, name


@pytest.mark.once
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index: int, tmp_path: Path) -> None:
    script = tmp_path / f"example_{index}.py"
    script.write_text(BLOCKS[index], encoding="utf-8")
    # the examples start MCP servers and program processes: a timeout stops them too
    done = run_in_session([sys.executable, str(script)], text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if "serve_mcp" in BLOCKS[index]:
        assert "imported ('remote.add',)" in done.stdout
        assert "{'sum': 42} [{'type': 'text', 'text': 'Error: no negative numbers'}]" in done.stdout
    if "PythonSubprocessRuntime" in BLOCKS[index]:
        assert (
            "{'logs': ['failed: forecast Error executing tool forecast: no such city'], 'result': 7.5}" in done.stdout
        )
