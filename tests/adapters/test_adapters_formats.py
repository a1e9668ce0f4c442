"""Tool formats and foreign schema forms: published shapes (the openai/anthropic/mcp SDK types), round trips, strict mode."""

from __future__ import annotations

import sys
import typing
from typing import Any

import pytest
from pydantic import TypeAdapter

from dsh_codegen import (
    AbortController,
    ToolExecutionInput,
    ToolFailure,
    ToolOutput,
    ToolRegistry,
    ToolSuccess,
    define_tool,
)
from dsh_codegen.adapters import (
    StrictSchemaError,
    from_anthropic_tools,
    from_mcp_tools,
    from_openai_tools,
    lower_json_schema,
    relax_strict_arguments,
    to_anthropic_tools,
    to_mcp_tools,
    to_openai_tools,
    tool_from_schema,
)
from dsh_codegen.schema import JsonSchemaError, validate_json_schema_value

from _adapters_helpers import needs_core


def _echo(args: Any, run: Any) -> Any:
    async def body() -> Any:
        return dict(args)

    return body()


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    text = ToolOutput(schema={"type": "string"}, render=lambda a, v: [{"type": "text", "text": v}])
    registry.register(
        define_tool(
            name="read_file",
            description="Read a file.",
            parameters={
                "path": {"type": "string", "required": True, "description": "Absolute path"},
                "limit": {"type": "integer"},
                "mode": {"type": "string", "enum": ["text", "bytes"]},
            },
            output=text,
            execute=lambda args, run: _echo(args, run),
        )
    )
    registry.register(
        define_tool(name="ping", description="", parameters={}, output=text, execute=lambda args, run: _echo(args, run))
    )
    return registry


def _check_typed_dict(td: Any, value: dict[str, Any]) -> None:
    """``value`` has the published shape ``td``: only its keys, its required keys, its value types."""
    hints = typing.get_type_hints(td, include_extras=True, localns=vars(sys.modules[td.__module__]))
    assert set(value) <= set(hints), set(value) - set(hints)
    required = {key for key, hint in hints.items() if typing.get_origin(hint) is typing.Required}
    assert required <= set(value), required - set(value)
    TypeAdapter(td).validate_python(value)


@pytest.mark.parametrize("strict", [False, True])
def test_openai_chat_layout_matches_the_sdk_types(strict: bool) -> None:
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.shared_params import FunctionDefinition

    tools = to_openai_tools(_registry().schemas(), strict=strict)
    assert [tool["function"]["name"] for tool in tools] == ["read_file", "ping"]
    for tool in tools:
        _check_typed_dict(ChatCompletionFunctionToolParam, tool)
        _check_typed_dict(FunctionDefinition, tool["function"])
        assert ("strict" in tool["function"]) is strict


@pytest.mark.parametrize("strict", [False, True])
def test_openai_responses_layout_matches_the_sdk_types(strict: bool) -> None:
    from openai.types.responses import FunctionToolParam

    for tool in to_openai_tools(_registry().schemas(), strict=strict, api="responses"):
        _check_typed_dict(FunctionToolParam, tool)
        assert tool["strict"] is strict


def test_anthropic_layout_matches_the_sdk_types() -> None:
    from anthropic.types import ToolParam

    for tool in to_anthropic_tools(_registry().schemas()):
        _check_typed_dict(ToolParam, tool)


def test_mcp_layout_matches_the_sdk_types() -> None:
    from mcp.types import Tool

    registry = _registry()
    for entry in to_mcp_tools(registry.catalog()):
        tool = Tool.model_validate(entry)
        assert tool.model_dump(by_alias=True, exclude_none=True, mode="json") == entry
        # A string output is published wrapped, as structured content must be an object.
        assert entry["outputSchema"]["properties"] == {"result": {"type": "string"}}


@pytest.mark.parametrize(
    ("to", "back"),
    [
        (lambda s: to_openai_tools(s), from_openai_tools),
        (lambda s: to_openai_tools(s, api="responses"), from_openai_tools),
        (to_anthropic_tools, from_anthropic_tools),
        (to_mcp_tools, from_mcp_tools),
    ],
)
def test_round_trips_are_exact(to: Any, back: Any) -> None:
    schemas = _registry().schemas()
    assert back(to(schemas)) == schemas


def test_strict_conversion_keeps_meaning() -> None:
    [tool] = to_openai_tools(_registry().schemas()[:1], strict=True)
    parameters = tool["function"]["parameters"]
    assert parameters["required"] == ["path", "limit", "mode"]
    assert parameters["additionalProperties"] is False
    assert parameters["properties"]["limit"] == {"type": ["integer", "null"]}
    # an enum beside type: null is admitted through anyOf
    assert parameters["properties"]["mode"] == {
        "anyOf": [{"type": "string", "enum": ["text", "bytes"]}, {"type": "null"}]
    }
    # back from strict: the same optional properties as before, object closed
    [back] = from_openai_tools([tool])
    original = _registry().schemas()[0]["parameters"]
    assert back["parameters"] == {**original, "additionalProperties": False}


