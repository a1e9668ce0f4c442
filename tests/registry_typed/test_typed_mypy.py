"""``@tool`` under ``mypy --strict``: decorated functions type-check and become ``ToolDefinition``s."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GOOD = """
from typing import Annotated, Any, Literal, TypedDict

from dsh_codegen.registry import ToolDefinition, ToolRunContext
from dsh_codegen.registry._typed import tool


class Edit(TypedDict):
    old: str
    new: str


@tool
async def read_file(path: Annotated[str, "The file."], limit: int = 100, *, run: ToolRunContext) -> str:
    \"\"\"Read a file.\"\"\"
    return path


@tool(name="apply", timeout_ms=1000, description="Apply edits.")
async def apply_edits(edits: list[Edit], mode: Literal["dry-run", "write"] = "dry-run") -> dict[str, Any]:
    return {"applied": len(edits)}


def render(args: Any, value: Any) -> list[dict[str, str]]:
    return [{"type": "text", "text": str(value)}]


@tool(output_render=render, is_concurrency_safe=lambda args: True)
async def count() -> int:
    \"\"\"Count.\"\"\"
    return 1


@tool
def add(a: int, b: int = 1) -> int:
    \"\"\"Add (a plain function, run in a worker thread).\"\"\"
    return a + b


catalog: list[ToolDefinition] = [read_file, apply_edits, count, add]
name: str = read_file.name
"""

BAD = """
from dsh_codegen.registry._typed import tool


tool(42)


@tool
async def fine(x: int) -> int:
    \"\"\"Fine.\"\"\"
    return x


result: int = fine
tool(timeout_ms="soon")
"""


def run_mypy(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return subprocess.run(
        # the package's own errors are the package's check (make test), not this test's
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
         "--cache-dir", str(tmp_path / ".cache"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.once
def test_decorated_functions_type_check(tmp_path: Path) -> None:
    result = run_mypy(tmp_path, "typed_good", GOOD)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.once
def test_misuse_is_reported(tmp_path: Path) -> None:
    result = run_mypy(tmp_path, "typed_bad", BAD)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = BAD.splitlines()
    for marker in ("tool(42)", "result: int = fine", 'tool(timeout_ms="soon")'):
        first = marker.splitlines()[0]
        number = next(i for i, line in enumerate(lines) if line == first) + 1
        assert f"typed_bad.py:{number}:" in result.stdout, (marker, result.stdout)
