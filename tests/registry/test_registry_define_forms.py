"""define_tool reads the schema DSL and plain JSON Schema; the parameter root rule (issue 39)."""

from __future__ import annotations

from typing import Any

import pytest

from _registry_helpers import async_test, call, error_code, registry_with, text
from dsh_codegen.registry import ToolOutput, define_tool, tool
from dsh_codegen.schema import JsonSchemaError

seen: list[Any] = []


async def _body(args: Any, run: Any) -> Any:
    seen.append(args)
    return {"a": "x"} if "ok" in args else {}


def _render(args: Any, value: Any) -> list[dict[str, str]]:
    return [{"type": "text", "text": "done"}]


def _define(parameters: Any, output_schema: Any = None) -> Any:
    schema = {"type": "json"} if output_schema is None else output_schema
    return define_tool(
        name="t",
        description="d",
        parameters=parameters,
        output=ToolOutput(schema=schema, render=_render),
        execute=_body,
    )


@async_test
async def test_a_standard_json_schema_output_with_a_required_list_is_accepted() -> None:
    # Issue 39: this failed with the DSL's "required is only allowed on object properties".
    output = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    registry = registry_with(_define({}, output))
    assert not (await registry.execute(call("t", {"ok": 1}))).is_error
    failed = await registry.execute(call("t", {}))
    assert (error_code(failed), text(failed)) == (
        "INVALID_TOOL_OUTPUT",
        'Error: tool "t" returned invalid output: missing required property "value.a"',
    )
    # the DSL still reads as the DSL: required: True marks the property
    dsl = {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string", "required": True}}}
    assert _define({}, dsl).output.schema == {**output, "additionalProperties": False}


def test_an_output_schema_that_is_neither_form_reports_both_readings() -> None:
    with pytest.raises(JsonSchemaError) as info:
        _define({}, {"type": "date"})
    assert str(info.value) == (
        "unsupported JSON schema: define_tool(t): output.schema is neither a ValueSchemaSpec (the schema DSL; paths"
        " from spec) nor a supported JSON Schema (paths from schema);"
        " spec.type must be one of string/number/integer/boolean/null/array/object/json;"
        " schema.type must be one of object/array/string/number/integer/boolean/null"
    )


def test_parameters_that_could_be_either_say_how_to_pass_a_json_schema() -> None:
    with pytest.raises(JsonSchemaError) as info:
        _define({"properties": {"a": {"type": "string"}}})
    assert str(info.value).endswith(
        "define_tool(t): parameters was read as a ParameterSchemaSpec (parameter name -> spec), as no value marks"
        ' it as JSON Schema; to pass a JSON Schema, declare "type": "object" at its root'
    )
    # A property named "type" (a mapping) is the DSL's, never a JSON Schema keyword.
    assert _define({"type": {"type": "string", "required": True}}).parameters == {
        "type": "object",
        "properties": {"type": {"type": "string"}},
        "required": ["type"],
    }


def test_parameters_read_as_json_schema_say_what_a_parameter_spec_looks_like() -> None:
    with pytest.raises(JsonSchemaError) as info:
        _define({"type": "object", "properties": {"a": {"type": "string", "required": True}}})
    message = str(info.value)
    assert message.startswith('unsupported JSON schema: schema.properties.a.required is not supported on type "string"')
    assert message.endswith(
        "define_tool(t): parameters was read as JSON Schema (a keyword such as type or required has a string, list"
        " or boolean value); a ParameterSchemaSpec maps each parameter name to its spec instead, e.g."
        ' {"path": {"type": "string", "required": True}}'
    )


@tool
async def typed(a: str) -> str:
    """Echo."""
    return a


@async_test
async def test_the_parameter_root_follows_how_the_body_receives_arguments() -> None:
    """The rule, decided once (docs/registry.md): open where the body gets the arguments object, closed for @tool."""
    extra = {"a": "x", "extra": 1}
    # define_tool with the DSL: the body receives the whole (open) object, extra keys included.
    seen.clear()
    dsl = registry_with(_define({"a": {"type": "string", "required": True}}))
    assert not (await dsl.execute(call("t", extra))).is_error
    assert seen == [extra]
    # define_tool with JSON Schema: the schema's own root (here closed).
    closed = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    result = await registry_with(_define(closed)).execute(call("t", extra))
    assert text(result) == 'Error: invalid arguments: "extra" is not a declared property (additionalProperties: false)'
    # @tool: keyword arguments have nowhere to put an undeclared key, so the root is closed.
    assert typed.parameters["additionalProperties"] is False
    result = await registry_with(typed).execute(call("typed", extra))
    assert text(result) == 'Error: invalid arguments: "extra" is not a declared property (additionalProperties: false)'


def test_the_static_schema_type_lists_every_keyword_of_the_dialect() -> None:
    from dsh_codegen.schema import ANNOTATION_KEYWORDS, JsonSchemaObject
    from dsh_codegen.schema import _dialect_check as dialect

    assert set(JsonSchemaObject.__annotations__) == set(dialect._KEYWORDS) | ANNOTATION_KEYWORDS