def test_strict_disjoint_one_of_becomes_any_of_and_overlapping_is_refused() -> None:
    disjoint = {
        "name": "t",
        "description": "",
        "parameters": {
            "type": "object",
            "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
            "required": ["v"],
        },
    }
    [tool] = to_openai_tools([disjoint], strict=True)
    assert tool["function"]["parameters"]["properties"]["v"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    tagged = {
        "oneOf": [
            {"type": "object", "properties": {"k": {"const": "a"}, "x": {"type": "string"}}, "required": ["k"]},
            {"type": "object", "properties": {"k": {"const": "b"}}, "required": ["k"]},
        ]
    }
    [tool] = to_openai_tools(
        [{**disjoint, "parameters": {**disjoint["parameters"], "properties": {"v": tagged}}}], strict=True
    )
    assert "anyOf" in tool["function"]["parameters"]["properties"]["v"]
    overlapping = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    with pytest.raises(StrictSchemaError) as caught:
        to_openai_tools(
            [{**disjoint, "parameters": {**disjoint["parameters"], "properties": {"v": overlapping}}}], strict=True
        )
    assert caught.value.tool == "t"
    assert caught.value.reasons == (
        "parameters.properties.v.oneOf has branches that may overlap (strict mode has only anyOf)",
    )


def test_schemas_that_cannot_be_strict_say_why_and_auto_leaves_them() -> None:
    free_map = {
        "name": "meta",
        "description": "",
        "parameters": {
            "type": "object",
            "properties": {"tags": {"type": "object"}, "n": {"allOf": [{"type": "integer"}]}},
        },
    }
    with pytest.raises(StrictSchemaError) as caught:
        to_openai_tools([free_map], strict=True)
    assert str(caught.value) == (
        'tool "meta" cannot be strict: parameters.properties.tags is an object without declared properties '
        "that takes other keys (a free-form map); parameters.properties.n.allOf is not supported in strict mode"
    )
    [auto] = to_openai_tools([free_map, *_registry().schemas()[:1]], strict="auto")[:1]
    assert "strict" not in auto["function"]
    assert auto["function"]["parameters"] == free_map["parameters"]


def test_tool_registered_from_strict_definitions_drops_nulls_before_validation() -> None:
    [strict_tool] = to_openai_tools(_registry().schemas()[:1], strict=True)
    [schema] = from_openai_tools([strict_tool])
    seen: list[Any] = []

    async def body(args: Any, run: Any) -> str:
        seen.append(dict(args))
        return "ok"

    registry = ToolRegistry()
    registry.register(tool_from_schema(schema, body, output_schema={"type": "string"}, relax_strict_nulls=True))

    async def main() -> list[Any]:
        signal = AbortController().signal
        return [
            await registry.execute(
                ToolExecutionInput("1", "read_file", {"path": "/a", "limit": None, "mode": None}, signal)
            ),
            await registry.execute(
                ToolExecutionInput("2", "read_file", {"path": None, "limit": None, "mode": None}, signal)
            ),
        ]

    import asyncio

    ok, bad = asyncio.run(main())
    assert isinstance(ok, ToolSuccess) and seen == [{"path": "/a"}]
    assert isinstance(bad, ToolFailure) and bad.error.info is not None and bad.error.info.code == "INVALID_ARGS"
    assert bad.error.message == 'invalid arguments: "path" must be a string'


def test_relax_keeps_nulls_a_schema_admits() -> None:
    parameters = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": ["string", "null"]},
            "c": {"type": "object", "properties": {"d": {"type": "integer"}}},
            "e": {"type": "array", "items": {"type": "object", "properties": {"f": {"type": "string"}}}},
        },
        "required": ["a"],
    }
    args = {"a": None, "b": None, "c": {"d": None}, "e": [{"f": None}, {"f": "x"}]}
    assert relax_strict_arguments(parameters, args) == {"a": None, "b": None, "c": {}, "e": [{}, {"f": "x"}]}
    assert args["c"] == {"d": None}  # not modified


def test_from_formats_lower_foreign_forms_with_notes() -> None:
    from dsh_codegen.adapters import ToolNote

    notes: list[ToolNote] = []
    [schema] = from_openai_tools(
        [
            {
                "type": "function",
                "function": {
                    "name": "f",
                    "parameters": {"type": "object", "properties": {"a": {"type": "string", "nullable": True}}},
                },
            }
        ],
        notes=notes,
    )
    assert schema["parameters"]["properties"]["a"] == {"type": ["string", "null"]}
    assert [str(note) for note in notes] == [
        'tool "f" parameters: schema.properties.a.nullable: OpenAPI nullable: true: type became ["string", "null"]'
    ]
    needs_core(schema["parameters"])


def test_from_rejects_what_has_no_schema() -> None:
    with pytest.raises(ValueError, match=r"only custom tools"):
        from_anthropic_tools([{"type": "web_search_20250305", "name": "web_search"}])
    with pytest.raises(ValueError, match=r'only "function" tools'):
        from_openai_tools([{"type": "web_search"}])
    with pytest.raises(ValueError, match=r"inputSchema is required"):
        from_mcp_tools({"tools": [{"name": "x"}]})


def test_lowering_errors_name_construct_and_path() -> None:
    with pytest.raises(JsonSchemaError) as caught:
        lower_json_schema({"properties": {"x": {"dependencies": {"a": {"properties": {"b": {"type": "string"}}}}}}})
    assert caught.value.code == "UNSUPPORTED_SCHEMA"
    assert caught.value.violations[0].path == ("properties", "x", "dependencies", "a")
    assert "schema.properties.x.dependencies.a is a schema dependency" in caught.value.message


def test_lowered_values_validate_like_the_originals() -> None:
    lowered = lower_json_schema(
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3, "exclusiveMinimum": True}}}
    ).schema
    needs_core(lowered)
    assert validate_json_schema_value(lowered, {"n": 4}) == []
    assert validate_json_schema_value(lowered, {"n": 3}) != []
