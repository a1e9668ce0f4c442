"""An MCP server written with the SDK's own server API (``mcp`` 2.x ``MCPServer``), run over stdio.

Its tools publish what real servers publish: pydantic schemas with ``$defs``/``$ref``,
``anyOf`` nullable fields, constraints (``minimum``, ``maxLength``), an
``outputSchema`` on typed returns, a tool reporting ``isError``, a slow tool that
records its cancellation, and a tool that kills the server mid-call.

Environment: ``SDK_SERVER_DIR`` (a directory for the marker files ``pid``,
``slow-started`` and ``slow-cancelled``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

MARKERS = Path(os.environ.get("SDK_SERVER_DIR", "."))
app = MCPServer("sdk-test-server")


class Point(BaseModel):
    x: int = Field(ge=0)
    y: int | None = None


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool(structured_output=False)
def greet(name: str) -> str:
    """Greet someone (text content only, no outputSchema)."""
    return f"hello {name}"


@app.tool()
def locate(point: Point, label: Annotated[str, Field(max_length=8)] | None = None) -> Point:
    """A $ref parameter, a nullable constrained field and an object outputSchema."""
    return point


@app.tool(structured_output=False)
def fail(reason: str) -> str:
    """Always fails (the SDK reports isError)."""
    raise ValueError(reason)


@app.tool(structured_output=False)
async def slow(seconds: float) -> str:
    """Sleeps, recording a start marker and, if cancelled, a cancellation marker."""
    (MARKERS / "slow-started").write_text("1")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        (MARKERS / "slow-cancelled").write_text("1")
        raise
    return "slept"


@app.tool(structured_output=False)
def die() -> str:
    """Kills the server process in the middle of the call."""
    os._exit(3)


if __name__ == "__main__":
    (MARKERS / "pid").write_text(str(os.getpid()))
    app.run("stdio")
