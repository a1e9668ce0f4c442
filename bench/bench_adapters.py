"""Adapters: MCP per-call overhead through ``serve_mcp`` against the SDK's own server, and ``import_mcp_tools``.

- per call: an MCP client (the SDK's ``ClientSession`` over stdio) calls ``add``
  on a subprocess serving it with ``serve_mcp`` (every call runs the whole
  registry pipeline: argument validation, output snapshot/validation/render,
  observers) and on a subprocess serving the same tool with the SDK's own
  ``MCPServer`` (an ``async def`` tool, so no worker-thread hop; pydantic
  validation of arguments and output), with the SDK's low-level ``Server``
  answering without any validation as the floor. Calls are
  sequential round trips, sampled in batches alternating between the servers;
  the figure is the median batch time per call. Both sides pay the same
  client, the same JSON-RPC framing and the same pipes.
- per call over streamable HTTP: the same client calls ``add`` on ``serve_mcp`` and on
  the SDK's ``MCPServer``, each serving HTTP on loopback from its own subprocess
  (uvicorn on both sides); batches alternate; median batch time per call.
- imported call over stdio: ``registry.execute`` of ``add`` imported with
  ``import_mcp_tools`` from the SDK's ``MCPServer`` over stdio (the whole pipeline
  around the MCP request: argument validation, the request, output validation,
  render, ``finalize_content``) against ``session.call_tool`` on the same session;
  batches alternate; median batch time per call.
- handler: the same two servers' ``tools/call`` work alone, in process
  (no transport): our handler (``registry.execute`` and the result
  conversion) against ``MCPServer.call_tool``.
- import: ``import_mcp_tools`` of a 100-tool ``serve_mcp`` server, from an
  initialised session to a registry whose tools are callable (``tools/list``,
  lowering, schema compilation, registration), median of repeated imports into
  fresh registries; the whole-process figure (spawn, interpreter start,
  ``initialize``, import) is reported beside it.
- imported call: in process (the SDK's in-memory transport to an ``MCPServer``
  serving ``add``), ``registry.execute`` of the imported ``add`` (the whole
  pipeline around the MCP request, with the ``finalize_content`` seam that
  keeps non-text blocks) against the same tool re-registered without that seam
  (what the import was before it kept media) and against ``session.call_tool``
  alone; batches alternate between the three, timed in process CPU time
  (everything runs in this process), fastest batch.
- Code Mode over MCP: one ``run_code`` program making one nested call, sent by
  an MCP client over stdio to ``serve_mcp`` (a ``mode="code"`` registry with
  ``PythonSubprocessRuntime``), against the same program run in process by
  ``registry.execute``; runs alternate; a fresh program process per run on
  both sides.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench._util import format_seconds, median_time, ratio_table

BATCH = 100
ROUNDS = 9
IMPORTS = 15
ROOT = Path(__file__).resolve().parents[1]


@asynccontextmanager
async def _session(mode: str) -> AsyncIterator[Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "bench._mcp_servers", mode], env={"PYTHONPATH": str(ROOT)}, cwd=ROOT
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def _per_call() -> dict[str, float]:
    async with _session("registry") as ours, _session("sdk") as theirs, _session("lowlevel") as floor:
        sessions = {
            "serve_mcp (whole pipeline)": ours,
            "SDK MCPServer": theirs,
            "SDK low-level Server (no validation)": floor,
        }
        samples: dict[str, list[float]] = {name: [] for name in sessions}
        for session in sessions.values():  # warm-up, also checks both answer the same
            result = await session.call_tool("add", {"a": 1, "b": 2})
            assert not result.is_error and result.structured_content == {"result": 3}, result
        for _ in range(ROUNDS):
            for name, session in sessions.items():
                start = time.perf_counter()
                for index in range(BATCH):
                    await session.call_tool("add", {"a": index, "b": 1})
                samples[name].append((time.perf_counter() - start) / BATCH)
    return {name: statistics.median(values) for name, values in samples.items()}


@asynccontextmanager
async def _http_session(mode: str) -> AsyncIterator[Any]:
    """A client session to ``python -m bench._mcp_servers MODE PORT`` serving HTTP (stopped after)."""
    import socket

    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench._mcp_servers",
        mode,
        str(port),
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.DEVNULL,  # the SDK's uvicorn logs every request at INFO
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            await writer.wait_closed()
            break
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as http, streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                yield session
    finally:
        process.terminate()
        await process.wait()


async def _per_call_http() -> dict[str, float]:
    async with _http_session("registry-http") as ours, _http_session("sdk-http") as theirs:
        sessions = {"serve_mcp over HTTP (whole pipeline)": ours, "SDK MCPServer over HTTP": theirs}
        samples: dict[str, list[float]] = {name: [] for name in sessions}
        for session in sessions.values():
            result = await session.call_tool("add", {"a": 1, "b": 2})
            assert not result.is_error and result.structured_content == {"result": 3}, result
        for _ in range(ROUNDS):
            for name, session in sessions.items():
                start = time.perf_counter()
                for index in range(BATCH // 2):
                    await session.call_tool("add", {"a": index, "b": 1})
                samples[name].append((time.perf_counter() - start) / (BATCH // 2))
    return {name: statistics.median(values) for name, values in samples.items()}


async def _imported_over_stdio() -> dict[str, float]:
    from dsh_codegen import AbortController, ToolExecutionInput, ToolRegistry
    from dsh_codegen.adapters import import_mcp_tools

    async with _session("sdk") as session:
        registry = ToolRegistry()
        await import_mcp_tools(registry, session)
        signal = AbortController().signal

        async def through() -> None:
            for index in range(BATCH):
                result = await registry.execute(ToolExecutionInput("c", "add", {"a": index, "b": 1}, signal))
                assert not result.is_error, result

        async def direct() -> None:
            for index in range(BATCH):
                await session.call_tool("add", {"a": index, "b": 1})

        variants = {
            "registry.execute of the imported add (stdio)": through,
            "session.call_tool on the same session": direct,
        }
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for run in variants.values():
            await run()  # warm-up
        for _ in range(ROUNDS):
            for name, run in variants.items():
                start = time.perf_counter()
                await run()
                samples[name].append((time.perf_counter() - start) / BATCH)
    return {name: statistics.median(values) for name, values in samples.items()}


def _handlers() -> dict[str, float]:
    """The server-side work alone, in process: our ``tools/call`` handler against ``MCPServer.call_tool``."""
    from types import SimpleNamespace

    from mcp.types import CallToolRequestParams

    from bench._mcp_servers import _registry, sdk_add_server
    from dsh_codegen.adapters import McpToolServer

    ours = McpToolServer(_registry(1))
    app = sdk_add_server()
    params = CallToolRequestParams(name="add", arguments={"a": 1, "b": 2})
    from mcp.types import ClientCapabilities

    session = SimpleNamespace(client_capabilities=ClientCapabilities(), can_send_request=False)
    ctx = SimpleNamespace(request_id=1, session=session, protocol_version="2025-11-25", meta=None)
    loop = asyncio.new_event_loop()

    async def ours_batch() -> None:
        for _ in range(BATCH):
            await ours._call_tool(ctx, params)  # type: ignore[arg-type]

    async def theirs_batch() -> None:
        for _ in range(BATCH):
            await app.call_tool("add", {"a": 1, "b": 2})

    try:
        assert loop.run_until_complete(ours._call_tool(ctx, params)).structured_content == {"result": 3}  # type: ignore[arg-type]
        assert loop.run_until_complete(app.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        return {
            "serve_mcp handler (registry.execute + result)": median_time(lambda: loop.run_until_complete(ours_batch()))
            / BATCH,
            "MCPServer.call_tool": median_time(lambda: loop.run_until_complete(theirs_batch())) / BATCH,
        }
    finally:
        loop.close()


async def _import() -> tuple[float, float, int]:
    from dsh_codegen import ToolRegistry
    from dsh_codegen.adapters import import_mcp_tools

    start = time.perf_counter()
    async with _session("many") as session:
        registry = ToolRegistry()
        imported = await import_mcp_tools(registry, session)
        whole = time.perf_counter() - start
        count = len(imported.names)
        times = []
        for _ in range(IMPORTS):
            registry = ToolRegistry()
            begin = time.perf_counter()
            await import_mcp_tools(registry, session)
            times.append(time.perf_counter() - begin)
    return statistics.median(times), whole, count


@asynccontextmanager
async def imported_add() -> AsyncIterator[tuple[Any, Any, Any]]:
    """``(session, registry, without_seam)`` in process, for the imported-call figures.

    ``session``: a client session to ``bench._mcp_servers.sdk_add_server()`` over the SDK's
    in-memory transport; ``registry``: ``import_mcp_tools`` of it;
    ``without_seam``: the imported ``add`` re-registered without its
    ``finalize_content`` (what the import was before it kept media).
    Also used by ``bench._callgrind_import``.
    """
    import dataclasses

    from mcp import Client

    from bench._mcp_servers import sdk_add_server
    from dsh_codegen import ToolRegistry
    from dsh_codegen.adapters import import_mcp_tools

    async with Client(sdk_add_server()) as client:
        session = client.session
        registry = ToolRegistry()
        await import_mcp_tools(registry, session)
        without_seam = ToolRegistry()
        definition = registry.get("add")
        assert definition is not None and definition.finalize_content is not None
        without_seam.register(dataclasses.replace(definition, finalize_content=None))
        yield session, registry, without_seam


async def _imported_calls() -> dict[str, float]:
    from dsh_codegen import AbortController, ToolExecutionInput, ToolRegistry

    async with imported_add() as (session, registry, without_seam):
        signal = AbortController().signal

        async def through(target: ToolRegistry) -> None:
            for index in range(BATCH):
                result = await target.execute(ToolExecutionInput("c", "add", {"a": index, "b": 1}, signal))
                assert not result.is_error

        async def direct() -> None:
            for index in range(BATCH):
                await session.call_tool("add", {"a": index, "b": 1})

        variants = {
            "registry.execute, imported add": lambda: through(registry),
            "registry.execute, imported add without the media seam": lambda: through(without_seam),
            "session.call_tool alone": direct,
        }
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for run in variants.values():
            await run()  # warm-up
        for _ in range(ROUNDS * 3):
            for name, run in variants.items():
                # CPU time of this process (client, transport and server all run in it), so the other
                # processes on a loaded machine count less than in wall time; the fastest batch.
                start = time.process_time()
                await run()
                samples[name].append((time.process_time() - start) / BATCH)
    return {name: min(values) for name, values in samples.items()}


CODE_RUNS = 7
PROGRAM = "return (await tools.add({'a': 1, 'b': 2}))['result']"


async def _code_mode() -> dict[str, float]:
    from dsh_codegen import AbortController, ToolExecutionInput, ToolRegistry
    from dsh_codegen.codemode import PythonSubprocessRuntime

    from bench._mcp_servers import _registry

    local: ToolRegistry = _registry(1, mode="code", code_runtime=PythonSubprocessRuntime())
    arguments = {"code": PROGRAM, "description": "add"}
    async with _session("code") as session:
        samples: dict[str, list[float]] = {"run_code via serve_mcp (stdio)": [], "run_code in process": []}
        for index in range(CODE_RUNS + 1):
            start = time.perf_counter()
            served = await session.call_tool("run_code", arguments)
            middle = time.perf_counter()
            local_result = await local.execute(
                ToolExecutionInput(f"c{index}", "run_code", arguments, AbortController().signal)
            )
            end = time.perf_counter()
            assert served.structured_content == {"logs": [], "result": 3}, served
            assert not local_result.is_error and local_result.value == {"logs": [], "result": 3}, local_result
            if index:  # the first run of each side starts its fork server
                samples["run_code via serve_mcp (stdio)"].append(middle - start)
                samples["run_code in process"].append(end - middle)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("adapters: skipped (the mcp extra is not installed)")
        return
    per_call = asyncio.run(_per_call())
    rows: list[tuple[str, float | str]] = list(per_call.items())
    print(
        ratio_table(
            "MCP over stdio: per-call round trip, add(a, b) (median of batches)", rows, baseline="SDK MCPServer"
        )
    )
    print()
    http: list[tuple[str, float | str]] = list(asyncio.run(_per_call_http()).items())
    print(
        ratio_table(
            "MCP over streamable HTTP: per-call round trip, add(a, b) (median of batches)",
            http,
            baseline="SDK MCPServer over HTTP",
        )
    )
    print()
    through: list[tuple[str, float | str]] = list(asyncio.run(_imported_over_stdio()).items())
    print(
        ratio_table(
            "An imported MCP tool over stdio (MCPServer), per call (median of batches)",
            through,
            baseline="session.call_tool on the same session",
        )
    )
    print()
    handlers: list[tuple[str, float | str]] = list(_handlers().items())
    print(ratio_table("MCP tools/call handler alone, in process (median)", handlers, baseline="MCPServer.call_tool"))
    median_import, whole, count = asyncio.run(_import())
    print()
    print(f"import_mcp_tools of a {count}-tool server: {format_seconds(median_import)} to a usable registry (median)")
    print(f"  whole process (spawn, start-up, initialize, first import): {format_seconds(whole)}")
    print(f"  per tool: {format_seconds(median_import / count)}")
    print()
    imported: list[tuple[str, float | str]] = list(asyncio.run(_imported_calls()).items())
    print(
        ratio_table(
            "An imported MCP tool called in process (SDK in-memory transport, CPU time, fastest batch)",
            imported,
            baseline="session.call_tool alone",
        )
    )
    print()
    code: list[tuple[str, float | str]] = list(asyncio.run(_code_mode()).items())
    print(
        ratio_table(
            "Code Mode: one run_code program with one nested call (median of runs)",
            code,
            baseline="run_code in process",
        )
    )


if __name__ == "__main__":
    main()
