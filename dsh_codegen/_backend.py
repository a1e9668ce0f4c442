"""Chooses the compiled or the pure-Python twin, for every hot module at once.

The choice is all-or-nothing: the compiled twin is used only when every
compiled module listed in ``COMPILED_MODULES`` was built and the pure twin was
not requested. Selector modules ask :func:`load_compiled` for their module and
fall back to the Python twin when it returns ``None``; nothing else in the
package knows which twin runs.

The decision uses ``find_spec`` (no import) so that the compiled modules, which
import shared constants from their layer packages, never import this module
in a cycle.
"""

from __future__ import annotations

import importlib
from importlib.util import find_spec
from types import ModuleType

from dsh_codegen._env import PURE_PYTHON_REQUESTED

__all__ = ["COMPILED_MODULES", "USE_COMPILED", "backend", "load_compiled"]

#: Every compiled module, by its short name inside ``dsh_codegen``.
COMPILED_MODULES: tuple[str, ...] = ("_json_c", "_schema_c")


def _all_built() -> bool:
    return all(find_spec(f"dsh_codegen.{name}") is not None for name in COMPILED_MODULES)


USE_COMPILED: bool = not PURE_PYTHON_REQUESTED and _all_built()


def load_compiled(name: str) -> ModuleType | None:
    """Return the compiled module ``dsh_codegen.<name>``, or ``None`` when the pure twin runs.

    Raised errors: ``ImportError`` when the module was built but cannot load
    (a broken build is loud, never a silent fallback).
    """
    if name not in COMPILED_MODULES:
        raise ValueError(f"unknown compiled module {name!r}")
    if not USE_COMPILED:
        return None
    return importlib.import_module(f"dsh_codegen.{name}")


def backend() -> str:
    """Return ``"compiled"`` when the Cython twin runs, else ``"pure"``."""
    return "compiled" if USE_COMPILED else "pure"
