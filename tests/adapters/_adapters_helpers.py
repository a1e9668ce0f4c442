"""Shared helpers for the adapter tests: MCP sessions over stdio with real servers."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from dsh_codegen.schema import JsonSchemaError, assert_supported_json_schema

HERE = Path(__file__).parent


def core_accepts(schema: object) -> str | None:
    """``None`` when the schema core accepts ``schema``, else the core's reason (for a skip)."""
    try:
        assert_supported_json_schema(schema)
    except JsonSchemaError as error:
        return error.message
    return None


def needs_core(*schemas: object) -> None:
    """Skip the calling test until the schema core accepts every schema (the dialect branch)."""
    for schema in schemas:
        reason = core_accepts(schema)
        if reason is not None:
            pytest.skip(f"needs the widened schema core (dialect): {reason}")


def process_gone(pid: int) -> bool:
    """Whether ``pid`` no longer exists (reaped; a zombie would still be there)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@asynccontextmanager
async def mcp_session(
    script: Path, markers: Path, args: Sequence[str] = (), *, modern: bool = False, **options: Any
) -> AsyncIterator[Any]:
    """An initialised ``mcp.ClientSession`` to ``python script *args`` over stdio (closed and reaped on exit).

    ``modern=True`` negotiates MCP 2026-07-28 (``server/discover``) instead of the
    2025 handshake (``initialize``); ``options`` go to ``ClientSession``.
    """
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {"SDK_SERVER_DIR": str(markers), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.pathsep.join(sys.path)}
    params = StdioServerParameters(command=sys.executable, args=[str(script), *args], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **options) as session:
            if modern:
                await session.discover()
            else:
                await session.initialize()
            yield session
