"""Optional extras: importing what one needs, or saying which extra to install.

``pip install dsh_codegen`` brings nothing else: every user needs only the package. MCP
support needs the extra ``mcp``, ``MontyRuntime`` the extra ``monty`` and ``RayRuntime`` the extra ``ray``
(pyproject.toml, ``[project.optional-dependencies]``). A feature that needs one
imports it through :func:`require_extra` where it starts, so a missing extra is
one ``ImportError`` that names the extra and the install command, not a bare
``ModuleNotFoundError`` from deep inside.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Final

__all__ = ["EXTRAS", "require_extra"]

#: extra -> the distribution it installs (for the message).
EXTRAS: Final = {"mcp": "mcp", "monty": "pydantic-monty", "ray": "ray"}


def require_extra(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, which needs the optional extra ``extra``.

    Raised errors: ``ImportError`` (``.name`` the missing module) when
    ``module`` or a package it belongs to is not installed:
    ``<feature> needs the optional extra "<extra>" (<distribution> is not
    installed): pip install 'dsh_codegen[<extra>]'``. Any other import failure
    (the extra is installed but broken) propagates as it is.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if not (module == missing or module.startswith(missing + ".")):
            raise  # something the extra itself imports is missing: not ours to rename
        raise ImportError(
            f'{feature} needs the optional extra "{extra}" ({EXTRAS[extra]} is not installed): '
            f"pip install 'dsh_codegen[{extra}]'",
            name=missing,
        ) from error
