"""The shared helpers: the subprocess helper stops a command's whole process group, not the command alone;
the twin loader finds a built extension and reports a missing one; the type-checker helpers run the real
checkers in their strict modes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _shared_helpers import (
    compiled_twin,
    needs_tsc,
    require_compiled_twin,
    run_in_session,
    run_mypy,
    run_tsc,
    session_process,
)

# The command starts a child that outlives it unless its group is stopped, writes the child's pid, then sleeps.
PARENT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(sys.argv[1] + ".tmp", "w") as handle:
    handle.write(str(child.pid))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])  # whole, or not at all
time.sleep(120)
"""


def _gone(pid: int) -> bool:
    """No such process, or a zombie waiting for its (new) parent to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 10  # the reparented child is reaped by init, soon
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), f"child {pid} outlived its stopped group"


@pytest.mark.once
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_a_timeout_stops_the_children_too(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    for timeout in (3, 10, 40):  # a longer one only when a loaded machine had not started the child yet
        with pytest.raises(subprocess.TimeoutExpired):
            run_in_session([sys.executable, "-c", PARENT, str(marker)], timeout=timeout)
        if marker.exists():
            break
    _wait_gone(int(marker.read_text()))


@pytest.mark.once
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_an_exception_in_the_block_stops_the_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    with pytest.raises(KeyError), session_process([sys.executable, "-c", PARENT, str(marker)]) as parent:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        raise KeyError("the test body failed")
    assert parent.returncode == -signal.SIGTERM  # stopped and reaped before the exception left
    _wait_gone(int(marker.read_text()))


def test_a_finished_command_is_reported_like_subprocess_run() -> None:
    done = run_in_session(
        [sys.executable, "-c", "import sys; print(sys.stdin.read()[::-1]); sys.exit(3)"],
        timeout=60,
        input="abc",
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "cba\n", "")


def test_the_twin_loader_finds_a_built_twin_and_reports_a_missing_one() -> None:
    from dsh_codegen import _backend

    if _backend._all_built():
        assert compiled_twin("_json_c").__name__ == "dsh_codegen._json_c"
    assert compiled_twin("_no_such_twin_c") is None
    with pytest.raises(pytest.skip.Exception, match=r"dsh_codegen\._no_such_twin_c is not built"):
        require_compiled_twin("_no_such_twin_c")


@pytest.mark.once
def test_run_mypy_is_strict_and_reports_each_error(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text("def double(x: int) -> int:\n    return 2 * x\n", encoding="utf-8")
    # the first error only --strict reports (an unannotated function), the second any mypy does
    (tmp_path / "bad.py").write_text("def f(x):\n    return x\n\ny: int = 'one'\n", encoding="utf-8")
    result = run_mypy(tmp_path, "good.py", "bad.py", options=["--no-error-summary"])
    assert (result.returncode, result.stdout.splitlines()) == (
        1,
        [
            "bad.py:1: error: Function is missing a type annotation  [no-untyped-def]",
            'bad.py:4: error: Incompatible types in assignment (expression has type "str", variable has type "int")'
            "  [assignment]",
        ],
    ), result.stdout + result.stderr
    assert (tmp_path / ".mypy_cache").is_dir()  # the cache stays in the test's folder


@pytest.mark.once
@needs_tsc
def test_run_tsc_is_strict_and_reports_each_error(tmp_path: Path) -> None:
    (tmp_path / "good.ts").write_text("export const double = (x: number): number => 2 * x;\n", encoding="utf-8")
    # the first error only --strict reports (an implicit any), the second any tsc does
    (tmp_path / "bad.ts").write_text(
        "export function f(x) {\n  return x;\n}\nexport const y: number = 'one';\n", encoding="utf-8"
    )
    result = run_tsc(tmp_path, "good.ts", "bad.ts")
    errors = [line.split(": error ")[1].split(":")[0] for line in result.stdout.splitlines() if ": error " in line]
    assert (result.returncode, errors) == (2, ["TS7006", "TS2322"]), result.stdout + result.stderr
