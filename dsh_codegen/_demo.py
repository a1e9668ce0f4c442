"""The main demonstration job (``make demo``).

It registers a few example tools, prints the two generated SDKs, then runs one
model turn's worth of tool calls through the loop helper: two read-only calls
in parallel, one denied by policy, one timing out, one with invalid arguments,
and prints every result and the session-log events. Then the same tools in
Code Mode: a scripted ``run_code`` program (no model needed) runs in a fresh
Python process, gathers three safe calls in parallel, catches one call denied by
policy and one that times out, prints and returns; every binding call goes
through the same pipeline, and the job prints the prompt's SDK section, the
``run_code`` result text and the logged events.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from dsh_codegen._backend import backend

__all__ = ["run_demo"]


def _example_tools() -> list[Any]:
    from dsh_codegen.registry import ToolOutput, define_tool

    files = {"/etc/motd": "Welcome.\nHave a nice day.\n", "/srv/app.py": "print('hi')\n"}

    async def read_file(args: Any, run: Any) -> Any:
        await asyncio.sleep(0.02)
        text = files.get(args["path"])
        if text is None:
            raise FileNotFoundError(f"no such file: {args['path']}")
        lines = text.splitlines()
        limit = args.get("limit", len(lines))
        return {"text": "\n".join(lines[:limit]), "lines": min(limit, len(lines))}

    async def slow_search(args: Any, run: Any) -> Any:
        await run.signal.wait()  # cooperates: stops as soon as it is told to
        return []

    async def delete_file(args: Any, run: Any) -> Any:
        return {"deleted": args["path"]}

    read = define_tool(
        name="read_file",
        description="Read a text file from disk.",
        parameters={
            "path": {"type": "string", "description": "Absolute file path", "required": True},
            "limit": {"type": "integer", "description": "Maximum number of lines"},
        },
        output=ToolOutput(
            schema={
                "type": "object",
                "properties": {
                    "text": {"type": "string", "required": True},
                    "lines": {"type": "integer", "required": True},
                },
                "additionalProperties": False,
            },
            render=lambda args, value: [{"type": "text", "text": value["text"]}],
        ),
        execute=read_file,
        is_concurrency_safe=lambda args: True,
    )
    search = define_tool(
        name="web_search",
        description="Search the web (slow).",
        parameters={"query": {"type": "string", "required": True}},
        output=ToolOutput(
            schema={"type": "array", "items": {"type": "string"}},
            render=lambda args, value: [{"type": "text", "text": "\n".join(value)}],
        ),
        execute=slow_search,
        timeout_ms=150,
        is_concurrency_safe=lambda args: True,
    )
    delete = define_tool(
        name="delete_file",
        description="Delete a file.",
        parameters={"path": {"type": "string", "required": True}},
        output=ToolOutput(
            schema={
                "type": "object",
                "properties": {"deleted": {"type": "string", "required": True}},
                "additionalProperties": False,
            },
            render=lambda args, value: [{"type": "text", "text": f"deleted {value['deleted']}"}],
        ),
        execute=delete_file,
    )
    return [read, search, delete]


def _demo_registry(**options: Any) -> Any:
    """The example tools behind the timeout policy and a policy that denies deletes."""
    from dsh_codegen.registry import Deny, ToolRegistry, timeout_policy

    registry = ToolRegistry(**options)
    for definition in _example_tools():
        registry.register(definition)
    timeout_policy(registry)

    async def no_deletes(execution: Any, next_decision: Any) -> Any:
        if execution.name == "delete_file":
            return Deny("deleting files is not allowed in this demo")
        return await next_decision()

    registry.on_pre_execute(no_deletes)
    return registry


def _print_results(calls: Any, results: Any, log: Any) -> None:
    print("--- results, in model order ---")
    for call, result in zip(calls, results):
        text = " | ".join(block.get("text", f"[{block['type']}]") for block in result.content)
        text = text.replace("\n", "\\n")
        print(f"{call.call_id} {call.name:<12} {'error' if result.is_error else 'ok   '} {text}")
    print("--- session log ---")
    for event in log.events:
        shown = {k: v for k, v in event.items() if k != "time"}
        print(json.dumps(shown, ensure_ascii=False))


#: The scripted model's Code Mode program (the body of an async function).
_PROGRAM = """\
import asyncio

