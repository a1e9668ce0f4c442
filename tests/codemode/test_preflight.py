"""The opt-in pre-flight check: findings the model can correct before any tool has run."""

from __future__ import annotations

from typing import Any

import pytest
from _runtime_helpers import FakeTools, run_sync

from dsh_codegen.codegen import ToolSchemaEntry
from dsh_codegen.codemode import MontyRuntime, PythonSubprocessRuntime
from dsh_codegen.codemode._preflight import preflight_findings
from dsh_codegen.registry.code_runtime import CodeRunFailure, CodeRunRequest, CodeRunSuccess
from dsh_codegen.registry.cancel import AbortController

pytestmark = pytest.mark.once

CATALOG = (
    ToolSchemaEntry(
        "read_file",
        "Read a file.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer"},
                "mode": {"type": "string", "enum": ["a", "b"]},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"text": {"type": "string"}, "lines": {"type": "integer"}},
            "required": ["text"],
            "additionalProperties": False,
        },
    ),
    ToolSchemaEntry("echo", "Echo.", {"type": "object"}, None),
)
NAMES = ("echo", "read_file")


def findings(code: str) -> list[str]:
    return preflight_findings(code, NAMES, CATALOG)


def test_a_correct_program_has_no_findings() -> None:
    code = (
        "r = await tools.read_file({'path': 'a', 'limit': 3})\n"
        "print(r['text'], r.get('lines'))\n"
        "x = await tools.echo({'anything': [1, 2]})\n"
        "p = 'b'\nawait tools.read_file({'path': p})\n"
        "await tools['read_file']({**{'path': 'c'}})"
    )
    assert findings(code) == []


def test_unknown_tools_by_attribute_and_subscript_with_the_nearest_name() -> None:
    assert findings("await tools.nope({})\nawait tools['also-nope']({})\nawait tools.readfile({'path': 'a'})") == [
        "line 1: tools.nope: no such tool (tools: echo, read_file)",
        'line 2: tools["also-nope"]: no such tool (tools: echo, read_file)',
        "line 3: tools.readfile: no such tool; did you mean tools.read_file? (tools: echo, read_file)",
    ]


def test_argument_keys_and_literal_types_the_schema_rejects() -> None:
    assert findings("await tools.read_file({'limit': 1.5, 'mode': 'x', 'extra': f()})") == [
        'line 1: tools.read_file: "extra" is not an argument of read_file (its arguments: path, limit, mode)',
        'line 1: tools.read_file: missing required argument "path" (string)',
        'line 1: tools.read_file: "arguments.limit" must be an integer; got 1.5',
        'line 1: tools.read_file: "arguments.mode" must be one of ["a","b"]; got "x"',
    ]
    assert findings("await tools.read_file({'path': 5})") == [
        'line 1: tools.read_file: "arguments.path" must be a string; got 5'
    ]


def test_a_misnamed_key_is_one_finding_with_the_key_meant() -> None:
    # The two mistakes the issue names: file_path for path, and an integer passed as text.
    assert findings("await tools.echo({})\nr = await tools.read_file({'file_path': 'a.txt', 'limit': '5'})") == [
        'line 2: tools.read_file: "file_path" is not an argument of read_file; did you mean "path"?',
        'line 2: tools.read_file: "arguments.limit" must be an integer; got "5"',
    ]


def test_calls_that_do_not_pass_one_arguments_dict() -> None:
    assert findings(
        "await tools.read_file(path='a', limit=3)\nawait tools.echo()\nawait tools.echo({}, {})\n"
        "await tools.echo(*xs)\nawait tools.echo(**kw)"
    ) == [
        "line 1: tools.read_file(...) was given keyword arguments; a tool takes one arguments dict:"
        ' write tools.read_file({"path": ..., "limit": ...})',
        "line 2: tools.echo(...) was given no arguments; a tool takes one arguments dict: write tools.echo({})",
        "line 3: tools.echo(...) was given 2 arguments; a tool takes one arguments dict: write tools.echo({})",
    ]


