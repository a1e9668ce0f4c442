"""The opt-in pre-flight check: findings the model can correct before any tool has run."""

from __future__ import annotations

from typing import Any

import pytest
from _runtime_helpers import FakeTools, run_sync

from dsh_codegen.codegen import ToolSchemaEntry
from dsh_codegen.codemode import MontyRuntime, PythonSubprocessRuntime
from dsh_codegen.codemode._preflight import preflight_findings
from dsh_codegen.registry._code_runtime import CodeRunFailure, CodeRunRequest, CodeRunSuccess
from dsh_codegen.registry.cancel import AbortController

pytestmark = pytest.mark.once

CATALOG = (
    ToolSchemaEntry(
        "read_file",
        "Read a file.",
        {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"},
                                        "mode": {"type": "string", "enum": ["a", "b"]}},
         "required": ["path"], "additionalProperties": False},
        {"type": "object", "properties": {"text": {"type": "string"}, "lines": {"type": "integer"}},
         "required": ["text"], "additionalProperties": False},
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


def test_unknown_tools_by_attribute_and_subscript() -> None:
    assert findings("await tools.nope({})\nawait tools['also-nope']({})") == [
        'line 1: unknown tool "nope" (visible: echo, read_file)',
        'line 2: unknown tool "also-nope" (visible: echo, read_file)',
    ]


def test_argument_keys_and_literal_types_the_schema_rejects() -> None:
    assert findings("await tools.read_file({'limit': 1.5, 'mode': 'x', 'extra': f()})") == [
        "line 1: tools.read_file: missing required argument 'path'",
        'line 1: tools.read_file: "arguments.extra" is not a declared property (additionalProperties: false)',
        'line 1: tools.read_file: "arguments.limit" must be an integer',
        'line 1: tools.read_file: "arguments.mode" must be one of ["a","b"]',
    ]
    assert findings("await tools.read_file({'path': 5})") == ['line 1: tools.read_file: "arguments.path" must be a string']


def test_a_schema_the_validator_cannot_take_is_left_to_the_pipeline() -> None:
    odd = (ToolSchemaEntry("t", "", {"type": "object", "properties": {"n": {"type": "integer", "x-odd": {"not": 1}}},
                                     "patternProperties": {}}, None),)
    assert preflight_findings("await tools.t({'n': 'text'})", ("t",), odd) == []


def test_reading_output_keys_the_output_schema_does_not_declare() -> None:
    code = "r = await tools.read_file({'path': 'a'})\nprint(r['body'])\nn = (await tools.read_file({'path': 'b'})).get('size')"
    assert findings(code) == [
        "line 2: tools.read_file's result has no key 'body' (declared: text, lines)",
        "line 3: tools.read_file's result has no key 'size' (declared: text, lines)",
    ]


def test_a_program_that_does_not_parse_is_left_to_the_run() -> None:
    assert findings("def f(:") == []


@pytest.mark.parametrize("make", [lambda: PythonSubprocessRuntime(preflight=True), lambda: MontyRuntime(preflight=True)])
def test_runtimes_return_the_findings_before_any_tool_runs(make: Any) -> None:
    tools = FakeTools()

    async def main() -> Any:
        async with make() as runtime:
            bad = await runtime.run(CodeRunRequest("await tools.echo({})\nawait tools.nope({})", NAMES, tools.dispatch,
                                                   AbortController().signal, "c", CATALOG))
            good = await runtime.run(CodeRunRequest("return (await tools.echo({'a': 1}))['echo']", NAMES,
                                                    tools.dispatch, AbortController().signal, "c", CATALOG))
            return bad, good

    bad, good = run_sync(main)
    assert isinstance(bad, CodeRunFailure) and bad.kind == "exception"
    assert bad.message == (
        "pre-flight check against the SDK failed, nothing ran; fix these and call run_code again:\n"
        '- line 2: unknown tool "nope" (visible: echo, read_file)'
    )
    assert good == CodeRunSuccess((), {"a": 1})
    assert [name for name, _ in tools.calls] == ["echo"]
