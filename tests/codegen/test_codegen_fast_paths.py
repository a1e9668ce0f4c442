"""The renderers' fast paths give the same text as the general paths they skip.

The TypeScript walk writes leaf members (plain scalars, arrays of them, string
enums) in place and caches member and literal texts;
names have ASCII fast paths. Each is checked here against the general path, and the caches
against cleared and overflowing states. Also: which heavy modules a plain
import loads.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from codegen_helpers import CASES, REPO
from dsh_codegen.codegen import json_schema_to_ts, load_catalog, render_py_sdk, render_ts_sdk
from dsh_codegen.codegen import _py_sdk, _ts_types
from dsh_codegen.codegen._jsontext import json_string
from dsh_codegen.codegen._literals import code_string
from dsh_codegen.codegen._literals import py_comment
from dsh_codegen.codegen._naming import _camel_case_general, camel_case, ts_key
from dsh_codegen.codegen._nodes import SCALAR_NODE_KEYS, doc_of
from dsh_codegen.codegen._naming import ClassNamer
from dsh_codegen.codegen._py_types import PyTypes, _plain_scalar, _plain_scalar_field

pytestmark = pytest.mark.once

CATALOG60 = load_catalog(CASES / "catalog60" / "catalog.json")
HOSTILE = load_catalog(CASES / "hostile" / "catalog.json")

_TS_BARE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_CODE_EXTRA = re.compile("[\x7f-\x9f\u2028\u2029]")

type_names = st.sampled_from(["object", "array", "string", "number", "integer", "boolean", "null"])
descriptions = st.none() | st.sampled_from(["", "a | b", "x & y", "*/", "two\nlines", "plain"])
keys = st.sampled_from(["a", "b-c", "$x", "_", "é", "a|b", "__proto__", ""]) | st.text(max_size=3)


def _with_description(schema: dict[str, Any], description: str | None) -> dict[str, Any]:
    return schema if description is None else {**schema, "description": description}


leaves = st.builds(
    _with_description,
    st.fixed_dictionaries({"type": type_names.filter(lambda name: name not in ("object", "array"))})
    | st.fixed_dictionaries({"type": st.just("array")}, optional={"items": st.fixed_dictionaries({"type": type_names})})
    | st.fixed_dictionaries(
        {
            "enum": st.lists(
                st.sampled_from(["a", "b|c", "d&e", 'q"', "\u2028", "\x7f"]) | st.integers(), min_size=1, max_size=3
            )
        },
        optional={"type": st.sampled_from(["string", "integer"])},
    ),
    descriptions,
)
schemas = st.recursive(
    leaves | st.just({}),
    lambda inner: (
        st.fixed_dictionaries({"type": st.just("array"), "items": inner})
        | st.fixed_dictionaries({"oneOf": st.lists(inner, min_size=1, max_size=3)})
        | st.builds(
            _with_description,
            st.fixed_dictionaries(
                {"type": st.just("object"), "properties": st.dictionaries(keys, inner, max_size=4)},
                optional={"additionalProperties": st.booleans(), "required": st.lists(keys, max_size=3)},
            ),
            descriptions,
        )
    ),
    max_leaves=16,
)


@given(schemas, keys, st.booleans(), st.integers(min_value=0, max_value=3))
def test_a_member_renders_as_its_schema_does_alone(schema: Any, key: str, required: bool, indent: int) -> None:
    # Inline leaf members and stack-walked members must agree: the member text is
    # exactly the schema's own text at the member's indent.
    schema = {k: v for k, v in schema.items() if k != "description"} if isinstance(schema, dict) else schema
    wrapper = {"type": "object", "properties": {key: schema}, "additionalProperties": False}
    if required:
        wrapper["required"] = [key]
    pad = "  " * (indent + 1)
    expected = (
        f"{{\n{pad}{ts_key(key)}{'' if required else '?'}: {json_schema_to_ts(schema, indent + 1)};\n{'  ' * indent}}}"
    )
    assert json_schema_to_ts(wrapper, indent) == expected


@given(schemas)
@example({"type": "object", "properties": {"a": {"enum": ["x", "y"]}}, "additionalProperties": False})
@example({"type": "object", "properties": {"a|b": {"type": "string"}}, "additionalProperties": False})
def test_an_array_of_a_schema_brackets_by_the_bar_rule(schema: Any) -> None:
    item = json_schema_to_ts(schema)
    expected = f"({item})[]" if "|" in item or "&" in item else f"{item}[]"
    assert json_schema_to_ts({"type": "array", "items": schema}) == expected


def _render_both(catalog: list[Any]) -> tuple[str, str]:
    return render_ts_sdk(catalog), render_py_sdk(catalog)


def test_cached_texts_never_change_the_output(monkeypatch: pytest.MonkeyPatch) -> None:
    _ts_types.clear_caches()
    cold = _render_both(CATALOG60) + _render_both(HOSTILE)
    warm = _render_both(CATALOG60) + _render_both(HOSTILE)
    assert warm == cold
    # A cache that overflows (cleared every few entries) gives the same text too.
    monkeypatch.setattr(_ts_types, "_CACHE_LIMIT", 3)
    _ts_types.clear_caches()
    assert _render_both(CATALOG60) + _render_both(HOSTILE) == cold
    assert len(_ts_types._MEMBERS) <= 3
    assert (CASES / "catalog60" / "ts_sdk.md").read_text(encoding="utf-8") == cold[0]


def test_equal_text_of_different_types_is_not_confused_by_the_caches() -> None:
    # The literal cache holds only all-str enums: 1, True and "1" stay distinct.
    assert json_schema_to_ts({"enum": ["1"]}) == '"1"'
    assert json_schema_to_ts({"enum": [1]}) == "1"
    assert json_schema_to_ts({"enum": [True]}) == "true"
    assert json_schema_to_ts({"enum": ["1"]}) == '"1"'


annotation_values = st.none() | st.booleans() | st.integers() | descriptions | st.lists(st.integers(), max_size=2)


@given(
    st.sampled_from(["string", "number", "integer", "boolean", "null", "object", "array"]) | st.integers(),
    st.dictionaries(
        st.sampled_from(sorted(SCALAR_NODE_KEYS - {"type"}) + ["default", "minimum", "format"]),
        annotation_values,
        max_size=4,
    ),
)
@example("string", {"description": "  two\nlines\x7f ", "title": "T"})
@example("integer", {"description": 3})
def test_a_plain_scalar_fields_comment_is_its_doc(declared: object, annotations: dict[str, Any]) -> None:
    # The Python walk's scalar fields skip doc_of: a plain scalar's keys add no notes.
    schema = {"type": declared, **annotations}
    plain = _plain_scalar_field(schema)
    assert (plain is None) == (_plain_scalar(schema) is None)
    if plain is not None:
        assert plain == (_plain_scalar(schema), py_comment(doc_of(schema)))


@given(leaves | schemas, st.sampled_from(["v", "list", "str", "Literal"]), st.booleans())
@example({"type": "array", "items": {"type": "null"}}, "list", True)
@example({"enum": ["a | b"] * 1001}, "v", True)
@example({"type": "array", "items": {"type": "string"}, "minItems": 1}, "str", True)
def test_a_field_is_annotated_as_its_schema_alone(schema: Any, key: str, qualify: bool) -> None:
    # Literal and array-of-scalar fields are written without the walk's frames: the same
    # text as the general path gives the schema at the root, shadowed names included.
    wrapper = {"type": "object", "properties": {key: schema}, "required": [key], "additionalProperties": False}
    types = PyTypes(ClassNamer(), qualify)
    types.type_text(wrapper, "Wrapper")
    declared = types.classes[-1].text.splitlines()
    alone = PyTypes(ClassNamer(), qualify).type_text(schema, "Wrapper" + camel_case(key), types.shadow_for([key]))
    assert f"    {key}: {alone}" in declared


@given(st.lists(schemas, max_size=4))
def test_the_tree_walk_of_property_names_matches_the_guarded_walk(values: list[Any]) -> None:
    names = _py_sdk._tree_property_names(values)
    assert names is not None
    assert names == _py_sdk._guarded_property_names(values)


def test_property_names_of_cycles_subclasses_and_shared_subtrees(monkeypatch: pytest.MonkeyPatch) -> None:
    class Mapping(dict):  # type: ignore[type-arg]
        pass

    cyclic: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    cyclic["properties"]["self"] = cyclic
    looped: list[Any] = [{"properties": {"b": {}}}]
    looped.append(looped)
    sub = Mapping(properties={"c": {}, 1: {}}, items=[{"properties": {"d": {}}}])
    # A cycle exhausts the tree walk's budget and a subclass stops it; both then take the guard.
    for value, expected in ((cyclic, {"a", "self"}), (looped, {"b"}), (sub, {"c", "d"})):
        assert _py_sdk._tree_property_names([value]) is None
        assert _py_sdk._property_names([value]) == expected
    shared = {"properties": {"e": {}}}
    wide = [[shared] * 10 for _ in range(10)]
    assert _py_sdk._tree_property_names([wide]) == {"e"}  # a shared subtree within the budget: walked again
    monkeypatch.setattr(_py_sdk, "_TREE_VALUES", 50)
    assert _py_sdk._tree_property_names([wide]) is None
    assert _py_sdk._property_names([wide]) == {"e"}


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=12))
def test_ascii_camel_case_matches_the_general_path(name: str) -> None:
    assert camel_case(name) == _camel_case_general(name)


@given(st.text(max_size=8) | st.sampled_from(["a$b", "$", "_9", "9a", "é", "a-b", "", "\ud800"]))
def test_ts_key_is_bare_exactly_for_the_contract_pattern(name: str) -> None:
    assert (ts_key(name) == name) == bool(_TS_BARE.match(name))


@given(st.text(max_size=8) | st.sampled_from(["\x7f", "\x85", "\u2028", "\ud800", 'a"b\\', "\x00"]))
def test_code_string_fast_path_matches_the_escaping_rules(text: str) -> None:
    expected = _CODE_EXTRA.sub(lambda match: f"\\u{ord(match.group()):04x}", json_string(text))
    assert code_string(text) == expected


def test_import_loads_no_template_engine_or_formatter() -> None:
    code = (
        "import sys, dsh_codegen\n"
        "from dsh_codegen.codegen import render_sdk_module, load_catalog\n"
        "before = sorted(m for m in ('jinja2', 'black', 'libcst') if m in sys.modules)\n"
        f"catalog = load_catalog({str(CASES / 'contract_example' / 'catalog.json')!r})\n"
        "render_sdk_module(catalog, 'typescript'); render_sdk_module(catalog, 'python')\n"
        "after = sorted(m for m in ('jinja2', 'black', 'libcst') if m in sys.modules)\n"
        "print(before, after)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "[] []"


def test_cycles_and_depth_render_as_the_dialect_says() -> None:
    cyclic: dict[str, Any] = {"type": "object", "properties": {}}
    cyclic["properties"]["self"] = cyclic
    looping: dict[str, Any] = {"oneOf": [{"type": "string"}]}
    looping["oneOf"].append({"type": "array", "items": looping})
    deep: dict[str, Any] = {"type": "string"}
    for level in range(_ts_types.MAX_MULTILINE_DEPTH + 2):
        deep = {"type": "object", "properties": {f"p{level}": deep}, "required": [f"p{level}"]}
    assert "self?: unknown" in json_schema_to_ts(cyclic)
    assert json_schema_to_ts(looping) == "string | unknown[]"
    # Past the multi-line depth an object is written on one line.
    assert "p2: { p1: { p0: string } & Record<string, JsonValue> } & Record<string, JsonValue>;" in json_schema_to_ts(
        deep
    )


def test_a_render_near_the_recursion_limit_writes_the_same_text() -> None:
    # The walk keeps its own list of unfinished containers: a caller near the recursion
    # limit gets the same text, never "unknown" for a node it could not read.
    schema: dict[str, Any] = {"type": "string"}
    for level in range(12):
        schema = {
            "type": "object",
            "properties": {f"p{level}": schema, "e": {"const": level}, "u": {"oneOf": [{"type": "null"}, schema]}},
        }
    expected = json_schema_to_ts(schema)

    def at_depth(frames: int) -> str:
        return json_schema_to_ts(schema) if frames <= 0 else at_depth(frames - 1)

    frame, used = sys._getframe(), 0
    while frame is not None:
        frame, used = frame.f_back, used + 1  # type: ignore[assignment]
    for margin in (120, 60, 40, 25):
        assert at_depth(sys.getrecursionlimit() - used - margin) == expected


def test_odd_object_parts_render_unknown() -> None:
    # An object with a malformed part is unknown; its siblings render as usual.
    odd_parts: list[dict[Any, Any]] = [
        {"required": "a"},
        {"properties": [1]},
        {"properties": {1: {}}},
        {"required": ["a", 2], "properties": {"a": {}}},
    ]
    for odd in odd_parts:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"m": {"type": "object", **odd}, "n": {"type": "string"}},
        }
        expected = "{\n  m?: unknown;\n  n?: string;\n} & Record<string, JsonValue>"
        assert json_schema_to_ts(schema) == expected


def test_record_objects_render_as_index_signatures() -> None:
    # The map form {"additionalProperties": {schema}} is a record type (the dialect), read in place.
    schema = {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}
    expected = "{\n  m?: { [key: string]: string };\n} & Record<string, JsonValue>"
    assert json_schema_to_ts(schema) == expected
    with_properties = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": {"type": "string"},
    }
    assert json_schema_to_ts(with_properties) == ("{\n  a?: number;\n} & Record<string, JsonValue>")
