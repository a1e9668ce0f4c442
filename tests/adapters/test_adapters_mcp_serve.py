"""``serve_mcp`` as a tool server: logs, progress and approvals reach the MCP client (issue 35, "MCP out").

The SDK's own ``ClientSession`` talks to an ``McpToolServer`` over the SDK's
in-memory streams (the transport-independent part; stdio and HTTP are tested
in test_adapters_mcp.py and the conformance test). Both protocol eras: MCP
2025-11-25 (``initialize``) and 2026-07-28 (``discover``, stateless
multi-round-trip requests).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

pytest.importorskip("mcp")

from dsh_codegen import Allow, Ask, ToolOutput, ToolRegistry, define_tool
from dsh_codegen.adapters import McpElicitation, McpToolServer, import_mcp_tools

from _shared_helpers import RecordingApprovals

pytestmark = pytest.mark.once


def text_tool(name: str, execute: Any) -> Any:
    return define_tool(
        name=name,
        description=f"The {name} tool.",
        parameters={},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}]),
        execute=execute,
    )


def build_registry(approval: Any = None) -> ToolRegistry:
    registry = ToolRegistry(approval=approval)

    async def chatty(args: Any, run: Any) -> str:
        run.log("debug", "hidden below info")
        run.log("info", {"step": "started"})
        run.log("error", "something odd", logger="audit")
        return "logged"

    async def steps(args: Any, run: Any) -> str:
        for step in (1, 2, 3):
            run.report_progress(step, 3, f"step {step}")
            await asyncio.sleep(0)
        return "stepped"

    def sync_steps(args: Any, run: Any) -> str:  # a sync body: it reports from a worker thread
        run.report_progress(1, 2)
        run.report_progress(2, 2)
        return "stepped in a thread"

    async def guarded(args: Any, run: Any) -> str:
        return "ran"

    registry.register(text_tool("chatty", chatty))
    registry.register(text_tool("steps", steps))
    registry.register(text_tool("sync_steps", sync_steps))
    registry.register(text_tool("guarded", guarded))
    registry.on_pre_execute(
        lambda execution, next: Ask("it deletes things") if execution.name == "guarded" else Allow()
    )
    return registry


@asynccontextmanager
async def served(registry: ToolRegistry, *, modern: bool = False, **options: Any) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    server = McpToolServer(registry, scope="client")
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        serving = asyncio.ensure_future(server.run(*server_streams))
        try:
            async with ClientSession(*client_streams, **options) as session:
                await (session.discover() if modern else session.initialize())
                yield session
        finally:
            serving.cancel()
            with pytest.raises(asyncio.CancelledError):
                await serving


def run(coro: Any) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(60):
            return await coro

    return asyncio.run(bounded())


def test_tool_logs_reach_the_client_filtered_by_set_level() -> None:
    from mcp.types import EmptyResult, SetLevelRequest, SetLevelRequestParams

    received: list[Any] = []

    async def on_log(params: Any) -> None:
        received.append((params.level, params.data, params.logger))

    async def main() -> None:
        async with served(build_registry(), logging_callback=on_log) as session:
            assert session.server_capabilities.logging is not None
            from dsh_codegen import __version__

            assert (session.server_info.name, session.server_info.version) == ("dsh_codegen", __version__)
            result = await session.call_tool("chatty", {})
            assert result.content[0].text == "logged"
            assert [level for level, _, _ in received] == ["debug", "info", "error"]  # every level before setLevel
            received.clear()
            # logging/setLevel itself (the SDK's helper for it warns that 2026 drops it)
            await session.send_request(SetLevelRequest(params=SetLevelRequestParams(level="info")), EmptyResult)
            await session.call_tool("chatty", {})
        assert received == [("info", {"step": "started"}, "chatty"), ("error", "something odd", "audit")]

    run(main())


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("tool", ["steps", "sync_steps"])
def test_body_progress_reaches_a_client_that_asked_for_it(tool: str, modern: bool) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def main() -> None:
        async with served(build_registry(), modern=modern) as session:
            result = await session.call_tool(tool, {}, progress_callback=on_progress)
            assert not result.is_error
            without = await session.call_tool(tool, {})  # no progress token: nothing is sent
            assert not without.is_error

    run(main())
    if tool == "steps":
        assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    else:
        assert progress == [(1, 2, None), (2, 2, None)]


@pytest.mark.parametrize(
    ("action", "text"), [("accept", "ran"), ("decline", 'Error: the user rejected tool "guarded"')]
)
def test_ask_goes_to_the_client_user_through_elicitation(action: str, text: str) -> None:
    from mcp.types import ElicitResult

    asked: list[Any] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action=action)

    async def main() -> None:
        fallback = RecordingApprovals("rejected")  # the configured service is not asked when the client can be
        async with served(build_registry(fallback), elicitation_callback=elicit) as session:
            result = await session.call_tool("guarded", {})
            assert result.content[0].text == text
        assert fallback.asked == []

    run(main())
    [params] = asked
    assert params.message == 'Allow the tool "guarded" to run? it deletes things'
    assert params.requested_schema == {"type": "object", "properties": {}}


def test_without_elicitation_the_configured_approval_service_answers() -> None:
    async def main() -> None:
        approvals = RecordingApprovals("allowed-once")
        async with served(build_registry(approvals)) as session:
            result = await session.call_tool("guarded", {})
            assert result.content[0].text == "ran"
        [request] = approvals.asked
        assert (request.agent, request.tool_name, request.reason) == ("client", "guarded", "it deletes things")

    run(main())


@pytest.mark.parametrize(("action", "value"), [("accept", "ran"), ("cancel", None)])
def test_ask_on_2026_07_28_takes_a_multi_round_trip(action: str, value: str | None) -> None:
    # The client side is our own import_mcp_tools, which drives the InputRequiredResult rounds.
    seen: list[McpElicitation] = []

    async def answer(elicitation: McpElicitation) -> dict[str, Any]:
        seen.append(elicitation)
        return {"action": action}

    async def main() -> None:
        from mcp.types import ElicitResult

        async def unused(context: Any, params: Any) -> ElicitResult:  # declares the capability
            raise AssertionError("2026-07-28 asks inside the call, not with a request")

        async with served(
            build_registry(RecordingApprovals("rejected")), modern=True, elicitation_callback=unused
        ) as session:
            assert session.protocol_version == "2026-07-28"
            local = ToolRegistry()
            await import_mcp_tools(local, session, elicitation=answer)
            from dsh_codegen import AbortController, ToolExecutionInput

            result = await local.execute(ToolExecutionInput("c1", "guarded", {}, AbortController().signal))
            if value is None:
                assert result.is_error and result.error.message == 'approval for tool "guarded" was cancelled'
            else:
                assert not result.is_error and result.value == {"result": value}  # a string output travels wrapped

    run(main())
    [elicitation] = seen
    assert elicitation.message == 'Allow the tool "guarded" to run? it deletes things'
    assert elicitation.call is not None and elicitation.call.name == "guarded"


def test_a_forged_request_state_is_not_an_answer() -> None:
    from mcp.types import ElicitResult, InputRequiredResult

    async def main() -> None:
        async def unused(context: Any, params: Any) -> ElicitResult:
            raise AssertionError("not asked this way")

        async with served(build_registry(), modern=True, elicitation_callback=unused) as session:
            first = await session.call_tool("guarded", {}, allow_input_required=True)
            assert isinstance(first, InputRequiredResult) and first.request_state is not None
            signature, _, state = first.request_state.partition(".")
            forged = state.replace(
                '"answers": {}', '"answers": {"[\\"guarded\\", \\"it deletes things\\"]": "allowed-once"}'
            )
            again = await session.call_tool(
                "guarded", {}, request_state=f"{signature}.{forged}", input_responses={}, allow_input_required=True
            )
            assert isinstance(again, InputRequiredResult)  # asked again, not run

    run(main())


def test_on_2026_07_28_logs_are_sent_to_requests_that_opt_in() -> None:
    received: list[Any] = []

    async def on_log(params: Any) -> None:
        received.append((params.level, params.data))

    async def main() -> None:
        async with served(build_registry(), modern=True, logging_callback=on_log) as session:
            await session.call_tool("chatty", {})  # no opt-in: no logs (2026-07-28 has no logging/setLevel)
            assert received == []
        async with served(build_registry(), modern=True, logging_callback=on_log, log_level="info") as session:
            await session.call_tool("chatty", {})
        assert received == [("info", {"step": "started"}), ("error", "something odd")]

    run(main())


BROKEN_TEXT_SERVER = """
import asyncio
from dsh_codegen import ToolOutput, ToolRegistry, define_tool
from dsh_codegen.adapters import serve_mcp

