"""The one Jinja environment every codegen template renders through (STYLE.md item 6).

``jinja2`` (and ``importlib.resources``) are imported on first use, not at
import time: ``import dsh_codegen`` (and CLI commands that render nothing, such
as ``check-schema``) should not pay for a template engine they never call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2

__all__ = ["TEMPLATES", "compiled_module_name", "compiled_source", "environment", "render_template", "write_compiled"]

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
_COMPILED = "dsh_codegen.codegen._compiled"


def compiled_module_name(template: str) -> str:
    """The module holding ``template``'s precompiled code (``python/sdk_module.py.jinja``
    -> ``python__sdk_module_py``)."""
    stem = template.removesuffix(".jinja")
    return stem.replace("/", "__").replace(".", "_")


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
    """The shared environment: StrictUndefined, trailing newline kept, block
    whitespace trimmed, no autoescape (the output is code, escaped in Python).

    Templates load precompiled (Jinja's own compilation, done ahead of time into
    ``dsh_codegen.codegen._compiled`` and checked against the sources by a test), so a
    fresh process pays no template parsing; a module written by another Jinja version,
    or missing, falls back to compiling the source once per process."""
    import importlib

    import jinja2

    class _PrecompiledLoader(jinja2.BaseLoader):
        def get_source(
            self, environment: jinja2.Environment, template: str
        ) -> tuple[str, str | None, Callable[[], bool] | None]:
            return _get_source(template)

        def load(
            self,
            environment: jinja2.Environment,
            name: str,
            globals: MutableMapping[str, object] | None = None,  # noqa: A002 - Jinja's signature
        ) -> jinja2.Template:
            try:
                module = importlib.import_module(f"{_COMPILED}.{compiled_module_name(name)}")
            except ImportError:
                module = None
            if module is None or getattr(module, "JINJA_VERSION", None) != jinja2.__version__:
                return super().load(environment, name, globals)
            return environment.template_class.from_module_dict(
                environment, module.__dict__, environment.make_globals(globals)
            )

    return jinja2.Environment(loader=_PrecompiledLoader(), **_options())  # type: ignore[arg-type]


def compiled_source(template: str) -> str:
    """The module text of ``template`` precompiled (what ``_compiled`` must hold)."""
    import jinja2

    source = _get_source(template)[0]
    # defer_init: the module imports without an environment (the loader binds it).
    code = jinja2.Environment(**_options()).compile(source, template, raw=True, defer_init=True)  # type: ignore[arg-type]
    return (
        f"# Code generated from templates/{template} by write_compiled() in dsh_codegen/codegen/_environment.py. DO NOT EDIT.\n"
        "# mypy: ignore-errors\n"
        "# ruff: noqa\n"
        f"JINJA_VERSION = {jinja2.__version__!r}\n"
        f"{code}\n"
    )


def render_template(name: str, **context: object) -> str:
    """Render the template ``name`` with ``context``."""
    return environment().get_template(name).render(**context)


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

