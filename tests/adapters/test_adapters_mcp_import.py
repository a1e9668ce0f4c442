"""``import_mcp_tools`` against servers written with the SDK's own API, over stdio (issue 35, "MCP in").

``lowlevel_server.py`` (the SDK's low-level ``Server``) publishes what the
high-level ``MCPServer`` cannot: a task-only tool, an image with an
``outputSchema``, ``[text, image, text]``, progress, and an elicitation on both
protocol eras. ``sdk_server.py`` (``MCPServer``) serves the rest.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from dsh_codegen import (
    AbortController,
    ToolExecutionInput,
    ToolFailure,
    ToolProgress,
    ToolRegistry,
    ToolSuccess,
    watch_tool_events,
)
from dsh_codegen.adapters import McpElicitation, McpToolError, import_mcp_tools, mcp_elicitation_callback

from _shared_helpers import RecordingApprovals

from _adapters_helpers import HERE, mcp_session

pytestmark = pytest.mark.once

LOWLEVEL = HERE / "lowlevel_server.py"
SDK_SERVER = HERE / "sdk_server.py"
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAFUok9dAAAAAElFTkSuQmCC"
IMAGE = {"type": "image", "data": PIXEL, "mimeType": "image/png"}


def call(registry: ToolRegistry, name: str, args: object, agent: object = None) -> Any:
    return registry.execute(ToolExecutionInput("c1", name, args, AbortController().signal, agent))


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(60):  # a hang fails the test instead of the suite
            return await coro

    return asyncio.run(bounded())


def test_binary_content_is_never_copied_into_text_and_block_order_is_kept(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(LOWLEVEL, tmp_path) as session:
            await import_mcp_tools(registry, session)
            photo = await call(registry, "photo", {})
            assert isinstance(photo, ToolSuccess)
            assert photo.value == {"data": PIXEL, "mimeType": "image/png"}  # programs still see the structure
            assert photo.content == [IMAGE]  # the model sees the image once, not its base64 as text too
            mixed = await call(registry, "mixed", {})
            assert isinstance(mixed, ToolSuccess) and mixed.value == "before\nafter"
            assert mixed.content == [{"type": "text", "text": "before"}, IMAGE, {"type": "text", "text": "after"}]

    run(main())


def test_task_only_tools_are_skipped_with_a_note(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(LOWLEVEL, tmp_path) as session:
            imported = await import_mcp_tools(registry, session)
            assert "batch" not in imported.names and registry.get("batch") is None
            reason = imported.skipped["batch"]
            assert isinstance(reason, McpToolError) and reason.code == "MCP_TASK_REQUIRED"
            assert 'runs only as a task (taskSupport: "required")' in reason.message
            assert imported.names == ("photo", "mixed", "steps", "pick", "confirm")

    run(main())


def test_server_progress_becomes_tool_progress_events(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        events: list[ToolProgress] = []
        async with mcp_session(LOWLEVEL, tmp_path) as session:
            await import_mcp_tools(registry, session)
            with watch_tool_events(events.append):
                result = await call(registry, "steps", {})
            assert isinstance(result, ToolSuccess) and result.value == "done"
        assert [(e.progress, e.total, e.message) for e in events] == [
            (0, 100, "step 0"),
            (50, 100, "step 50"),
            (100, 100, "step 100"),
        ]
        assert {e.execution.name for e in events} == {"steps"}

    run(main())


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_elicitation_is_answered_through_the_registry_approval(tmp_path: Path, modern: bool) -> None:
    async def main() -> None:
        approvals = RecordingApprovals("allowed-once")
        registry = ToolRegistry(approval=approvals)
        options = {"elicitation_callback": mcp_elicitation_callback(registry)}
        async with mcp_session(LOWLEVEL, tmp_path, modern=modern, **options) as session:
            await import_mcp_tools(registry, session)
            result = await call(registry, "confirm", {"what": "delete"}, agent="alice")
            assert isinstance(result, ToolSuccess) and result.value == 'accept {"sure": true}'
            [asked] = approvals.asked
            assert (asked.agent, asked.tool_name, asked.call_id, asked.reason) == (
                "alice",
                "confirm",
                "c1",
                "Really delete?",
            )
            approvals.answer = "rejected"
            result = await call(registry, "confirm", {"what": "delete"})
            assert isinstance(result, ToolSuccess) and result.value == "decline null"

    run(main())


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_elicitation_callback_of_our_own(tmp_path: Path, modern: bool) -> None:
    seen: list[McpElicitation] = []

    async def answer(elicitation: McpElicitation) -> dict[str, Any]:
        seen.append(elicitation)
        return {"action": "accept", "content": {"sure": False}}

    async def main() -> None:
        registry = ToolRegistry()
        options = {"elicitation_callback": mcp_elicitation_callback(registry, elicitation=answer)}
        async with mcp_session(LOWLEVEL, tmp_path, modern=modern, **options) as session:
            await import_mcp_tools(registry, session, elicitation=answer)
            result = await call(registry, "confirm", {"what": "go"})
            assert isinstance(result, ToolSuccess) and result.value == 'accept {"sure": false}'
        [elicitation] = seen
        assert elicitation.message == "Really go?" and elicitation.mode == "form"
        assert elicitation.requested_schema == {
            "type": "object",
            "properties": {"sure": {"type": "boolean", "default": True}},
        }
        assert elicitation.call is not None and elicitation.call.name == "confirm"

    run(main())


def test_an_elicitation_answer_holding_a_lone_surrogate_fails_its_call_and_the_session_lives_on(tmp_path: Path) -> None:
    async def answer(elicitation: McpElicitation) -> dict[str, Any]:
        return {"action": "accept", "content": {"why": "\ud800"}}

    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(LOWLEVEL, tmp_path, modern=True) as session:
            await import_mcp_tools(registry, session, elicitation=answer)
            bad = await call(registry, "confirm", {"what": "go"})
            assert isinstance(bad, ToolFailure) and bad.error.message == (
                'the elicitation handler\'s answer cannot be sent: "value.why" is not lossless JSON: '
                "string holding a lone surrogate (U+D800), which UTF-8 cannot carry"
            )
            assert bad.error.info is not None and bad.error.info.code == "MCP_REQUEST_NOT_SENT"
            # The same session still serves the next call.
            ok = await call(registry, "confirm", {"what": "go"})
            assert isinstance(ok, ToolFailure)  # the handler answers the same way
            assert ok.error.message == bad.error.message

    run(main())


def test_without_approval_service_an_elicitation_is_cancelled(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(LOWLEVEL, tmp_path, modern=True) as session:
            await import_mcp_tools(registry, session)
            result = await call(registry, "confirm", {"what": "x"})
            assert isinstance(result, ToolSuccess) and result.value == "cancel null"

    run(main())


def test_a_lone_surrogate_fails_its_call_and_the_session_lives_on(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            await import_mcp_tools(registry, session, on_unsupported="skip")
            bad = await call(registry, "greet", {"name": "\ud800"})
            # The registry refuses such arguments at entry (docs/json.md, "Lone surrogates and UTF-8"),
            # before the body could hand them to the SDK's writer.
            assert isinstance(bad, ToolFailure)
            assert bad.error.message == (
                'tool execution arguments must be losslessly JSON-serializable: at "arguments.name", '
                "string holding a lone surrogate (U+D800), which UTF-8 cannot carry"
            )
            # The same session still serves every tool.
            ok = await call(registry, "greet", {"name": "ada"})
            assert isinstance(ok, ToolSuccess) and ok.value == "hello ada"

    run(main())


def test_an_imported_registry_and_the_catalog_of_the_same_server_type_values_alike(tmp_path: Path) -> None:
    # One rule for a tool without an outputSchema: its value is its text (a string), in the
    # registry's own catalog (what render_sdk_module gets from a registry) and in `sdk --mcp`'s.
    import sys

    from dsh_codegen.adapters import catalog_from_mcp_command

    async def main() -> None:
        registry = ToolRegistry()
        async with mcp_session(LOWLEVEL, tmp_path) as session:
            imported = await import_mcp_tools(registry, session)
            served = {entry.name: entry for entry in registry.catalog()}
        listed = await catalog_from_mcp_command([sys.executable, str(LOWLEVEL)])
        from_command = {entry.name: entry for entry in listed if entry.name not in imported.skipped}
        assert served.keys() == from_command.keys()
        for name, entry in served.items():
            assert (entry.parameters, entry.output_schema) == (
                from_command[name].parameters,
                from_command[name].output_schema,
            ), name
        assert from_command["mixed"].output_schema == {"type": "string"}
        assert (
            from_command["photo"].output_schema is not None
            and "data" in from_command["photo"].output_schema["properties"]
        )

    run(main())


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_an_http_server_going_away_fails_calls_not_the_session(modern: bool) -> None:
    # The SDK's HTTP client raises a failed POST in its transport's task group, which ends the whole
    # client block (an ExceptionGroup of ConnectError); mcp_http_client makes it the one call's error.
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from dsh_codegen.adapters import mcp_http_client

    from _adapters_helpers import free_port, http_server

    script = HERE / "conformance_registry.py"
    port = free_port()

    async def main() -> None:
        registry = ToolRegistry()
        with http_server(script, port) as served:
            async with mcp_http_client() as http, streamable_http_client(served.url, http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await (session.discover() if modern else session.initialize())
                    await import_mcp_tools(registry, session)
                    assert isinstance(await call(registry, "test_simple_text", {}), ToolSuccess)
                    served.stop()  # the server goes away mid-session
                    for _ in range(2):
                        failed = await call(registry, "test_simple_text", {})
                        assert isinstance(failed, ToolFailure) and failed.error.info is not None
                        assert failed.error.info.code == "MCP_CONNECTION_ERROR"
                        assert "the MCP server could not be reached: ConnectError" in failed.error.message
                    if modern:  # stateless: a server back on the same address answers the next call
                        with http_server(script, port):
                            back = await call(registry, "test_simple_text", {})
                            assert isinstance(back, ToolSuccess), back

    run(main())
