"""Catalog loading, the Markdown catalog, the template environment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_codegen.codegen import (
    CatalogError,
    ToolSchemaEntry,
    catalog_from_json,
    load_catalog,
    render_catalog_markdown,
)
from dsh_codegen.codegen._jsontext import JsonTextError, dumps_compact, dumps_pretty

pytestmark = pytest.mark.once


def test_load_catalog_from_path_text_and_pathlike(tmp_path: Path) -> None:
    text = '[{"name": "a", "description": "A.", "parameters": {"type": "object"}, "output_schema": null}]'
    path = tmp_path / "c.json"
    path.write_text(text, encoding="utf-8")
    expected = [ToolSchemaEntry("a", "A.", {"type": "object"}, None)]
    assert load_catalog(text) == expected
    assert load_catalog(str(path)) == expected
    assert load_catalog(path) == expected


def test_catalog_defaults() -> None:
    assert catalog_from_json([{"name": "a"}]) == [ToolSchemaEntry("a", "", {"type": "object"}, None)]


def test_catalog_errors_name_the_source() -> None:
    with pytest.raises(CatalogError) as info:
        catalog_from_json([{"name": "ok"}, {"name": "x", "parameters": 5}], source="tools.json")
    assert str(info.value) == 'tools.json: "[1].parameters" must be an object'
    assert info.value.source == "tools.json"
    with pytest.raises(CatalogError, match=r'^<catalog>: "\[0\]\.name" must be a string$'):
        load_catalog('[{"name": null}]')
    with pytest.raises(CatalogError, match="nesting is too deep"):
        load_catalog("[" * 200_000 + "]" * 200_000)


def test_catalog_rejects_non_utf8(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b'[{"name": "\xff"}]')
    with pytest.raises(CatalogError, match=r"c\.json: the catalog is not UTF-8 text \(invalid start byte at byte 11\)"):
        load_catalog(path)


def test_markdown_catalog_content() -> None:
    catalog = [
        ToolSchemaEntry("b_tool", "Second *tool*\n# not a heading", {"type": "object"}, {"type": "string"}),
        ToolSchemaEntry("a`tool\n", "", {"type": "object", "properties": {"x": {"type": "integer"}}}, None),
    ]
    text = render_catalog_markdown(catalog)
    assert text.startswith(
        '# Tool catalog\n\n2 tools, sorted by name.\n\n## ``"a`tool\\n"``\n\nParameters:\n\n```json\n{\n'
    )
    assert "Output: any JSON value.\n" in text
    assert "## `b_tool`\n\nSecond \\*tool\\* \\# not a heading\n\nParameters:" in text
    assert text.endswith('Output:\n\n```json\n{\n  "type": "string"\n}\n```\n')
    assert len(re.findall(r"^## ", text, flags=re.MULTILINE)) == 2


def test_markdown_catalog_of_odd_schemas() -> None:
    cyclic: dict[str, Any] = {"type": "object"}
    cyclic["properties"] = {"me": cyclic}
    deep: Any = {"type": "string"}
    for _ in range(100_000):
        deep = {"type": "array", "items": deep}
    text = render_catalog_markdown([ToolSchemaEntry("c", "", cyclic, deep)])
    assert '// not JSON: "catalog.properties.me" is circular' in text
    assert text.count('"items"') == 100_000


def test_json_text_matches_the_stdlib_and_rejects_non_json() -> None:
    import json
    import sys

    assert sys.getrecursionlimit() < 5000

    value = {"a": [1, 2.5, None, True, {"b": "ü\n"}], "c": {}, "d": []}
    assert dumps_compact(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert dumps_pretty(value, max_pretty_depth=99) == json.dumps(value, indent=2, ensure_ascii=False)
    assert dumps_pretty({"a": {"b": {"c": 1}}}, max_pretty_depth=1) == '{\n  "a": {"b":{"c":1}}\n}'
    for bad, message in [
        (float("nan"), "nan"),
        ({(1,): 2}, "non-string key"),
        (set(), "set"),
        ({"x": [float("inf")]}, '"catalog.x[0]" is inf'),
        ({"a": [object()]}, '"catalog.a[0]" is a object'),
    ]:
        with pytest.raises(JsonTextError, match=re.escape(message)):
            dumps_compact(bad)
    # A cycle (the fast encoder does not look for one) is named by its path.
    loop: dict[str, Any] = {"a": []}
    loop["a"].append(loop)
    with pytest.raises(JsonTextError, match=re.escape('"catalog.a[0]" is circular')):
        dumps_compact(loop)
    # The deep walk writes exactly what json.dumps writes, scalar keys and -0.0 included.
    odd = {1: -0.0, None: True, 2.5: (1, 2), "s": "\ud800"}
    deep: Any = odd
    for _ in range(5000):
        deep = [deep]
    inner = json.dumps(odd, ensure_ascii=False, separators=(",", ":")).replace("\ud800", "\\ud800")
    expected = "[" * 5000 + inner + "]" * 5000
    assert dumps_compact(deep) == expected


_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=8)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
)
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=25
)


@settings(max_examples=300)
@given(_VALUES)
def test_compact_text_is_the_stdlib_text_on_every_path(value: Any) -> None:
    # dumps_compact takes the lossless-JSON writer first (whichever twin runs),
    # then the stdlib encoder; both must give json.dumps' text, surrogates escaped.
    import json

    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    expected = re.sub("[\ud800-\udfff]", lambda match: f"\\u{ord(match.group()):04x}", expected)
    assert dumps_compact(value) == expected
