"""A Code Mode run suspended at a deferred sub-call, resumed elsewhere (issue 37), on each runtime."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _suspension_app import (
    CODE_CALLS,
    RandomDeferring,
    build_code_registry,
    code_runtime,
    results_json,
    resume_until_done,
    runs,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_codegen.registry import (
    AbortController,
    ApprovalRequest,
    MemorySessionLog,
    Suspension,
    ToolCall,
    ToolCallsSuspended,
    execute_tool_calls,
    resume_tool_calls,
)

APP = Path(__file__).parents[1] / "_suspension_app.py"
RUNTIMES = ["subprocess", "monty"]


def signal() -> Any:
    return AbortController().signal


class Answering:
    def __init__(self, answer: str) -> None:
        self.answer = answer

    async def request(self, request: ApprovalRequest) -> str:
        return self.answer


def run_app(*args: str) -> None:
    root = str(Path(__file__).parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, str(APP), *args], check=True, env=env, timeout=120)


def uninterrupted(work: Path, kind: str, decision: str) -> list[Any]:
    async def go() -> list[Any]:
        async with code_runtime(kind) as runtime:
            registry = build_code_registry(work, runtime, None, Answering(decision))
            return await execute_tool_calls(registry, CODE_CALLS, signal=signal(), agent="main")

    return asyncio.run(go())


@pytest.mark.parametrize("kind", RUNTIMES)
@pytest.mark.parametrize("decision", ["allowed-once", "rejected"])
def test_a_run_suspended_in_one_process_resumes_in_another(tmp_path: Path, kind: str, decision: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    run_app("code-suspend", str(work), kind)
    assert runs(work) == ["read r1:code:1"]  # the program waits at tools.delete, the second call
    suspension = Suspension.from_json((work / "suspension.json").read_text())
    assert [(p.call_id, p.sub_call_id, p.tool_name, p.arguments) for p in suspension.pending] == [
        ("r1", "r1:code:2", "delete", {"x": 2})
    ]

    run_app("code-resume", str(work), kind, decision)
    expected = ["read r1:code:1", "note r1:code:3"]
    if decision == "allowed-once":
        expected.insert(1, "delete r1:code:2")
    assert runs(work) == expected  # each body once in total, in program order
    inline = tmp_path / "inline"
    inline.mkdir()
    assert json.loads((work / "results.json").read_text()) == json.loads(
        json.dumps(results_json(uninterrupted(inline, kind, decision)))
    )
    events = [json.loads(line) for line in (work / "log.jsonl").read_text().splitlines()]
    kinds = [(e["type"], e.get("subCallId", e.get("callId"))) for e in events]
    assert kinds[:5] == [
        ("tool/call", "r1"),
        ("tool/code-dispatch-start", "r1:code:1"),
        ("tool/code-dispatch", "r1:code:1"),
        ("tool/code-dispatch-start", "r1:code:2"),
        ("tool/approval-pending", "r1:code:2"),
    ]
    assert kinds[5] == ("tool/approval-resolved", "r1:code:2")
    assert kinds[-1] == ("tool/result", "r1")
    # Each sub-call's dispatch pair is logged once, never twice; the outer call once.
    counts = Counter(kinds)
    for sub_call in ("r1:code:1", "r1:code:2", "r1:code:3"):
        assert counts[("tool/code-dispatch-start", sub_call)] == 1
        assert counts[("tool/code-dispatch", sub_call)] == 1
    assert counts[("tool/call", "r1")] == counts[("tool/result", "r1")] == 1
    assert events[4]["approvalId"] == events[5]["approvalId"] == suspension.pending[0].approval_id


DIVERGING = """
x = int(open(PATH).read())
a = await tools.read({"x": x})
b = await tools.delete({"x": 2})
return [a, b]
"""


def test_a_replay_that_makes_another_call_fails_with_the_divergence_text(tmp_path: Path) -> None:
    """PythonSubprocessRuntime replays the program: one that reads outside state may call differently."""
    source = tmp_path / "x.txt"
    source.write_text("1")
    program = DIVERGING.replace("PATH", repr(str(source)))
    calls = [ToolCall("r1", "run_code", {"code": program, "description": "diverge"})]

    async def go() -> None:
        async with code_runtime("subprocess") as runtime:
            registry = build_code_registry(tmp_path, runtime, None)
            with pytest.raises(ToolCallsSuspended) as caught:
                await execute_tool_calls(registry, calls, signal=signal(), agent="main")
            suspension = caught.value.suspension
            source.write_text("5")
            results = await resume_tool_calls(
                registry, suspension, {suspension.pending[0].approval_id: "allowed-once"}, signal=signal()
            )
        message = results[0].error.message  # type: ignore[union-attr]
        assert message.startswith(
            "code run failed (exception): run_code could not resume: replay diverged at tool call 1:"
            ' the program called tools.read({"x":5}) where the suspended run made tools.read({"x":1}).'
        ), message
        assert "nothing random, no clock read" in message
        assert runs(tmp_path) == ["read r1:code:1"]  # nothing ran on the resume

    asyncio.run(go())


# -- property: random programs, random deferrals, random decision orders --------------------------


def program_of(names: list[str]) -> str:
    lines = ["out = []"]
    for index, name in enumerate(names):
        lines += [
            "try:",
            f"    out.append(await tools.{name}({{'x': {index}}}))",
            "except ToolCallError as error:",
            "    out.append('refused ' + error.message)",
        ]
    return "\n".join([*lines, "return out"])


@pytest.mark.parametrize("kind", RUNTIMES)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    names=st.lists(st.sampled_from(["read", "delete", "note"]), min_size=1, max_size=5),
    asking=st.sets(st.sampled_from(["read", "delete", "note"]), min_size=1),
    data=st.data(),
)
def test_property_a_run_resumed_any_number_of_times_ends_as_an_uninterrupted_one(
    tmp_path_factory: pytest.TempPathFactory, kind: str, names: list[str], asking: set[str], data: st.DataObject
) -> None:
    sub_ids = [f"r1:code:{i + 1}" for i in range(len(names))]
    answers = {sub: data.draw(st.sampled_from(["allowed-once", "rejected"])) for sub in sub_ids}
    # Most calls that ask are deferred (a call whose tool does not ask is never asked).
    defer = {sub for sub, name in zip(sub_ids, names) if name in asking and data.draw(st.integers(0, 3)) < 3}
    shuffle = random.Random(data.draw(st.integers(0, 2**16)))
    calls = [ToolCall("r1", "run_code", {"code": program_of(names), "description": "random"})]

    async def go() -> None:
        async with code_runtime(kind) as runtime:
            inline_dir = tmp_path_factory.mktemp("inline")
            registry = build_code_registry(
                inline_dir, runtime, None, RandomDeferring(set(), answers), asking=frozenset(asking)
            )
            inline = await execute_tool_calls(registry, calls, signal=signal(), agent="main")
            work = tmp_path_factory.mktemp("suspended")
            log = MemorySessionLog()
            registry = build_code_registry(
                work, runtime, log, RandomDeferring(set(defer), answers), asking=frozenset(asking)
            )
            try:
                results = await execute_tool_calls(registry, calls, signal=signal(), log=log, agent="main")
            except ToolCallsSuspended as exc:
                results = await resume_until_done(registry, exc.suspension, answers, shuffle, log)
        assert results == inline
        assert runs(work) == runs(inline_dir)  # each body at most once, in program order
        starts = [e["subCallId"] for e in log.events if e["type"] == "tool/code-dispatch-start"]
        settles = [e["subCallId"] for e in log.events if e["type"] == "tool/code-dispatch"]
        assert len(starts) == len(set(starts)) and len(settles) == len(set(settles))

    asyncio.run(go())


RANDOM_BEFORE_THE_CALLS = """
import random
r = random.randint(0, 10**9)
print("drew", r)
a = await tools.read({"x": r})
b = await tools.delete({"x": 2})
return [r, a, b]
"""


def test_monty_resumes_from_its_snapshot_so_nothing_is_replayed(tmp_path: Path) -> None:
    """A random draw before the calls would make a replay diverge; Monty's snapshot carries it over."""
    calls = [ToolCall("r1", "run_code", {"code": RANDOM_BEFORE_THE_CALLS, "description": "random"})]

    async def go() -> None:
        async with code_runtime("monty") as runtime:
            registry = build_code_registry(tmp_path, runtime, None)
            with pytest.raises(ToolCallsSuspended) as caught:
                await execute_tool_calls(registry, calls, signal=signal(), agent="main")
            text = caught.value.suspension.to_json()
        assert "runtime" in caught.value.suspension.calls[0].code
        suspension = Suspension.from_json(text)
        async with code_runtime("monty") as runtime:  # a fresh runtime: nothing of the first one is used
            registry = build_code_registry(tmp_path, runtime, None)
            results = await resume_tool_calls(
                registry, suspension, {suspension.pending[0].approval_id: "allowed-once"}, signal=signal()
            )
        drawn = results[0].value["result"][0]  # type: ignore[union-attr]
        assert results[0].value == {  # type: ignore[union-attr]
            "logs": [f"drew {drawn}"],
            "result": [drawn, f"read:{drawn}", "delete:2"],
        }
        assert runs(tmp_path) == ["read r1:code:1", "delete r1:code:2"]

    asyncio.run(go())
