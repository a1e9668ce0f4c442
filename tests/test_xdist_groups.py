"""The suite's xdist groups hold: every test of one ``xdist_group`` runs on one worker, so a module
fixture that starts a Ray cluster, builds the wheel or runs the Code Mode corpus runs once per pass.

pytest-xdist marks a grouped test by rewriting its node id, which pytest 9.2 no longer honours: the
groups then silently scatter over the workers (pytest-xdist issue 1386). pyproject.toml keeps pytest
below 9.2 for that; this test says so if the pin is lifted too early.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.fixture(scope="module")
def setups():
    with open(os.environ["SETUPS"], "a") as log:
        log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("index", range(6))
def test_grouped(index, setups):
    pass
"""

UNGROUPED = """
import pytest


@pytest.mark.parametrize("index", range(20))
def test_other(index):
    pass
"""


@pytest.mark.once
def test_a_groups_tests_run_on_one_worker_and_its_module_fixture_once(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_other.py").write_text(UNGROUPED)
    setups = tmp_path / "setups.log"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "SETUPS": str(setups)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "26 passed" in done.stdout, done.stdout
    workers = setups.read_text().split()
    assert len(workers) == 1, f"the group's module fixture ran on {workers}: pytest-xdist did not keep the group"
