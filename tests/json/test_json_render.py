"""render_json_pretty (docs/texts.md, "run_code output") and dump_canonical_json, active twin."""

from __future__ import annotations

import json
import math
import random
import struct
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_codegen.json import LosslessJsonError, dump_canonical_json, render_json_pretty, snapshot_json
from json_strategies import lossless_values, surrogate_free


def test_contract_depth_five_example_byte_for_byte() -> None:
    value = {"a": [1, {"b": {"c": {"d": {"e": [1, {"f": 2}]}}}}]}
    expected = "\n".join(
        [
            "{",
            '  "a": [',
            "    1,",
            "    {",
            '      "b": {',
            '        "c": {',
            '          "d": {"e":[1,{"f":2}]}',
            "        }",
            "      }",
            "    }",
            "  ]",
            "}",
        ]
    )
    assert render_json_pretty(value) == expected
    assert render_json_pretty(snapshot_json(value)) == expected


def test_contract_compact_example() -> None:
    value = [[[[[{"e": [1, {"f": 2}], "g": {}}]]]]]
    rendered = render_json_pretty(value)
    assert rendered.splitlines()[5] == '          {"e":[1,{"f":2}],"g":{}}'


def test_5000_deep_array() -> None:
    value: Any = []
    for _ in range(4999):
        value = [value]
    rendered = render_json_pretty(value)
    assert len(rendered) < 11_000
    assert rendered.startswith("[\n  [\n    [")
    assert rendered.endswith("    ]\n  ]\n]")


def test_100000_deep_values_render_under_the_default_recursion_limit() -> None:
    assert sys.getrecursionlimit() < 100_000
    value: Any = 1
    for level in range(100_000):
        value = {"k": value} if level % 2 else [value]
    rendered = render_json_pretty(value)
    assert rendered.startswith('{\n  "k": [\n    {\n      "k": [\n        {\n          "k": [{"k":[{"k":')
    assert rendered.count("1") == 1
    compact = dump_canonical_json(value)
    assert compact == '{"k":[' * 50_000 + "1" + "]}" * 50_000


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", '"plain"'),
        ("", '""'),
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (-7, "-7"),
        (2**64, "18446744073709551616"),
        (-(2**63), "-9223372036854775808"),
        (2.0, "2.0"),
        (1e-7, "1e-07"),
        (1e300, "1e+300"),
        (0.1, "0.1"),
        ({}, "{}"),
        ([], "[]"),
        ((), "[]"),
        ([{}], "[\n  {}\n]"),
        ({"a": []}, '{\n  "a": []\n}'),
    ],
)
def test_roots_render_as_json(value: Any, text: str) -> None:
    assert render_json_pretty(value) == text


def test_strings_escape_like_json_dumps_and_escape_lone_surrogates() -> None:
    text = 'q" b\\ n\n t\t r\r b\b f\f nul\x00 us\x1f del\x7f é 日 😀 lone\ud800 pair\ud83d\ude00 end\udfff'
    rendered = render_json_pretty({text: [text]})
    expected_string = json.dumps(text, ensure_ascii=False)
    for ch in ("\ud800", "\ud83d", "\ude00", "\udfff"):
        expected_string = expected_string.replace(ch, f"\\u{ord(ch):04x}")
    assert rendered == "{\n  " + expected_string + ": [\n    " + expected_string + "\n  ]\n}"
    rendered.encode("utf-8")
    assert "\\ud800" in rendered and "é 日 😀" in rendered
    # json.loads would join the escaped pair into one character; the rest round-trips.
    assert json.loads(rendered.replace("\\ud83d\\ude00", "X")) == {
        text.replace("\ud83d\ude00", "X"): [text.replace("\ud83d\ude00", "X")]
    }
    assert dump_canonical_json([text]) == "[" + expected_string + "]"


STRING_BASES = {
    "latin1": 'é"x\\',
    "ucs2": '日"\ud800\n',
    "ucs2 no surrogate": '日"x\n' + "y" * 9,
    "ucs4": "😀\t\udc00é",
    "ucs4 no surrogate": "😀\t\x00é" + "日" * 9,
    "ascii": 'abc"\\\x01' + "z" * 20,
}


@pytest.mark.parametrize("kind", list(STRING_BASES))
def test_long_strings_of_every_width(kind: str) -> None:
    base = STRING_BASES[kind]
    text = base * 500
    expected = json.dumps(text, ensure_ascii=False)
    expected = "".join(f"\\u{ord(ch):04x}" if "\ud800" <= ch <= "\udfff" else ch for ch in expected)
    assert render_json_pretty(text) == expected
    assert dump_canonical_json([text]) == f"[{expected}]"


