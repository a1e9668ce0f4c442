"""`make demo`'s job, run as a user runs it: one process, its output read back."""

from __future__ import annotations

import json
import sys

import pytest
from _shared_helpers import run_in_session


@pytest.mark.once
def test_demo_runs_a_code_mode_program_through_the_pipeline() -> None:
    # the demo starts Code Mode program processes: a timeout stops them too
    done = run_in_session([sys.executable, "-m", "dsh_codegen", "demo"], text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "--- prompt section tools:sdk (order 150) ---" in out
    assert "--- prompt section tools:code-only (order 99) ---" in out
    (run_code,) = [line for line in out.splitlines() if line.startswith("call_6 run_code")]
    assert " ok " in run_code
    # Three gathered reads, a policy denial and a timeout, each seen by the program as ToolCallError.
    assert "delete_file refused: deleting files is not allowed in this demo" in run_code
    assert "web_search failed: tool call timed out after 150ms" in run_code
    assert '\\n  "files_read": 3\\n' in run_code
    (direct,) = [line for line in out.splitlines() if line.startswith("call_7 read_file")]
    assert "only `run_code` is callable directly" in direct
    events = [json.loads(line) for line in out.splitlines() if line.startswith('{"type": "tool/code-dispatch')]
    starts = [e["subCallId"] for e in events if e["type"] == "tool/code-dispatch-start"]
    settles = {e["subCallId"]: e["isError"] for e in events if e["type"] == "tool/code-dispatch"}
    assert starts == [f"call_6:code:{n}" for n in range(1, 6)]
    assert settles == {
        "call_6:code:1": False,
        "call_6:code:2": False,
        "call_6:code:3": False,
        "call_6:code:4": True,
        "call_6:code:5": True,
    }
    # The three safe reads overlap: all three start before the first one settles.
    first_settle = next(i for i, e in enumerate(events) if e["type"] == "tool/code-dispatch")
    assert [e["type"] for e in events[:first_settle]] == ["tool/code-dispatch-start"] * 3