registry = ToolRegistry()
out = ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}])

async def broken(args, run):
    return "a" + chr(0xD800) + "b"  # a string UTF-8 cannot carry (a body slicing text badly)

async def fine(args, run):
    return "fine"

registry.register(define_tool(name="broken", description="Bad text.", parameters={}, output=out, execute=broken))
registry.register(define_tool(name="fine", description="Good text.", parameters={}, output=out, execute=fine))
asyncio.run(serve_mcp(registry, "stdio"))
"""


def test_a_lone_surrogate_in_a_served_result_fails_that_call_only(tmp_path: Any) -> None:
    # Over real stdio: the SDK's writer cannot encode the result, the client would never get an answer.
    import sys

    from _adapters_helpers import command_session

    script = tmp_path / "broken_text_server.py"
    script.write_text(BROKEN_TEXT_SERVER, encoding="utf-8")

    async def main() -> None:
        import os

        env = {"PYTHONPATH": os.pathsep.join(sys.path)}
        async with command_session([sys.executable, str(script)], env) as session:
            async with asyncio.timeout(20):
                broken = await session.call_tool("broken", {})
                fine = await session.call_tool("fine", {})
        assert broken.is_error and broken.content[0].text == (
            'Error: the result of tool "broken" cannot be sent: "value.content[0].text" is not lossless JSON: '
            "string holding a lone surrogate (U+D800), which UTF-8 cannot carry"
        )
        assert not fine.is_error and fine.structured_content == {"result": "fine"}

    run(main())


def test_a_served_code_mode_run_asks_and_logs_for_its_sub_calls() -> None:
    # The approval channel and the event listener reach the calls a run_code program makes.
    from mcp.types import ElicitResult

    from dsh_codegen.codemode import PythonSubprocessRuntime

    asked: list[str] = []
    logs: list[tuple[str, str | None]] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept")

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.logger))

    async def main() -> None:
        registry = build_registry()
        registry.set_code_runtime(PythonSubprocessRuntime(), mode="code")
        program = "print(await tools.guarded({}))\nawait tools.chatty({})\nreturn 1"
        async with served(registry, elicitation_callback=elicit, logging_callback=on_log) as session:
            result = await session.call_tool("run_code", {"code": program, "description": "nested"})
            assert not result.is_error and result.structured_content == {"logs": ["ran"], "result": 1}

    run(main())
    assert asked == ['Allow the tool "guarded" to run? it deletes things']
    assert logs == [("debug", "chatty"), ("info", "chatty"), ("error", "audit")]
