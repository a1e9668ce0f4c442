"""Session log: memory and JSONL logs, crash recovery, derive_messages, replay_result."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, LosslessJsonError
from dsh_codegen.registry import UNSET, ToolFailure, ToolSuccess
from dsh_codegen.registry._session_log import (
    JsonlSessionLog,
    MemorySessionLog,
    SessionLog,
    derive_messages,
    read_session_log,
    replay_result,
)


def _call(call_id: str, name: str = "echo", arguments: Any = None, batch: str | None = "b1") -> dict[str, Any]:
    event: dict[str, Any] = {"type": "tool/call", "callId": call_id, "name": name, "arguments": arguments or {}}
    if batch is not None:
        event["batchId"] = batch
    return event


def _result(
    call_id: str,
    text: str,
    *,
    name: str = "echo",
    is_error: bool = False,
    contexts: list[Any] | None = None,
    batch: str | None = "b1",
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "tool/result",
        "callId": call_id,
        "name": name,
        "isError": is_error,
        "content": [{"type": "text", "text": text}],
    }
    if contexts is not None:
        event["additionalContexts"] = contexts
    if batch is not None:
        event["batchId"] = batch
    return event


# -- MemorySessionLog ---------------------------------------------------------


def test_memory_log_stores_detached_copies() -> None:
    log = MemorySessionLog()
    event = {"type": "tool/call", "callId": "c1", "arguments": {"a": [1, 2]}}
    log.append(event)
    event["arguments"]["a"].append(3)  # type: ignore[index]
    assert log.events == [{"type": "tool/call", "callId": "c1", "arguments": {"a": [1, 2]}}]
    assert len(log) == 1 and list(log) == log.events
    assert isinstance(log, SessionLog)
    log.clear()
    assert log.events == []


@pytest.mark.parametrize(
    ("event", "error", "text"),
    [
        ({"callId": "x"}, ValueError, "non-empty string 'type'"),
        ({"type": ""}, ValueError, "non-empty string 'type'"),
        ({"type": "x", "v": float("nan")}, ValueError, "session log event 'x' is not JSON"),
        ({"type": "x", "v": {1, 2}}, ValueError, "session log event 'x' is not JSON"),
        (["type", "x"], TypeError, "must be a mapping, got list"),
    ],
)
def test_logs_reject_bad_events(tmp_path: Path, event: Any, error: type[Exception], text: str) -> None:
    memory = MemorySessionLog()
    with pytest.raises(error, match=text):
        memory.append(event)
    assert memory.events == []
    with JsonlSessionLog(tmp_path / "log.jsonl") as jsonl:
        with pytest.raises(error, match=text):
            jsonl.append(event)
    assert (tmp_path / "log.jsonl").read_bytes() == b""


# -- JsonlSessionLog ----------------------------------------------------------


def test_jsonl_one_object_per_line_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    events = [
        {"type": "tool/call", "callId": "c1", "arguments": {"text": "line one\nline two"}},
        {"type": "tool/result", "callId": "c1", "content": [{"type": "text", "text": "naïve ☃"}]},
        {"type": "note", "text": "lone \ud800 surrogate"},
    ]
    with JsonlSessionLog(path) as log:
        for event in events:
            log.append(event)
        # Written through to the kernel: visible before close.
        assert path.read_bytes().count(b"\n") == 3
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    assert [json.loads(line) for line in lines] == events
    contents = read_session_log(path)
    assert contents.events == events
    assert contents.skipped_lines == () and not contents.torn_tail
    assert log.closed
    with pytest.raises(ValueError, match="is closed"):
        log.append({"type": "x"})
    log.close()  # idempotent


def test_jsonl_appends_to_existing_file_and_fsync_option(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with JsonlSessionLog(path) as log:
        log.append({"type": "a"})
    with JsonlSessionLog(path, fsync=True) as log:
        log.append({"type": "b"})
        assert [e["type"] for e in log.read().events] == ["a", "b"]


def test_jsonl_missing_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        JsonlSessionLog(tmp_path / "missing" / "log.jsonl")


def test_reader_skips_torn_and_garbage_lines(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(
        b'{"type":"a"}\nnot json\n[1,2]\n{"no":"type"}\n{"type":"b","v":NaN}\n\n{"type":"c"}\n{"type":"d","text":"tor'
    )
    with caplog.at_level(logging.WARNING, logger="dsh_codegen"):
        contents = read_session_log(path)
    assert [e["type"] for e in contents.events] == ["a", "c"]
    assert contents.skipped_lines == (2, 3, 4, 5, 6, 8)
    assert contents.torn_tail
    assert "skipped 6 unreadable line(s)" in caplog.text


def test_reader_keeps_a_complete_last_line_without_newline(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"type":"a"}\n{"type":"b"}')
    contents = read_session_log(path)
    assert [e["type"] for e in contents.events] == ["a", "b"]
    assert contents.torn_tail and contents.skipped_lines == ()


def test_new_writer_does_not_glue_onto_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"type":"a"}\n{"type":"b","text":"half a li')
    with JsonlSessionLog(path) as log:
        log.append({"type": "c"})
        log.append({"type": "d"})
    contents = read_session_log(path)
    assert [e["type"] for e in contents.events] == ["a", "c", "d"]
    assert contents.skipped_lines == (2,)
    assert not contents.torn_tail


_WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from dsh_codegen.registry._session_log import JsonlSessionLog

    path, payload, mode = sys.argv[1], "x" * int(sys.argv[2]), sys.argv[3]
    log = JsonlSessionLog(path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    seq = 0
    while True:
        event = {"type": "tool/result", "seq": seq, "payload": payload}
        if mode == "log":
            log.append(event)
        else:
            # A writer that hands each line to the kernel in small pieces (as a
            # buffered writer or a slow file system would): a kill tears lines.
            data = (json.dumps(event) + "\\n").encode()
            for start in range(0, len(data), 4096):
                os.write(fd, data[start : start + 4096])
                time.sleep(0.00002)
        seq += 1
    """
)


