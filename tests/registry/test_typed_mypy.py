"""``@tool`` under ``mypy --strict``: decorated functions type-check and become ``ToolDefinition``s."""

from __future__ import annotations

import textwrap

import pytest
from _shared_helpers import REPO, run_mypy

# One worker runs the module: its fixture is one cold mypy run, once per worker that needs it.
pytestmark = pytest.mark.xdist_group("typed_mypy")

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

# The decorated names are still the functions, with their signatures (issue 39).
total: int = add(1, b=2)


async def use() -> None:
    applied: dict[str, Any] = await apply_edits([{"old": "a", "new": "b"}], mode="write")
    counted: int = await count()


# define_tool and ToolOutput take the schema DSL or plain JSON Schema, both typed (issue 39).
from dsh_codegen.registry import ToolOutput, define_tool


async def body(args: Any, run: ToolRunContext) -> Any:
    return args


json_output = ToolOutput(
    schema={"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"]},
    render=render,
)
dsl_output = ToolOutput(
    schema={"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string", "required": True}}},
    render=render,
)
from_dsl = define_tool(
    name="t", description="d", parameters={"path": {"type": "string", "required": True}}, output=dsl_output,
    execute=body,
)
from_json_schema = define_tool(
    name="u", description="d", parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    output=json_output, execute=body,
)
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
wrong: str = fine(1)
fine("one")

from dsh_codegen.registry import ToolOutput
ToolOutput(schema={"type": "date"}, render=lambda args, value: [])
ToolOutput(schema={"type": "string", "maxLength": "3"}, render=lambda args, value: [])
ToolOutput(schema={"type": "object", "propertes": {}}, render=lambda args, value: [])
"""


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One ``mypy --strict`` run over both files: a cold mypy start costs more than either check."""
    folder = tmp_path_factory.mktemp("typed_mypy")
    paths = []
    for name, source in (("typed_good", GOOD), ("typed_bad", BAD)):
        paths.append(folder / f"{name}.py")
        paths[-1].write_text(textwrap.dedent(source))
    # the package's own errors are the package's check (make test), not this test's
    result = run_mypy(folder, *paths, options=["--follow-imports=silent", "--no-incremental"], cwd=REPO)
    # errors (typed_bad's) and nothing else: a crash or a config error would not say this
    assert result.returncode == 1 and "(checked 2 source files)" in result.stdout, result.stdout + result.stderr
    return result.stdout


@pytest.mark.once
def test_decorated_functions_type_check(mypy_output: str) -> None:
    assert "typed_good.py" not in mypy_output, mypy_output


@pytest.mark.once
def test_misuse_is_reported(mypy_output: str) -> None:
    lines = BAD.splitlines()
    for marker in (
        "tool(42)",
        "result: int = fine",
        'tool(timeout_ms="soon")',
        "wrong: str = fine(1)",
        'fine("one")',
        'ToolOutput(schema={"type": "date"}',
        'ToolOutput(schema={"type": "string", "maxLength": "3"}',
        'ToolOutput(schema={"type": "object", "propertes": {}}',
    ):
        first = marker.splitlines()[0]
        number = next(i for i, line in enumerate(lines) if line.startswith(first)) + 1
        assert f"typed_bad.py:{number}:" in mypy_output, (marker, mypy_output)
