"""The runtime tests' leak check itself: what it counts as a process left behind.

Real processes carrying the child script's path in their command line (so the check sees them as
ours): a child of this worker, and an orphan (its parent exited, so it was reparented away from
every worker), as the child of a killed fork server or a killed Ray node's worker is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import _runtime_helpers
import pytest
from _runtime_helpers import leaked_processes, our_processes

from dsh_codegen.codemode._processes import CHILD_SCRIPT


def _sleeper(seconds: float) -> list[str]:
    # The child script's path is an argument only: the process sleeps, then exits.
    return [sys.executable, "-c", f"import time; time.sleep({seconds})", str(CHILD_SCRIPT)]


def _orphan(seconds: float) -> int:
    """Start a sleeper whose parent exits at once, and return its pid."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import subprocess\n"
            f"orphan = subprocess.Popen({_sleeper(seconds)!r}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "print(orphan.pid)",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(done.stdout)


def _listed(pid: int) -> list[str]:
    return [line for line in our_processes() if line.split(" ", 1)[0] == str(pid)]


def _wait_listed(pid: int) -> None:
    for _ in range(500):
        if _listed(pid):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never showed up in our_processes()")


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(_sleeper(60))
    try:
        _wait_listed(process.pid)
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_new_child_of_this_worker_counts_at_once(
    child: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    scans = []
    scan = _runtime_helpers._scan
    monkeypatch.setattr(_runtime_helpers, "_scan", lambda: scans.append(1) or scan())
    before = [line for line in our_processes() if line.split(" ", 1)[0] != str(child.pid)]
    scans.clear()
    assert [line.split(" ", 1)[0] for line in leaked_processes(before)] == [str(child.pid)]
    assert len(scans) == 1  # read once: no grace for a process of our own


def test_a_process_that_was_there_before_is_not_new_when_its_state_changed(child: subprocess.Popen[bytes]) -> None:
    # The same process read in another state (S, then R while it runs): it was there before.
    before = []
    for line in our_processes():
        pid, state, command = line.split(" ", 2)
        before.append(f"{pid} {'S' if state == 'R' else 'R'} {command}")
    assert leaked_processes(before) == []


def test_an_orphan_that_exits_within_the_grace_is_not_a_leak() -> None:
    before = our_processes()
    pid = _orphan(1.0)
    assert _listed(pid), "the orphan should still be running"
    assert leaked_processes(before) == []


def test_an_orphan_still_there_after_the_grace_is_a_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_runtime_helpers, "ORPHAN_GRACE_S", 0.3)
    before = our_processes()
    pid = _orphan(60)
    try:
        assert [line.split(" ", 1)[0] for line in leaked_processes(before)] == [str(pid)]
    finally:
        os.kill(pid, signal.SIGKILL)
        for _ in range(500):  # reaped by whoever adopted it
            if not _listed(pid):
                break
            time.sleep(0.01)
