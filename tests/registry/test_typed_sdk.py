"""Generated SDKs for the peer-comparison tools type-check (``mypy --strict``, ``tsc --strict``).

Each check file holds calls the SDK must accept and calls it must reject: a
rejected one carries ``# type: ignore`` (``--strict`` reports an unused one)
or ``// @ts-expect-error`` (``tsc`` reports an unused one), so both halves can fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _shared_helpers import needs_tsc, run_mypy, run_tsc
from test_typed_peers import CASES

from dsh_codegen.codegen import render_sdk_module
from dsh_codegen.registry import ToolRegistry
from dsh_codegen.registry._typed import tool

pytestmark = pytest.mark.once

PY_CHECKS = """
from sdk_typed import Tools


async def use(t: Tools) -> None:
    await t.search({"query": "x"})
    await t.search({"query": "x", "limit": 3})
    await t.search({"limit": 3})  # type: ignore
    await t.set_theme({"theme": "dark"})
    await t.set_theme({"theme": "blue"})  # type: ignore
    await t.file_task({"title": "t", "priority": 2})
    await t.file_task({"title": "t", "priority": 3})  # type: ignore
    await t.read_lines({"path": "p", "lines": {"start": 1}})
    await t.read_lines({"path": "p", "lines": {"end": 1}})  # type: ignore
    await t.apply_edits({"path": "p", "edits": [{"old": "a", "new": "b"}]})
    await t.send_mail({"to": {"email": "a@b"}, "subject": "s"})
    await t.score({"scores": {"a": 1}})
    await t.score({"scores": {"a": "1"}})  # type: ignore
    await t.draw_tree({"tree": {"label": "r", "children": [{"label": "a", "children": []}]}})
    await t.draw_tree({"tree": {"children": []}})  # type: ignore
    await t.annotate({"value": 1})
    await t.annotate({"value": "x", "note": None})
    await t.annotate({"value": 1.5})  # type: ignore
    await t.set_mode({"mode": "fast"})
    await t.set_mode({"mode": "slow"})  # type: ignore
    await t.dark_or_auto({"theme": "auto"})
    await t.dark_or_auto({"theme": "light"})  # type: ignore
    await t.place({"point": (1, 2)})
    await t.place({"point": (1, "2")})  # type: ignore
    total: float = await t.average({"samples": [1.5]})
    count: int = await t.apply_edits({"path": "p", "edits": []})
    wrong: str = await t.apply_edits({"path": "p", "edits": []})  # type: ignore
"""

TS_CHECKS = """
import { tools } from "./sdk_typed";

export async function use(): Promise<void> {
  await tools.search({ query: "x" });
  // @ts-expect-error
  await tools.search({ limit: 3 });
  await tools.set_theme({ theme: "dark" });
  // @ts-expect-error
  await tools.set_theme({ theme: "blue" });
  // @ts-expect-error
  await tools.file_task({ title: "t", priority: 3 });
  await tools.read_lines({ path: "p", lines: { start: 1 } });
  // @ts-expect-error
  await tools.score({ scores: { a: "1" } });
  await tools.draw_tree({ tree: { label: "r", children: [{ label: "a" }] } });
  // @ts-expect-error
  await tools.draw_tree({ tree: { children: [] } });
  await tools.annotate({ value: "x", note: null });
  await tools.dark_or_auto({ theme: "dark" });
  // @ts-expect-error
  await tools.dark_or_auto({ theme: "light" });
  await tools.place({ point: [1, 2] });
  // @ts-expect-error
  await tools.place({ point: [1, 2, 3] });
  const count: number = await tools.apply_edits({ path: "p", edits: [] });
  void count;
}
"""


def _write_sdks(tmp_path: Path) -> None:
    registry = ToolRegistry()
    for fn, _, _ in CASES:
        registry.register(tool(fn))
    catalog = registry.catalog()
    (tmp_path / "sdk_typed.py").write_text(render_sdk_module(catalog, "python"), encoding="utf-8")
    (tmp_path / "sdk_typed.ts").write_text(render_sdk_module(catalog, "typescript"), encoding="utf-8")


def test_python_sdk_passes_mypy_strict(tmp_path: Path) -> None:
    _write_sdks(tmp_path)
    (tmp_path / "check_typed.py").write_text(PY_CHECKS, encoding="utf-8")
    result = run_mypy(tmp_path, "sdk_typed.py", "check_typed.py", options=["--no-incremental"])
    assert result.returncode == 0, result.stdout + result.stderr


@needs_tsc
def test_typescript_sdk_passes_tsc_strict(tmp_path: Path) -> None:
    _write_sdks(tmp_path)
    (tmp_path / "check_typed.ts").write_text(TS_CHECKS, encoding="utf-8")
    result = run_tsc(tmp_path, "sdk_typed.ts", "check_typed.ts")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
