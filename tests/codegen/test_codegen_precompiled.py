"""Templates are precompiled into the package (cold start) and match their sources."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from codegen_helpers import CASES, REPO
from dsh_codegen.codegen import load_catalog, render_ts_sdk
from dsh_codegen.codegen import _environment
from dsh_codegen.codegen._environment import TEMPLATES, compiled_module_name, compiled_source


@pytest.mark.parametrize("template", TEMPLATES)
def test_the_precompiled_modules_are_the_templates_compiled(template: str) -> None:
    path = REPO / "dsh_codegen" / "codegen" / "_compiled" / f"{compiled_module_name(template)}.py"
    assert path.read_text(encoding="utf-8") == compiled_source(template), (
        "stale: run python -c 'from dsh_codegen.codegen._environment import write_compiled; write_compiled()'"
    )


def test_every_template_file_is_listed() -> None:
    shipped = sorted(str(p.relative_to(REPO / "templates")) for p in (REPO / "templates").rglob("*.jinja"))
    assert shipped == sorted(TEMPLATES)


def test_renders_use_the_precompiled_code() -> None:
    template = _environment.environment().get_template("typescript/sdk_prompt.md.jinja")
    assert template.root_render_func.__module__ == "dsh_codegen.codegen._compiled.typescript__sdk_prompt_md"


def test_a_module_from_another_jinja_version_falls_back_to_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = load_catalog(CASES / "catalog60" / "catalog.json")
    expected = render_ts_sdk(catalog)
    module = importlib.import_module("dsh_codegen.codegen._compiled.typescript__sdk_prompt_md")
    monkeypatch.setattr(module, "JINJA_VERSION", "0.0")
    _environment.environment.cache_clear()
    try:
        template = _environment.environment().get_template("typescript/sdk_prompt.md.jinja")
        assert template.root_render_func.__module__ != module.__name__
        assert render_ts_sdk(catalog) == expected
    finally:
        _environment.environment.cache_clear()


def test_a_fresh_process_compiles_no_template() -> None:
    code = (
        "import jinja2.environment as e\n"
        "calls = []\n"
        "original = e.Environment._compile\n"
        "e.Environment._compile = lambda self, *a, **k: calls.append(a) or original(self, *a, **k)\n"
        "from dsh_codegen.codegen import load_catalog, render_ts_sdk, render_py_sdk, render_sdk_module\n"
        f"c = load_catalog({str(CASES / 'contract_example' / 'catalog.json')!r})\n"
        "render_ts_sdk(c); render_py_sdk(c); render_sdk_module(c, 'typescript'); render_sdk_module(c, 'python')\n"
        "print(len(calls))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "0"