def test_int_text_at_every_width() -> None:
    values = [0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10000, 99999, 10**9 - 1, 10**9, 2**30 - 1, 2**30]
    values += [10**17, 10**18 - 1, 10**18, 2**63 - 1, 2**63, 2**64, 10**30]
    values += [-v for v in values] + [-(2**63)]
    assert dump_canonical_json(values) == json.dumps(values, separators=(",", ":"))
    assert render_json_pretty(values) == json.dumps(values, indent=2)


def _float_samples() -> list[float]:
    rng = random.Random(20260101)
    samples = [0.0, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 1e-4, 5e-324, 1.7976931348623157e308, 2.0**53, 2.0**53 - 1]
    samples += [math.nextafter(1e-4, 0.0), math.nextafter(1e-4, 1.0), 1e16, 1e15 + 0.5, 123456789.125]
    for exponent in range(-20, 60):
        power = math.ldexp(1.0, exponent)
        samples += [power, math.nextafter(power, 0.0), math.nextafter(power, math.inf)]
    # The decimal exponent is estimated from the binary one: both kinds of boundary, both sides.
    for exponent in range(-5, 18):
        power = 10.0**exponent
        samples += [power, math.nextafter(power, 0.0), math.nextafter(power, math.inf), power * 9.999999999999999]
    for _ in range(20_000):
        bits = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        samples += [bits, rng.uniform(1e-5, 1e17), round(rng.random() * 10 ** rng.randint(-4, 15), rng.randint(0, 17))]
    samples = [x for x in samples if math.isfinite(x)]
    return samples + [-x for x in samples if x != 0.0]


def test_float_text_is_float_repr() -> None:
    samples = _float_samples()
    assert dump_canonical_json(samples) == "[" + ",".join(map(repr, samples)) + "]"


def _boundary_floats() -> list[float]:
    """Where a shortest-digits formatter's cases meet, each with its neighbours."""
    tiny = 5e-324
    points = [tiny, 2 * tiny, 3 * tiny, 10 * tiny, 1e-323, 2.2250738585072009e-308, 2.2250738585072014e-308]
    points += [sys.float_info.max, sys.float_info.min, sys.float_info.epsilon, 2.0**53 + 2, 2.0**54, 2.0**63, 2.0**64]
    # Every power of two (the gap below one is half the gap above, except at the least exponent).
    points += [math.ldexp(1.0, e) for e in range(-1074, 1024)]
    # Every power of ten, and the nines just under it (the exponent estimate, the zeros dropped).
    for e in range(-323, 309):
        points += [float(f"1e{e}"), float(f"9.999999999999999e{e - 1}"), float(f"5e{e}") if e < 308 else 1e308]
    # repr switches to exponent notation at 1e16 and below 1e-4.
    points += [1e16, 9999999999999998.0, 1e-4, 1e-5, 9.999999999999999e-05, 0.00010000000000000002]
    # Integer values: exact below 2**53, every other double above it.
    points += [float(i) for i in (1, 2, 9, 10, 99, 100, 101, 2**52 - 1, 2**52, 2**52 + 1, 2**53 - 1, 2**53)]
    points += [1e15, 1e17, 1e21, 1e22, 1e23, 123456789012345680.0, 4.35e15]
    # Short decimals with long binary expansions, and halves that are exact.
    points += [0.1, 0.2, 0.3, 0.5, 0.25, 0.125, 1.5, 2.5, 1e-7, 1.25e-7, 4.94e-322, 1.7976931348623155e308]
    out = []
    for x in points:
        out += [x, math.nextafter(x, 0.0), math.nextafter(x, math.inf)]
    out = [x for x in out if math.isfinite(x) and x != 0.0]
    return out + [-x for x in out]


def test_float_text_is_float_repr_at_the_boundaries() -> None:
    samples = _boundary_floats()
    assert dump_canonical_json(samples) == "[" + ",".join(map(repr, samples)) + "]"
    assert [render_json_pretty(x) for x in samples[:200]] == [repr(x) for x in samples[:200]]


def _not_negative_zero(x: float) -> bool:
    return not (x == 0.0 and math.copysign(1.0, x) < 0.0)


@settings(max_examples=300)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False).filter(_not_negative_zero), max_size=40))
def test_any_float_text_is_float_repr(samples: list[float]) -> None:
    assert render_json_pretty(samples) == json.dumps(samples, indent=2)
    assert dump_canonical_json(samples) == "[" + ",".join(map(repr, samples)) + "]"


