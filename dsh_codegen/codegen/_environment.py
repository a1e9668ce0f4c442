"""The one Jinja environment every codegen template renders through (STYLE.md item 6).

``jinja2`` (and ``importlib.resources``) are imported on first use, not at
import time: ``import dsh_codegen`` (and CLI commands that render nothing, such
as ``check-schema``) should not pay for a template engine they never call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2

__all__ = ["environment", "render_template"]

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


@functools.cache
def environment() -> jinja2.Environment:
    """The shared environment: StrictUndefined, trailing newline kept, block
    whitespace trimmed, no autoescape (the output is code, escaped in Python).
    Templates are compiled once per process and cached by the environment."""
    import jinja2

    class _ResourceLoader(jinja2.BaseLoader):
        def get_source(
            self, environment: jinja2.Environment, template: str
        ) -> tuple[str, str | None, Callable[[], bool] | None]:
            return _get_source(template)

    return jinja2.Environment(
        loader=_ResourceLoader(),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        auto_reload=False,
    )


def render_template(name: str, **context: object) -> str:
    """Render the template ``name`` with ``context``."""
    return environment().get_template(name).render(**context)
