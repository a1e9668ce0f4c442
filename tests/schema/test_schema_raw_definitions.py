"""Published JSON Schemas in the registry: define_tool says where they go; raw definitions opt in to validation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh_codegen.registry import (
    AbortController,
    ToolDefinition,
    ToolExecutionInput,
    ToolOutput,
    ToolRegistry,
    define_tool,
)
from tests.corpus import corpus

PYDANTIC_LIKE = {
    "$defs": {"Unit": {"enum": ["c", "f"], "title": "Unit", "type": "string"}},
    "properties": {
        "city": {"title": "City", "type": "string", "minLength": 1},
        "unit": {"anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}], "default": None},
    },
    "required": ["city"],
    "title": "WeatherArguments",
    "type": "object",
}


async def _echo(args: Any, run: Any) -> Any:
    return args


def _render(args: Any, value: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "ok"}]


def test_define_tool_takes_a_published_json_schema_as_parameters() -> None:
    # Issue 39: this was refused ("parameters is a JSON Schema, not a ParameterSchemaSpec").
    definition = define_tool(
        name="weather",
        description="d",
        parameters=PYDANTIC_LIKE,  # type: ignore[arg-type]  # "title" keys are fine; mypy cannot type the literal's inferred dict
        output=ToolOutput(schema={"type": "json"}, render=_render),
        execute=_echo,
    )
    assert definition.parameters == PYDANTIC_LIKE and definition.parameters is not PYDANTIC_LIKE  # a detached copy
    registry = ToolRegistry()
    registry.register(definition)
    result = _run(registry, {"city": "", "unit": "k"})
    assert (
        result.error.message
        == 'invalid arguments: "city" must be at least 1 character; "unit" must be one of ["c","f"]'
    )


def _run(registry: ToolRegistry, arguments: Any) -> Any:
    return asyncio.run(
        registry.execute(
            ToolExecutionInput(call_id="c", name="weather", arguments=arguments, signal=AbortController().signal)
        )
    )


@pytest.mark.parametrize("validates", [True, False])
def test_raw_definitions_opt_in_to_argument_validation(validates: bool) -> None:
    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            name="weather",
            description="d",
            parameters=PYDANTIC_LIKE,
            output=ToolOutput(schema={}, render=_render),
            execute=_echo,
            validates_arguments=validates,
        )
    )
    assert not _run(registry, {"city": "Bern", "unit": "c"}).is_error
    result = _run(registry, {"city": "", "unit": "k"})
    assert result.is_error is validates
    if validates:
        assert result.error.message == (
            'invalid arguments: "city" must be at least 1 character; "unit" must be one of ["c","f"]'
        )


def test_every_corpus_schema_registers_as_a_validating_raw_definition() -> None:
    registry = ToolRegistry()
    for index, (name, schema, _, _) in enumerate(corpus()):
        registry.register(
            ToolDefinition(
                name=f"t{index}",
                description=name,
                parameters=schema,
                output=ToolOutput(schema={}, render=_render),
                execute=_echo,
                validates_arguments=True,
            )
        )
    assert len(registry.schemas()) == len(corpus())
