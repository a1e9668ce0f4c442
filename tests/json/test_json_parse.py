"""parse_json equals snapshot_json(json.loads(text)): values, frozen types, errors and their messages.

The reference is Python's own parser followed by the snapshot walk. The suite
runs once per twin (the active one is imported from ``dsh_codegen.json``); the
differential tests at the end compare both twins directly in one pass.
"""

from __future__ import annotations

import json
import json.scanner
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from _shared_helpers import require_compiled_twin

from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, LosslessJsonError, parse_json, snapshot_json
from dsh_codegen.json import _parser
from json_strategies import lossless_values

# --- the reference ---------------------------------------------------------------------------


class _Constant(Exception):
    """json.loads met NaN, Infinity or -Infinity (parse_json rejects them at their position)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _raise_constant(name: str) -> Any:
    raise _Constant(name)


def _outcome(parse: Callable[[str], Any], text: str) -> tuple[Any, ...]:
    try:
        return ("ok", parse(text))
    except (ValueError, TypeError) as exc:
        return ("error", type(exc), str(exc))


def _reference(text: str) -> tuple[Any, ...]:
    """What parse_json must do: json.loads, then the snapshot; constants marked for the caller."""
    try:
        loaded = json.loads(text, parse_constant=_raise_constant)
    except _Constant as exc:
        return ("constant", exc.name)
    except ValueError as exc:
        return ("error", type(exc), str(exc))
    return _outcome(snapshot_json, loaded)


def _typed(value: Any) -> list[Any]:
    """``value`` flattened with every node's exact type (iteratively: deep values welcome)."""
    out: list[Any] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        out.append(type(item))
        if isinstance(item, dict):
            out.append(list(item.keys()))
            stack.extend(item.values())
        elif isinstance(item, list):
            out.append(len(item))
            stack.extend(item)
        else:
            out.append(repr(item))
    return out


def check(text: str, parse: Callable[[str], Any] = parse_json) -> tuple[Any, ...]:
    """Assert ``parse(text)`` agrees with the reference; return the outcome."""
    expected = _reference(text)
    got = _outcome(parse, text)
    if expected[0] == "constant":
        assert got[0] == "error" and got[1] is json.JSONDecodeError, (text, got)
        assert got[2].startswith(f"{expected[1]} is not a JSON number: line "), (text, got)
        return got
    assert got[0] == expected[0], (text, expected, got)
    if got[0] == "ok":
        assert _typed(got[1]) == _typed(expected[1]), text
        assert got[1] == expected[1], text  # also compares str storage widths
    else:
        assert got[1:] == expected[1:], text
    return got


# --- generated texts --------------------------------------------------------------------------

json_texts = st.builds(
    lambda value, ensure_ascii, indent, spaced: json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=(", ", ": ") if spaced else (",", ":"),
    ),
    lossless_values,
    st.booleans(),
    st.sampled_from([None, 0, 2, "\t", "\r\n "]),
    st.booleans(),
)

whitespace = st.text(alphabet=" \t\n\r", max_size=3)

number_texts = st.one_of(
    st.integers().map(str),
    st.integers(min_value=-(2**200), max_value=2**200).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.25e}"),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.30f}"),
    st.from_regex(r"\A-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,4})?\Z"),
)

escape_texts = st.lists(
    st.one_of(
        st.sampled_from(["\\n", "\\t", "\\b", "\\f", "\\r", '\\"', "\\\\", "\\/", "a", "é", "日", "😀"]),
        st.integers(0, 0xFFFF).map(lambda u: f"\\u{u:04x}"),
        st.integers(0, 0xFFFF).map(lambda u: f"\\u{u:04X}"),
        st.sampled_from(["\\ud800", "\\udbff", "\\udc00", "\\udfff", "\\ud83d\\ude00", "\\uD83D\\uDE00"]),
    ),
    max_size=8,
).map(lambda parts: '"' + "".join(parts) + '"')

# Fragments that recombine into near-JSON: most texts are malformed somewhere.
_FRAGMENTS = [
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    '"',
    '"a"',
    '"b"',
    '"\\u',
    "\\",
    "\\ud800",
    "\\udc00",
    "0",
    "1",
    "-",
    "-0",
    ".",
    "5",
    "e",
    "E",
    "+",
    "1e400",
    "-0.0",
    "true",
    "tru",
    "false",
    "null",
    "nul",
    "NaN",
    "Infinity",
    "-Infinity",
    " ",
    "\t",
    "\n",
    "\r",
    "\u00a0",
    "\x01",
    "é",
    "日",
    "😀",
    "\ud800",
    "\ufeff",
    "x",
]
fragment_texts = st.lists(st.sampled_from(_FRAGMENTS), max_size=14).map("".join)


