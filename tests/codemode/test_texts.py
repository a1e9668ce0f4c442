"""The model-facing texts every runtime shares (``dsh_codegen/codemode/_texts.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_codegen.codemode._texts import LogSink, completion_error_text, program_error_text
from dsh_codegen.json import LosslessJsonError, snapshot_json

from lossy_cases import LOSSY_COMPLETIONS, LOSSY_PRELUDE


@pytest.mark.parametrize(("value", "where"), LOSSY_COMPLETIONS)
def test_lossy_completion_text_is_what_snapshot_json_says(value: str, where: str) -> None:
    # The host's own walk words it for any other runtime: the child's words must be the same.
    namespace: dict[str, Any] = {}
    exec(LOSSY_PRELUDE, namespace)
    with pytest.raises(LosslessJsonError) as caught:
        snapshot_json(eval(value, namespace))
    assert completion_error_text(caught.value) == f"program completion must be lossless JSON: {where}"


def test_an_uncaught_exception_names_type_text_line_and_tool() -> None:
    assert program_error_text("KeyError", "'x'", 3) == "KeyError: 'x' (line 3)"
    assert program_error_text("StopIteration", "", None) == "StopIteration"
    assert program_error_text("ToolCallError", "no such file", 2, "read_file") == (
        "ToolCallError: tools.read_file failed: no such file (line 2)"
    )
    # Names the program can only reach by subscript are written that way.
    for name, written in (
        ("my-tool", 'tools["my-tool"]'),
        ("from", 'tools["from"]'),
        ("__class__", 'tools["__class__"]'),
    ):
        assert program_error_text("ToolCallError", "m", None, name) == f"ToolCallError: {written} failed: m"


def test_log_sink_counts_utf8_bytes_per_entry_and_closes_with_one_marker() -> None:
    sink = LogSink(10)
    for entry in ("abc", "\u00e9\u00e9", "", "xyzw", "later"):  # 3 + 4 + 0 bytes, then 4 of which 3 fit
        sink.add(entry)
    assert sink.lines() == (
        "abc",
        "\u00e9\u00e9",
        "",
        "xyz",
        "[output truncated: the program printed more than 10 bytes]",
    )
    # A cut never splits a character; an entry with nothing that fits adds only the marker.
    sink = LogSink(3)
    sink.add("a\u00e9\u00e9")
    assert sink.lines() == ("a\u00e9", "[output truncated: the program printed more than 3 bytes]")
    sink = LogSink(0)
    sink.add("x")
    sink.add("y")
    assert sink.lines() == ("[output truncated: the program printed more than 0 bytes]",)
