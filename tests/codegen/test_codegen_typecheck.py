"""Generated SDKs type-check, and the checkers agree with the schemas.

One ``tsc --noEmit --strict`` run and one ``mypy --strict`` run cover every
golden case (batched to keep the suite fast). For each tool, candidate
argument and output values are assigned to the generated types; a value the
type oracle (``codegen_helpers``) expects to be rejected is marked
``// @ts-expect-error`` in TypeScript, and for Python the set of lines mypy
reports must equal the set the oracle predicts.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _shared_helpers import needs_tsc, run_mypy, run_tsc
from codegen_helpers import CASES, case_names, load_json, py_accepts, ts_accepts, variants
from dsh_codegen.codegen import ToolSchemaEntry, load_catalog, render_sdk_module, render_ts_sdk
from dsh_codegen.codegen._literals import code_string
from dsh_codegen.codegen._catalog import sorted_catalog
from dsh_codegen.codegen._py_sdk import py_declarations

pytestmark = pytest.mark.once


def _candidates(case: str, entry: ToolSchemaEntry) -> tuple[list[Any], list[Any]]:
    args = variants(entry.parameters)
    outputs = variants(entry.output_schema) if entry.output_schema is not None else [{"any": [1]}, None]
    extra = CASES / case / "args.json"
    if extra.is_file():
        for item in load_json(extra):
            if item["name"] == entry.name:
                args += item["valid"] + item["invalid"]
    return args, outputs


def _ts_check_file(case: str, catalog: list[ToolSchemaEntry]) -> tuple[str, int]:
    lines = [
        f'import type {{ ToolArgsMap, ToolOutputMap }} from "./sdk_{case}";',
        f'import {{ tools }} from "./sdk_{case}";',
    ]
    expected_errors = 0
    for index, entry in enumerate(catalog):
        key = code_string(entry.name)
        args, outputs = _candidates(case, entry)
        for number, value in enumerate(args):
            text = json.dumps(value)
            for statement in (
                f"const a{index}_{number}: ToolArgsMap[{key}] = {text};",
                f"void tools[{key}]({text});",
            ):
                if not ts_accepts(entry.parameters, value):
                    lines.append("// @ts-expect-error")
                    expected_errors += 1
                lines.append(statement)
        for number, value in enumerate(outputs):
            if not ts_accepts(entry.output_schema, value):
                lines.append("// @ts-expect-error")
                expected_errors += 1
            lines.append(f"const o{index}_{number}: ToolOutputMap[{key}] = {json.dumps(value)};")
    return "\n".join(lines) + "\n", expected_errors


def _oracle_cases() -> list[str]:
    # Cases with hand-written checks (the dialect) are checked by those, not by the subset oracle.
    return [case for case in case_names() if not (CASES / case / "checks.ts").is_file()]


def _checked_cases() -> list[str]:
    return [case for case in case_names() if (CASES / case / "checks.ts").is_file()]


@pytest.fixture(scope="module")
def catalogs() -> dict[str, list[ToolSchemaEntry]]:
    return {case: load_catalog(CASES / case / "catalog.json") for case in _oracle_cases()}


@needs_tsc
def test_typescript_sdks_pass_tsc_strict(tmp_path: Path, catalogs: dict[str, list[ToolSchemaEntry]]) -> None:
    files = []
    total_expected = 0
    for case, catalog in catalogs.items():
        (tmp_path / f"sdk_{case}.ts").write_text(render_sdk_module(catalog, "typescript"), encoding="utf-8")
        prompt = render_ts_sdk(catalog)
        block = prompt[prompt.index("```ts\n") + 6 : prompt.rindex("```")]
        # export {} makes the prompt block a module, so cases do not share globals.
        (tmp_path / f"prompt_{case}.ts").write_text(block + "export {};\n", encoding="utf-8")
        check, expected = _ts_check_file(case, catalog)
        total_expected += expected
        (tmp_path / f"check_{case}.ts").write_text(check, encoding="utf-8")
        files += [f"sdk_{case}.ts", f"prompt_{case}.ts", f"check_{case}.ts"]
    result = run_tsc(tmp_path, *files)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    # The oracle must predict some rejections, or the expect-error half proves nothing.
    assert total_expected > 100


def _py_check_file(case: str, catalog: list[ToolSchemaEntry]) -> tuple[str, set[int]]:
    entries = sorted_catalog(catalog)
    members = {
        entry.name: member
        for entry, member in zip(entries, py_declarations(entries, qualify=False).members, strict=True)
    }
    lines = [
        f"from sdk_{case} import *  # noqa: F403",
        f"from sdk_{case} import Tools",
        "from typing import Any, Literal, NotRequired",
        "",
        "async def _calls(t: Tools) -> None:",
        "    pass",
    ]
    calls: list[tuple[str, bool]] = []
    expected: set[int] = set()
    statements: list[tuple[str, bool]] = []
    for index, entry in enumerate(catalog):
        member = members[entry.name]
        args, outputs = _candidates(case, entry)
        for number, value in enumerate(args):
            ok = py_accepts(entry.parameters, value)
            statements.append((f"a{index}_{number}: {member.args} = {value!r}", ok))
            if member.method:
                calls.append((f"    await t.{entry.name}({value!r})", ok))
        for number, value in enumerate(outputs):
            ok = py_accepts(entry.output_schema, value)
            statements.append((f"o{index}_{number}: {member.output} = {value!r}", ok))
    for text, ok in calls + [("", True)] + statements:
        lines.append(text)
        if not ok:
            expected.add(len(lines))
    return "\n".join(lines) + "\n", expected


def test_python_sdks_pass_mypy_strict(tmp_path: Path, catalogs: dict[str, list[ToolSchemaEntry]]) -> None:
    files = []
    expected: dict[str, set[int]] = {}
    for case, catalog in catalogs.items():
        (tmp_path / f"sdk_{case}.py").write_text(render_sdk_module(catalog, "python"), encoding="utf-8")
        check, lines = _py_check_file(case, catalog)
        (tmp_path / f"check_{case}.py").write_text(check, encoding="utf-8")
        expected[f"check_{case}.py"] = lines
        files += [f"sdk_{case}.py", f"check_{case}.py"]
    options = ["--no-error-summary", "--show-error-codes", "--disable-error-code", "unused-ignore"]
    result = run_mypy(tmp_path, *files, options=options)
    reported: dict[str, set[int]] = {name: set() for name in expected}
    unexpected_files = []
    for line in result.stdout.splitlines():
        match = re.match(r"([^:]+):(\d+): error:", line)
        if match is None:
            continue
        if match.group(1) in reported:
            reported[match.group(1)].add(int(match.group(2)))
        else:
            unexpected_files.append(line)
    assert unexpected_files == [], "\n".join(unexpected_files[:40])
    for name in sorted(expected):
        missing = expected[name] - reported[name]
        extra = reported[name] - expected[name]
        assert not missing and not extra, (name, sorted(missing)[:20], sorted(extra)[:20], result.stdout[-4000:])
    assert sum(len(lines) for lines in expected.values()) > 100


@needs_tsc
@pytest.mark.parametrize("case", _checked_cases())
def test_dialect_sdks_pass_tsc_strict_with_their_checks(tmp_path: Path, case: str) -> None:
    catalog = load_catalog(CASES / case / "catalog.json")
    (tmp_path / f"sdk_{case}.ts").write_text(render_sdk_module(catalog, "typescript"), encoding="utf-8")
    prompt = render_ts_sdk(catalog)
    block = prompt[prompt.index("```ts\n") + 6 : prompt.rindex("```")]
    (tmp_path / f"prompt_{case}.ts").write_text(block + "export {};\n", encoding="utf-8")
    checks = (CASES / case / "checks.ts").read_text(encoding="utf-8")
    assert checks.count("@ts-expect-error") >= 5
    (tmp_path / "checks.ts").write_text(checks, encoding="utf-8")
    result = run_tsc(tmp_path, f"sdk_{case}.ts", f"prompt_{case}.ts", "checks.ts")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


@pytest.mark.parametrize("case", _checked_cases())
def test_dialect_sdks_pass_mypy_strict_with_their_checks(tmp_path: Path, case: str) -> None:
    catalog = load_catalog(CASES / case / "catalog.json")
    (tmp_path / f"sdk_{case}.py").write_text(render_sdk_module(catalog, "python"), encoding="utf-8")
    checks = (CASES / case / "checks.py").read_text(encoding="utf-8")
    # --strict reports an unused ignore: each one below proves a rejection.
    assert checks.count("# type: ignore[") >= 5
    (tmp_path / "checks.py").write_text(checks, encoding="utf-8")
    result = run_mypy(tmp_path, f"sdk_{case}.py", "checks.py", options=["--no-error-summary", "--show-error-codes"])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    # The module also imports and runs (forward references are postponed).
    run = subprocess.run([sys.executable, "-c", f"import sdk_{case}"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