@contextmanager
def _int_digit_limit(limit: int) -> Iterator[None]:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


# --- agreement ---------------------------------------------------------------------------------


@settings(max_examples=400)
@given(text=json_texts, before=whitespace, after=whitespace)
@example(text='{"a": "hello", "b": 42, "c": 2.5, "d": true, "e": ["x", "y", "z"]}', before="", after="")
def test_json_dumps_texts_parse_as_the_snapshot_of_json_loads(text: str, before: str, after: str) -> None:
    assert check(before + text + after)[0] == "ok"


@settings(max_examples=300)
@given(number=number_texts, sign=st.sampled_from(["", "-"]))
@example(number="0.0", sign="-")
@example(number="1e400", sign="")
@example(number="1e400", sign="-")
@example(number="1e-400", sign="-")
@example(number="123456789012345678", sign="-")
@example(number="9223372036854775808", sign="-")
@example(number="0.1e1", sign="")
def test_numbers_agree(number: str, sign: str) -> None:
    text = sign + number if not number.startswith("-") else number
    check(text)
    check(f"[{text}]")
    check(f'{{"n": {text}}}')


@settings(max_examples=500)
@given(
    number=st.one_of(
        st.from_regex(r"\A-?(0|[1-9][0-9]{0,8})\.[0-9]{1,8}([eE][-+]?[0-9]{1,2})?\Z"),
        st.from_regex(r"\A-?[1-9][0-9]{0,14}[eE][-+]?(1[0-9]|2[0-4]|[0-9])\Z"),
        st.from_regex(r"\A-?0\.0{0,20}[1-9][0-9]{0,16}\Z"),
    )
)
@example(number="9007199254740993.0")
@example(number="123456789012345.6e7")
@example(number="0.1")
@example(number="1e22")
@example(number="1e23")
def test_short_decimal_floats_read_back_as_float_does(number: str) -> None:
    # Floats of few digits take the compiled twin's exact fast path: same bits as float().
    expected = float(number)
    if expected == 0.0 and number.startswith("-"):
        return
    assert repr(parse_json(number)) == repr(expected)
    assert repr(parse_json(f"[{number}]")[0]) == repr(expected)


@settings(max_examples=300)
@given(text=escape_texts)
@example(text='"\\ud800\\udc00"')
@example(text='"\\udc00\\ud800"')
@example(text='"\\ud800\\u0041"')
@example(text='"\\ud800\\ud800\\udc00"')
@example(text='"\\ud800"')
def test_strings_with_escapes_and_surrogates_agree(text: str) -> None:
    check(text)
    check(f"[{text}, {text}]")
    check(f"{{{text}: {text}}}")


@settings(max_examples=1000)
@given(text=fragment_texts)
@example(text="")
@example(text="\ufeff{}")
@example(text='"\\u12"')
@example(text='"\\u1234')
@example(text='"\\ud800\\u12"')
def test_near_json_texts_agree_including_errors(text: str) -> None:
    check(text)


@settings(max_examples=300)
@given(text=json_texts, data=st.data())
def test_mutated_json_texts_agree(text: str, data: st.DataObject) -> None:
    chars = list(text)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(chars)))
        action = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        fragment = data.draw(st.sampled_from(_FRAGMENTS))
        if action == "insert":
            chars.insert(at, fragment)
        elif at < len(chars):
            chars[at : at + 1] = [] if action == "delete" else [fragment]
    check("".join(chars))


def test_duplicate_keys_keep_the_first_position_and_the_last_value() -> None:
    value = parse_json('{"a": 1, "b": 2, "a": 3}')
    assert list(value.items()) == [("a", 3), ("b", 2)]
    # A lossy value replaced by a later duplicate is gone, as after json.loads.
    assert check('{"a": -0.0, "b": [1e400], "b": 2, "a": 1}') == ("ok", {"a": 1, "b": 2})


