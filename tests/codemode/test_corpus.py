"""The corpus on every runtime: the exact text the model reads back for each program.

Every program of ``corpus_programs.py`` runs through a real registry
(``run_code``, the whole pipeline) on ``PythonSubprocessRuntime``, on
``CommandRuntime`` (the child reached through a command: it must read exactly
as the local runtime) and on ``MontyRuntime``. The runtimes must give the model the same text, except
where a runtime's own SDK text says it differs: each such case names the
words of ``MontyRuntime.sdk_notes`` that announce the difference, and the test
checks that the SDK text the registry renders for Monty carries them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from corpus_programs import ENDLESS, PROGRAMS, SHORT_WALL_S, World, corpus_registry

pytest.importorskip("pydantic_monty")

import sys  # noqa: E402

from dsh_codegen.codemode import CommandRuntime, MontyRuntime, PythonSubprocessRuntime  # noqa: E402
from dsh_codegen.codemode._processes import CHILD_SCRIPT  # noqa: E402
from dsh_codegen.registry import AbortController, ToolExecutionInput  # noqa: E402

# One worker runs the module: its fixture runs every program on every runtime, once per worker that needs it.
pytestmark = [pytest.mark.once, pytest.mark.xdist_group("corpus")]

#: The runs themselves are compared, so both without the pre-flight check (on by default on both; it reads
#: the same on both too: ``test_the_pre_flight_reads_the_same_on_both``).
RUNTIMES: dict[str, Callable[..., Any]] = {
    "subprocess": lambda **options: PythonSubprocessRuntime(preflight=False, **options),
    "command": lambda **options: CommandRuntime(
        [sys.executable, "-I", "-S", CHILD_SCRIPT, "stdio"], preflight=False, **options
    ),
    "monty": lambda **options: MontyRuntime(preflight=False, **options),
}
DEFAULTS: dict[str, Callable[..., Any]] = {"subprocess": PythonSubprocessRuntime, "monty": MontyRuntime}
FAILED = "Error: code run failed "
STARTED = "\nTool calls the program started (their effects stay):\n"
LOG_CAP = "[output truncated: the program printed more than 1048576 bytes]"


def _clipped(text: str) -> str:
    """What run_code shows of ``text`` (its default: the first and last 20,000 of 40,000 characters)."""
    cut = len(text) - 40_000
    return (
        text[:20_000] + f"\n[... {cut:,} of {len(text):,} characters cut here: run_code shows the first and the"
        f" last 20,000; print less, or print a slice ...]\n" + text[-20_000:]
    )


def _capped(entries: list[str], cap: int = 1 << 20) -> str:
    """The log text of ``entries`` under ``max_log_bytes``: each entry's UTF-8 bytes counted, the one that
    crosses the cap cut, then the marker line (every runtime counts this way)."""
    kept: list[str] = []
    used = 0
    for entry in entries:
        if used + len(entry.encode()) > cap:
            kept += [entry.encode()[: cap - used].decode(), LOG_CAP]
            break
        used += len(entry.encode())
        kept.append(entry)
    return "\n".join(kept)


#: What the model reads, per program: one text for both runtimes, or a text per runtime and the
#: words of Monty's SDK notes that tell the model so.
EXPECTED: dict[str, str | tuple[dict[str, str], str]] = {
    "happy-read": "buy milk\ncall Ann\nfix the bike",
    "happy-print-and-return": '3 items\n{\n  "first": "buy milk",\n  "lines": 3\n}',
    "sequential-loop": "notes/todo.txt 2\nnotes/ideas.txt 1\nconfig.json 1\n4",
    "gather-50": '{\n  "calls": 50,\n  "last": "q49 #1"\n}',
    "gather-weather": "Oslo: 12C\nLima: 12C\nCairo: 15C",
    "forgotten-await-fire-and-forget": '{\n  "saved": 2\n}',
    "forgotten-await-use": 'Error: code run failed (exception): TypeError: \'coroutine\' object is not subscriptable (line 2)\nTool calls the program started (their effects stay):\n1. tools.read_file({"path":"config.json"}): succeeded',
    "keyword-arguments": "Error: code run failed (exception): TypeError: a tool takes one arguments dict, not keyword arguments: call tools['read_file']({'path': ...}) (line 1)",
    "wrong-key-name": 'Error: code run failed (exception): ToolCallError: tools.read_file failed: invalid arguments: missing required property "path"; "file_path" is not a declared property (additionalProperties: false) (line 1)\nTool calls the program started (their effects stay):\n1. tools.read_file({"file_path":"config.json"}): failed: invalid arguments: missing required property "path"; "file_path" is not a declared property (additionalProperties: false)',
    "wrong-value-type": 'Error: code run failed (exception): ToolCallError: tools.read_file failed: invalid arguments: "limit" must be an integer (line 1)\nTool calls the program started (their effects stay):\n1. tools.read_file({"path":"notes/todo.txt","limit":"2"}): failed: invalid arguments: "limit" must be an integer',
    "unknown-tool": "Error: code run failed (exception): AttributeError: no tool named 'read_files' (line 1)",
    "missing-file-uncaught": 'Error: code run failed (exception): ToolCallError: tools.read_file failed: no such file: nope.txt (line 2)\nTool calls the program started (their effects stay):\n1. tools.read_file({"path":"nope.txt"}): failed: no such file: nope.txt\nCaptured output:\nreading',
    "catch-and-continue": 'skipped missing.txt: read_file said no such file: missing.txt\n{\n  "notes/todo.txt": 3,\n  "config.json": 1\n}',
    "except-exception": 'failed: invalid arguments: missing required property "body"\nToolCallError',
    "non-json-set": 'Error: code run failed (invalid-output): program completion must be lossless JSON: result: type set is not a JSON type\nTool calls the program started (their effects stay):\n1. tools.search({"query":"x","max_results":3}): succeeded',
    "non-json-datetime": "Error: code run failed (invalid-output): program completion must be lossless JSON: result.when: type datetime is not a JSON type",
    "non-json-bytes": "Error: code run failed (invalid-output): program completion must be lossless JSON: result.data: type bytes is not a JSON type",
    "non-json-function": "Error: code run failed (invalid-output): program completion must be lossless JSON: result.fn: type function is not a JSON type",
    "non-json-cycle": "Error: code run failed (invalid-output): program completion must be lossless JSON: result.children[0]: the container contains itself (a cycle)",
    "nested-result": '{\n  "retries": 3,\n  "verbose": false\n}',
    "no-output": "(run_code completed with no output)",
    "stderr-print": "warning: slow\ndone",
    "import-os": (
        {
            "subprocess": "[]",
            "monty": "Error: code run failed (exception): PermissionError: Permission denied: '/' (line 2)",
        },
        "no files, network, subprocesses or third-party packages",
    ),
    "import-subprocess": (
        {
            "subprocess": "hi\n",
            "monty": "Error: code run failed (exception): ModuleNotFoundError: No module named 'subprocess' (line 1)",
        },
        "no files, network, subprocesses or third-party packages",
    ),
    "allocate-2gb": (
        {
            "subprocess": "Error: code run failed (exception): MemoryError (line 1)",
            "monty": "Error: code run failed (exception): MemoryError: memory limit exceeded (this runtime's memory budget is 536870912 bytes) (line 1)",
        },
        "a `MemoryError` that it cannot catch",
    ),
    "sys-exit-0": "all good",
    "sys-exit-1": "Error: code run failed (exception): SystemExit: 1 (line 3)\nCaptured output:\ngiving up",
    "syntax-error": "Error: code run failed (exception): SyntaxError: '(' was never closed (<program>, line 1)",
    "indentation-error": "Error: code run failed (exception): IndentationError: expected an indented block after 'for' statement on line 1 (<program>, line 2)",
    "create-task": '[\n  "a #1",\n  "b #1"\n]',
    "asyncio-run-main": "temp 12",
    "task-group": (
        {
            "subprocess": '{\n  "city": "Oslo",\n  "temp_c": 12\n}',
            "monty": "Error: code run failed (exception): NotImplementedError: The monty syntax parser does not yet support async context managers (async with) (line 2)",
        },
        "there is no `async with`, `TaskGroup`",
    ),
    "class-inheritance": (
        {
            "subprocess": "Error: code run failed (exception): NotFound: gone (line 3)",
            "monty": "Error: code run failed (exception): NotImplementedError: The monty syntax parser does not yet support class inheritance and metaclasses (line 1)",
        },
        "no class inheritance",
    ),
    "call-budget": "60\ntool call budget spent: a run_code program may make at most 60 tool calls; get_weather not dispatched",
    "recursion": "Error: code run failed (exception): RecursionError: maximum recursion depth exceeded (line 2)",
    "key-error-in-result": 'Error: code run failed (exception): KeyError: \'humidity\' (line 2)\nTool calls the program started (their effects stay):\n1. tools.get_weather({"city":"Oslo"}): succeeded',
    "endless-loop": "Error: code run failed (timeout): the program ran past its wall-clock budget of 1.5 s",
    "endless-loop-after-a-call": (
        "Error: code run failed (timeout): the program ran past its wall-clock budget of 1.5 s"
        + STARTED
        + '1. tools.write_note({"title":"start","body":"b"}): succeeded'
    ),
    "huge-print": _clipped("x" * (1 << 20) + "\n" + LOG_CAP),
    "many-prints": _clipped(_capped([f"line {i}: " + "." * 90 for i in range(12_000)])),
}
#: What the tools were left with, where a program changes something.
NOTES = {"forgotten-await-fire-and-forget": ["a", "b"], "endless-loop-after-a-call": ["start"]}


async def _run_all(make: Callable[..., Any], only: tuple[str, ...] | None = None) -> dict[str, tuple[str, list[str]]]:
    seen: dict[str, tuple[str, list[str]]] = {}
    for programs, options in ((PROGRAMS, {}), (ENDLESS, {"wall_timeout_s": SHORT_WALL_S})):
        programs = [(name, code) for name, code in programs if only is None or name in only]
        if not programs:
            continue
        async with make(**options) as runtime:
            for name, code in programs:
                world = World()
                registry = corpus_registry(runtime, world)
                call = ToolExecutionInput(
                    f"c-{name}", "run_code", {"code": code, "description": name}, AbortController().signal
                )
                result = await registry.execute(call)
                text = "\n".join(block["text"] for block in result.content if block.get("type") == "text")
                seen[name] = (text, [note["title"] for note in world.notes])
    return seen


@pytest.fixture(scope="module")
def corpus() -> dict[str, dict[str, tuple[str, list[str]]]]:
    # Every program once per runtime, each runtime closed before the first test reads the results
    # (the runtime tests' leak check then sees no process of theirs).
    return {kind: asyncio.run(_run_all(make)) for kind, make in RUNTIMES.items()}


@pytest.fixture(scope="module")
def monty_sdk_text() -> str:
    from dsh_codegen.registry import ToolRegistry

    return ToolRegistry(mode="code", code_runtime=MontyRuntime()).assemble().sections[1].text


NAMES = [name for name, _ in PROGRAMS + ENDLESS]


def test_the_corpus_is_what_the_issue_asks_for() -> None:
    assert len(NAMES) >= 30 and len(set(NAMES)) == len(NAMES) and sorted(EXPECTED) == sorted(NAMES)


@pytest.mark.parametrize("kind", list(RUNTIMES))
@pytest.mark.parametrize("name", NAMES)
def test_the_model_reads_exactly(name: str, kind: str, corpus: dict[str, dict[str, tuple[str, list[str]]]]) -> None:
    expected = EXPECTED[name]
    text = expected if isinstance(expected, str) else expected[0]["subprocess" if kind == "command" else kind]
    assert corpus[kind][name] == (text, NOTES.get(name, []))


@pytest.mark.parametrize("name", [name for name in NAMES if not isinstance(EXPECTED[name], str)])
def test_the_runtimes_differ_only_where_the_sdk_text_says_so(name: str, monty_sdk_text: str) -> None:
    expected = EXPECTED[name]
    assert not isinstance(expected, str)
    texts, announced = expected
    assert texts["subprocess"] != texts["monty"]
    assert announced in monty_sdk_text


#: The programs the pre-flight check turns back before anything runs (with the runtimes' defaults).
REFUSED = ("keyword-arguments", "wrong-key-name", "wrong-value-type", "unknown-tool", "except-exception")


def test_the_pre_flight_reads_the_same_on_both() -> None:
    # Both runtimes run the same checker by default: the same findings, in the same words, and no tool ran.
    seen = {kind: asyncio.run(_run_all(make, REFUSED)) for kind, make in DEFAULTS.items()}
    assert seen["subprocess"] == seen["monty"]
    for name in REFUSED:
        text, notes = seen["monty"][name]
        assert (
            text.startswith(FAILED + "(exception): pre-flight check against the SDK failed, nothing ran")
            and notes == []
        )


@pytest.mark.parametrize("kind", list(RUNTIMES))
def test_output_is_counted_the_same_way(kind: str) -> None:
    # The logs array and the result, serialized, against max_output_bytes: '["aaaaaaaaaa"]' (14 bytes) and
    # '"bbbbbbbbbb"' (12 bytes) fit in 26 and not in 25, on either runtime.
    from _runtime_helpers import FakeTools, request

    async def main(cap: int) -> Any:
        async with RUNTIMES[kind](max_output_bytes=cap) as runtime:
            return await runtime.run(request("print('a' * 10)\nreturn 'b' * 10", FakeTools()))

    from dsh_codegen.registry.code_runtime import CodeRunFailure, CodeRunSuccess

    assert asyncio.run(main(26)) == CodeRunSuccess(("a" * 10,), "b" * 10)
    assert asyncio.run(main(25)) == CodeRunFailure("output-limit", "outer output exceeded 25 bytes", ("a" * 10,))