def test_a_schema_the_validator_cannot_take_is_left_to_the_pipeline() -> None:
    odd = (
        ToolSchemaEntry(
            "t",
            "",
            {"type": "object", "properties": {"n": {"type": "integer", "x-odd": {"not": 1}}}, "patternProperties": {}},
            None,
        ),
    )
    assert preflight_findings("await tools.t({'n': 'text'})", ("t",), odd) == []


def test_reading_output_keys_the_output_schema_does_not_declare() -> None:
    code = "r = await tools.read_file({'path': 'a'})\nprint(r['body'])\nn = (await tools.read_file({'path': 'b'})).get('size')"
    assert findings(code + "\nprint(r['txt'])") == [
        'line 2: tools.read_file(...) returns no key "body" (its keys: text, lines)',
        'line 3: tools.read_file(...) returns no key "size" (its keys: text, lines)',
        'line 4: tools.read_file(...) returns no key "txt"; did you mean "text"? (its keys: text, lines)',
    ]


def test_a_program_that_does_not_parse_is_left_to_the_run() -> None:
    assert findings("def f(:") == []


@pytest.mark.parametrize(
    "make", [lambda: PythonSubprocessRuntime(preflight=True), lambda: MontyRuntime(preflight=True)]
)
def test_runtimes_return_the_findings_before_any_tool_runs(make: Any) -> None:
    tools = FakeTools()

    async def main() -> Any:
        async with make() as runtime:
            bad = await runtime.run(
                CodeRunRequest(
                    "await tools.echo({})\nawait tools.nope({})",
                    NAMES,
                    tools.dispatch,
                    AbortController().signal,
                    "c",
                    CATALOG,
                )
            )
            good = await runtime.run(
                CodeRunRequest(
                    "return (await tools.echo({'a': 1}))['echo']",
                    NAMES,
                    tools.dispatch,
                    AbortController().signal,
                    "c",
                    CATALOG,
                )
            )
            return bad, good

    bad, good = run_sync(main)
    assert isinstance(bad, CodeRunFailure) and bad.kind == "exception"
    assert bad.message == (
        "pre-flight check against the SDK failed, nothing ran; fix these and call run_code again:\n"
        "- line 2: tools.nope: no such tool (tools: echo, read_file)"
    )
    assert good == CodeRunSuccess((), {"a": 1})
    assert [name for name, _ in tools.calls] == ["echo"]


def test_preflight_check_is_the_failure_any_runtime_returns() -> None:
    from dsh_codegen.codemode import preflight_check

    def req(code: str) -> CodeRunRequest:
        return CodeRunRequest(code, NAMES, FakeTools().dispatch, AbortController().signal, "c", CATALOG)

    assert preflight_check(req("return await tools.echo({})")) is None
    assert preflight_check(req("await tools.read_file({'path': 'a', 'lines': 3})")) == CodeRunFailure(
        "exception",
        "pre-flight check against the SDK failed, nothing ran; fix these and call run_code again:\n"
        '- line 1: tools.read_file: "lines" is not an argument of read_file (its arguments: path, limit, mode)',
    )


def test_a_forgotten_await_before_reading_a_key() -> None:
    code = (
        "r = tools.read_file({'path': 'a'})\nprint(r['text'])\nx = tools.echo({})['k']\n"
        "t = tools.read_file({'path': 'b'})\nt = await t\nprint(t['text'])\n"  # awaited later: fine
        "fired = tools.echo({})\nreturn 1"
    )  # never read: a fire-and-forget call, fine
    assert findings(code) == [
        'line 2: r = tools.read_file(...) is not awaited, so r["text"] reads a coroutine, not the result:'
        " write r = await tools.read_file(...)",
        'line 3: tools.echo(...)["k"] reads a coroutine, not the result: write (await tools.echo(...))["k"]',
    ]
