"""The writers' output in every string width, their key text and their key sorting (active twin).

The compiled writer builds its output in code units of the widest string seen so
far (widening on the way) and caches the text of short keys; these tests aim at
those paths: widening at every point of a long output, results that must come
out narrower than a string they hold (escaped lone surrogates), the ASCII flag
of the result, keys around the cache's limits and the key sort of the canonical
writer. Every expectation is built from ``json.dumps``.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest

from dsh_codegen.json import _json_py, dump_canonical_json, render_json_pretty


def _escaped(text: str) -> str:
    """``json.dumps(ensure_ascii=False)`` with surrogates escaped, as our writers do."""
    quoted = json.dumps(text, ensure_ascii=False)
    return "".join(f"\\u{ord(ch):04x}" if "\ud800" <= ch <= "\udfff" else ch for ch in quoted)


def _expected_compact(value: Any, sort_keys: bool = True) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
    return "".join(f"\\u{ord(ch):04x}" if "\ud800" <= ch <= "\udfff" else ch for ch in text)


def _expected_pretty(value: Any, depth: int = 0) -> str:
    """docs/texts.md's pretty JSON read recursively (2 spaces, compact from depth 5)."""
    if not isinstance(value, (dict, list)) or not value or (depth + 1) * 2 > 10:
        return _expected_compact(value, sort_keys=False)
    pad = "  " * (depth + 1)
    if isinstance(value, dict):
        items = [f"{pad}{_escaped(k)}: {_expected_pretty(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"
    items = [f"{pad}{_expected_pretty(v, depth + 1)}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + "  " * depth + "]"


def _same_str(actual: str, expected: str) -> None:
    # == compares the storage width too; isascii() reads the ASCII flag.
    assert actual == expected
    assert actual.isascii() == expected.isascii()


WIDTHS = {"ascii": "plain text", "latin1": "naïve café", "ucs2": "日本語 text", "ucs4": "emoji 😀 here"}


@pytest.mark.parametrize("order", list(itertools.permutations(WIDTHS)))
def test_widening_in_the_middle_of_a_long_output(order: tuple[str, ...]) -> None:
    # Several thousand units before each wider string, so the buffer has grown
    # (and holds indentation, numbers and keys) when it widens.
    value = [{"n": i, "x": i / 8, "s": f"item {i}", "t": [True, None]} for i in range(300)]
    for position, width in enumerate(order):
        value.insert(75 * (position + 1), {"text": WIDTHS[width], width: [WIDTHS[width]] * 3})
    _same_str(render_json_pretty(value), _expected_pretty(value))
    _same_str(dump_canonical_json(value), _expected_compact(value))


@pytest.mark.parametrize(
    "value",
    [
        ["\ud800"],
        ["a", "\udfff", "b"],
        {"\ud83d": "\ude00"},
        ["é", "\ud800"],
        ["\ud800", "é"],
        ["\udc00x", "日"],
        ["日", "\udc00"],
        ["\ud800", "😀"],
        ["😀\ud800"],
        ["\ud800" * 5000, "x" * 5000],
    ],
)
def test_wide_strings_that_write_narrow_text(value: Any) -> None:
    # A string of width 2 holding only escaped surrogates adds no wide character:
    # the result must still be stored as narrowly as CPython would store it.
    _same_str(render_json_pretty(value), _expected_pretty(value))
    _same_str(dump_canonical_json(value), _expected_compact(value))


def test_one_call_does_not_change_the_next() -> None:
    wide = {"k": ["😀" * 3000, "日" * 3000]}
    assert render_json_pretty(wide) == _expected_pretty(wide)
    for value in (["plain"], ["é"], [1.5, 2], "x"):
        _same_str(render_json_pretty(value), _expected_pretty(value))
        _same_str(dump_canonical_json(value), _expected_compact(value))


@pytest.mark.parametrize("length", [0, 1, 15, 16, 17, 31, 32, 33, 43, 44, 45, 46, 47, 48, 60])
def test_keys_around_the_cached_lengths(length: int) -> None:
    key = "k" * length
    records = [{key: i, "other": [key, {key: None}]} for i in range(5)]
    value = {"records": records, "deep": [[[[[{key: records[:2]}]]]]]}
    assert render_json_pretty(value) == _expected_pretty(value)
    assert dump_canonical_json(value) == _expected_compact(value)


@pytest.mark.parametrize(
    "key",
    ['quote"d', "back\\slash", "new\nline", "tab\t", "\x00", "\x7f", "é", "日本", "😀", "\ud800", "a" * 44 + "é"],
)
def test_keys_that_need_escapes_or_are_not_ascii(key: str) -> None:
    value = [{key: 1, "plain": {key: [key]}} for _ in range(3)]
    assert render_json_pretty(value) == _expected_pretty(value)
    assert dump_canonical_json(value, sort_keys=False) == _expected_compact(value, sort_keys=False)


def test_many_distinct_keys_share_the_cache() -> None:
    # Far more distinct key objects than cache entries, met again and again in
    # a shuffled order, with the same keys in pretty and in compact containers.
    rng = random.Random(7)
    keys = [f"key_{i}_{'x' * (i % 40)}" for i in range(3000)]
    objects = []
    for _ in range(20):
        chosen = rng.sample(keys, 60)
        objects.append({k: rng.randrange(1000) for k in chosen})
    value = {"objects": objects, "deep": [[[[objects[:3]]]]]}
    assert render_json_pretty(value) == _expected_pretty(value)
    assert dump_canonical_json(value) == _expected_compact(value)
    assert dump_canonical_json(value, sort_keys=False) == _expected_compact(value, sort_keys=False)


def test_equal_keys_that_are_distinct_objects() -> None:
    value = [{"".join(["ke", "y"]): i} for i in range(50)] + [{"key": "done"}]
    assert render_json_pretty(value) == _expected_pretty(value)


@pytest.mark.parametrize("size", [2, 16, 17, 33, 100, 5000])
@pytest.mark.parametrize("order", ["sorted", "reversed", "shuffled", "runs"])
def test_canonical_sort_of_objects_of_every_size(size: int, order: str) -> None:
    rng = random.Random(size)
    alphabet = ["a", "b", "é", "ÿ", "日", "😀", "\x00", "\uffff", "Z", "\ud800"]
    keys = {"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 6))) for _ in range(size * 2)}
    ordered = sorted(keys)[:size]
    if order == "reversed":
        ordered.reverse()
    elif order == "shuffled":
        rng.shuffle(ordered)
    elif order == "runs":
        half = len(ordered) // 2
        ordered = ordered[half:] + ordered[:half]
    value = {k: [k, len(k)] for k in ordered}
    assert dump_canonical_json(value) == _expected_compact(value)
    assert dump_canonical_json({"outer": value, "": value}) == _expected_compact({"outer": value, "": value})


def test_canonical_sort_of_keys_that_are_prefixes_of_each_other() -> None:
    value = {k: k for k in ["ab", "a", "a\x00", "", "abc", "b", "aé", "a日", "a😀", "aa"]}
    assert dump_canonical_json(value) == _expected_compact(value)


@pytest.mark.parametrize("first", ["", "é", "日", "😀"])
def test_numbers_and_literals_after_widening(first: str) -> None:
    scalars = [2**70, -(2**64), 1e300, 1e-7, 0.1, 123456789.125, 12345, -7, 0, True, False, None, 1e22]
    value = [first, *scalars, {"k": scalars}, "😀" if first else "", *scalars]
    _same_str(render_json_pretty(value), _expected_pretty(value))
    _same_str(dump_canonical_json(value), _expected_compact(value))


class _Record:
    def __init__(self) -> None:
        self.name = "rec"
        self.items = [1, 2]


def _dicts_of_every_table_layout() -> list[dict[str, Any]]:
    """Dicts whose hash tables differ: str keys only, with holes, general, split."""
    holes = {"a": 1, "b": 2, "c": [3], "d": 4}
    del holes["b"]
    del holes["d"]
    general: dict[Any, Any] = {1: "gone", "a": 1, "z": {"y": 2}}
    del general[1]  # only str keys left, in a table built for any key
    split = _Record().__dict__  # an instance dict (its keys shared with the class)
    return [{"x": 1, "y": [2, 3]}, holes, general, split, {}]


def test_every_dict_table_layout() -> None:
    for value in _dicts_of_every_table_layout():
        nested = {"outer": value, "list": [value, value]}
        assert render_json_pretty(value) == _expected_pretty(value)
        assert render_json_pretty(nested) == _expected_pretty(nested)
        assert dump_canonical_json(nested) == _expected_compact(nested)
        assert dump_canonical_json(nested, sort_keys=False) == _expected_compact(nested, sort_keys=False)


@pytest.mark.once
def test_every_dict_table_layout_writes_alike_in_both_twins() -> None:
    import importlib

    try:
        compiled = importlib.import_module("dsh_codegen._json_c")
    except ImportError:
        pytest.skip("dsh_codegen._json_c is not built")
    for value in _dicts_of_every_table_layout():
        assert compiled.render_json_pretty({"v": value, "w": [value]}) == _json_py.render_json_pretty(
            {"v": value, "w": [value]}
        )
        assert compiled.dump_canonical_json(value) == _json_py.dump_canonical_json(value)
