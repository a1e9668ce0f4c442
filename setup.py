"""Build script: compiles every ``_ext/*.pyx`` into ``dsh_codegen.<name>``.

Without a working compiler (or without Cython) the package installs as pure
Python with a warning; ``DSH_CODEGEN_REQUIRE_EXTENSIONS=1`` turns that into a
hard failure so CI can never pass on the fallback by accident.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# The modules are translated and compiled side by side, one per core: each is a large C file, so a
# build (every set-up, the wheel) takes about half as long on two cores.
_CORES = os.cpu_count() or 1
REQUIRE = os.environ.get("DSH_CODEGEN_REQUIRE_EXTENSIONS") == "1"

COMPILER_DIRECTIVES = {
    "language_level": "3",
    "boundscheck": False,
    "wraparound": False,
    "initializedcheck": False,
    "cdivision": True,
    "embedsignature": True,
}


def _warn(message: str) -> None:
    print(f"WARNING: dsh_codegen: {message}; installing the pure-Python twin", file=sys.stderr)


def _extensions() -> list[Extension]:
    pyx = {path.stem: path for path in (ROOT / "_ext").glob("*.pyx")}
    if not pyx:
        # An sdist without its .pyx files (a broken MANIFEST.in) would otherwise build a partial wheel.
        if REQUIRE:
            raise RuntimeError("DSH_CODEGEN_REQUIRE_EXTENSIONS=1 but there is no _ext/*.pyx to compile")
        _warn("there is no _ext/*.pyx to compile")
        return []
    # Development convenience: DSH_CODEGEN_EXT=_json_c,_schema_c builds only those.
    only = {name for name in os.environ.get("DSH_CODEGEN_EXT", "").split(",") if name}
    sources = sorted((name, path) for name, path in pyx.items() if not only or name in only)
    try:
        from Cython.Build import cythonize
    except ImportError:
        if REQUIRE:
            raise RuntimeError("DSH_CODEGEN_REQUIRE_EXTENSIONS=1 but Cython is not installed")
        _warn("Cython is not available")
        return []
    modules = [
        Extension(f"dsh_codegen.{name}", [str(path.relative_to(ROOT))], extra_compile_args=["-O2"])
        for name, path in sources
    ]
    return list(cythonize(modules, compiler_directives=COMPILER_DIRECTIVES, quiet=True, nthreads=_CORES))


class OptionalBuildExt(build_ext):
    """Falls back to pure Python when a compile fails, unless extensions are required."""

    def finalize_options(self) -> None:
        super().finalize_options()
        # Here, not in setup()'s options: pip's editable install reinitializes the build commands,
        # which dropped that setting and compiled one module at a time (65 s instead of 35 s).
        if not self.parallel:
            self.parallel = _CORES

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # a missing compiler surfaces as several error types
            if REQUIRE:
                raise
            _warn(f"building the extensions failed ({exc})")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            if REQUIRE:
                raise
            _warn(f"compiling {ext.name} failed ({exc})")


PACKAGES = sorted(find_packages(include=["dsh_codegen", "dsh_codegen.*"]))

setup(packages=PACKAGES, ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
