"""The schema engineer's corpus (tests/corpus: 120 pydantic-, zod- and MCP-shaped tool
schemas) rendered into both SDKs: tsc --strict and mypy --strict accept them, every valid
argument set type-checks in TypeScript, and the TypeScript types never degrade."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from _shared_helpers import needs_tsc, run_mypy, run_tsc
from corpus import corpus
from dsh_codegen.codegen import ToolSchemaEntry, render_sdk_module, render_ts_sdk
from dsh_codegen.codegen._degraded import degraded_nodes
from dsh_codegen.codegen._literals import code_string

pytestmark = pytest.mark.once


def _catalog() -> list[ToolSchemaEntry]:
    return [ToolSchemaEntry(name, f"Corpus case {name}.", schema) for name, schema, _, _ in corpus()]


def test_the_corpus_is_typed_without_degradation_in_typescript() -> None:
    catalog = _catalog()
    assert len(catalog) >= 100
    assert degraded_nodes(catalog, "typescript") == []


@needs_tsc
def test_the_corpus_passes_tsc_strict_with_its_valid_arguments(tmp_path: Path) -> None:
    catalog = _catalog()
    (tmp_path / "sdk_corpus.ts").write_text(render_sdk_module(catalog, "typescript"), encoding="utf-8")
    prompt = render_ts_sdk(catalog)
    (tmp_path / "prompt_corpus.ts").write_text(
        prompt[prompt.index("```ts\n") + 6 : prompt.rindex("```")] + "export {};\n", encoding="utf-8"
    )
    lines = ['import type { ToolArgsMap } from "./sdk_corpus";']
    count = 0
    for index, (name, _, valid, _) in enumerate(corpus()):
        for number, value in enumerate(valid):
            lines.append(f"export const a{index}_{number}: ToolArgsMap[{code_string(name)}] = {json.dumps(value)};")
            count += 1
    assert count >= 100
    (tmp_path / "check_corpus.ts").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_tsc(tmp_path, "sdk_corpus.ts", "prompt_corpus.ts", "check_corpus.ts")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_the_corpus_module_passes_mypy_strict_and_imports(tmp_path: Path) -> None:
    (tmp_path / "sdk_corpus.py").write_text(render_sdk_module(_catalog(), "python"), encoding="utf-8")
    result = run_mypy(tmp_path, "sdk_corpus.py", options=["--no-error-summary", "--show-error-codes"])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    run = subprocess.run([sys.executable, "-c", "import sdk_corpus"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
