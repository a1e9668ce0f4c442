"""Code Mode and MCP together, over stdio with real servers and the SDK's own client (no mocks).

Out: ``served_code_mode.py`` serves Code Mode as one ``run_code`` tool (a
``mode="code"`` registry, or a scope that ``present_as("code")``); programs run
in ``PythonSubprocessRuntime`` and every nested call runs the whole pipeline.
In: tools imported from ``sdk_server.py`` (the SDK's ``MCPServer``) are called
from a Code Mode program: results, ``isError`` failures, images, cancellation.
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
from dsh_codegen.codemode import PythonSubprocessRuntime

from _adapters_helpers import HERE, mcp_session, process_gone

pytestmark = pytest.mark.once

SERVED_CODE_MODE = HERE / "served_code_mode.py"
SDK_SERVER = HERE / "sdk_server.py"

PROGRAM = """\
r = await tools.add({"a": 1, "b": 2})
print("sum", r["sum"])
try:
    await tools.secret({})
except ToolCallError as e:
    print("denied", e.toolName, e.message)
return r
"""


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(90):  # a hang fails the test instead of the suite
            return await coro

    return asyncio.run(bounded())


async def wait_for(path: Path) -> None:
    for _ in range(1500):
        if path.exists():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path.name} never appeared")


@pytest.mark.parametrize("presentation", ["registry", "scope"])
def test_code_mode_is_served_as_one_run_code_tool(presentation: str, tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def serve_and_check(errlog: Any) -> None:
        env = {"PYTHONPATH": ":".join(sys.path), "SDK_SERVER_DIR": str(tmp_path)}
        params = StdioServerParameters(command=sys.executable, args=[str(SERVED_CODE_MODE), presentation], env=env)
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                assert [tool.name for tool in listed.tools] == ["run_code"]
                [run_code] = listed.tools
                # The model's only text about the tools: the SDK follows the transport's description.
                assert run_code.description is not None
                assert run_code.description.startswith("Execute a Python program that calls the tools")
                assert "## Writing code for run_code" in run_code.description
                assert "async def add(self, args: AddArgs) -> AddOutput:" in run_code.description
                assert run_code.output_schema is not None and run_code.output_schema["required"] == ["logs"]

                done = await session.call_tool("run_code", {"code": PROGRAM, "description": "add, then try the secret"})
                assert not done.is_error, done.content
                assert done.structured_content == {
                    "logs": ["sum 3", "denied secret secret is off limits"],
                    "result": {"sum": 3},
                }
                assert done.content[0].text == 'sum 3\ndenied secret secret is off limits\n{\n  "sum": 3\n}'  # type: ignore[union-attr]
                # Only run_code is callable directly: the route-back text of the pipeline.
                direct = await session.call_tool("add", {"a": 1, "b": 2})
                assert direct.is_error
                assert direct.content[0].text.startswith(
                    'Error: unknown tool "add": only `run_code` is callable directly'
                )  # type: ignore[union-attr]
                bad = await session.call_tool("run_code", {"code": "return 1"})
                assert bad.is_error and "invalid arguments" in bad.content[0].text  # type: ignore[union-attr]

    async def main() -> list[str]:
        with (tmp_path / "stderr.txt").open("w+") as errlog:
            await serve_and_check(errlog)
            errlog.seek(0)
            return [line for line in errlog.read().splitlines() if line.startswith("observed ")]

    observed = run(main())
    # The nested calls ran the whole pipeline (guard, observers) as sub-calls of the run_code call.
    assert observed == [
        "observed add False parent=True",
        "observed secret True parent=True",
        "observed run_code False parent=False",
        "observed add True parent=False",
        "observed run_code True parent=False",
    ]
    assert process_gone(int((tmp_path / "pid").read_text()))


def test_client_cancelling_run_code_aborts_the_nested_call(tmp_path: Path) -> None:
    async def main() -> None:
        async with mcp_session(SERVED_CODE_MODE, tmp_path, args=["registry"]) as session:
            pending = asyncio.ensure_future(
                session.call_tool("run_code", {"code": "return await tools.wait({})", "description": "wait"})
            )
            await wait_for(tmp_path / "wait-started")
            pending.cancel()  # the SDK sends notifications/cancelled
            with pytest.raises(asyncio.CancelledError):
                await pending
            await wait_for(tmp_path / "wait-aborted")
            # The server keeps serving programs.
            done = await session.call_tool(
                "run_code", {"code": "return (await tools.add({'a': 2, 'b': 2}))['sum']", "description": "add"}
            )
            assert done.structured_content == {"logs": [], "result": 4}
        assert process_gone(int((tmp_path / "pid").read_text()))

    run(main())


def code_call(call_id: str, code: str, signal: Any = None) -> ToolExecutionInput:
    return ToolExecutionInput(
        call_id, "run_code", {"code": code, "description": "a test program"}, signal or AbortController().signal
    )


def test_code_mode_program_calls_imported_mcp_tools(tmp_path: Path) -> None:
    program = """\
total = await tools.add({"a": 20, "b": 22})
hello = await tools.greet({"name": "ada"})
try:
    await tools.fail({"reason": "no luck"})
except ToolCallError as e:
    print("failed", e.toolName, e.message)
try:
    await tools.add({"a": "x", "b": 1})
except ToolCallError as e:
    print("rejected", e.toolName)
