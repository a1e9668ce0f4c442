"""Templates are precompiled into the package (cold start), match their sources, and render
through ``_template_runtime`` exactly as through Jinja's own runtime."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable

import jinja2
import pytest

from codegen_helpers import CASES, REPO, case_names
from dsh_codegen.codegen import _environment, _template_runtime, load_catalog, render_catalog_markdown
from dsh_codegen.codegen import render_py_sdk, render_sdk_module, render_ts_sdk
from dsh_codegen.codegen._catalog import ToolSchemaEntry
from dsh_codegen.codegen._environment import TEMPLATES, compiled_module_name, compiled_source, runtime_module_text
from dsh_codegen.codegen._template_runtime import ENVIRONMENT, Undefined


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
    template = ENVIRONMENT.find_template("typescript/sdk_prompt.md.jinja")
    assert template is not None
    assert template.root_render_func.__module__ == "dsh_codegen.codegen._compiled.typescript__sdk_prompt_md"
    assert ENVIRONMENT.find_template("nope/missing.jinja") is None
    with pytest.raises(jinja2.TemplateNotFound, match="nope/missing.jinja"):
        ENVIRONMENT.get_template("nope/missing.jinja")


_RENDERS: list[tuple[str, Callable[[list[ToolSchemaEntry]], str]]] = [
    ("ts prompt", render_ts_sdk),
    ("py prompt", render_py_sdk),
    ("ts file", lambda c: render_sdk_module(c, "typescript")),
    ("py file", lambda c: render_sdk_module(c, "python")),
    ("markdown", render_catalog_markdown),
]


@pytest.mark.parametrize("case", case_names())
def test_the_runtime_renders_what_jinja_renders(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = load_catalog(CASES / case / "catalog.json")
    ours = [render(catalog) for _, render in _RENDERS]
    # Without precompiled modules every render goes through Jinja's environment and runtime.
    monkeypatch.setattr(ENVIRONMENT, "find_template", lambda name: None)
    jinjas = [render(catalog) for _, render in _RENDERS]
    for (label, _), mine, theirs in zip(_RENDERS, ours, jinjas, strict=True):
        assert mine == theirs, label


def test_a_missing_variable_fails_as_in_jinja() -> None:
    with pytest.raises(jinja2.UndefinedError) as ours:
        _environment.render_template("typescript/sdk_prompt.md.jinja")
    with pytest.raises(jinja2.UndefinedError) as theirs:
        _environment.environment().get_template("typescript/sdk_prompt.md.jinja").render()
    assert str(ours.value) == str(theirs.value) == "'notes' is undefined"


@pytest.mark.parametrize("owner", [object(), {"a": 1}, None, ToolSchemaEntry("t", "", {"type": "object"}, None)])
def test_undefined_attributes_fail_as_strict_undefined_does(owner: object) -> None:
    ours = ENVIRONMENT.getattr(owner, "missing_name")
    assert isinstance(ours, Undefined)
    theirs = jinja2.StrictUndefined(obj=owner, name="missing_name")
    with pytest.raises(jinja2.UndefinedError) as expected:
        str(theirs)
    for use in (str, bool, iter, len, lambda u: u == 1, lambda u: u.attr, lambda u: u + "x"):
        with pytest.raises(jinja2.UndefinedError) as got:
            use(ours)
        assert str(got.value) == str(expected.value)
    assert ENVIRONMENT.tests["none"](ours) is False


def test_attribute_then_item_as_in_jinja() -> None:
    entry = ToolSchemaEntry("t", "d", {"type": "object"}, None)
    assert ENVIRONMENT.getattr(entry, "name") == "t"
    assert ENVIRONMENT.getattr({"name": "x"}, "name") == "x"
    shadowed = {"items": 1}
    # The attribute first, as Jinja's own getattr does.
    assert ENVIRONMENT.getattr(shadowed, "items") == shadowed.items == _environment.environment().getattr(shadowed, "items")


def _compile(source: str) -> str:
    return _environment.environment().compile(source, "t.jinja", raw=True, defer_init=True)


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("{{ x | upper }}", "environment.filters['upper']"),
        ("{{ x is defined }}", "environment.tests['defined']"),
        ("{% for i in x %}{{ loop.index }}{% endfor %}", "jinja2.runtime.LoopContext"),
        ("{% set y = 1 %}{{ y }}", "context.vars"),
        ("{% for i in range(3) %}{{ i }}{% endfor %}", "Jinja's global 'range'"),
        ("{{ a if b }}", "an inline if without else"),
        ("{% block b %}x{% endblock %}", "blocks (template inheritance)"),
        # a top-level macro is exported: the first thing the check meets
        ("{% macro m() %}x{% endmacro %}{{ m() }}", "context.vars"),
        ("{% for i in x %}{% macro m() %}x{% endmacro %}{{ m() }}{% endfor %}", "jinja2.runtime.Macro"),
    ],
)
def test_compiling_rejects_what_the_runtime_does_not_provide(source: str, what: str) -> None:
    with pytest.raises(ValueError, match=f"template t.jinja: its compiled code uses {re.escape(what)}"):
        runtime_module_text("t.jinja", _compile(source))


def test_the_supported_constructs_compile() -> None:
    text = runtime_module_text(
        "t.jinja",
        _compile("{% for i in xs %}{% if i.a is none %}{{ i.b }}{% elif not i %}-{% endif %}{% endfor %}"),
    )
    namespace: dict[str, object] = {}
    exec(compile(text, "t.py", "exec"), namespace)  # noqa: S102 - the module text under test
    root = namespace["root"]
    assert callable(root)
    out = "".join(root(_template_runtime.Context({"xs": [{"a": None, "b": "B"}, {"a": 1}, {}]})))  # type: ignore[operator]
    assert out == "B-"


def test_a_missing_module_falls_back_to_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = load_catalog(CASES / "catalog60" / "catalog.json")
    expected = render_ts_sdk(catalog)
    monkeypatch.setattr(_template_runtime, "compiled_module_name", lambda name: "no_such_module")
    monkeypatch.setattr(ENVIRONMENT, "_templates", {})
    assert ENVIRONMENT.find_template("typescript/sdk_prompt.md.jinja") is None
    assert render_ts_sdk(catalog) == expected


def test_a_fresh_process_imports_no_jinja_to_render() -> None:
    code = (
        "import sys\n"
        "from dsh_codegen.codegen import load_catalog, render_ts_sdk, render_py_sdk, render_sdk_module\n"
        "from dsh_codegen.codegen import render_catalog_markdown\n"
        f"c = load_catalog({str(CASES / 'contract_example' / 'catalog.json')!r})\n"
        "render_ts_sdk(c); render_py_sdk(c); render_sdk_module(c, 'typescript'); render_sdk_module(c, 'python')\n"
        "render_catalog_markdown(c)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jinja2', 'markupsafe')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "[]"
