"""docs/tool-execution-pipeline.md is what tools/pipeline_diagram.py makes of PIPELINE_STAGES now."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from _shared_helpers import import_file

from dsh_codegen.registry import PIPELINE_STAGES
from dsh_codegen.registry.pipeline import _run

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    return import_file(ROOT / "tools" / "pipeline_diagram.py", "pipeline_diagram")


def test_the_page_matches_the_stage_declarations() -> None:
    generator = _generator()
    page = (ROOT / "docs" / "tool-execution-pipeline.md").read_text(encoding="utf-8")
    assert page == generator.render_page(), (
        "docs/tool-execution-pipeline.md is stale: run python tools/pipeline_diagram.py"
    )
    assert generator.main(["--check"]) == 0


def test_every_declared_stage_is_drawn_in_order() -> None:
    page = _generator().render_page()
    diagram = page.split("```mermaid\n", 1)[1].split("```", 1)[0]
    positions = [
        diagram.index(f". def {name}<br/>")
        if f". def {name}<br/>" in diagram
        else diagram.index(f". async def {name}<br/>")
        for name in PIPELINE_STAGES
    ]
    assert positions == sorted(positions)
    edges = "call --> " + " --> ".join(f"s{i}" for i in range(1, len(PIPELINE_STAGES) + 1)) + " --> result"
    assert edges in diagram


def test_a_changed_declaration_makes_the_check_fail(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    generator = _generator()
    page = tmp_path / "page.md"
    page.write_text(generator.render_page(), encoding="utf-8")
    assert generator.main(["--check", "-o", str(page)]) == 0
    reordered = (PIPELINE_STAGES[1], PIPELINE_STAGES[0], *PIPELINE_STAGES[2:])
    monkeypatch.setattr(_run, "PIPELINE_STAGES", reordered)
    assert generator.main(["--check", "-o", str(page)]) == 1
    assert generator.main(["-o", str(page)]) == 0  # regenerating fixes it
    assert generator.main(["--check", "-o", str(page)]) == 0


def test_a_stage_without_a_function_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_run, "PIPELINE_STAGES", (*PIPELINE_STAGES, "no_such_stage"))
    with pytest.raises(ValueError, match="no_such_stage"):
        _generator().render_page()
