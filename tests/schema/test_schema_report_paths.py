"""Violation paths and texts the reporting walks must render exactly (both twins, every root naming).

The compiled twin writes each message straight into one ``str`` from its path
arena; these cases pin the shapes that path takes: non-ASCII keys of every
width, keys that need JSON escapes or bracket quoting, indices past the cached
range, paths long enough to leave the inline buffers, unrooted paths, and
values that only Python can classify (the fallback walk).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from _shared_helpers import compiled_twin

from dsh_codegen.json._paths import format_path, quote_path
from dsh_codegen.schema import Violation, compile_validator
from dsh_codegen.schema import _validator_py
from dsh_codegen.schema._validator import compile_program

_schema_c = compiled_twin("_schema_c")

KEYS = ["plain", "é", "日本", "\U0001f600", "a b", 'quote"d', "back\\slash", "tab\tkey", "0", "", "$x", "\ud800"]


def _expected_where(segments: tuple[str | int, ...], root: str, alias: str) -> str:
    """The quoted path as the shared renderer writes it (the contract's reference)."""
    if not segments:
        return quote_path(root or alias)
    text = format_path(list(segments), root)
    return quote_path(text)


def _nested(keys: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    schema: dict[str, Any] = {"type": "string"}
    value: Any = 5
    for key in reversed(keys):
        schema = {"type": "object", "properties": {key: schema}, "additionalProperties": False}
        value = {key: value}
    return schema, value


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(("root", "alias"), [("value", "value"), ("", "arguments"), ("x y", "x y"), ("é", "é")])
def test_key_paths_render_like_the_shared_renderer(key: str, root: str, alias: str) -> None:
    schema, value = _nested(["outer", key, "inner"])
    validator = compile_validator(schema)
    found = validator.validate_args(value) if alias == "arguments" else validator.violations(value, root)
    path = ("outer", key, "inner")
    assert found == [Violation(path, "type", _expected_where(path, root, alias) + " must be a string")]


@pytest.mark.parametrize("key", KEYS)
def test_undeclared_and_missing_keys_render_like_the_shared_renderer(key: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            "req": {
                "type": "object",
                "properties": {key: {"type": "null"}},
                "required": [key],
                "additionalProperties": False,
            }
        },
    }
    validator = compile_validator(schema)
    found = validator.violations({"req": {key + "!": None}})
    assert found == [
        Violation(("req", key), "required", "missing required property " + _expected_where(("req", key), "value", "")),
        Violation(
            ("req", key + "!"),
            "additionalProperties",
            _expected_where(("req", key + "!"), "value", "")
            + " is not a declared property (additionalProperties: false)",
        ),
    ]


def test_indices_past_the_cached_range_and_long_paths() -> None:
    depth = 40  # more segments than any inline buffer holds
    schema: dict[str, Any] = {"type": "integer"}
    value: Any = "x"
    filler: Any = 0  # a valid sibling at each level
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
        value = [filler] * 300 + [value]
        filler = []
    path = (300,) * depth
    found = compile_validator(schema).violations(value)
    assert found == [Violation(path, "type", _expected_where(path, "value", "value") + " must be an integer")]
    assert found[0].message.startswith('"value[300][300]')


def test_many_violations_leave_the_inline_record_buffer() -> None:
    schema = {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}
    value = [{"n": "bad"} if i % 2 else {} for i in range(50)]
    found = compile_validator(schema).violations(value)
    assert [v.path for v in found] == [(i, "n") for i in range(50)]
    assert [v.keyword for v in found] == ["required" if i % 2 == 0 else "type" for i in range(50)]


def test_values_only_python_can_classify_still_report_in_order() -> None:
    class Text(str):
        pass

    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {}},
        "additionalProperties": True,
    }
    value = {"a": Text("1"), "b": 3, "c": {1: 2}, "d": {"e": [1, set()]}, "f": Decimal(1)}
    found = compile_validator(schema).violations(value)
    assert [(v.path, v.keyword) for v in found] == [
        (("a",), "lossless"),
        (("b",), "type"),
        (("c",), "lossless"),
        (("d", "e", 1), "lossless"),
        (("f",), "lossless"),
    ]


@pytest.mark.once
@pytest.mark.skipif(_schema_c is None, reason="the compiled twin is not built")
@pytest.mark.parametrize("key", KEYS)
def test_twins_render_identically(key: str) -> None:
    schema = {
        "type": "object",
        "properties": {
            key: {"type": "array", "items": {"type": "string", "enum": ["a"]}},
            "k": {"oneOf": [{"type": "string"}, {"type": "string"}]},
        },
        "required": [key, "k"],
        "additionalProperties": False,
    }
    program = compile_program(schema)
    compiled = _schema_c.CompiledValidator(program)
    pure = _validator_py.CompiledValidator(program)
    values: list[Any] = [
        {key: ["b", 1, "a"] * 100, "k": "s", key + "?": 1},
        {},
        [],
        {key: [], "k": 1.5},
        {key: ["a"], "k": "s"},
    ]
    for value in values:
        for root in ("value", "", "a b", "日本"):
            assert compiled.violations(value, root) == pure.violations(value, root)
        assert compiled.validate_args(value) == pure.validate_args(value)
