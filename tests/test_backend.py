"""The twin selector: one switch, all-or-nothing, loud when the build is required."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import dsh_codegen
from dsh_codegen import _backend


def _backend_in_subprocess(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "DSH_CODEGEN_PURE_PYTHON"}
    if env_value is not None:
        env["DSH_CODEGEN_PURE_PYTHON"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", "import dsh_codegen; print(dsh_codegen.backend())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_backend_matches_the_requested_twin() -> None:
    if os.environ.get("DSH_CODEGEN_PURE_PYTHON") == "1":
        assert dsh_codegen.backend() == "pure"
    elif os.environ.get("DSH_CODEGEN_REQUIRE_EXTENSIONS") == "1":
        # make test builds the extension first: the compiled twin must be in use.
        assert dsh_codegen.backend() == "compiled"
    assert dsh_codegen.backend() in {"compiled", "pure"}


def test_only_the_value_1_selects_the_pure_twin() -> None:
    built = _backend._all_built()
    assert _backend_in_subprocess("1") == "pure"
    for other in (None, "0", "true", "yes", ""):
        assert _backend_in_subprocess(other) == ("compiled" if built else "pure")


def test_compiled_modules_load_when_selected() -> None:
    for name in _backend.COMPILED_MODULES:
        module = _backend.load_compiled(name)
        if _backend.USE_COMPILED:
            assert module is not None and module.__name__ == f"dsh_codegen.{name}"
        else:
            assert module is None


@pytest.mark.parametrize("name", _backend.COMPILED_MODULES)
def test_each_compiled_module_can_be_the_first_import(name: str) -> None:
    # Each one imports parts of its layer while it initialises: the layer packages
    # must not ask the selector for a half-initialised compiled module then.
    if not _backend._all_built():
        pytest.skip("the compiled twin is not built")
    env = {k: v for k, v in os.environ.items() if k != "DSH_CODEGEN_PURE_PYTHON"}
    code = (
        f"import dsh_codegen.{name};"
        "from dsh_codegen.registry import ToolRegistry, ToolExecutionInput, AbortController;"
        "from dsh_codegen.schema import compile_validator;"
        "import dsh_codegen;"
        "assert dsh_codegen.backend() == 'compiled';"
        "assert type(compile_validator({})).__module__ == 'dsh_codegen._schema_c';"
        "print(ToolRegistry.execute.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "dsh_codegen.registry._registry"  # one pipeline source, never patched in
