"""Every program in examples/ runs as a user runs it, and says what its docstring promises (issue 39)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

pytestmark = pytest.mark.once

#: example -> lines its output must contain (in this order).
EXPECTED = {
    "agent_loop.py": [
        'get_weather({"city": "Bern"}) -> {',
        'get_weather({"city": "Atlantis"}) -> Error: no weather station in Atlantis',
        'send_email({"to": "boss@example.com", "subject": "the weather"}) -> Error: emails need a human\'s approval',
        "answer: Bern is warmer (21.5 °C) than Oslo (12.0 °C); Atlantis has no weather station.",
        "events logged: 8",
    ],
    "code_mode.py": [
        "--- PythonSubprocessRuntime",
        "in stock: {'apples': 12, 'pears': 0, 'plums': 7}",
        '      "item": "pears",',
        "--- MontyRuntime",
        "in stock: {'apples': 12, 'pears': 0, 'plums': 7}",
    ],
    "mcp_roundtrip.py": [
        "imported: ['calc.add', 'calc.shout']",
        "calc.add -> 5",
        "calc.shout -> HELLO",
        'calc.add -> Error: invalid arguments: "a" must be an integer',
    ],
    "build_sdk/build.py": [
        "dsh-codegen: wrote tools_sdk.py (1 tool)",
        "dsh-codegen: tools_sdk.py is up to date (1 tool)",
        "dsh-codegen: tools_sdk.py is stale; rerun without --check",
    ],
}


def test_every_example_is_run() -> None:
    programs = {str(path.relative_to(EXAMPLES)) for path in EXAMPLES.rglob("*.py")}
    # mcp_server.py and build_sdk/tools.py are run by the others.
    assert programs - {"mcp_server.py", "build_sdk/tools.py"} == set(EXPECTED)


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_example_runs(example: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DSH_CODEGEN_PURE_PYTHON"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    position = 0
    for expected in EXPECTED[example]:
        found = [i for i, line in enumerate(lines) if i >= position and line.startswith(expected)]
        assert found, f"{example}: no line starting {expected!r} after line {position}:\n{done.stdout}"
        position = found[0] + 1
