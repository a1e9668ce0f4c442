"""What the model reads back from programs written the way models write them, through a registry.

The exact text of the ``run_code`` result, with ``PythonSubprocessRuntime`` behind the real bridge and
pipeline: what a failure says happened, and how much of a flood of output reaches the model.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _runtime_helpers import run_sync

from dsh_codegen.codemode import PythonSubprocessRuntime
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    AbortController,
    ToolExecutionInput,
    ToolOutput,
    ToolRegistry,
    define_tool,
)

pytestmark = pytest.mark.once


def _notes() -> Any:
    async def write_note(args: Any, run: Any) -> Any:
        if args["path"].startswith("/"):
            raise PermissionError(f"{args['path']}: read-only file system")
        return f"saved {args['path']}"

    return define_tool(
        name="write_note",
        description="Save a note.",
        parameters={"path": {"type": "string"}, "text": {"type": "string"}},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}]),
        execute=write_note,
    )


def _reader(calls: list[Any]) -> Any:
    async def read_file(args: Any, run: Any) -> Any:
        calls.append(args)
        return {"text": "hello", "lines": 1}

    return define_tool(
        name="read_file",
        description="Read a file.",
        parameters={"path": {"type": "string", "required": True}, "limit": {"type": "integer"}},
        output=ToolOutput(
            schema={
                "type": "object",
                "properties": {"text": {"type": "string"}, "lines": {"type": "integer"}},
                "additionalProperties": False,
            },
            render=lambda args, value: [{"type": "text", "text": value["text"]}],
        ),
        execute=read_file,
    )


def texts(*programs: str, calls: list[Any] | None = None, **options: Any) -> list[str]:
    async def main() -> list[str]:
        async with PythonSubprocessRuntime(start="fork-server", wall_timeout_s=2) as runtime:
            registry = ToolRegistry(mode="code", code_runtime=runtime, **options)
            registry.register(_notes())
            registry.register(_reader(calls if calls is not None else []))
            out = []
            for n, code in enumerate(programs):
                result = await registry.execute(
                    ToolExecutionInput(
                        f"c{n}", RUN_CODE_NAME, {"code": code, "description": "a program"}, AbortController().signal
                    )
                )
                (block,) = result.content
                out.append(block["text"])
            return out

    return run_sync(main)  # type: ignore[no-any-return]


def test_what_a_failed_run_says_happened_before_it_failed() -> None:
    endless, uncaught, lossy = texts(
        # Writes, then never finishes: the model must learn that the first note was saved.
        "await tools.write_note({'path': 'a.txt', 'text': 'hi'})\nwhile True:\n    pass",
        # Lets a tool's failure escape: the text names the call that failed.
        "await tools.write_note({'path': 'b.txt', 'text': 'x'})\nawait tools.write_note({'path': '/etc/x', 'text': 'y'})",
        # Returns a datetime: the text names where and what.
        "import datetime\nr = await tools.write_note({'path': 'c.txt', 'text': 'z'})\n"
        "return {'saved': r, 'when': datetime.datetime(2026, 1, 2)}",
    )
    assert endless == (
        "Error: code run failed (timeout): the program ran past its wall-clock budget of 2 s\n"
        "Tool calls the program started (their effects stay):\n"
        '1. tools.write_note({"path":"a.txt","text":"hi"}): succeeded'
    )
    assert uncaught == (
        "Error: code run failed (exception): ToolCallError: tools.write_note failed: /etc/x: read-only file system"
        " (line 2)\n"
        "Tool calls the program started (their effects stay):\n"
        '1. tools.write_note({"path":"b.txt","text":"x"}): succeeded\n'
        '2. tools.write_note({"path":"/etc/x","text":"y"}): failed: /etc/x: read-only file system'
    )
    assert lossy == (
        "Error: code run failed (invalid-output): program completion must be lossless JSON:"
        " result.when: type datetime is not a JSON type\n"
        "Tool calls the program started (their effects stay):\n"
        '1. tools.write_note({"path":"c.txt","text":"z"}): succeeded'
    )


def test_a_3_mb_print_reaches_the_model_as_head_and_tail_with_both_markers() -> None:
    (flood,) = texts("for i in range(30_000):\n    print(f'{i:08d}' + 'x' * 92)\nreturn 'done'")
    # max_log_bytes (1 MiB) kept 10,485 lines and a cut one, then its marker; the model sees 40,000 characters.
    assert flood.startswith("00000000" + "x" * 92 + "\n00000001")
    head, rest = flood.split("\n[... ", 1)
    marker, tail = rest.split(" ...]\n", 1)
    assert len(head) == 20_000 and len(tail) == 20_000
    kept = (
        10_485 * 101 + 77 + 64 + 4
    )  # the full lines and the cut one (each and a newline), the marker line, the result
    assert marker == (
        f"{kept - 40_000:,} of {kept:,} characters cut here: run_code shows the first and the last"
        " 20,000; print less, or print a slice"
    )
    assert tail.endswith("\n[output truncated: the program printed more than 1048576 bytes]\ndone")


def test_pre_flight_is_on_and_sees_the_registry_catalog_nothing_runs() -> None:
    # Issue 34: through the registry only tool names were checked, so this program saved a note,
    # then failed on its second call. Now the SDK's schemas reach the check and nothing runs.
    calls: list[Any] = []
    (mistaken, fixed) = texts(
        "await tools.write_note({'path': 'a.txt', 'text': 'hi'})\n"
        "r = await tools.read_file({'file_path': 'a.txt', 'limit': '5'})\n"
        "return r['body']",
        "r = await tools.read_file({'path': 'a.txt', 'limit': 5})\nreturn r['text']",
        calls=calls,
    )
    assert mistaken == (
        "Error: code run failed (exception): pre-flight check against the SDK failed, nothing ran;"
        " fix these and call run_code again:\n"
        '- line 2: tools.read_file: "file_path" is not an argument of read_file; did you mean "path"?\n'
        '- line 2: tools.read_file: "arguments.limit" must be an integer; got "5"\n'
        '- line 3: tools.read_file(...) returns no key "body" (its keys: text, lines)'
    )
    assert fixed == "hello" and calls == [{"path": "a.txt", "limit": 5}]


def test_calls_the_program_never_awaits_still_run_to_their_end() -> None:
    # Issue 34: a fire-and-forget call runs and is drained before the run settles. Exclusive calls queue
    # behind each other; the run completes only once each has finished (none aborted, none abandoned).
    saved: list[str] = []

    async def save(args: Any, run: Any) -> Any:
        await asyncio.sleep(0.02)
        saved.append(args["path"])
        return "saved"

    async def main() -> tuple[str, list[str]]:
        async with PythonSubprocessRuntime(start="fork-server", wall_timeout_s=5) as runtime:
            registry = ToolRegistry(mode="code", code_runtime=runtime)
            registry.register(
                define_tool(
                    name="save",
                    description="Save.",
                    parameters={"path": {"type": "string", "required": True}},
                    output=ToolOutput(schema={"type": "string"}, render=lambda a, v: [{"type": "text", "text": v}]),
                    execute=save,
                )
            )
            code = "for i in range(12):\n    tools.save({'path': f'n{i}'})\nreturn 'queued'"
            result = await registry.execute(
                ToolExecutionInput("c", RUN_CODE_NAME, {"code": code, "description": "d"}, AbortController().signal)
            )
            return result.content[0]["text"], list(saved)

    text, done = run_sync(main)
    assert text == "queued" and done == [f"n{i}" for i in range(12)]