# --- rejections, with their messages ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Expecting value: line 1 column 1 (char 0)"),
        (" \n", "Expecting value: line 2 column 1 (char 2)"),
        # json's own wording, which changed in Python 3.13 (checked against json.loads below).
        (
            "[1,]",
            "Illegal trailing comma before end of array: line 1 column 3 (char 2)"
            if sys.version_info >= (3, 13)
            else "Expecting value: line 1 column 4 (char 3)",
        ),
        (
            '{"a": 1,}',
            "Illegal trailing comma before end of object: line 1 column 8 (char 7)"
            if sys.version_info >= (3, 13)
            else "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)",
        ),
        ('{"a" 1}', "Expecting ':' delimiter: line 1 column 6 (char 5)"),
        ("[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"),
        ("1 x", "Extra data: line 1 column 3 (char 2)"),
        ('"abc', "Unterminated string starting at: line 1 column 1 (char 0)"),
        ('"a\nb"', "Invalid control character at: line 1 column 3 (char 2)"),
        ('"\\x"', "Invalid \\escape: line 1 column 2 (char 1)"),
        ('"\\u12x4"', "Invalid \\uXXXX escape: line 1 column 3 (char 2)"),
        ("\ufeff{}", "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"),
        ("NaN", "NaN is not a JSON number: line 1 column 1 (char 0)"),
        ("[1, Infinity]", "Infinity is not a JSON number: line 1 column 5 (char 4)"),
        ('{"a":\n -Infinity}', "-Infinity is not a JSON number: line 2 column 2 (char 7)"),
        ("[NaN, }", "NaN is not a JSON number: line 1 column 2 (char 1)"),
    ],
)
def test_malformed_texts_raise_json_decode_error(text: str, message: str) -> None:
    with pytest.raises(json.JSONDecodeError) as info:
        parse_json(text)
    assert str(info.value) == message
    if "NaN" not in text and "Infinity" not in text:  # json.loads accepts those
        with pytest.raises(json.JSONDecodeError) as reference:
            json.loads(text)
        assert str(reference.value) == message


@pytest.mark.parametrize(
    "inner",
    ["[1,]", "[1, \n ]", '{"a": 1,}', '{"a": 1 , }', "[1,,]", "[,]", "{,}", '{"a": [1,], "b": 2}', "[[],]"],
)
def test_the_scanner_words_errors_as_the_running_json_does(inner: str) -> None:
    # 3,000 levels: too deep for json.loads, so parse_json's own scanner (not the standard
    # library's fast path) reads it. The reference is json's pure-Python scanner (worded as its
    # C one), given room: the C scanner's depth limit is fixed on 3.12 and later.
    text = "[" * 3000 + inner + "]" * 3000
    decoder = json.JSONDecoder()
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    with pytest.raises(json.JSONDecodeError) as shallow:
        json.loads(inner)
    with pytest.raises(json.JSONDecodeError) as pure:
        decoder.decode(inner)
    assert str(pure.value) == str(shallow.value)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        with pytest.raises(json.JSONDecodeError) as reference:
            decoder.decode(text)
    finally:
        sys.setrecursionlimit(limit)
    with pytest.raises(json.JSONDecodeError) as info:
        parse_json(text)
    assert (str(info.value), info.value.pos) == (str(reference.value), reference.value.pos)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-0.0", '"value" is not lossless JSON: -0.0 does not survive a JSON round trip'),
        ("-0e7", '"value" is not lossless JSON: -0.0 does not survive a JSON round trip'),
        ("1e400", '"value" is not lossless JSON: inf is not a JSON number'),
        ("-1e400", '"value" is not lossless JSON: -inf is not a JSON number'),
        ('{"a": [1, 2, -0.0]}', '"value.a[2]" is not lossless JSON: -0.0 does not survive a JSON round trip'),
        ('{"a b": {"c": 1e999}}', '"value[\\"a b\\"].c" is not lossless JSON: inf is not a JSON number'),
        # The first in the parsed value's order: "a" comes first, holding its last value.
        ('{"a": 1, "b": -0.0, "a": 1e400}', '"value.a" is not lossless JSON: inf is not a JSON number'),
    ],
)
def test_lossy_numbers_raise_lossless_json_error(text: str, message: str) -> None:
    with pytest.raises(LosslessJsonError) as info:
        parse_json(text)
    assert str(info.value) == message
    assert info.value.path_text.startswith("value")


def test_lossless_small_numbers_parse() -> None:
    assert check("-0")[1] == 0
    assert check("1e-400")[1] == 0.0
    assert math.copysign(1.0, parse_json("[0.0]")[0]) == 1.0


def test_a_syntax_error_wins_over_an_earlier_lossy_number() -> None:
    with pytest.raises(json.JSONDecodeError, match="Expecting ',' delimiter"):
        parse_json("[-0.0, 1 2]")


def test_ints_beyond_the_digit_limit_raise_json_loads_value_error() -> None:
    with _int_digit_limit(1000):
        text = "[" + "7" * 1001 + "]"
        with pytest.raises(ValueError) as expected:
            json.loads(text)
        with pytest.raises(ValueError) as got:
            parse_json(text)
        assert type(got.value) is type(expected.value)
        assert str(got.value) == str(expected.value)
        assert "Exceeds the limit (1000 digits)" in str(got.value)
        assert parse_json("-" + "7" * 1000) == -int("7" * 1000)


