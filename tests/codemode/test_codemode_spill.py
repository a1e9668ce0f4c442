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


def printing(lines: int, width: int = 99) -> Any:
    async def program(tools: Any, print: Any) -> Any:
        for i in range(lines):
            print(f"{i:06d}" + "x" * (width - 6))
        return "done"

    return program


@async_test
async def test_run_code_text_is_cut_to_its_head_and_tail_by_default() -> None:
    registry, runtime, _ = code_registry()
    runtime.add("big", printing(3000))  # 3000 lines of 99 characters, then the result: 300,004 characters
    result = await run_code(registry, "big")
    shown = text(result)
    full = "\n".join(result.value["logs"]) + "\ndone"
    assert len(full) == 300_004 and len(result.value["logs"]) == 3000  # the canonical value keeps everything
    marker = (
        "\n[... 260,004 of 300,004 characters cut here: run_code shows the first and the last 20,000;"
        " print less, or print a slice ...]\n"
    )
    assert shown == full[:20_000] + marker + full[-20_000:]
    # The cap is the registry's: a larger one, or none.
    registry, runtime, _ = code_registry(max_run_code_chars=None)
    runtime.add("big", printing(3000))
    assert text(await run_code(registry, "big")) == full
    with pytest.raises(ValueError, match="max_run_code_chars must be a positive integer or None"):
        code_registry(max_run_code_chars=0)


@async_test
async def test_a_failure_text_is_cut_the_same_way() -> None:
    registry, runtime, _ = code_registry(max_run_code_chars=1000)

    async def fails(tools: Any, print: Any) -> Any:
        for i in range(200):
            print(f"line {i}")
        raise ValueError("late")

    runtime.add("fails", fails)
    shown = text(await run_code(registry, "fails"))
    assert shown.startswith("Error: code run failed (exception): ValueError: late\nCaptured output:\nline 0\n")
    assert "characters cut here" in shown and shown.endswith("\nline 198\nline 199") and len(shown) < 1200


@async_test
async def test_with_spill_policy_the_whole_run_code_text_is_in_the_file(tmp_path: Path) -> None:
    registry, runtime, _ = code_registry()
    spill_policy(registry, tmp_path / "spill", max_bytes=20_000)
    runtime.add("big", printing(3000))
    result = await run_code(registry, "big")
    shown = text(result)
    full = "\n".join(result.value["logs"]) + "\ndone"
    assert shown == full[:10_000] + f"\n[output truncated: {len(full)} bytes in full at {spilled_path(shown)}]"
    assert spilled_path(shown).read_text(encoding="utf-8") == full
