"""Suspended tool calls (issue 37): a "deferred" approval suspends a batch; a resume, anywhere, finishes it."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _shared_helpers import async_test
from _suspension_app import (
    CALLS,
    RandomDeferring,
    build_registry,
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
    ToolExecutionInput,
    ToolFailure,
    ToolRegistry,
    execute_tool_calls,
    resume_tool_calls,
)

APP = Path(__file__).parents[1] / "_suspension_app.py"


def signal() -> Any:
    return AbortController().signal


class Answering:
    """An inline approval service: answers from ``answers`` by call id (``"allowed-once"`` otherwise)."""

    def __init__(self, answers: dict[str, str] | None = None) -> None:
        self.answers = answers or {}

    async def request(self, request: ApprovalRequest) -> str:
        return self.answers.get(request.call_id, "allowed-once")


async def suspend(registry: ToolRegistry, calls: list[ToolCall], log: Any = None, **options: Any) -> Suspension:
    with pytest.raises(ToolCallsSuspended) as caught:
        await execute_tool_calls(registry, calls, signal=signal(), log=log, agent="main", **options)
    return caught.value.suspension


def uninterrupted(tmp_path: Path, decision: str) -> list[Any]:
    work = tmp_path / f"inline-{decision}"
    work.mkdir()
    registry = build_registry(work, Answering({"c2": decision}))
    return asyncio.run(execute_tool_calls(registry, CALLS, signal=signal(), agent="main"))


def run_app(*args: str) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")]),
    }
    subprocess.run([sys.executable, str(APP), *args], check=True, env=env, timeout=120)


@pytest.mark.parametrize("decision", ["allowed-once", "rejected"])
def test_a_batch_suspended_in_one_process_resumes_in_another(tmp_path: Path, decision: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    run_app("suspend", str(work))
    assert runs(work) == ["read c1"]  # c2 waits for a human; c3 and c4 did not start
    suspension = Suspension.from_json((work / "suspension.json").read_text())
    assert [(p.call_id, p.tool_name, p.arguments, p.reason, p.sub_call_id) for p in suspension.pending] == [
        ("c2", "delete", {"x": 2}, "delete needs a human", None)
    ]
    assert [call.state for call in suspension.calls] == ["finished", "pending", "not-started", "not-started"]

    run_app("resume", str(work), decision)
    expected_runs = (
        ["read c1", "note c3", "read c4"] if decision == "rejected" else ["read c1", "delete c2", "note c3", "read c4"]
    )
    assert sorted(runs(work)) == sorted(expected_runs)  # each body exactly once in total
    assert json.loads((work / "results.json").read_text()) == json.loads(
        json.dumps(results_json(uninterrupted(tmp_path, decision)))
    )
    events = [json.loads(line) for line in (work / "log.jsonl").read_text().splitlines()]
    approval_id = suspension.pending[0].approval_id
    assert [(e["type"], e.get("callId")) for e in events] == [
        ("tool/call", "c1"),
        ("tool/call", "c2"),
        ("tool/call", "c3"),
        ("tool/call", "c4"),
        ("tool/result", "c1"),
        ("tool/approval-pending", "c2"),
        ("tool/approval-resolved", "c2"),
        ("tool/result", "c2"),
        ("tool/result", "c3"),
        ("tool/result", "c4"),
    ]
    assert {e["batchId"] for e in events} == {suspension.batch_id}
    assert events[5]["approvalId"] == events[6]["approvalId"] == approval_id
    assert events[6]["decision"] == decision


@async_test
async def test_resumed_results_equal_an_uninterrupted_run_in_model_order(tmp_path: Path) -> None:
    registry = build_registry(tmp_path)
    suspension = await suspend(registry, CALLS)
    text = suspension.to_json()
    again = Suspension.from_json(text)
    assert again.to_json() == text
    assert again.results == suspension.results
    decisions = {suspension.pending[0].approval_id: "allowed-once"}
    results = await resume_tool_calls(registry, again, decisions, signal=signal())
    inline_dir = tmp_path / "inline"
    inline_dir.mkdir()
    inline = await execute_tool_calls(build_registry(inline_dir, Answering()), CALLS, signal=signal(), agent="main")
    assert results == inline
    assert sorted(runs(tmp_path)) == sorted(["read c1", "delete c2", "note c3", "read c4"])


@async_test
async def test_a_deferred_call_holds_the_calls_after_it_and_a_resumed_call_may_suspend_again(tmp_path: Path) -> None:
    registry = build_registry(tmp_path, asking=frozenset({"delete", "note"}))
    log = MemorySessionLog()
    first = await suspend(registry, CALLS, log)
    assert [p.call_id for p in first.pending] == ["c2"]
    # c3 asks too: after c2 is allowed, it is deferred in its turn.
    second_raised = None
    try:
        await resume_tool_calls(
            registry, first, {first.pending[0].approval_id: "allowed-once"}, signal=signal(), log=log
        )
    except ToolCallsSuspended as exc:
        second_raised = exc.suspension
    assert second_raised is not None
    assert [p.call_id for p in second_raised.pending] == ["c3"]
    assert [c.state for c in second_raised.calls] == ["finished", "finished", "pending", "not-started"]
    results = await resume_tool_calls(
        registry, second_raised, {second_raised.pending[0].approval_id: "rejected"}, signal=signal(), log=log
    )
    assert [r.is_error for r in results] == [False, False, True, False]
    assert sorted(runs(tmp_path)) == sorted(["read c1", "delete c2", "read c4"])
    # Each call is announced once and has exactly one result in the log.
    kinds = [(e["type"], e["callId"]) for e in log.events if e["type"] in ("tool/call", "tool/result")]
    assert sorted(kinds) == sorted([(t, c) for t in ("tool/call", "tool/result") for c in ("c1", "c2", "c3", "c4")])


@async_test
async def test_exclusive_calls_suspend_the_same_way(tmp_path: Path) -> None:
    registry = build_registry(tmp_path, parallel=False)
    suspension = await suspend(registry, CALLS, max_parallel=1)
    assert [c.state for c in suspension.calls] == ["finished", "pending", "not-started", "not-started"]
    results = await resume_tool_calls(
        registry, suspension, {suspension.pending[0].approval_id: "rejected"}, signal=signal()
    )
    assert isinstance(results[1], ToolFailure)
    assert results[1].content == [{"type": "text", "text": 'Error: the user rejected tool "delete"'}]


@async_test
async def test_deferred_outside_a_suspension_scope_is_an_error_result(tmp_path: Path) -> None:
    registry = build_registry(tmp_path)
    result = await registry.execute(ToolExecutionInput("k", "delete", {"x": 1}, signal(), "main"))
    assert isinstance(result, ToolFailure)
    assert result.error.message == (
        'approval for tool "delete" was deferred, but this call cannot be suspended'
        " (only execute_tool_calls and Code Mode runs inside it can)"
    )
    assert runs(tmp_path) == []


@async_test
async def test_an_aborted_resume_ends_like_an_aborted_batch(tmp_path: Path) -> None:
    registry = build_registry(tmp_path)
    suspension = await suspend(registry, CALLS)
    controller = AbortController()
    controller.abort()
    results = await resume_tool_calls(
        registry, suspension, {suspension.pending[0].approval_id: "allowed-once"}, signal=controller.signal
    )
    assert results[0] == suspension.results["c1"]
    assert [r.error.info.code for r in results[1:]] == ["ABORTED_BEFORE_DISPATCH"] * 3  # type: ignore[union-attr]
    assert runs(tmp_path) == ["read c1"]


# -- bad inputs: each a clear error, nothing run, nothing logged ---------------------------------


async def _bad_resume(tmp_path: Path, registry: ToolRegistry, suspension: Any, decisions: Any, match: str) -> None:
    before = runs(tmp_path)
    log = MemorySessionLog()
    with pytest.raises((ValueError, TypeError), match=match):
        await resume_tool_calls(registry, suspension, decisions, signal=signal(), log=log)
    assert runs(tmp_path) == before
    assert log.events == []


@async_test
async def test_bad_suspension_texts_are_refused(tmp_path: Path) -> None:
    registry = build_registry(tmp_path)
    text = (await suspend(registry, CALLS)).to_json()
    with pytest.raises(ValueError, match=r"not valid JSON \(truncated\?\)"):
        Suspension.from_json(text[: len(text) // 2])
    tampered = text.replace('"x\\": 4', '"x\\": 5')
    assert tampered != text
    with pytest.raises(ValueError, match="was altered: its digest does not match its content"):
        Suspension.from_json(tampered)
    with pytest.raises(TypeError, match="needs a str"):
        Suspension.from_json(text.encode())  # type: ignore[arg-type]
    document = json.loads(text)
    document["suspension"]["format"] = "other/9"
    with pytest.raises(ValueError, match="this version reads"):
        Suspension.from_json(json.dumps(document))


@async_test
async def test_bad_decisions_and_incompatible_registries_are_refused(tmp_path: Path) -> None:
    registry = build_registry(tmp_path)
    suspension = await suspend(registry, CALLS)
    other = await suspend(build_registry(tmp_path), CALLS)
    approval_id = suspension.pending[0].approval_id
    await _bad_resume(tmp_path, registry, suspension, {}, f"no decision for approval '{approval_id}'")
    await _bad_resume(
        tmp_path,
        registry,
        suspension,
        {other.pending[0].approval_id: "allowed-once"},
        "decision for an approval this suspension does not hold",
    )
    await _bad_resume(tmp_path, registry, suspension, {approval_id: "maybe"}, 'must be "allowed-once" or "rejected"')
    await _bad_resume(tmp_path, registry, suspension, [approval_id], "must be a mapping")
    await _bad_resume(tmp_path, registry, "{}", {approval_id: "rejected"}, "must be a Suspension")

    removed = build_registry(tmp_path, tools=("read", "delete"))
    await _bad_resume(
        tmp_path, removed, suspension, {approval_id: "rejected"}, 'tool "note" is not in this registry any more'
    )
    changed = build_registry(tmp_path, note_parameters={"y": {"type": "string"}})
    await _bad_resume(tmp_path, changed, suspension, {approval_id: "rejected"}, 'tool "note" changed its schema')

    results = await resume_tool_calls(registry, suspension, {approval_id: "rejected"}, signal=signal())
    assert len(results) == 4
    await _bad_resume(tmp_path, registry, suspension, {approval_id: "rejected"}, "was already resumed")
    await _bad_resume(
        tmp_path, registry, Suspension.from_json(suspension.to_json()), {approval_id: "rejected"}, "was already resumed"
    )


# -- property: random batches, random deferrals, random decision orders ---------------------------


TOOLS = ("read", "delete", "note")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    names=st.lists(st.sampled_from(TOOLS), min_size=1, max_size=6),
    asking=st.sets(st.sampled_from(TOOLS), min_size=1),
    parallel=st.booleans(),
    max_parallel=st.integers(1, 4),
    data=st.data(),
)
def test_property_every_call_gets_one_result_bodies_run_at_most_once(
    tmp_path_factory: pytest.TempPathFactory,
    names: list[str],
    asking: set[str],
    parallel: bool,
    max_parallel: int,
    data: st.DataObject,
) -> None:
    calls = [ToolCall(f"c{i}", name, {"x": i}) for i, name in enumerate(names)]
    ids = [call.call_id for call in calls]
    answers = {call_id: data.draw(st.sampled_from(["allowed-once", "rejected"])) for call_id in ids}
    # Most calls that ask are deferred (a call whose tool does not ask is never asked).
    defer = {call_id for call_id, name in zip(ids, names) if name in asking and data.draw(st.integers(0, 3)) < 3}
    shuffle = random.Random(data.draw(st.integers(0, 2**16)))

    async def scenario() -> None:
        inline_dir = tmp_path_factory.mktemp("inline")
        inline = await execute_tool_calls(
            build_registry(inline_dir, RandomDeferring(set(), answers), asking=frozenset(asking), parallel=parallel),
            calls,
            signal=signal(),
            max_parallel=max_parallel,
            agent="main",
        )
        work = tmp_path_factory.mktemp("suspended")
        registry = build_registry(
            work, RandomDeferring(set(defer), answers), asking=frozenset(asking), parallel=parallel
        )
        log = MemorySessionLog()
        try:
            results = await execute_tool_calls(
                registry, calls, signal=signal(), max_parallel=max_parallel, log=log, agent="main"
            )
        except ToolCallsSuspended as exc:
            results = await resume_until_done(registry, exc.suspension, answers, shuffle, log)
        assert results == inline
        assert sorted(runs(work)) == sorted(runs(inline_dir))
        assert len(set(runs(work))) == len(runs(work))
        results_logged = [e["callId"] for e in log.events if e["type"] == "tool/result"]
        calls_logged = [e["callId"] for e in log.events if e["type"] == "tool/call"]
        assert sorted(results_logged) == sorted(ids) and calls_logged == ids

    asyncio.run(scenario())
