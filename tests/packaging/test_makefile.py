"""The Makefile's interpreter choice: ``PY=X.Y`` counts on the command line only."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.once,
    pytest.mark.skipif(shutil.which("make") is None, reason="needs make"),
]


def _dry_run(*args: str, env_py: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PY", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
    if env_py is not None:
        env["PY"] = env_py
    # -n prints the recipe without running it; the interpreter is chosen while the Makefile is read.
    return subprocess.run(
        ["make", "-n", "--no-print-directory", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_py_exported_in_the_environment_is_not_an_interpreter_version() -> None:
    # A common export (an interpreter path) used to stop every target with
    # "no python/usr/bin/python3 found".
    done = _dry_run("typecheck", env_py="/usr/bin/python3")
    assert done.returncode == 0, done.stderr
    assert ".venv/bin/python -m mypy" in done.stdout.splitlines()


def test_py_on_the_command_line_still_selects_an_interpreter() -> None:
    done = _dry_run("typecheck", "PY=0.0", env_py=None)
    assert done.returncode != 0
    assert "no python0.0 found" in done.stderr
