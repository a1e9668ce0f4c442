"""OpenAI strict mode end to end: what a strict-mode model sends back is accepted (issue 35).

A user sends ``to_openai_tools(registry.schemas(), strict=True)``; a strict-mode
model then fills every optional property it leaves out with ``null``. Before,
only tools built with ``tool_from_schema(..., relax_strict_nulls=True)``
accepted such calls (``"limit" must be an integer``). With
``ToolRegistry(relax_strict_nulls=True)`` every tool whose arguments the
registry validates does: ``@tool``, ``define_tool`` and imported tools alike.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dsh_codegen import (
    AbortController,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailure,
    ToolOutput,
    ToolRegistry,
    ToolSuccess,
    define_tool,
    tool,
)
from dsh_codegen.adapters import to_openai_tools, tool_from_schema

TEXT = ToolOutput(schema={"type": "string"}, render=lambda args, value: [{"type": "text", "text": value}])
SEEN: list[dict[str, Any]] = []


async def _seen(args: Any, run: Any) -> str:
    SEEN.append(dict(args))
    return "ok"


def _define() -> ToolDefinition:
    return define_tool(
        name="book",
        description="Book a room.",
        parameters={
            "hotel": {"type": "string", "required": True},
            "nights": {"type": "integer"},
            "guest": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"name": {"type": "string"}, "vip": {"type": "boolean"}},
            },
        },
        output=TEXT,
        execute=_seen,
    )


def _typed() -> ToolDefinition:
    @tool
    async def book(hotel: str, nights: int = 1, note: str = "") -> str:
        """Book a room."""
        SEEN.append({"hotel": hotel, "nights": nights, "note": note})
        return "ok"

    return book


def _imported() -> ToolDefinition:
    # What import_mcp_tools and from_openai_tools build: a plain JSON Schema, validated by the registry.
    schema = {
        "name": "book",
        "description": "Book a room.",
        "parameters": {
            "type": "object",
            "properties": {"hotel": {"type": "string"}, "nights": {"type": "integer", "minimum": 1}},
            "required": ["hotel"],
        },
    }
    return tool_from_schema(schema, _seen, output_schema={"type": "string"})


def _strict_model_arguments(strict_tool: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """What a strict-mode model sends: every property of the strict schema, ``null`` where it has nothing."""
    properties = strict_tool["function"]["parameters"]["properties"]
    assert strict_tool["function"]["parameters"]["required"] == list(properties)  # strict: all required
    return {name: given.get(name) for name in properties}


def _run(registry: ToolRegistry, arguments: Any) -> ToolExecutionResult:
    return asyncio.run(registry.execute(ToolExecutionInput("c1", "book", arguments, AbortController().signal)))


def test_every_kind_of_tool_accepts_a_strict_mode_models_nulls() -> None:
    for make in (_define, _typed, _imported):
        registry = ToolRegistry(relax_strict_nulls=True)
        registry.register(make())
        [strict_tool] = to_openai_tools(registry.schemas(), strict=True)
        arguments = _strict_model_arguments(strict_tool, {"hotel": "Ritz"})
        assert arguments["nights"] is None
        SEEN.clear()
        result = _run(registry, arguments)
        assert isinstance(result, ToolSuccess), (make.__name__, result)
        # The body sees the optional properties absent: their defaults apply.
        expected = {"hotel": "Ritz", "nights": 1, "note": ""} if make is _typed else {"hotel": "Ritz"}
        assert SEEN == [expected], make.__name__
        # Without the option, the same call is refused, as before.
        plain = ToolRegistry()
        plain.register(make())
        refused = _run(plain, arguments)
        assert isinstance(refused, ToolFailure) and refused.error.info is not None
        assert refused.error.info.code == "INVALID_ARGS"
        assert '"nights" must be an integer' in refused.error.message


def test_nested_optional_nulls_are_dropped_and_policies_see_the_relaxed_arguments() -> None:
    registry = ToolRegistry(relax_strict_nulls=True)
    registry.register(_define())
    guarded: list[Any] = []
    registry.guard(lambda execution: guarded.append(execution.arguments) or None)
    SEEN.clear()
    result = _run(registry, {"hotel": "Ritz", "nights": None, "guest": {"name": "Ada", "vip": None}})
    assert isinstance(result, ToolSuccess)
    assert SEEN == [{"hotel": "Ritz", "guest": {"name": "Ada"}}]
    assert guarded == [{"hotel": "Ritz", "guest": {"name": "Ada"}}]


def test_what_stays_invalid_is_reported_without_the_dropped_nulls() -> None:
    registry = ToolRegistry(relax_strict_nulls=True)
    registry.register(_define())
    result = _run(registry, {"hotel": None, "nights": None, "guest": None})
    assert isinstance(result, ToolFailure)
    assert result.error.message == 'invalid arguments: "hotel" must be a string'


def test_a_property_both_optional_and_nullable_keeps_its_null() -> None:
    # The one ambiguity: the model's null may mean "left out" or "null"; the schema admits
    # null, so the registry keeps it and the body sees None, not its default.
    schema = {
        "name": "book",
        "description": "Book a room.",
        "parameters": {
            "type": "object",
            "properties": {"hotel": {"type": "string"}, "note": {"type": ["string", "null"]}},
            "required": ["hotel"],
        },
    }
    registry = ToolRegistry(relax_strict_nulls=True)
    registry.register(tool_from_schema(schema, _seen, output_schema={"type": "string"}))
    SEEN.clear()
    assert isinstance(_run(registry, {"hotel": "Ritz", "note": None}), ToolSuccess)
    assert SEEN == [{"hotel": "Ritz", "note": None}]


def test_per_tool_opt_in_through_tool_from_schema() -> None:
    registry = ToolRegistry()
    schema = {
        "name": "book",
        "description": "Book a room.",
        "parameters": {
            "type": "object",
            "properties": {"hotel": {"type": "string"}, "nights": {"type": "integer"}},
            "required": ["hotel"],
        },
    }
    registry.register(tool_from_schema(schema, _seen, output_schema={"type": "string"}, relax_strict_nulls=True))
    guarded: list[Any] = []
    registry.guard(lambda execution: guarded.append(execution.arguments) or None)
    SEEN.clear()
    assert isinstance(_run(registry, {"hotel": "Ritz", "nights": None}), ToolSuccess)
    # The registry validates (and relaxes) now, so the guard sees what the body sees.
    assert SEEN == guarded == [{"hotel": "Ritz"}]
