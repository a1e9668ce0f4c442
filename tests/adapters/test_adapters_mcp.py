"""MCP in and out over stdio with real servers and the SDK's own client (no mocks).

``sdk_server.py`` is written with the SDK's ``MCPServer``; ``served_registry.py``
is a registry served by our ``serve_mcp``. Each test's server process is reaped by
the end of the test (checked through the pid the server writes).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from dsh_codegen import AbortController, ToolExecutionInput, ToolFailure, ToolRegistry, ToolSuccess
from dsh_codegen.adapters import import_mcp_tools
from dsh_codegen.schema import JsonSchemaError

from _adapters_helpers import HERE, core_accepts, mcp_session, needs_core, process_gone

pytestmark = pytest.mark.once

SDK_SERVER = HERE / "sdk_server.py"
SERVED = HERE / "served_registry.py"


def call(registry: ToolRegistry, name: str, args: object, signal: Any = None) -> Any:
    return registry.execute(ToolExecutionInput("c1", name, args, signal or AbortController().signal))


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(60):  # a hang fails the test instead of the suite
            return await coro

    return asyncio.run(bounded())


def test_import_registers_each_tool_and_calls_go_through_mcp(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            imported = await import_mcp_tools(registry, session, prefix="sdk.", on_unsupported="skip")
            listed = await session.list_tools()
            by_name = {tool.name: tool for tool in listed.tools}
            # Every tool is either registered or skipped for the reason the core gives.
            for name, tool in by_name.items():
                reason = core_accepts(tool.input_schema)
                if reason is None and (tool.output_schema is None or core_accepts(tool.output_schema) is None):
                    assert "sdk." + name in imported.names
                else:
                    assert "sdk." + name in imported.skipped
            assert "sdk.add" in imported.names and "sdk.greet" in imported.names

            # outputSchema published: the value is the structured content, validated.
            result = await call(registry, "sdk.add", {"a": 2, "b": 40})
            assert isinstance(result, ToolSuccess)
            assert result.value == {"result": 42}
            # No outputSchema: the text content is the value.
            result = await call(registry, "sdk.greet", {"name": "ada"})
            assert isinstance(result, ToolSuccess) and result.value == "hello ada"
            assert result.content == [{"type": "text", "text": "hello ada"}]
            # Arguments are validated by the registry before the request.
            result = await call(registry, "sdk.add", {"a": "two"})
            assert isinstance(result, ToolFailure) and result.error.info is not None
            assert result.error.info.code == "INVALID_ARGS"
            # isError -> a failure carrying the server's text.
            result = await call(registry, "sdk.fail", {"reason": "no luck"})
            assert isinstance(result, ToolFailure)
            assert result.error.info is not None and result.error.info.code == "MCP_TOOL_ERROR"
            assert result.content[0]["text"].startswith("Error: ")
            # Annotations are ignored unless asked for.
            assert (
                registry.execution_mode(ToolExecutionInput("c", "sdk.add", {"a": 1, "b": 1}, AbortController().signal))
                == "exclusive"
            )
            imported()
            assert registry.get("sdk.add") is None
        assert process_gone(int((tmp_path / "pid").read_text()))

    run(main())


def test_read_only_hint_feeds_concurrency_only_on_opt_in(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            await import_mcp_tools(registry, session, concurrency_from_annotations=True, on_unsupported="skip")
            signal = AbortController().signal
            assert registry.execution_mode(ToolExecutionInput("c", "add", {"a": 1, "b": 1}, signal)) == "parallel"
            assert registry.execution_mode(ToolExecutionInput("c", "greet", {"name": "x"}, signal)) == "exclusive"

    run(main())


def test_unsupported_schema_raises_and_registers_nothing(tmp_path: Path) -> None:
    async def main() -> str | None:
        registry = ToolRegistry()
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            listed = await session.list_tools()
            locate = next(tool for tool in listed.tools if tool.name == "locate")
            if core_accepts(locate.input_schema) is None:
                return "the schema core accepts every tool of the test server"
            with pytest.raises(JsonSchemaError):
                await import_mcp_tools(registry, session)
            assert registry.schemas() == []
        return None

    skip = run(main())
    if skip is not None:
        pytest.skip(skip)


def test_ref_anyof_nullable_and_output_schema_tool(tmp_path: Path) -> None:
    async def schemas() -> tuple[Any, Any]:
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            listed = await session.list_tools()
            locate = next(tool for tool in listed.tools if tool.name == "locate")
            return locate.input_schema, locate.output_schema

    input_schema, output_schema = run(schemas())
    assert "$defs" in input_schema and output_schema is not None
    assert input_schema["properties"]["label"]["anyOf"][1] == {"type": "null"}
    needs_core(input_schema, output_schema)

    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            await import_mcp_tools(registry, session)
            result = await call(registry, "locate", {"point": {"x": 1, "y": None}, "label": None})
            assert isinstance(result, ToolSuccess) and result.value == {"x": 1, "y": None}
            result = await call(registry, "locate", {"point": {"x": -1}})
            assert isinstance(result, ToolFailure) and result.error.info is not None
            assert result.error.info.code == "INVALID_ARGS"

    run(main())


def test_signal_abort_cancels_the_mcp_request(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            await import_mcp_tools(registry, session, on_unsupported="skip")
            controller = AbortController()
            pending = asyncio.ensure_future(call(registry, "slow", {"seconds": 30}, controller.signal))
            while not (tmp_path / "slow-started").exists():
                await asyncio.sleep(0.02)
            controller.abort()
            result = await pending
            assert isinstance(result, ToolFailure)
            assert result.error.info is not None and result.error.info.code == "ABORTED"
            # The server saw notifications/cancelled while still working.
            for _ in range(500):
                if (tmp_path / "slow-cancelled").exists():
                    break
                await asyncio.sleep(0.02)
            assert (tmp_path / "slow-cancelled").exists()
            # The session is still usable.
            assert isinstance(await call(registry, "add", {"a": 1, "b": 2}), ToolSuccess)
        assert process_gone(int((tmp_path / "pid").read_text()))

    run(main())


def test_server_dying_mid_call_is_a_clear_failure(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            await import_mcp_tools(registry, session, on_unsupported="skip")
            result = await call(registry, "die", {})
            assert isinstance(result, ToolFailure)
            assert result.error.info is not None and result.error.info.code == "MCP_CONNECTION_ERROR"
            assert 'MCP request for tool "die" failed' in result.error.message
            # Later calls fail the same way instead of hanging.
            again = await call(registry, "add", {"a": 1, "b": 2})
            assert isinstance(again, ToolFailure)
        assert process_gone(int((tmp_path / "pid").read_text()))

    run(main())


def test_serve_mcp_runs_every_call_through_the_pipeline(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def main() -> None:
        with (tmp_path / "stderr.txt").open("w+") as errlog:
            await serve_and_check(errlog)
            errlog.seek(0)
            observed = [line for line in errlog.read().splitlines() if line.startswith("observed ")]
        assert observed == [
            "observed add False",
            "observed shout False",
            "observed secret True",
            "observed slow True",
            "observed add True",
            "observed nope True",
        ]

    async def serve_and_check(errlog: Any) -> None:
        params = StdioServerParameters(
            command=sys.executable, args=[str(SERVED)], env={"PYTHONPATH": ":".join(sys.path)}
        )
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                tools = {tool.name: tool for tool in listed.tools}
                assert sorted(tools) == ["add", "secret", "shout", "slow", "wait"]
                assert tools["add"].output_schema == {
                    "type": "object",
                    "properties": {"sum": {"type": "integer"}},
                    "required": ["sum"],
                    "additionalProperties": False,
                }
                # A non-object output is published wrapped as {"result": ...}.
                assert tools["shout"].output_schema is not None
                assert tools["shout"].output_schema["properties"] == {"result": {"type": "string"}}

                ok = await session.call_tool("add", {"a": 1, "b": 2})
                assert not ok.is_error and ok.structured_content == {"sum": 3}
                assert ok.content[0].text == "1 + 2 = 3"  # type: ignore[union-attr]
                shouted = await session.call_tool("shout", {"text": "hi"})
                assert shouted.structured_content == {"result": "HI"}
                denied = await session.call_tool("secret", {})
                assert denied.is_error and denied.content[0].text == "Error: secret is off limits"  # type: ignore[union-attr]
                timed_out = await session.call_tool("slow", {"seconds": 5})
                assert timed_out.is_error
                assert timed_out.content[0].text == "Error: tool call timed out after 300ms"  # type: ignore[union-attr]
                bad = await session.call_tool("add", {"a": "x", "b": 1})
                assert bad.is_error and "invalid arguments" in bad.content[0].text  # type: ignore[union-attr]
                unknown = await session.call_tool("nope", {})
                assert unknown.is_error and unknown.content[0].text == 'Error: unknown tool "nope"'  # type: ignore[union-attr]

    run(main())


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_import_of_our_own_served_registry_round_trips(tmp_path: Path, modern: bool) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(SERVED, tmp_path, modern=modern) as session:
            assert session.protocol_version == ("2026-07-28" if modern else "2025-11-25")
            imported = await import_mcp_tools(registry, session, prefix="remote.")
            assert imported.names == ("remote.add", "remote.shout", "remote.slow", "remote.secret", "remote.wait")
            result = await call(registry, "remote.add", {"a": 20, "b": 22})
            assert isinstance(result, ToolSuccess) and result.value == {"sum": 42}
            result = await call(registry, "remote.secret", {})
            assert isinstance(result, ToolFailure) and result.error.message == "secret is off limits"
            assert result.content == [{"type": "text", "text": "Error: secret is off limits"}]

    run(main())


def test_client_cancelling_a_served_call_aborts_the_body(tmp_path: Path) -> None:
    async def main() -> None:
        async with mcp_session(SERVED, tmp_path) as session:
            pending = asyncio.ensure_future(session.call_tool("wait", {}))
            while not (tmp_path / "wait-started").exists():
                await asyncio.sleep(0.02)
            pending.cancel()  # the SDK sends notifications/cancelled
            with pytest.raises(asyncio.CancelledError):
                await pending
            for _ in range(500):
                if (tmp_path / "wait-aborted").exists():
                    break
                await asyncio.sleep(0.02)
            assert (tmp_path / "wait-aborted").read_text() == "tool call aborted"
            # The server keeps serving.
            ok = await session.call_tool("add", {"a": 1, "b": 1})
            assert ok.structured_content == {"sum": 2}
        assert process_gone(int((tmp_path / "pid").read_text()))

    run(main())


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_serve_mcp_over_streamable_http_on_loopback(modern: bool) -> None:
    import socket

    from mcp import ClientSession
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from dsh_codegen.adapters import serve_mcp

    sys.path.insert(0, str(HERE))
    try:
        from served_registry import build_registry
    finally:
        sys.path.remove(str(HERE))

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> None:
        server = asyncio.ensure_future(serve_mcp(build_registry(), "streamable-http", port=port))
        try:
            for _ in range(500):
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    await asyncio.sleep(0.02)
                    continue
                writer.close()
                await writer.wait_closed()
                break
            # Our own HTTP client, closed here, so that no pooled connection outlives the test.
            async with (
                httpx2.AsyncClient() as http,
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as streams,
            ):
                async with ClientSession(streams[0], streams[1]) as session:
                    await (session.discover() if modern else session.initialize())
                    assert session.protocol_version == ("2026-07-28" if modern else "2025-11-25")
                    listed = await session.list_tools()
                    assert "add" in {tool.name for tool in listed.tools}
                    result = await session.call_tool("add", {"a": 5, "b": 6})
                    assert result.structured_content == {"sum": 11}
                    denied = await session.call_tool("secret", {})
                    assert denied.is_error
        finally:
            server.cancel()
            with pytest.raises(asyncio.CancelledError):
                await server

    run(main())


PIXEL_PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAFUok9dAAAAAElFTkSuQmCC"
MEDIA_BLOCKS = [
    {"type": "image", "data": PIXEL_PNG_BASE64, "mimeType": "image/png"},
    {"type": "audio", "data": "UklGRgAAAABXQVZF", "mimeType": "audio/wav"},
    {"type": "resource", "resource": {"uri": "memo://note", "mimeType": "text/plain", "text": "a note"}},
    {"type": "resource_link", "name": "report", "uri": "file:///tmp/report.pdf", "mimeType": "application/pdf"},
]


def test_import_keeps_image_audio_and_resource_blocks(tmp_path: Path) -> None:
    from dsh_codegen import Accept

    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            await import_mcp_tools(registry, session, on_unsupported="skip")
            result = await call(registry, "picture", {"caption": "a pixel"})
            assert isinstance(result, ToolSuccess)
            assert result.value == "a pixel"  # the value is still the text
            assert result.content == [{"type": "text", "text": "a pixel"}, *MEDIA_BLOCKS]
            # A text-only tool is unchanged, and nothing of the picture call leaks into it.
            plain = await call(registry, "greet", {"name": "ada"})
            assert isinstance(plain, ToolSuccess) and plain.content == [{"type": "text", "text": "hello ada"}]
            # The blocks follow whatever content post-execute decided; a blocked result has none.
            registry.on_post_execute(
                lambda execution, result, next: Accept(content=[{"type": "text", "text": "replaced"}])
            )
            replaced = await call(registry, "picture", {"caption": "x"})
            assert replaced.content == [{"type": "text", "text": "replaced"}, *MEDIA_BLOCKS]

    run(main())


def test_media_blocks_survive_serving_again_through_serve_mcp(tmp_path: Path) -> None:
    # Imported from the SDK's server into a registry, served by serve_mcp, read by the SDK's client.
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    from dsh_codegen.adapters import McpToolServer

    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(SDK_SERVER, tmp_path) as upstream:
            await import_mcp_tools(registry, upstream, on_unsupported="skip")
            server = McpToolServer(registry)
            async with create_client_server_memory_streams() as (client_streams, server_streams):
                serving = asyncio.ensure_future(server.run(*server_streams))
                try:
                    async with ClientSession(*client_streams) as session:
                        await session.initialize()
                        result = await session.call_tool("picture", {"caption": "again"})
                        blocks = [
                            block.model_dump(by_alias=True, exclude_none=True, mode="json") for block in result.content
                        ]
                        assert blocks == [{"type": "text", "text": "again"}, *MEDIA_BLOCKS]
                finally:
                    serving.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await serving

    run(main())
