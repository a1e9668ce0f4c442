"""Degraded types: ``degraded_nodes`` and ``dsh-codegen sdk`` warnings, ``--strict``, schema checks."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from _shared_helpers import run_mypy
from codegen_helpers import CASES, case_names
from dsh_codegen.cli import main
from dsh_codegen.codegen import ToolSchemaEntry, load_catalog, render_py_sdk, render_sdk_module, render_ts_sdk
from dsh_codegen.codegen._degraded import degraded_nodes


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("case", case_names())
def test_typescript_degradations_are_exactly_the_tools_that_render_unknown(case: str) -> None:
    catalog = load_catalog(CASES / case / "catalog.json")
    reported = {node.tool for node in degraded_nodes(catalog, "typescript")}
    for entry in catalog:
        text = render_ts_sdk([entry])
        block = text[text.index("```ts\n") :]
        types_only = "\n".join(line for line in block.splitlines() if "/**" not in line)
        assert bool(re.search(r"\bunknown\b", types_only)) == (entry.name in reported), entry.name


def test_dialect_degradations_name_each_node() -> None:
    catalog = load_catalog(CASES / "dialect" / "catalog.json")
    assert [str(node) for node in degraded_nodes(catalog, "typescript")] == []
    assert [str(node) for node in degraded_nodes(catalog, "python")] == [
        'tool "json_value" parameters#/$defs/Json: a definition that refers to itself outside an object: Any',
        'tool "merge_config" output_schema#/: an allOf that is not one object schema: Any',
    ]


@pytest.mark.parametrize(
    ("schema", "ts", "py"),
    [
        ({"type": "object", "properties": {"a": {"not": {}}}}, ["#/properties/a"], ["#/properties/a"]),
        ({"type": "object", "properties": {"a-b": {"type": "string"}}}, [], []),  # the functional TypedDict form
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}, ["#/properties/a"], ["#/properties/a"]),
        ({"type": "object", "properties": {"a~/b": {"enum": [[1]]}}}, ["#/properties/a~0~1b"], ["#/properties/a~0~1b"]),
        (
            {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"if": {}}]}}},
            ["#/properties/a/anyOf/1"],
            ["#/properties/a/anyOf/1"],
        ),
        ({"type": "object", "properties": {"r": {"enum": [0.5, 1]}}}, [], []),  # float in Python: not Any
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/a"}},
                "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "string"}]}},
            },
            ["#/$defs/a"],
            ["#/$defs/a"],
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/a"}},
                "$defs": {"a": {"type": "object", "properties": {"n": {"$ref": "#/$defs/a"}}}},
            },
            [],
            [],
        ),
        # pydantic's discriminated union: the discriminator is an annotation, the union stays typed
        (
            {
                "type": "object",
                "properties": {
                    "pet": {
                        "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}],
                        "discriminator": {
                            "propertyName": "kind",
                            "mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"},
                        },
                    }
                },
                "required": ["pet"],
                "$defs": {
                    "Cat": {"type": "object", "properties": {"kind": {"const": "cat"}}, "required": ["kind"]},
                    "Dog": {"type": "object", "properties": {"kind": {"const": "dog"}}, "required": ["kind"]},
                },
            },
            [],
            [],
        ),
    ],
)
def test_degraded_nodes(schema: Any, ts: list[str], py: list[str]) -> None:
    entries = [ToolSchemaEntry("t", "", schema)]
    assert ["#" + node.pointer for node in degraded_nodes(entries, "typescript")] == ts
    assert ["#" + node.pointer for node in degraded_nodes(entries, "python")] == py


def test_a_mapping_that_contains_itself_is_reported() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    assert [node.reason for node in degraded_nodes([ToolSchemaEntry("t", "", schema)], "typescript")] == [
        "the schema contains itself: unknown"
    ]


# An enum mixing a string and a fraction is a literal type in TypeScript only (Python's
# Literal takes no float).
EXOTIC = [{"name": "t", "description": "", "parameters": {"type": "object", "properties": {"x": {"enum": ["a", 1.5]}}}}]


def test_sdk_warns_about_degraded_types_and_strict_refuses_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(EXOTIC), encoding="utf-8")
    out = tmp_path / "sdk.py"
    # -q: no "wrote" line; the warnings are still said.
    code, stdout, stderr = _run(capsys, "sdk", "-q", "--lang", "py", "--catalog", str(catalog), "-o", str(out))
    assert code == 0 and stdout == ""
    assert stderr == (
        f'dsh-codegen: warning: {catalog}: tool "t" parameters#/properties/x: '
        "a value that cannot be a literal type: Any\n"
    )
    assert out.read_text(encoding="utf-8") == render_sdk_module(load_catalog(catalog), "python")
    out.unlink()
    code, stdout, stderr = _run(capsys, "sdk", "--lang", "py", "--strict", "--catalog", str(catalog), "-o", str(out))
    assert code == 1 and not out.exists()
    assert stderr.splitlines() == [
        f'dsh-codegen: error: {catalog}: tool "t" parameters#/properties/x: a value that cannot be a literal type: Any',
        "dsh-codegen: 1 degraded type(s); nothing written (--strict)",
    ]
    # TypeScript types the same catalog fully: no warning, --strict passes.
    assert _run(capsys, "sdk", "--lang", "ts", "--strict", "--catalog", str(catalog))[::2] == (0, "")


def test_strict_names_every_degraded_node_of_the_dialect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = CASES / "dialect" / "catalog.json"
    code, stdout, stderr = _run(capsys, "sdk", "--lang", "py", "--strict", "--catalog", str(catalog))
    assert code == 1 and stdout == ""
    assert stderr.count("dsh-codegen: error: ") == 2 and 'tool "json_value" parameters#/$defs/Json' in stderr
    code, stdout, _ = _run(capsys, "sdk", "--lang", "ts", "--strict", "--catalog", str(catalog))
    assert code == 0 and stdout == render_sdk_module(load_catalog(catalog), "typescript")


@pytest.mark.parametrize("command", [["sdk", "--lang", "ts"], ["sdk", "--lang", "py"], ["catalog"]])
def test_sdk_and_catalog_refuse_what_the_registry_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    catalog = tmp_path / "tools.json"
    tools = [
        {"name": "ok", "parameters": {"type": "object"}},
        {"name": "bad", "parameters": {"type": "object", "properties": {"a": {"not": {"type": "string"}}}}},
        {"name": "root", "parameters": {"type": "string"}, "output_schema": {"if": {}}},
    ]
    catalog.write_text(json.dumps(tools), encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, stderr = _run(capsys, *command, "--catalog", str(catalog), "-o", str(out))
    assert code == 1 and stdout == "" and not out.exists()
    lines = stderr.splitlines()
    assert any(
        line.startswith(f'dsh-codegen: error: {catalog}: tool "bad" parameters: schema.properties.a') for line in lines
    )
    assert any(line.startswith(f'dsh-codegen: error: {catalog}: tool "root" parameters: schema.type') for line in lines)
    assert any(line.startswith(f'dsh-codegen: error: {catalog}: tool "root" output_schema: schema.') for line in lines)
    assert not any('"ok"' in line for line in lines)


# The convert-units tool of issue 34: "from" is a keyword, "my-key" no identifier at all.
CONVERT_UNITS = [
    {
        "name": "convert-units",
        "description": "Convert a value between units.",
        "parameters": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "from": {"type": "string", "description": "The unit of value."},
                "to": {"type": "string"},
                "options": {
                    "type": "object",
                    "properties": {"my-key": {"type": "integer"}},
                    "additionalProperties": False,
                },
            },
            "required": ["value", "from", "to"],
        },
    }
]


def test_keys_that_are_not_identifiers_are_typed_and_strict_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: such an object rendered dict[str, Any] (in the SDK text and files) and --strict refused it."""
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(CONVERT_UNITS), encoding="utf-8")
    out = tmp_path / "sdk_units.py"
    code, stdout, stderr = _run(
        capsys, "sdk", "-q", "--lang", "py", "--strict", "--catalog", str(catalog), "-o", str(out)
    )
    assert (code, stdout, stderr) == (0, "", "")
    text = out.read_text(encoding="utf-8")
    assert '        "from": str,\n' in text and '        "my-key": NotRequired[int],\n' in text
    assert "dict[str, Any]" not in text
    prompt = render_py_sdk([ToolSchemaEntry(**entry) for entry in CONVERT_UNITS])  # type: ignore[arg-type]
    assert 'ConvertUnitsArgs = TypedDict(\n    "ConvertUnitsArgs",\n    {\n        "value": float,\n' in prompt
    assert '        # The unit of value.\n        "from": str,\n' in prompt
    # mypy --strict reads every key's type.
    (tmp_path / "use.py").write_text(
        "from sdk_units import ConvertUnitsArgs\n"
        'good: ConvertUnitsArgs = {"value": 1.5, "from": "m", "to": "ft", "options": {"my-key": 2}}\n'
        'bad: ConvertUnitsArgs = {"value": 1.5, "from": 3, "to": "ft"}\n',
        encoding="utf-8",
    )
    checked = run_mypy(tmp_path, "sdk_units.py", "use.py", options=["--no-error-summary"])
    assert checked.stdout.splitlines() == [
        'use.py:3: error: Incompatible types (expression has type "int", TypedDict item "from" has type "str")  [typeddict-item]'
    ]
