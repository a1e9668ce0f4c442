"""Differential test over the whole tool-schema dialect: both twins, and jsonschema (2020-12) as the oracle.

Schemas are generated from every checked keyword (type arrays, any-JSON enum and
const, numeric/string/array/object constraints, simple ASCII patterns, anyOf,
oneOf, allOf, boolean schemas, a recursive ``$ref``); values are shaped after
them with random deviations. ``multipleOf`` uses integers only and patterns
only ASCII constructs, where Python's ``re`` (jsonschema's) and ECMA-262 agree.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from _shared_helpers import compiled_twin

from dsh_codegen.schema import _validator_py
from dsh_codegen.schema._validator import compile_program

_schema_c = compiled_twin("_schema_c")

pytestmark = [
    pytest.mark.once,
    pytest.mark.skipif(_schema_c is None, reason="the compiled twin is not built"),
]

NAMES = ["a", "b", "c d", "é"]
STRINGS = st.sampled_from(["", "a", "ab", "abc", "B9", "é", "a b", "xyz_1"])
NUMBERS = st.one_of(st.integers(-4, 12), st.sampled_from([0.5, 2.0, -1.5, 7.25, 10**20]))
SCALARS = st.none() | st.booleans() | NUMBERS | STRINGS
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(NAMES + ["zz"]), children, max_size=3)
    ),
    max_leaves=8,
)
TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]
PATTERNS = ["^a", "b$", "^[a-c]+$", "[0-9]", "^.{2}$", "x|y", "^(ab)*$"]
REF = {"$ref": "#/$defs/tree"}
TREE = {
    "type": ["object", "integer"],
    "maximum": 5,
    "properties": {"kid": REF, "n": {"type": "integer"}},
    "additionalProperties": False,
}


@st.composite
def keywords_for(draw: Any, types: list[str] | None) -> dict[str, Any]:
    """Type-specific keywords that apply to ``types`` (any type when None)."""
    allowed = set(TYPES) if types is None else set(types)
    out: dict[str, Any] = {}
    if allowed & {"integer", "number"}:
        for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if draw(st.integers(0, 4)) == 0:
                out[keyword] = draw(st.sampled_from([0, 1, 2.5, 5]))
        if draw(st.integers(0, 5)) == 0:
            out["multipleOf"] = draw(st.sampled_from([2, 3]))
    if "string" in allowed:
        if draw(st.integers(0, 3)) == 0:
            out["minLength"] = draw(st.integers(0, 2))
        if draw(st.integers(0, 3)) == 0:
            out["maxLength"] = draw(st.integers(1, 3))
        if draw(st.integers(0, 3)) == 0:
            out["pattern"] = draw(st.sampled_from(PATTERNS))
    if "array" in allowed:
        if draw(st.integers(0, 3)) == 0:
            out["minItems"] = draw(st.integers(0, 2))
        if draw(st.integers(0, 3)) == 0:
            out["maxItems"] = draw(st.integers(1, 3))
        if draw(st.integers(0, 3)) == 0:
            out["uniqueItems"] = draw(st.booleans())
    if "object" in allowed:
        if draw(st.integers(0, 4)) == 0:
            out["minProperties"] = draw(st.integers(0, 2))
        if draw(st.integers(0, 4)) == 0:
            out["maxProperties"] = draw(st.integers(1, 3))
        if draw(st.integers(0, 4)) == 0:
            out["dependentRequired"] = {"a": ["b"]}
        if draw(st.integers(0, 5)) == 0:
            out["propertyNames"] = {"maxLength": 1}
    return out


@st.composite
def leaves(draw: Any) -> Any:
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(st.booleans())
    if choice == 1:
        return dict(REF)
    if choice == 2:
        return {"enum": draw(st.lists(JSON_VALUES, min_size=1, max_size=3))}
    if choice == 3:
        return {"const": draw(JSON_VALUES)}
    types = draw(st.none() | st.lists(st.sampled_from(TYPES[:5]), min_size=1, max_size=2, unique=True))
    schema: dict[str, Any] = {} if types is None else {"type": types[0] if len(types) == 1 else types}
    schema.update(draw(keywords_for(types)))
    return schema


def extend(children: Any) -> Any:
    @st.composite
    def arrays(draw: Any) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array"} if draw(st.booleans()) else {}
        if draw(st.booleans()):
            schema["items"] = draw(children)
        if draw(st.integers(0, 3)) == 0:
            schema["prefixItems"] = draw(st.lists(children, min_size=1, max_size=2))
        if draw(st.integers(0, 3)) == 0:
            schema["contains"] = draw(children)
            if draw(st.booleans()):
                schema["minContains"] = draw(st.integers(0, 2))
            if draw(st.booleans()):
                schema["maxContains"] = draw(st.integers(1, 2))
        schema.update(draw(keywords_for(["array"])))
        return schema

    @st.composite
    def objects(draw: Any) -> dict[str, Any]:
        names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
        schema: dict[str, Any] = {"type": "object"} if draw(st.booleans()) else {}
        if names:
            schema["properties"] = {name: draw(children) for name in names}
        required = [name for name in names + ["zz"] if draw(st.integers(0, 2)) == 0]
        closed = draw(st.sampled_from([None, True, False, "schema"]))
        if closed == "schema":
            schema["additionalProperties"] = draw(children)
        elif closed is not None:
            schema["additionalProperties"] = closed
        if schema.get("additionalProperties") is False:
            required = [name for name in required if name in names]
        if required:
            schema["required"] = required
        schema.update(draw(keywords_for(["object"])))
        return schema

    combinators = st.tuples(
        st.sampled_from(["anyOf", "oneOf", "allOf"]), st.lists(children, min_size=1, max_size=3)
    ).map(lambda pair: {pair[0]: pair[1]})
    return arrays() | objects() | combinators


SCHEMAS = st.recursive(leaves(), extend, max_leaves=10)


@st.composite
def near_values(draw: Any, schema: Any, depth: int = 0) -> Any:
    """A value shaped after ``schema`` (often valid), with random deviations."""
    if type(schema) is bool or depth > 6 or draw(st.integers(0, 7)) == 0:
        return draw(JSON_VALUES)
    if "$ref" in schema:
        return draw(near_values(TREE, depth + 1)) if draw(st.booleans()) else draw(st.integers(0, 6))
    for keyword in ("anyOf", "oneOf", "allOf"):
        if keyword in schema:
            return draw(near_values(draw(st.sampled_from(schema[keyword])), depth + 1))
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    declared = schema.get("type")
    if "items" in schema or "prefixItems" in schema or declared == "array":
        heads = [draw(near_values(sub, depth + 1)) for sub in schema.get("prefixItems", [])]
        return heads + draw(st.lists(near_values(schema.get("items", True), depth + 1), max_size=3))
    if "properties" in schema or declared == "object" or "additionalProperties" in schema:
        value: dict[str, Any] = {}
        for name, sub in schema.get("properties", {}).items():
            if draw(st.integers(0, 3)) > 0:
                value[name] = draw(near_values(sub, depth + 1))
        if draw(st.integers(0, 3)) == 0:
            value["zz"] = draw(near_values(schema.get("additionalProperties", True), depth + 1))
        return value
    return draw(SCALARS)


def check(schema: Any, value: Any) -> None:
    program = compile_program(schema)
    pure = _validator_py.CompiledValidator(program)
    compiled = _schema_c.CompiledValidator(program)
    verdict = pure.is_valid(value)
    assert compiled.is_valid(value) is verdict
    assert jsonschema.Draft202012Validator(schema).is_valid(value) is verdict, (schema, value)
    found = pure.violations(value)
    assert compiled.violations(value) == found
    assert (found == []) is verdict
    assert compiled.validate_args(value) == pure.validate_args(value)


def rooted(schema: Any) -> dict[str, Any]:
    root = {"allOf": [schema]} if type(schema) is bool else dict(schema)
    root["$defs"] = {"tree": TREE}
    return root


@settings(max_examples=300)
@given(st.data())
def test_dialect_twins_and_oracle_agree(data: Any) -> None:
    schema = rooted(data.draw(SCHEMAS))
    jsonschema.Draft202012Validator.check_schema(schema)
    for _ in range(4):
        check(schema, data.draw(near_values(schema)))


def test_a_dialect_program_is_what_runs() -> None:
    program = compile_program(rooted({"type": ["string", "null"]}))
    assert program.dialect
    assert not compile_program({"type": "object", "properties": {"a": {"type": "string"}}}).dialect
