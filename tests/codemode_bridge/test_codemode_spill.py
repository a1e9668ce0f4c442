"""spill_policy: oversized top-level content and dispatch-log content become a preview plus a file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from _bridge_helpers import async_test, code_registry, events, run_code, text, text_tool
from dsh_codegen.codemode import spill_policy
from dsh_codegen.registry import AbortController, ToolExecutionInput


def big_tool(size: int) -> Any:
    async def body(args: Any, run: Any) -> Any:
        return "é" * size

    return text_tool("big", body)


def spilled_path(text_value: str) -> Path:
    marker = "bytes in full at "
    return Path(text_value[text_value.index(marker) + len(marker) : -1])


@async_test
async def test_top_level_results_and_dispatch_log_entries_spill(tmp_path: Path) -> None:
    registry, runtime, log = code_registry(big_tool(100), mode="both")
    dispose = spill_policy(registry, tmp_path / "spill", max_bytes=50)

    async def program(tools: Any, print: Any) -> Any:
        value = await tools.big({})
        return len(value)  # the program still gets the whole value

    runtime.add("p", program)
    direct = await registry.execute(ToolExecutionInput("d1", "big", {}, AbortController().signal))
    shown = text(direct)
    assert shown.startswith("é" * 12 + "\n[output truncated: 200 bytes in full at ")
    assert spilled_path(shown).read_text(encoding="utf-8") == "é" * 100
    assert direct.value == "é" * 100  # the canonical value is untouched

    result = await run_code(registry, "p")
    assert text(result) == "100"  # small: kept
    (settle,) = events(log, "tool/code-dispatch")
    (block,) = settle["content"]
    assert spilled_path(block["text"]).read_text(encoding="utf-8") == "é" * 100
    assert [p.name for p in (tmp_path / "spill").iterdir() if p.name.startswith(".spill-")] == []

    dispose()
    again = await registry.execute(ToolExecutionInput("d2", "big", {}, AbortController().signal))
    assert text(again) == "é" * 100


@async_test
async def test_a_failed_write_keeps_the_original_content(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    registry, _, _ = code_registry(big_tool(100), mode="both")
    spill_policy(registry, blocker / "spill", max_bytes=10)
    result = await registry.execute(ToolExecutionInput("d", "big", {}, AbortController().signal))
    assert text(result) == "é" * 100


def test_spill_policy_validates_its_limits(tmp_path: Path) -> None:
    registry, _, _ = code_registry()
    for bad in (0, -1, 1.5, "10"):
        with pytest.raises(ValueError, match="max_bytes must be a positive integer"):
            spill_policy(registry, tmp_path, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="preview_bytes"):
        spill_policy(registry, tmp_path, 10, preview_bytes=11)
    assert os.listdir(tmp_path) == []
