"""An MCP server written with the SDK's own server API (``mcp`` 2.x ``MCPServer``), run over stdio.

Its tools publish what real servers publish: pydantic schemas with ``$defs``/``$ref``,
``anyOf`` nullable fields, constraints (``minimum``, ``maxLength``), an
``outputSchema`` on typed returns, a tool reporting ``isError``, a slow tool that
records its cancellation, a tool that kills the server mid-call, and a tool whose
result has image, audio, resource and resource-link blocks beside its text.

Environment: ``SDK_SERVER_DIR`` (a directory for the marker files ``pid``,
``slow-started`` and ``slow-cancelled``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Audio, Image, MCPServer
from mcp.types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents, ToolAnnotations
from pydantic import BaseModel, Field

MARKERS = Path(os.environ.get("SDK_SERVER_DIR", "."))
#: A 1x1 transparent PNG; the tests compare the base64 the client receives with it.
PIXEL_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
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
def picture(caption: str) -> list[object]:
    """Text, then an image, an audio clip, an embedded resource and a resource link."""
    return [
        TextContent(type="text", text=caption),
        Image(data=PIXEL_PNG, format="png"),
        Audio(data=b"RIFF\x00\x00\x00\x00WAVE", format="wav"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(uri="memo://note", mime_type="text/plain", text="a note"),
        ),
        ResourceLink(type="resource_link", uri="file:///tmp/report.pdf", name="report", mime_type="application/pdf"),
    ]


@app.tool(structured_output=False)
def die() -> str:
    """Kills the server process in the middle of the call."""
    os._exit(3)


if __name__ == "__main__":
    (MARKERS / "pid").write_text(str(os.getpid()))
    app.run("stdio")
