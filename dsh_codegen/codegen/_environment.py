"""The one Jinja environment every codegen template is compiled by (house rule 6, docs/contributing.md).

Templates are compiled ahead of time by Jinja into ``dsh_codegen.codegen._compiled``
(``write_compiled``; a test fails while a module is stale) and rendered through
``_template_runtime``, which provides what Jinja's compiled code calls back into: a
render imports no jinja2. ``jinja2`` (and ``importlib.resources``) are imported only to
compile (``compiled_source``, ``write_compiled``), for the fallback of a template with no
precompiled module, and on Jinja's error paths.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from dsh_codegen.codegen._template_runtime import ENVIRONMENT, RUNTIME_NAMES, TemplateEnvironment, compiled_module_name

if TYPE_CHECKING:
    import ast

    import jinja2

__all__ = [
    "TEMPLATES",
    "compiled_module_name",
    "compiled_source",
    "environment",
    "render_template",
    "runtime_module_text",
    "write_compiled",
]

_PACKAGE = "dsh_codegen.templates"


def _get_source(template: str) -> tuple[str, str | None, Callable[[], bool] | None]:
    """Source of ``<target>/<output>.<ext>.jinja`` from the package ``dsh_codegen.templates``.

    ``importlib.resources`` works from a wheel, a source tree and an editable
    install alike, and never depends on the working directory.
    """
    from importlib import resources

    import jinja2

    resource = resources.files(_PACKAGE)
    for part in template.split("/"):
        resource = resource.joinpath(part)
    try:
        source = resource.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise jinja2.TemplateNotFound(template) from None
    # Templates ship with the package and never change under a running process.
    return source, None, lambda: True


#: The templates, precompiled into ``dsh_codegen.codegen._compiled`` (one module each).
TEMPLATES = (
    "markdown/catalog.md.jinja",
    "python/_declarations.py.jinja",
    "python/sdk_module.py.jinja",
    "python/sdk_prompt.md.jinja",
    "typescript/_declarations.ts.jinja",
    "typescript/sdk_module.ts.jinja",
    "typescript/sdk_prompt.md.jinja",
)


def _options() -> dict[str, object]:
    import jinja2

    return {
        "undefined": jinja2.StrictUndefined,
        "keep_trailing_newline": True,
        "trim_blocks": True,
        "lstrip_blocks": True,
        "autoescape": False,
        "auto_reload": False,
    }


@functools.cache
def environment() -> jinja2.Environment:
    """Jinja's environment with our settings: StrictUndefined, trailing newline kept,
    block whitespace trimmed, no autoescape (the output is code, escaped in Python).

    It compiles the templates (ahead of time, ``compiled_source``) and renders from
    their sources where no precompiled module exists; renders of shipped templates go
    through the precompiled modules and ``_template_runtime`` instead."""
    import jinja2

    return jinja2.Environment(loader=jinja2.FunctionLoader(_get_source), **_options())  # type: ignore[arg-type]


# What Jinja's compiled code may reach through each runtime object (see _template_runtime).
_ALLOWED_ATTRIBUTES = {
    "environment": frozenset({"undefined", "concat", "getattr", "tests", "get_template"}),
    "context": frozenset({"resolve_or_missing", "get_all"}),
    "template": frozenset({"new_context", "root_render_func"}),
}


def _check_runtime_use(template: str, code: str, imported: frozenset[str]) -> None:
    """Raise ``ValueError`` when ``template``'s compiled ``code`` needs something the
    precompiled runtime does not provide (naming the construct)."""
    import ast

    from jinja2.defaults import DEFAULT_NAMESPACE

    def fail(what: str, node: ast.AST) -> None:
        raise ValueError(
            f"template {template}: its compiled code uses {what} (line {getattr(node, 'lineno', '?')}), which"
            " dsh_codegen/codegen/_template_runtime.py does not provide; extend it or change the template"
        )

    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in imported and node.id not in RUNTIME_NAMES:
                fail(f"jinja2.runtime.{node.id}", node)
            if node.id == "cond_expr_undefined":
                fail("an inline if without else", node)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            allowed = _ALLOWED_ATTRIBUTES.get(node.value.id)
            if allowed is not None and node.attr not in allowed:
                fail(f"{node.value.id}.{node.attr}", node)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "environment"
        ):
            key = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if node.value.attr != "tests" or key not in TemplateEnvironment.tests:
                fail(f"environment.{node.value.attr}[{key!r}]", node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "resolve":
            name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            if name in DEFAULT_NAMESPACE:
                fail(f"Jinja's global {name!r}", node)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "blocks" for t in node.targets):
            if not (isinstance(node.value, ast.Dict) and not node.value.keys):
                fail("blocks (template inheritance)", node)


def compiled_source(template: str) -> str:
    """The module text of ``template`` precompiled (what ``_compiled`` must hold): Jinja's
    compiled code, importing its runtime names from ``_template_runtime``."""
    import jinja2

    source = _get_source(template)[0]
    # defer_init: the module imports without an environment (it binds ours).
    code = jinja2.Environment(**_options()).compile(source, template, raw=True, defer_init=True)  # type: ignore[arg-type]
    return runtime_module_text(template, code)


def runtime_module_text(template: str, code: str) -> str:
    """Jinja's compiled ``code`` of ``template`` as a module run by ``_template_runtime``;
    ``ValueError`` naming the construct when it needs more than that runtime provides."""
    import jinja2

    first, _, rest = code.partition("\n")
    prefix = "from jinja2.runtime import "
    if not first.startswith(prefix):
        raise ValueError(f"template {template}: Jinja's compiled code does not start with {prefix!r}")
    imported = frozenset(name.strip() for name in first.removeprefix(prefix).split(","))
    _check_runtime_use(template, rest, imported)
    used = sorted(name for name in RUNTIME_NAMES if name in imported)
    return (
        f"# Code generated from templates/{template} by write_compiled() in dsh_codegen/codegen/_environment.py. DO NOT EDIT.\n"
        "# mypy: ignore-errors\n"
        "# ruff: noqa\n"
        f"# Compiled by Jinja {jinja2.__version__}; rendered through dsh_codegen/codegen/_template_runtime.py.\n"
        f"from dsh_codegen.codegen._template_runtime import ENVIRONMENT as environment, {', '.join(used)}\n"
        f"{rest}\n"
    )


def render_template(name: str, **context: object) -> str:
    """Render the template ``name`` with ``context``."""
    template = ENVIRONMENT.find_template(name)
    if template is None:  # not precompiled: Jinja compiles the source (once per process)
        return environment().get_template(name).render(**context)
    return template.render(**context)


def write_compiled() -> None:
    """Rewrite ``dsh_codegen/codegen/_compiled/`` from ``templates/`` (run after editing a
    template: ``python -c "from dsh_codegen.codegen._environment import write_compiled; write_compiled()"``;
    a test fails while they differ)."""
    from pathlib import Path

    target = Path(__file__).resolve().parent / "_compiled"
    target.mkdir(exist_ok=True)
    (target / "__init__.py").write_text(
        '"""Precompiled templates (generated by write_compiled() in dsh_codegen/codegen/_environment.py)."""\n',
        encoding="utf-8",
    )
    for template in TEMPLATES:
        (target / f"{compiled_module_name(template)}.py").write_text(compiled_source(template), encoding="utf-8")
