"""Python SDK files come out of the templates in black's style, and survive the user's own formatter.

black (in the pinned mode below, never the user's configuration) and libcst
(parse and print back) must leave every generated file unchanged: the golden
cases, the hostile catalog and seeded random catalogs of hostile names,
descriptions and dialect schemas. The pinned mode is checked on the text
without its ``# fmt: off`` line, which would otherwise make black skip it.
With that line, black and ``ruff format`` on their DEFAULT settings (what a
user's pre-commit runs) leave every generated file byte for byte as it is, so
``dsh-codegen sdk --check`` keeps passing after them (issue 39). All three
are test dependencies only.
"""

from __future__ import annotations

import random
import subprocess
import sys
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


#: The line that makes black and ruff format leave a generated file alone.
SKIP_MARKER = "\n# fmt: off\n"


def _assert_stable(text: str) -> None:
    assert text.count(SKIP_MARKER) == 1 and text.index(SKIP_MARKER) < text.index('"""Typed stubs')
    styled = text.replace(SKIP_MARKER, "\n", 1)
    assert black.format_str(styled, mode=MODE) == styled
    assert libcst.parse_module(text).code == text


def _ruff_format(texts: list[str]) -> list[str]:
    """Each text as ``ruff format`` (defaults, no configuration file) writes it."""
    out = []
    for text in texts:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ruff",
                "format",
                "--isolated",
                "--no-cache",
                "--stdin-filename",
                "tools_sdk.py",
                "-",
            ],
            input=text,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        out.append(done.stdout)
    return out


def _catalogs() -> list[list[ToolSchemaEntry]]:
    return [load_catalog(CASES / case / "catalog.json") for case in case_names()] + [
        _random_catalog(seed) for seed in range(8)
    ]


@pytest.mark.once
def test_generated_files_survive_black_and_ruff_format_on_their_defaults() -> None:
    pytest.importorskip("ruff")
    texts = [render_sdk_module(catalog, "python") for catalog in _catalogs()]
    assert max(max(map(len, text.splitlines())) for text in texts) > 88  # wider than both defaults
    for text in texts:
        assert black.format_str(text, mode=black.Mode()) == text
    assert _ruff_format(texts) == texts


@pytest.mark.once
def test_without_the_marker_the_defaults_would_rewrite_them() -> None:
    # What the marker is for: the golden contract example, as black and ruff would rewrite it.
    pytest.importorskip("ruff")
    text = render_sdk_module(load_catalog(CASES / "contract_example" / "catalog.json"), "python")
    bare = text.replace(SKIP_MARKER, "\n", 1)
    assert black.format_str(bare, mode=black.Mode()) != bare
    assert _ruff_format([bare]) != [bare]


@pytest.mark.parametrize("case", case_names())
def test_golden_files_are_black_and_libcst_stable(case: str) -> None:
    text = render_sdk_module(load_catalog(CASES / case / "catalog.json"), "python")
    _assert_stable(text)
    assert render_sdk_module(load_catalog(CASES / case / "catalog.json"), "python", format=False) == text


NAMES = [
    "a",
    "list",
    "overload",
    "Literal",
    "get-sum",
    "_x",
    'a"b',
    "it's",
    '"\'"',
    "class",
    "x\\",
    "é",
    "1st",
    "Callable",
    "Awaitable",
    "Tools",
    "typing",
    "builtins",
    "Never",
    "TypeAlias",
    "a b",
    "\u2028",
    "\x00z",
]
TEXTS = [
    "",
    "Plain.",
    'ends with a quote"',
    "ends with backslash\\",
    '"starts',
    "'single'",
    "a */ b",
    '"""',
    "tab\there",
    "line\nbreak",
    "\x85\u2028",
    "ok 'and' \"both\"",
]


def _schema(rng: random.Random, depth: int) -> Any:
    leaves: list[Any] = [
        {"type": "string"},
        {"type": "integer", "minimum": 1},
        {"type": "null"},
        True,
        False,
        {},
        {"enum": [rng.choice(TEXTS), rng.choice(NAMES), 1, None]},
        {"const": rng.choice(TEXTS)},
        {"type": ["string", "null"]},
        {"not": {}},
    ]
    if depth <= 0:
        return rng.choice(leaves)
    kind = rng.randrange(8)
    if kind == 0:
        keys = rng.sample(NAMES + ["p", "q", "r"], rng.randrange(1, 5))
        properties = {key: _schema(rng, depth - 1) for key in keys}
        for key in list(properties)[:2]:
            if isinstance(properties[key], dict):
                properties[key] = {**properties[key], "description": rng.choice(TEXTS), "default": rng.choice(TEXTS)}
        return {
            "type": "object",
            "properties": properties,
            "required": keys[: rng.randrange(len(keys) + 1)],
            "additionalProperties": rng.choice([True, False]),
        }
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
        return {
            "allOf": [
                {"type": "object", "properties": {"a": _schema(rng, depth - 1)}},
                {"type": "object", "properties": {"b": {"type": "string"}}},
            ]
        }
    return rng.choice(leaves)


def _random_catalog(seed: int) -> list[ToolSchemaEntry]:
    rng = random.Random(seed)
    names = rng.sample(NAMES, rng.randrange(0, 8))
    return [
        ToolSchemaEntry(
            name,
            rng.choice(TEXTS),
            {"type": "object", "properties": {"x": _schema(rng, 3)}},
            rng.choice([None, _schema(rng, 3)]),
        )
        for name in names
    ]


@pytest.mark.parametrize("seed", range(40))
def test_random_catalogs_are_black_and_libcst_stable(seed: int) -> None:
    _assert_stable(render_sdk_module(_random_catalog(seed), "python"))


def test_long_lines_are_not_wrapped() -> None:
    # The pinned mode has no line limit: a long Literal stays on one line, as black leaves it.
    values = [f"value_{index}" for index in range(200)]
    text = render_sdk_module(
        [ToolSchemaEntry("t", "", {"type": "object", "properties": {"v": {"enum": values}}})], "python"
    )
    assert max(map(len, text.splitlines())) > 2000
    _assert_stable(text)