def test_non_str_input_raises_type_error_naming_the_type() -> None:
    for bad, name in ((b"{}", "bytes"), (None, "NoneType"), (bytearray(b"1"), "bytearray"), (1, "int")):
        with pytest.raises(TypeError, match=f"^parse_json expects a str, not {name}$"):
            parse_json(bad)  # type: ignore[arg-type]


def test_str_subclasses_parse_as_their_value_without_running_overrides() -> None:
    class Text(str):
        def __getitem__(self, index: Any) -> str:
            raise AssertionError("no override runs")

        def startswith(self, *args: Any) -> bool:
            raise AssertionError("no override runs")

    assert parse_json(Text('{"x": [2]}')) == {"x": [2]}
    with pytest.raises(json.JSONDecodeError, match="Extra data"):
        parse_json(Text("1 2"))


# --- results ---------------------------------------------------------------------------------------


def test_every_container_is_frozen() -> None:
    value = parse_json('{"a": [1, {"b": []}, {}], "c": {"d": [[]]}}')
    stack: list[Any] = [value]
    seen = 0
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            assert type(item) is FrozenJsonObject
            stack.extend(item.values())
            seen += 1
        elif isinstance(item, list):
            assert type(item) is FrozenJsonArray
            stack.extend(item)
            seen += 1
    assert seen == 8
    with pytest.raises(TypeError, match="frozen"):
        value["a"] = 1
    with pytest.raises(TypeError, match="frozen"):
        value["a"].append(1)
    # Frozen input is returned as is by the snapshot: parsing makes the snapshot free.
    assert snapshot_json(value) is value


def test_scalars_and_empty_containers_at_the_root() -> None:
    for text in ("null", "true", "false", "0", "-12", "2.5", '"s"', "[]", "{}", " \t[ ]\r\n", "{ }"):
        check(text)
    assert type(parse_json("[]")) is FrozenJsonArray
    assert type(parse_json("{}")) is FrozenJsonObject


@pytest.mark.parametrize("kind", ["array", "object", "mixed"])
def test_100000_deep_texts_parse_without_recursion(kind: str) -> None:
    depth = 100_000
    assert sys.getrecursionlimit() < depth
    if kind == "array":
        text = "[" * depth + "1" + "]" * depth
    elif kind == "object":
        text = '{"k":' * depth + "1" + "}" * depth
    else:
        text = '[{"k":' * (depth // 2) + '"\\u00e9"' + "}]" * (depth // 2)
    value = parse_json(text)
    levels = 0
    while isinstance(value, (list, dict)):
        assert type(value) in (FrozenJsonArray, FrozenJsonObject)
        value = value[0] if isinstance(value, list) else value["k"]
        levels += 1
    assert levels == depth
    assert value in (1, "é")


def test_100000_deep_errors_name_their_position() -> None:
    depth = 100_000
    text = "[" * depth + "]" * (depth - 1)
    with pytest.raises(json.JSONDecodeError) as info:
        parse_json(text)
    assert info.value.msg == "Expecting ',' delimiter"
    assert info.value.pos == len(text)
    with pytest.raises(LosslessJsonError) as lossy:
        parse_json("[" * depth + "-0.0" + "]" * depth)
    assert lossy.value.path == (0,) * depth


# --- the twins ---------------------------------------------------------------------------------------


def _compiled() -> ModuleType:
    return require_compiled_twin("_json_c")


@pytest.mark.once
@settings(max_examples=500)
@given(text=st.one_of(json_texts, fragment_texts, escape_texts, number_texts))
def test_twins_agree_on_every_text(text: str) -> None:
    compiled = _compiled()
    c = _outcome(compiled.parse_json, text)
    p = _outcome(_parser.parse_json, text)
    assert c[0] == p[0]
    if c[0] == "ok":
        assert _typed(c[1]) == _typed(p[1])
    else:
        assert c[1:] == p[1:]


@pytest.mark.once
def test_twins_agree_on_texts_of_every_string_kind() -> None:
    compiled = _compiled()
    # One-byte ASCII and Latin-1, two-byte and four-byte texts, with and without escapes.
    for extra in ("", "é", "日", "😀", "\ud800"):
        for body in (
            '{"k%s": ["v%s", "\\n%s", "\\ud83d\\ude00"]}',
            '["%s\\u0041", 1, "%s", "%s"]',
            # ASCII keys and values inside a wider text: built narrow, keys from the cache.
            '{"key": "%s", "k": ["ab", "a", "", "%s"], "key": {"longer_key_than_thirty_two_characters": 1}}',
        ):
            text = body.replace("%s", extra)
            assert _typed(compiled.parse_json(text)) == _typed(_parser.parse_json(text))
            # == compares str storage widths too: every str must be stored canonically.
            assert compiled.parse_json(text) == json.loads(text)
            check(text, compiled.parse_json)
