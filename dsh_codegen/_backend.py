"""Chooses the compiled or the pure-Python twin, for every hot module at once.

The choice is all-or-nothing: the compiled twin is used only when every
compiled module listed in ``COMPILED_MODULES`` was built and the pure twin was
not requested. Selector modules ask :func:`load_compiled` for their module and
fall back to the Python twin when it returns ``None``; nothing else in the
package knows which twin runs.

The decision uses ``find_spec`` (no import) so that the compiled modules, which
import shared constants from their layer packages, never import this module
in a cycle.

When the compiled twin was not chosen by ``DSH_CODEGEN_PURE_PYTHON=1`` but is
missing, importing this module issues one ``RuntimeWarning`` saying why (not
built at all, or built only for another interpreter) and how to build it: the
pure twin gives the same results several times slower, and a user should not
learn that from ``pip -v``.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from importlib.machinery import EXTENSION_SUFFIXES
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType

from dsh_codegen._env import PURE_PYTHON_REQUESTED

__all__ = ["COMPILED_MODULES", "USE_COMPILED", "backend", "load_compiled"]

#: Every compiled module, by its short name inside ``dsh_codegen``.
COMPILED_MODULES: tuple[str, ...] = ("_json_c", "_schema_c", "_dialect_check_c")


def _missing() -> list[str]:
    return [name for name in COMPILED_MODULES if find_spec(f"dsh_codegen.{name}") is None]


def _all_built() -> bool:
    return not _missing()


def _fallback_reason(missing: list[str]) -> str:
    """The warning text for a pure fallback with ``missing`` compiled modules: why, and how to build them."""
    here = Path(__file__).resolve().parent
    python = f"{sys.implementation.name} {sys.version_info.major}.{sys.version_info.minor}"
    # Files for another interpreter (an in-place build made by another Python, a
    # wheel copied across versions): same module name, another ABI suffix.
    others = sorted(
        path.name
        for name in missing
        for path in here.glob(f"{name}.*")
        if path.suffix in {".so", ".pyd"} and path.name[len(name) :] not in EXTENSION_SUFFIXES
    )
    modules = ", ".join(f"dsh_codegen.{name}" for name in missing)
    if others:
        why = f"the compiled extension is built only for another Python ({', '.join(others)}), not for {python}"
    else:
        why = f"the compiled extension is not built for {python}"
    return (
        f"dsh_codegen: {why} (missing: {modules}); running the pure-Python twin: same results, several "
        "times slower. To build it: with a C compiler and this Python's headers installed, reinstall from "
        "source (pip install --force-reinstall --no-binary dsh_codegen <sdist or checkout>; with "
        "DSH_CODEGEN_REQUIRE_EXTENSIONS=1 a failed compile is an error, not this fallback), or run make setup "
        "in a checkout. Set DSH_CODEGEN_PURE_PYTHON=1 to choose the pure twin without this warning."
    )


_MISSING: list[str] = [] if PURE_PYTHON_REQUESTED else _missing()
USE_COMPILED: bool = not PURE_PYTHON_REQUESTED and not _MISSING
if _MISSING:
    # Once per process: this module is imported once (an importer's frame would be importlib's).
    warnings.warn(_fallback_reason(_MISSING), RuntimeWarning, stacklevel=1)


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