def test_negative_zero_is_rejected_as_the_contract_says() -> None:
    with pytest.raises(LosslessJsonError) as info:
        render_json_pretty(-0.0)
    assert str(info.value) == '"value" is not lossless JSON: -0.0 does not survive a JSON round trip'


def test_indent_options() -> None:
    value = {"a": [1, {"b": [2]}]}
    assert render_json_pretty(value, indent=4, max_indent=16) == json.dumps(value, indent=4)
    assert render_json_pretty(value, indent=4, max_indent=4) == '{\n    "a": [1,{"b":[2]}]\n}'
    assert render_json_pretty(value, max_indent=0) == '{"a":[1,{"b":[2]}]}'
    assert render_json_pretty(value, indent=0) == json.dumps(value, indent=0)
    assert render_json_pretty(value, indent=1, max_indent=1) == '{\n "a": [1,{"b":[2]}]\n}'


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"indent": -1}, ValueError, "indent must be >= 0, got -1"),
        ({"max_indent": -3}, ValueError, "max_indent must be >= 0, got -3"),
        ({"indent": 2.0}, TypeError, "indent must be an int, not float"),
        ({"indent": True}, TypeError, "indent must be an int, not bool"),
        ({"max_indent": "10"}, TypeError, "max_indent must be an int, not str"),
    ],
)
def test_bad_options(options: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        render_json_pretty({}, **options)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        ({"a": [float("nan")]}, ("a", 0), "NaN is not a JSON number"),
        ([-0.0], (0,), "-0.0 does not survive a JSON round trip"),
        ({"s": {1, 2}}, ("s",), "type set is not a JSON type"),
        ({"o": {2: 1}}, ("o",), "object key of type int (keys must be exactly str)"),
        ([10**5000], (0,), None),
    ],
)
def test_writers_reject_non_lossless_values(value: Any, path: tuple[Any, ...], reason: str | None) -> None:
    for writer in (render_json_pretty, dump_canonical_json):
        with pytest.raises(LosslessJsonError) as info:
            writer(value)
        assert info.value.path == path
        if reason is not None:
            assert info.value.reason == reason
        else:
            assert info.value.reason.startswith("int with more than")


def test_writers_reject_cycles() -> None:
    value: dict[str, Any] = {"a": []}
    value["a"].append(value)
    for writer in (render_json_pretty, dump_canonical_json):
        with pytest.raises(LosslessJsonError) as info:
            writer(value)
        assert info.value.path == ("a", 0)
        assert info.value.reason == "the container contains itself (a cycle)"


def test_shared_references_render_twice() -> None:
    shared = [1, 2]
    assert dump_canonical_json({"a": shared, "b": [shared]}) == '{"a":[1,2],"b":[[1,2]]}'


def test_canonical_writer_sorts_keys_by_code_point() -> None:
    value = {"b": 1, "a": {"z": [], "é": None, "Z": True, "😀": 0, "\uffff": 1}}
    assert dump_canonical_json(value) == '{"a":{"Z":true,"z":[],"é":null,"\uffff":1,"😀":0},"b":1}'
    assert dump_canonical_json(value, sort_keys=False) == '{"b":1,"a":{"z":[],"é":null,"Z":true,"😀":0,"\uffff":1}}'
    assert dump_canonical_json(snapshot_json(value)) == dump_canonical_json(value)


def test_canonical_writer_checks_every_key_before_sorting() -> None:
    with pytest.raises(LosslessJsonError) as info:
        dump_canonical_json({"b": [float("nan")], 1: "x"})
    assert info.value.path == ()
    assert info.value.reason == "object key of type int (keys must be exactly str)"
    with pytest.raises(LosslessJsonError) as info:
        dump_canonical_json({"b": [float("nan")], 1: "x"}, sort_keys=False)
    assert info.value.path == ("b", 0)


def _reference_render(value: Any, depth: int = 0) -> str:
    """A recursive reading of docs/texts.md's pretty JSON rules (small inputs only)."""
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if not isinstance(value, (dict, list, tuple)) or not value or (depth + 1) * 2 > 10:
        return compact
    pad = "  " * (depth + 1)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {_reference_render(v, depth + 1)}" for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"
    items = [f"{pad}{_reference_render(v, depth + 1)}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + "  " * depth + "]"


@settings(max_examples=150)
@given(value=lossless_values)
def test_render_matches_the_contract_reading(value: Any) -> None:
    rendered = render_json_pretty(value)
    if surrogate_free(value):
        assert rendered == _reference_render(value)
    rendered.encode("utf-8")
    assert json.loads(rendered) == json.loads(json.dumps(value))
