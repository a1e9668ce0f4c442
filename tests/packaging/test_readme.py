"""The README's quick start and tour run as written and print what their comments say.

(tests/docs runs every block of the README; this checks what two of them print.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _block_after(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(f"\n## {heading}\n") :]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.once
def test_readme_quick_start_runs() -> None:
    code = _block_after("Quick start")
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    assert _run(code).splitlines() == ["5", 'Error: invalid arguments: "b" must be an integer']


@pytest.mark.once
def test_readme_tour_runs() -> None:
    out = _run(_block_after("A short tour"))
    assert "class Tools(Protocol):" in out
    assert 'Error: invalid arguments: missing required property "path"' in out
