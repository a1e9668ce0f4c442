"""Differential test: both twins agree on every verdict and message, and with jsonschema's verdict."""

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

NAMES = ["a", "b", "c", "a b", "é", "$x"]
STRINGS = st.sampled_from(["", "a", "b", "red", "green", "é", "a b"])
INTS = st.one_of(st.integers(-3, 3), st.sampled_from([2**60, -(2**53) - 1, 10**30]))
FLOATS = st.one_of(
    st.sampled_from([1.0, 2.5, -1.5, 0.5, 3.0, 1e300]),
    st.floats(-10, 10, allow_nan=False).filter(lambda f: not (f == 0.0 and str(f).startswith("-"))),
)
SCALAR_VALUES: dict[str, Any] = {
    "string": STRINGS,
    "integer": st.one_of(INTS, st.sampled_from([1.0, -2.0])),
    "number": st.one_of(INTS, FLOATS),
    "boolean": st.booleans(),
    "null": st.none(),
}


@st.composite
def scalar_schemas(draw: Any) -> dict[str, Any]:
    type_name = draw(st.sampled_from(list(SCALAR_VALUES)))
    schema: dict[str, Any] = {"type": type_name}
    values = SCALAR_VALUES[type_name]
    if draw(st.booleans()):
        schema["enum"] = draw(st.lists(values, min_size=1, max_size=3))
    if draw(st.integers(0, 3)) == 0:
        schema["const"] = draw(st.sampled_from(schema["enum"])) if "enum" in schema else draw(values)
    if draw(st.integers(0, 4)) == 0:
        schema["description"] = "d"
    return schema


def extend(children: Any) -> Any:
    arrays = st.builds(lambda items: {"type": "array", "items": items}, children) | st.just({"type": "array"})

    @st.composite
    def objects(draw: Any) -> dict[str, Any]:
        names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
        schema: dict[str, Any] = {"type": "object"}
        if names or draw(st.booleans()):
            schema["properties"] = {name: draw(children) for name in names}
        required = [name for name in names if draw(st.booleans())]
        if required:
            schema["required"] = required
        closed = draw(st.sampled_from([None, True, False]))
        if closed is not None:
            schema["additionalProperties"] = closed
        return schema

    one_of = st.lists(children, min_size=2, max_size=3).map(lambda branches: {"oneOf": branches})
    return arrays | objects() | one_of


SCHEMAS = st.recursive(scalar_schemas() | st.just({}), extend, max_leaves=12)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | INTS | FLOATS | STRINGS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(NAMES + ["zz"]), children, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def near_values(draw: Any, schema: dict[str, Any]) -> Any:
    """A value shaped after ``schema`` (valid more often than not), with random deviations."""
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON_VALUES)
    if "oneOf" in schema:
        return draw(near_values(draw(st.sampled_from(schema["oneOf"]))))
    type_name = schema.get("type")
    if type_name is None:
        return draw(JSON_VALUES)
    if type_name in SCALAR_VALUES:
        if "const" in schema and draw(st.booleans()):
            return schema["const"]
        if "enum" in schema and draw(st.booleans()):
            return draw(st.sampled_from(schema["enum"]))
        return draw(SCALAR_VALUES[type_name])
    if type_name == "array":
        items = schema.get("items", {})
        return draw(st.lists(near_values(items), max_size=3))
    value: dict[str, Any] = {}
    for name, sub in schema.get("properties", {}).items():
        if draw(st.integers(0, 3)) > 0:
            value[name] = draw(near_values(sub))
    if draw(st.integers(0, 3)) == 0:
        value["zz"] = draw(JSON_VALUES)
    return value


def check(schema: dict[str, Any], value: Any) -> None:
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
    assert compiled.violations(value, "out") == pure.violations(value, "out")


@settings(max_examples=400)
@given(st.data())
def test_twins_and_oracle_agree(data: Any) -> None:
    schema = data.draw(SCHEMAS)
    jsonschema.Draft202012Validator.check_schema(schema)
    for _ in range(3):
        check(schema, data.draw(near_values(schema)))


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({}, float("nan")),
        ({"type": "number"}, -0.0),
        ({"type": "integer"}, float("-inf")),
        ({"type": "array", "items": {"type": "string"}}, ("a", 1)),
        ({"type": "object"}, type("D", (dict,), {})(a=1)),
        ({"type": "array"}, type("L", (list,), {})([1])),
        ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1.0),
        ({"type": "object", "additionalProperties": False}, {"a": float("nan")}),
    ],
)
def test_twins_agree_on_non_json_values(schema: dict[str, Any], value: Any) -> None:
    program = compile_program(schema)
    pure = _validator_py.CompiledValidator(program)
    compiled = _schema_c.CompiledValidator(program)
    assert compiled.is_valid(value) is pure.is_valid(value)
    assert compiled.violations(value) == pure.violations(value)


def test_twins_agree_on_wide_objects() -> None:
    names = [f"p{i}" for i in range(40)] + ["with space", "é"]
    schema = {
        "type": "object",
        "properties": {name: {"type": ["string", "integer"][i % 2]} for i, name in enumerate(names)},
        "required": names[::3][::-1],
        "additionalProperties": False,
    }
    program = compile_program(schema)
    pure = _validator_py.CompiledValidator(program)
    compiled = _schema_c.CompiledValidator(program)
    good = {name: ["s", 1][i % 2] for i, name in enumerate(names)}
    shuffled = dict(reversed(list(good.items())))
    bad = {name: value for name, value in list(shuffled.items())[::2]}
    bad["extra"] = 1
    bad["p1"] = "wrong"
    for value in (good, shuffled, bad, {}):
        assert compiled.is_valid(value) is pure.is_valid(value)
        assert compiled.violations(value) == pure.violations(value)
    assert compiled.is_valid(good) and compiled.is_valid(shuffled)
    found = [v.message for v in compiled.violations(bad)]
    assert found[0].startswith("missing required property")
    assert '"value.p1" must be an integer' in found
    assert found[-1] == '"value.extra" is not a declared property (additionalProperties: false)'
