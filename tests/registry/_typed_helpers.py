"""Builders and fixture classes shared by the ``@tool`` tests.

bench/bench_typed.py keeps its own copies of the classes it measures: bench/
never imports tests/, and the benchmark's workload should not move when a
test's fixtures do.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from _registry_helpers import error_code, text  # noqa: F401 (re-exported for the @tool tests)
from _shared_helpers import async_test  # noqa: F401 (re-exported for this directory's tests)

from dsh_codegen.registry import (
    AbortController,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
)
from dsh_codegen.registry._typed import tool


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Theme(enum.StrEnum):
    LIGHT = "light"
    DARK = "dark"


@dataclasses.dataclass
class LineRange:
    start: int
    end: int = -1


@dataclasses.dataclass
class Tree:
    label: str
    children: list[Tree] = dataclasses.field(default_factory=list)


def one_parameter(annotation: Any, returns: Any = None, **options: Any) -> ToolDefinition:
    """A ``@tool`` definition whose body takes one required parameter ``x: annotation``."""

    async def body(x: Any) -> Any:
        return None

    body.__annotations__ = {"x": annotation, "return": returns}
    body.__doc__ = "The probe tool."
    return tool(body, **options)


def property_schema(annotation: Any) -> Any:
    """The compiled JSON schema of parameter ``x`` typed ``annotation``."""
    return one_parameter(annotation).parameters["properties"]["x"]


def output_schema(annotation: Any) -> Any:
    """The compiled output schema of a body returning ``annotation``."""
    return one_parameter(str, returns=annotation).output.schema  # type: ignore[union-attr]


async def run_tool(definition: ToolDefinition, arguments: Any, *, call_id: str = "c1") -> ToolExecutionResult:
    """Register ``definition`` in a fresh registry and execute one call."""
    registry = ToolRegistry()
    registry.register(definition)
    return await registry.execute(
        ToolExecutionInput(call_id=call_id, name=definition.name, arguments=arguments, signal=AbortController().signal)
    )