motd, app, again = await asyncio.gather(
    tools.read_file({"path": "/etc/motd"}),
    tools.read_file({"path": "/srv/app.py", "limit": 1}),
    tools.read_file({"path": "/etc/motd", "limit": 1}),
)
print(f"motd has {motd['lines']} lines; app.py starts with {app['text']!r}")
try:
    await tools.delete_file({"path": "/etc/motd"})
except ToolCallError as error:
    print(f"{error.toolName} refused: {error.message}")
try:
    await tools.web_search({"query": "lossless json"})
except ToolCallError as error:
    print(f"{error.toolName} failed: {error.message}")
return {"first_line": again["text"], "files_read": 3}
"""


async def _run_code_mode() -> None:
    from dsh_codegen.codemode import PythonSubprocessRuntime
    from dsh_codegen.registry import AbortController, MemorySessionLog, ToolCall, execute_tool_calls

    log = MemorySessionLog()
    async with PythonSubprocessRuntime() as runtime:
        registry = _demo_registry(mode="code", code_runtime=runtime, log=log)
        assembly = registry.assemble()
        print(f"--- Code Mode ({runtime!r}) ---")
        print("wire tools:", [tool["name"] for tool in assembly.tools])
        for section in assembly.sections:
            if section.text:
                print(f"--- prompt section {section.id} (order {section.order}) ---")
                print(section.text)
        calls = [
            ToolCall(
                "call_6", "run_code", {"code": _PROGRAM, "description": "Read two files, try a delete and a search"}
            ),
            ToolCall("call_7", "read_file", '{"path": "/etc/motd"}'),
        ]
        results = await execute_tool_calls(
            registry, calls, signal=AbortController().signal, log=log, agent="demo-agent"
        )
    _print_results(calls, results, log)


async def _run_turn() -> None:
    from dsh_codegen.registry import AbortController, MemorySessionLog, ToolCall, execute_tool_calls

    registry = _demo_registry()

    from dsh_codegen.codegen import render_py_sdk, render_ts_sdk

    catalog = registry.catalog()
    print("--- TypeScript SDK (tools:sdk) ---")
    print(render_ts_sdk(catalog))
    print("--- Python SDK (tools:sdk) ---")
    print(render_py_sdk(catalog))

    calls = [
        ToolCall("call_1", "read_file", '{"path": "/etc/motd"}'),
        ToolCall("call_2", "read_file", '{"path": "/srv/app.py", "limit": 1}'),
        ToolCall("call_3", "web_search", '{"query": "lossless json"}'),
        ToolCall("call_4", "delete_file", '{"path": "/etc/motd"}'),
        ToolCall("call_5", "read_file", '{"limit": "ten"}'),
    ]
    log = MemorySessionLog()
    results = await execute_tool_calls(registry, calls, signal=AbortController().signal, log=log)
    _print_results(calls, results, log)


def run_demo() -> int:
    from dsh_codegen.json import render_json_pretty, snapshot_json

    print(f"dsh_codegen demo (backend: {backend()})")
    payload = snapshot_json({"path": "/srv/app.py", "matches": [{"line": 1, "text": "print('hi')"}], "ok": True})
    print("--- a frozen lossless snapshot, rendered ---")
    print(render_json_pretty(payload))
    try:
        payload["ok"] = False
    except TypeError as exc:
        print(f"mutation refused: {exc}")
    asyncio.run(_run_turn())
    asyncio.run(_run_code_mode())
    return 0