def _kill_writer_mid_stream(path: Path, payload: int, mode: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(payload), mode],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while (not path.exists() or path.stat().st_size < 20 * payload + payload // 2) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def _check_recovery(path: Path, payload: int) -> bool:
    """Check the killed log reads back whole and resumes cleanly; return whether it was torn."""
    contents = read_session_log(path)
    seqs = [event["seq"] for event in contents.events]
    assert len(seqs) >= 20
    assert seqs == list(range(len(seqs)))  # every complete line, in order, nothing lost before the tail
    assert all(event["payload"] == "x" * payload for event in contents.events)
    # At most the very last line is torn, and only if the file ends mid-line.
    total_lines = path.read_bytes().count(b"\n") + (1 if contents.torn_tail else 0)
    assert contents.skipped_lines == ((total_lines,) if contents.torn_tail else ())

    with JsonlSessionLog(path) as log:
        log.append({"type": "resumed", "seq": -1})
    after = read_session_log(path)
    assert [e["seq"] for e in after.events] == seqs + [-1]
    assert after.skipped_lines == contents.skipped_lines
    assert not after.torn_tail
    return contents.torn_tail


@pytest.mark.once
@pytest.mark.parametrize("payload", [3_000_000, 40_000])
def test_killed_log_writer_leaves_a_readable_log(tmp_path: Path, payload: int) -> None:
    """SIGKILL a JsonlSessionLog writer while it appends large events; every complete line survives."""
    path = tmp_path / "log.jsonl"
    _kill_writer_mid_stream(path, payload, "log")
    _check_recovery(path, payload)


@pytest.mark.once
def test_killed_chunked_writer_torn_line_is_skipped_and_not_glued(tmp_path: Path) -> None:
    """A writer killed mid-line leaves a torn tail: readers skip it, a new writer starts a fresh line."""
    torn = False
    for attempt in range(5):
        path = tmp_path / f"log{attempt}.jsonl"
        _kill_writer_mid_stream(path, 1_000_000, "chunked")
        torn = _check_recovery(path, 1_000_000)
        if torn:
            break
    assert torn, "no kill landed mid-line in 5 attempts"


# -- derive_messages ----------------------------------------------------------


def test_derive_messages_pairs_calls_and_results_in_order() -> None:
    ctx1 = {"role": "user", "content": [{"type": "text", "text": "after one"}], "source": "p"}
    ctx2 = {"role": "user", "content": [{"type": "text", "text": "after two"}], "source": "q", "meta": {"k": 1}}
    events = [
        {"type": "session/start"},
        _call("c1", arguments={"text": "one"}),
        _call("c2", name="grep"),
        {"type": "tool/code-dispatch-start", "subCallId": "c2:code:1"},
        {"type": "tool/code-dispatch", "subCallId": "c2:code:1", "isError": False, "content": []},
        _result("c1", "one", contexts=[ctx1]),
        _result("c2", "boom", name="grep", is_error=True, contexts=[ctx2]),
    ]
    assert derive_messages(events) == [
        {
            "role": "assistant",
            "toolCalls": [
                {"callId": "c1", "name": "echo", "arguments": {"text": "one"}},
                {"callId": "c2", "name": "grep", "arguments": {}},
            ],
        },
        {
            "role": "tool",
            "callId": "c1",
            "name": "echo",
            "isError": False,
            "content": [{"type": "text", "text": "one"}],
        },
        {
            "role": "tool",
            "callId": "c2",
            "name": "grep",
            "isError": True,
            "content": [{"type": "text", "text": "boom"}],
        },
        ctx1,
        ctx2,
    ]


def test_derive_messages_splits_batches_and_drops_unanswered_calls() -> None:
    events = [
        _call("a", batch="b1"),
        _result("a", "A", batch="b1"),
        _call("b", batch="b2"),
        _call("c", batch="b2"),  # the process died before c's result
        _result("b", "B", batch="b2"),
        _result("zzz", "orphan", batch="b2"),
    ]
    messages = derive_messages(events)
    assert [m["role"] for m in messages] == ["assistant", "tool", "assistant", "tool"]
    assert [c["callId"] for c in messages[2]["toolCalls"]] == ["b"]
    assert messages[3]["callId"] == "b"


def test_derive_messages_code_dispatch_events_never_become_messages() -> None:
    events = [
        {"type": "tool/code-dispatch-start", "subCallId": "x:code:1", "name": "echo", "arguments": {}},
        {"type": "tool/code-dispatch", "subCallId": "x:code:1", "isError": False, "content": []},
    ]
    assert derive_messages(events) == []


def test_derive_messages_returns_detached_copies() -> None:
    events = [_call("a"), _result("a", "A")]
    messages = derive_messages(events)
    messages[1]["content"][0]["text"] = "changed"
    assert events[1]["content"][0]["text"] == "A"


@pytest.mark.parametrize(
    ("event", "text"),
    [
        ({"type": "tool/call", "name": "x"}, "session event 0 \\(tool/call\\): callId must be a str"),
        ({"type": "tool/call", "callId": "c"}, "session event 0 \\(tool/call\\): name must be a str"),
        ({"type": "tool/result", "callId": "c", "content": []}, "isError must be a bool"),
        ({"type": "tool/result", "callId": "c", "isError": False, "content": "x"}, "content must be a list"),
    ],
)
def test_derive_messages_rejects_malformed_events(event: dict[str, Any], text: str) -> None:
    with pytest.raises(ValueError, match=text):
        derive_messages([event])


def test_derive_messages_reads_back_a_jsonl_log(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    events = [_call("a", arguments={"q": 1}), _result("a", "A")]
    with JsonlSessionLog(path) as log:
        for event in events:
            log.append(event)
    assert derive_messages(read_session_log(path).events) == derive_messages(events)


# -- replay_result --------------------------------------------------------------

_SHAPE = '{"role": "user", "content": [blocks], "source": str, "meta"?: {...}}'
_BLOCK = 'must be an object with a string "type"'
_WHERE = "session event (tool/result, callId 'c1')"


def _context(source: str, **extra: Any) -> dict[str, Any]:
    context: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": source}], "source": source}
    context.update(extra)
    return context


def test_replay_result_rebuilds_a_frozen_success_with_its_contexts() -> None:
    event = _result("c1", "shown", contexts=[_context("a"), _context("b", meta={"k": [1]})])
    event["meta"] = {"lines": 3}
    event["concludesTurn"] = True
    replayed = replay_result(event)
    assert isinstance(replayed, ToolSuccess)
    assert replayed.value is UNSET and replayed.concludes_turn is True
    assert type(replayed.content) is FrozenJsonArray
    assert replayed.content == [{"type": "text", "text": "shown"}]
    assert type(replayed.meta) is FrozenJsonObject and replayed.meta == {"lines": 3}
    assert [type(c) for c in replayed.additional_contexts] == [FrozenJsonObject, FrozenJsonObject]
    assert list(replayed.additional_contexts) == [_context("a"), _context("b", meta={"k": [1]})]
    event["content"][0]["text"] = "changed later"
    assert replayed.content[0]["text"] == "shown"


def test_replay_result_rebuilds_a_failure_from_plain_json() -> None:
    failure = _result("c1", "Error: boom", is_error=True, contexts=[_context("kept")])
    failure["error"] = {"message": "boom", "info": {"name": "ToolError", "code": "BOOM"}}
    replayed = replay_result(json.loads(json.dumps(failure)))
    assert isinstance(replayed, ToolFailure)
    assert replayed.error.message == "boom"
    assert replayed.error.info is not None and replayed.error.info.code == "BOOM"
    assert replayed.content == [{"type": "text", "text": "Error: boom"}]
    assert [c["source"] for c in replayed.additional_contexts] == ["kept"]


def _bad(**fields: Any) -> dict[str, Any]:
    event = _result("c1", "x")
    event.update(fields)
    return event


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (_bad(isError="no"), f"{_WHERE}: isError must be a bool"),
        (_bad(content={"type": "text"}), f"{_WHERE}: content must be a list"),
        (_bad(content=[{"type": "text", "text": "a"}, {"text": "no type"}]), f"{_WHERE}: content block [1] {_BLOCK}"),
        (_bad(content=["text"]), f"{_WHERE}: content block [0] {_BLOCK}"),
        (_bad(content=[{"type": 7}]), f"{_WHERE}: content block [0] {_BLOCK}"),
        (_bad(additionalContexts={"role": "user"}), f"{_WHERE}: additionalContexts must be a list"),
        (
            _bad(additionalContexts=[_context("a"), {**_context("b"), "role": "assistant"}]),
            f'{_WHERE}: additional context [1] must be {_SHAPE} ("role" is not "user")',
        ),
        (
            _bad(additionalContexts=[{"role": "user", "content": [], "source": 3}]),
            f'{_WHERE}: additional context [0] must be {_SHAPE} ("source" is not a string)',
        ),
        (
            _bad(additionalContexts=["plain text"]),
            f"{_WHERE}: additional context [0] must be {_SHAPE} (got a string)",
        ),
        (
            _bad(additionalContexts=[_context("a"), _context("b"), {**_context("c"), "content": [{"text": "c"}]}]),
            f"{_WHERE}: additional context [2], content block [0] {_BLOCK}",
        ),
        (_bad(isError=True), f"{_WHERE}: error.message must be a str"),
        (
            {"type": "tool/result", "isError": False, "content": [{"type": "text"}, 3]},
            f"session event (tool/result, no callId): content block [1] {_BLOCK}",
        ),
        (
            {**_bad(content=[[]]), "callId": "it's\n"},
            f'session event (tool/result, callId "it\'s\\n"): content block [0] {_BLOCK}',
        ),
    ],
)
def test_replay_result_rejects_malformed_events_naming_the_call_and_place(event: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        replay_result(event)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("fields", "path", "place"),
    [
        ({"content": [{"type": "text", "text": -0.0}]}, (0, "text"), "in content"),
        ({"meta": {"lines": float("nan")}}, ("lines",), "in meta"),
        (
            {"additionalContexts": [_context("a"), _context("b", meta={"x": float("inf")})]},
            ("meta", "x"),
            "in additional context [1]",
        ),
    ],
)
def test_replay_result_lossy_json_stays_a_lossless_json_error_naming_the_call(
    fields: dict[str, Any], path: tuple[str | int, ...], place: str
) -> None:
    with pytest.raises(LosslessJsonError) as info:
        replay_result(_bad(**fields))
    assert type(info.value) is LosslessJsonError
    assert info.value.path == path
    assert info.value.reason.endswith(f" ({_WHERE}: {place})")


def test_replay_result_rejects_a_hand_edited_jsonl_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with JsonlSessionLog(path) as log:
        log.append(_call("c1"))
        log.append(_result("c1", "fine"))
    assert replay_result(read_session_log(path).events[1]).content == [{"type": "text", "text": "fine"}]
    path.write_text(path.read_text().replace('{"type":"text","text":"fine"}', '"fine"'))
    events = read_session_log(path).events
    with pytest.raises(ValueError) as info:
        replay_result(events[1])
    assert str(info.value) == f"{_WHERE}: content block [0] {_BLOCK}"