picture = await tools.picture({"caption": "a pixel"})
return {"total": total, "hello": hello, "picture": picture}
"""

    async def main() -> None:
        # The program makes an invalid call on purpose (and catches it): no pre-flight check, which would
        # reject the literal "x" before the run.
        registry = ToolRegistry(mode="code", code_runtime=PythonSubprocessRuntime(preflight=False))
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            imported = await import_mcp_tools(registry, session, on_unsupported="skip")
            assert {"add", "greet", "fail", "picture", "slow"} <= set(imported.names)
            result = await registry.execute(code_call("c1", program))
            assert isinstance(result, ToolSuccess), result.content
            assert result.value["result"] == {"total": {"result": 42}, "hello": "hello ada", "picture": "a pixel"}
            logs = result.value["logs"]
            # isError: the server's text (MCPServer reports a raising tool without its reason).
            assert logs[0] == "failed fail Error executing tool fail"
            assert logs[1] == "rejected add"
            # The image of the picture sub-call is attached after the run (Code Mode's image context).
            images = [block for context in result.additional_contexts for block in context["content"]]
            assert [block["type"] for block in images] == ["image"]
            assert images[0]["mimeType"] == "image/png"
            assert result.additional_contexts[0]["meta"]["toolName"] == "picture"

    run(main())


def test_aborting_a_program_cancels_its_mcp_request(tmp_path: Path) -> None:
    async def main() -> None:
        registry = ToolRegistry(mode="code", code_runtime=PythonSubprocessRuntime())
        async with mcp_session(SDK_SERVER, tmp_path) as session:
            await import_mcp_tools(registry, session, on_unsupported="skip")
            controller = AbortController()
            pending = asyncio.ensure_future(
                registry.execute(code_call("c1", "return await tools.slow({'seconds': 60})", controller.signal))
            )
            await wait_for(tmp_path / "slow-started")
            controller.abort()
            result = await pending
            assert isinstance(result, ToolFailure)
            assert result.error.info is not None and result.error.info.code == "ABORTED"
            # The server's handler saw notifications/cancelled while still working.
            await wait_for(tmp_path / "slow-cancelled")
            # The session and the runtime still work.
            again = await registry.execute(code_call("c2", "return await tools.greet({'name': 'bo'})"))
            assert isinstance(again, ToolSuccess) and again.value["result"] == "hello bo"
        assert process_gone(int((tmp_path / "pid").read_text()))

    run(main())


async def _served(server: Any, check: Any) -> None:
    """Serve ``server`` (a ``McpToolServer``) to the SDK's client over in-memory streams, run ``check(session)``."""
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    async with create_client_server_memory_streams() as (client_streams, server_streams):
        serving = asyncio.ensure_future(server.run(*server_streams))
        try:
            async with ClientSession(*client_streams) as session:
                await session.initialize()
                await check(session)
        finally:
            serving.cancel()
            with pytest.raises(asyncio.CancelledError):
                await serving


PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAFUok9dAAAAAElFTkSuQmCC"


def _snapshot_registry(mode: str, runtime: Any) -> ToolRegistry:
    from dsh_codegen import ToolOutput, define_tool

    async def snap(args: Any, run: Any) -> str:
        return "a pixel"

    registry = ToolRegistry(mode=mode, code_runtime=runtime)  # type: ignore[arg-type]
    registry.register(
        define_tool(
            name="snap",
            description="Take a picture.",
            parameters={},
            output=ToolOutput(
                schema={"type": "string"},
                render=lambda args, value: [
                    {"type": "text", "text": value},
                    {"type": "image", "data": PIXEL, "mimeType": "image/png"},
                ],
            ),
            execute=snap,
        )
    )
    return registry


def test_images_of_sub_calls_reach_the_mcp_client_after_the_run() -> None:
    from dsh_codegen.adapters import McpToolServer

    async def check(session: Any) -> None:
        done = await session.call_tool(
            "run_code", {"code": "await tools.snap({})\nprint('took it')", "description": "snap"}
        )
        assert not done.is_error
        blocks = [block.model_dump(by_alias=True, exclude_none=True, mode="json") for block in done.content]
        assert blocks == [
            {"type": "text", "text": "took it"},
            {"type": "image", "data": PIXEL, "mimeType": "image/png"},
        ]

    run(_served(McpToolServer(_snapshot_registry("code", PythonSubprocessRuntime())), check))


def test_both_lists_the_tools_and_run_code_and_native_lists_no_run_code() -> None:
    from dsh_codegen.adapters import McpToolServer

    both = McpToolServer(_snapshot_registry("both", PythonSubprocessRuntime()))
    names = [tool["name"] for tool in both.tool_list()]
    assert names == ["snap", "run_code"]
    [run_code] = [tool for tool in both.tool_list() if tool["name"] == "run_code"]
    assert "async def snap(self, args: dict[str, Any]) -> str:" in run_code["description"]
    assert "is the only tool you can call directly" not in run_code["description"]  # the code-only rule is empty
    native = McpToolServer(_snapshot_registry("native", PythonSubprocessRuntime()))
    assert [tool["name"] for tool in native.tool_list()] == ["snap"]
    assert native.tool_list()[0]["description"] == "Take a picture."


def test_a_code_presentation_without_a_runtime_fails_tools_list_with_the_registry_message() -> None:
    from dsh_codegen.adapters import McpToolServer

    server = McpToolServer(_snapshot_registry("code", None))
    with pytest.raises(ValueError, match=r'mode "code" requires a code runtime'):
        server.tool_list()

    async def check(session: Any) -> None:
        from mcp import MCPError

        with pytest.raises(MCPError, match="requires a code runtime"):
            await session.list_tools()

    run(_served(server, check))
