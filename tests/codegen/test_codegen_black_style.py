"""Python SDK files come out of the templates in black's style: no formatter at run time.

black (in the pinned mode below, never the user's configuration) and libcst
(parse and print back) must leave every generated file unchanged: the golden
cases, the hostile catalog and seeded random catalogs of hostile names,
descriptions and dialect schemas. Both are test dependencies only.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from codegen_helpers import CASES, case_names
from dsh_codegen.codegen import ToolSchemaEntry, load_catalog, render_sdk_module

black = pytest.importorskip("black")
libcst = pytest.importorskip("libcst")

#: The pinned mode (docs/codegen.md): black's defaults for Python 3.11, without line wrapping.
MODE = black.Mode(
    target_versions={black.TargetVersion.PY311},
    line_length=1_000_000,
    string_normalization=True,
    is_pyi=False,
    magic_trailing_comma=True,
    preview=False,
)


def _assert_stable(text: str) -> None:
    assert black.format_str(text, mode=MODE) == text
    assert libcst.parse_module(text).code == text


@pytest.mark.parametrize("case", case_names())
def test_golden_files_are_black_and_libcst_stable(case: str) -> None:
    text = render_sdk_module(load_catalog(CASES / case / "catalog.json"), "python")
    _assert_stable(text)
    assert render_sdk_module(load_catalog(CASES / case / "catalog.json"), "python", format=False) == text


NAMES = ["a", "list", "overload", "Literal", "get-sum", "_x", "a\"b", "it's", "\"'\"", "class", "x\\", "é", "1st",
         "Callable", "Awaitable", "Tools", "typing", "builtins", "Never", "TypeAlias", "a b", "\u2028", "\x00z"]
TEXTS = ["", "Plain.", 'ends with a quote"', "ends with backslash\\", '"starts', "'single'", "a */ b", '"""',
         "tab\there", "line\nbreak", "\x85\u2028", "ok 'and' \"both\""]


def _schema(rng: random.Random, depth: int) -> Any:
    leaves: list[Any] = [{"type": "string"}, {"type": "integer", "minimum": 1}, {"type": "null"}, True, False, {},
                         {"enum": [rng.choice(TEXTS), rng.choice(NAMES), 1, None]}, {"const": rng.choice(TEXTS)},
                         {"type": ["string", "null"]}, {"not": {}}]
    if depth <= 0:
        return rng.choice(leaves)
    kind = rng.randrange(8)
    if kind == 0:
        keys = rng.sample(NAMES + ["p", "q", "r"], rng.randrange(1, 5))
        properties = {key: _schema(rng, depth - 1) for key in keys}
        for key in list(properties)[:2]:
            if isinstance(properties[key], dict):
                properties[key] = {**properties[key], "description": rng.choice(TEXTS), "default": rng.choice(TEXTS)}
        return {"type": "object", "properties": properties, "required": keys[: rng.randrange(len(keys) + 1)],
                "additionalProperties": rng.choice([True, False])}
    if kind == 1:
        return {"type": "array", "items": _schema(rng, depth - 1)}
    if kind == 2:
        return {"anyOf": [_schema(rng, depth - 1) for _ in range(rng.randrange(1, 4))]}
    if kind == 3:
        return {"type": "array", "prefixItems": [_schema(rng, depth - 1)], "items": False, "minItems": 1}
    if kind == 4:
        return {"type": "object", "additionalProperties": _schema(rng, depth - 1)}
    if kind == 5:
        return {"$ref": "#/$defs/d", "$defs": {"d": {"type": "object", "properties": {"n": {"$ref": "#/$defs/d"}}}}}
    if kind == 6:
        return {"allOf": [{"type": "object", "properties": {"a": _schema(rng, depth - 1)}},
                          {"type": "object", "properties": {"b": {"type": "string"}}}]}
    return rng.choice(leaves)


@pytest.mark.parametrize("seed", range(40))
def test_random_catalogs_are_black_and_libcst_stable(seed: int) -> None:
    rng = random.Random(seed)
    names = rng.sample(NAMES, rng.randrange(0, 8))
    catalog = [
        ToolSchemaEntry(name, rng.choice(TEXTS), {"type": "object", "properties": {"x": _schema(rng, 3)}},
                        rng.choice([None, _schema(rng, 3)]))
        for name in names
    ]
    _assert_stable(render_sdk_module(catalog, "python"))


def test_long_lines_are_not_wrapped() -> None:
    # The pinned mode has no line limit: a long Literal stays on one line, as black leaves it.
    values = [f"value_{index}" for index in range(200)]
    text = render_sdk_module([ToolSchemaEntry("t", "", {"type": "object", "properties": {"v": {"enum": values}}})], "python")
    assert max(map(len, text.splitlines())) > 2000
    _assert_stable(text)
