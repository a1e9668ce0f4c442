"""The one Jinja environment every codegen template renders through (STYLE.md item 6)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources

import jinja2

__all__ = ["environment", "render_template"]

_PACKAGE = "dsh_codegen.templates"


class _ResourceLoader(jinja2.BaseLoader):
    """Loads ``<target>/<output>.<ext>.jinja`` from the package ``dsh_codegen.templates``.

    ``importlib.resources`` works from a wheel, a source tree and an editable
    install alike, and never depends on the working directory.
    """

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str | None, Callable[[], bool] | None]:
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
    whitespace trimmed, no autoescape (the output is code, escaped in Python)."""
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
