"""``@tool`` under ``mypy --strict``: decorated functions type-check and become ``ToolDefinition``s."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One ``mypy --strict`` run over both files: a cold mypy start costs more than either check."""
    folder = tmp_path_factory.mktemp("typed_mypy")
    paths = []
    for name, source in (("typed_good", GOOD), ("typed_bad", BAD)):
        paths.append(folder / f"{name}.py")
        paths[-1].write_text(textwrap.dedent(source))
    result = subprocess.run(
        # the package's own errors are the package's check (make test), not this test's
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
         "--cache-dir", str(folder / ".cache"), *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    # errors (typed_bad's) and nothing else: a crash or a config error would not say this
    assert result.returncode == 1 and "(checked 2 source files)" in result.stdout, result.stdout + result.stderr
    return result.stdout


@pytest.mark.once
def test_decorated_functions_type_check(mypy_output: str) -> None:
    assert "typed_good.py" not in mypy_output, mypy_output


@pytest.mark.once
def test_misuse_is_reported(mypy_output: str) -> None:
    lines = BAD.splitlines()
    for marker in ("tool(42)", "result: int = fine", 'tool(timeout_ms="soon")'):
        first = marker.splitlines()[0]
        number = next(i for i, line in enumerate(lines) if line == first) + 1
        assert f"typed_bad.py:{number}:" in mypy_output, (marker, mypy_output)
