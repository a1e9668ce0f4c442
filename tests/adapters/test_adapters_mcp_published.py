"""``import_mcp_tools`` against published MCP servers over stdio, as a user runs them (no mocks).

``mcp-server-time`` (PyPI, in the dev extra) and ``@modelcontextprotocol/server-everything``
and ``-memory`` (npm, pinned in package.json; ``make setup`` installs them). The
issue's findings are checked on them: ``get-tiny-image`` answers ``[text, image,
text]``, ``simulate-research-query`` is task-only, ``trigger-long-running-operation``
reports progress, and a lone surrogate in ``echo``'s argument must not end the session.
"""

from __future__ import annotations

import asyncio
import os
import sys
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
from dsh_codegen.adapters import McpToolError, catalog_from_mcp_command, import_mcp_tools

from _adapters_helpers import command_session, npm_package_argv

pytestmark = pytest.mark.once


def call(registry: ToolRegistry, name: str, args: object) -> Any:
    return registry.execute(ToolExecutionInput("c1", name, args, AbortController().signal))


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(90):
            return await coro

    return asyncio.run(bounded())


def code(result: Any) -> str | None:
    return None if result.error.info is None else result.error.info.code


def test_mcp_server_time_from_pypi() -> None:
    pytest.importorskip("mcp_server_time")
    argv = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]

    async def main() -> None:
        registry = ToolRegistry()
        async with command_session(argv) as session:
            imported = await import_mcp_tools(registry, session)
            assert set(imported.names) == {"get_current_time", "convert_time"}
            converted = await call(
                registry, "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            )
            assert isinstance(converted, ToolSuccess), converted
            assert converted.value["target"]["datetime"].endswith("T21:00:00+09:00")
            assert converted.value["time_difference"] == "+9.0h"
            unknown = await call(registry, "get_current_time", {"timezone": "Mars/Olympus"})
            assert isinstance(unknown, ToolFailure) and code(unknown) == "MCP_TOOL_ERROR"
            assert "Mars/Olympus" in unknown.error.message
            missing = await call(registry, "get_current_time", {})  # refused before a request is sent
            assert isinstance(missing, ToolFailure) and code(missing) == "INVALID_ARGS"
            served = {entry.name: entry for entry in registry.catalog()}
        # One rule: the catalog `sdk --mcp` reads types each value as the imported registry does.
        listed = {entry.name: entry for entry in await catalog_from_mcp_command(argv)}
        assert {name: entry.output_schema for name, entry in listed.items()} == {
            name: entry.output_schema for name, entry in served.items()
        }

    run(main())


def test_server_everything_from_npm() -> None:
    argv = npm_package_argv("@modelcontextprotocol/server-everything")

    async def main() -> None:
        registry = ToolRegistry()
        async with command_session(argv, {"PATH": os.environ.get("PATH", "")}) as session:
            imported = await import_mcp_tools(registry, session)
            # A task-only tool is left out, with the reason.
            reason = imported.skipped["simulate-research-query"]
            assert isinstance(reason, McpToolError) and reason.code == "MCP_TASK_REQUIRED"
            assert registry.get("simulate-research-query") is None
            total = await call(registry, "get-sum", {"a": 2, "b": 40})
            assert isinstance(total, ToolSuccess) and "42" in total.value
            # [text, image, text] stays in the server's order, the image once and never as text.
            direct = await session.call_tool("get-tiny-image", {})
            expected = [block.model_dump(by_alias=True, exclude_none=True, mode="json") for block in direct.content]
            image = await call(registry, "get-tiny-image", {})
            assert isinstance(image, ToolSuccess)
            assert [block["type"] for block in image.content] == ["text", "image", "text"]
            assert image.content == expected
            assert not any(expected[1]["data"] in block.get("text", "") for block in image.content)
            # Structured content: the value is the structure; the model reads the server's text.
            weather = await call(registry, "get-structured-content", {"location": "Chicago"})
            assert isinstance(weather, ToolSuccess) and set(weather.value) == {"temperature", "conditions", "humidity"}
            # Progress becomes the call's events.
            events: list[ToolProgress] = []
            with watch_tool_events(lambda event: events.append(event) if isinstance(event, ToolProgress) else None):
                done = await call(registry, "trigger-long-running-operation", {"duration": 0.2, "steps": 3})
            assert isinstance(done, ToolSuccess), done
            assert [event.progress for event in events] == [1, 2, 3] and {event.total for event in events} == {3}
            # A lone surrogate fails its own call; the session serves the next one.
            bad = await call(registry, "echo", {"message": "\ud800"})
            assert isinstance(bad, ToolFailure) and "lone surrogate" in bad.error.message
            good = await call(registry, "echo", {"message": "still here"})
            assert isinstance(good, ToolSuccess) and "still here" in good.value

    run(main())


def test_server_memory_from_npm(tmp_path: Path) -> None:
    argv = npm_package_argv("@modelcontextprotocol/server-memory")
    env = {"PATH": os.environ.get("PATH", ""), "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}

    async def main() -> None:
        registry = ToolRegistry()
        async with command_session(argv, env) as session:
            await import_mcp_tools(registry, session, prefix="memory.")
            created = await call(
                registry,
                "memory.create_entities",
                {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]},
            )
            assert isinstance(created, ToolSuccess), created
            found = await call(registry, "memory.search_nodes", {"query": "program"})
            assert isinstance(found, ToolSuccess), found
            assert [entity["name"] for entity in found.value["entities"]] == ["Ada"]
            wrong = await call(registry, "memory.create_entities", {"entities": "Ada"})
            assert isinstance(wrong, ToolFailure) and code(wrong) == "INVALID_ARGS"
        assert "Ada" in (tmp_path / "memory.jsonl").read_text(encoding="utf-8")

    run(main())
