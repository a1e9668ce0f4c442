"""The README's tour runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.once
def test_readme_tour_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    tour = blocks[0]
    done = subprocess.run([sys.executable, "-c", tour], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "class Tools(Protocol):" in done.stdout
    assert 'Error: invalid arguments: missing required property "path"' in done.stdout
