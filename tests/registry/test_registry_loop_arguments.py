"""parse_call_arguments (guarantee 156) agrees with json.loads everywhere: a reference model check.

Lossless texts come back frozen (FrozenJsonObject/FrozenJsonArray, equal to
json.loads's value); nesting of any depth parses.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, is_json_value
from dsh_codegen.registry._loop import parse_call_arguments


def _reject(name: str) -> Any:
    raise ValueError(name)


def reference(text: str) -> Any:
    """The behaviour as specified: blank is {}, JSON is parsed (no NaN/Infinity), the rest stays raw."""
    if not text.strip():
        return {}
    try:
        return json.loads(text, parse_constant=_reject)
    except ValueError:
        return text


def _all_frozen(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if type(item) is not FrozenJsonObject:
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            if type(item) is not FrozenJsonArray:
                return False
            stack.extend(item)
    return True


def check(text: str) -> None:
    """Equal to the reference; frozen exactly when the reference value is lossless JSON."""
    got = parse_call_arguments(text)
    expected = reference(text)
    assert got == expected
    assert type(got) is type(expected) or _all_frozen(got)
    if isinstance(expected, (dict, list)) and text.strip():
        assert _all_frozen(got) == is_json_value(expected)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
padding = st.text(alphabet=" \t\n\r\u00a0\u2003x", max_size=3)


@settings(max_examples=300)
@given(value=json_values, before=padding, after=padding)
def test_json_texts_with_any_padding_match_the_reference(value: Any, before: str, after: str) -> None:
    check(before + json.dumps(value) + after)


@settings(max_examples=300)
@given(text=st.text(alphabet='{}[]",:0123456789.eE+-truefalsnNaIiy \t\n\u00a0', max_size=20))
def test_arbitrary_texts_match_the_reference(text: str) -> None:
    check(text)


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
        ("1" * 5000, "1" * 5000),
        ("[1, 2", "[1, 2"),
    ],
)
def test_edge_texts(text: str, expected: Any) -> None:
    assert parse_call_arguments(text) == expected


def test_lossless_texts_come_back_frozen() -> None:
    value = parse_call_arguments('{"a": "hello", "b": 42, "c": 2.5, "d": true, "e": ["x", "y", "z"]}')
    assert type(value) is FrozenJsonObject and type(value["e"]) is FrozenJsonArray
    assert value == {"a": "hello", "b": 42, "c": 2.5, "d": True, "e": ["x", "y", "z"]}


def test_lossy_valid_texts_return_json_loads_plain_value() -> None:
    # The registry's own snapshot then reports "not lossless", as before.
    value = parse_call_arguments('{"x": -0.0, "y": [1e400]}')
    assert type(value) is dict and type(value["y"]) is list
    assert str(value) == "{'x': -0.0, 'y': [inf]}"
    # Too deep for json.loads as well: the raw string, as before.
    deep = "[" * 100_000 + "-0.0" + "]" * 100_000
    assert parse_call_arguments(deep) == deep


def test_deep_nesting_parses() -> None:
    # json.loads raised RecursionError here, which used to keep the raw string.
    depth = 100_000
    value = parse_call_arguments('{"k":' * depth + "[]" + "}" * depth)
    for _ in range(depth):
        assert type(value) is FrozenJsonObject
        value = value["k"]
    assert value == [] and type(value) is FrozenJsonArray


def test_non_strings_pass_through_and_str_subclasses_parse() -> None:
    marker: Any = {"already": "parsed"}
    assert parse_call_arguments(marker) is marker

    class Text(str):
        pass

    assert parse_call_arguments(Text('{"x": 2}')) == {"x": 2}
