"""parse_call_arguments (CONTRACT.md 156) agrees with json.loads everywhere: a reference model check."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_codegen.registry._loop import parse_call_arguments


def _reject(name: str) -> Any:
    raise ValueError(name)


def reference(text: str) -> Any:
    """The behaviour as specified: blank is {}, JSON is parsed (no NaN/Infinity), the rest stays raw."""
    if not text.strip():
        return {}
    try:
        return json.loads(text, parse_constant=_reject)
    except (ValueError, RecursionError):
        return text


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
padding = st.text(alphabet=" \t\n\r\u00a0\u2003x", max_size=3)


@settings(max_examples=300)
@given(value=json_values, before=padding, after=padding)
def test_json_texts_with_any_padding_match_the_reference(
    value: Any, before: str, after: str
) -> None:
    text = before + json.dumps(value) + after
    assert parse_call_arguments(text) == reference(text)


@settings(max_examples=300)
@given(text=st.text(alphabet='{}[]",:0123456789.eE+-truefalsnNaIiy \t\n\u00a0', max_size=20))
def test_arbitrary_texts_match_the_reference(text: str) -> None:
    assert parse_call_arguments(text) == reference(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        (" \u00a0\n", {}),
        (' {"a": 1}\n', {"a": 1}),
        ('{"a": 1} x', '{"a": 1} x'),
        ('{"a": NaN}', '{"a": NaN}'),
        ("-Infinity", "-Infinity"),
        ("\ufeff{}", "\ufeff{}"),
        ("[" * 100_000, "[" * 100_000),
    ],
)
def test_edge_texts(text: str, expected: Any) -> None:
    assert parse_call_arguments(text) == expected


def test_non_strings_pass_through_and_str_subclasses_parse() -> None:
    marker: Any = {"already": "parsed"}
    assert parse_call_arguments(marker) is marker

    class Text(str):
        pass

    assert parse_call_arguments(Text('{"x": 2}')) == {"x": 2}
