"""``@tool`` beside pydantic-ai's ``Tool`` and openai-agents' ``function_tool``: decoration and per call.

One "wide" signature, the kind the typed-function mapping exists for: a
``StrEnum``, a dataclass, a pydantic model with ``Field`` constraints, a
``typing_extensions.TypedDict``, ``dict[str, int]``, an exact tuple, an
``Annotated`` bound and an optional string. Two measurements:

- ``decorate``: building the tool from the function (signature and
  annotations to schema, validators compiled): ``tool(fn)``,
  ``pydantic_ai.Tool(fn)`` (its function schema is built in the
  constructor), ``agents.function_tool(fn, strict_mode=False)`` (strict mode
  refuses ``dict[str, int]``);
- ``call``: one call from the model's raw argument text, as
  ``bench_registry`` measures it: ``parse_call_arguments`` +
  ``registry.execute`` (snapshot, validation, conversion to enum member,
  dataclass and model instances, tuple; the body; output validation and
  render), pydantic-ai's ``FunctionToolset`` (``validate_json`` +
  ``call_tool``) and openai-agents' ``on_invoke_tool``.

The body is ``async def`` on all three sides (a plain one would add a worker-thread hop,
about 150 us here, to every side and hide the rest). Timing as in ``bench_registry``:
batches sampled round-robin, median per call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import annotated_types as at
import typing_extensions
from pydantic import BaseModel, Field

from bench._util import ratio_table
from bench.bench_registry import _round_robin

BATCH = 50

# The workload's classes are the benchmark's own (tests/registry/_typed_helpers.py has the
# tests' copies): bench/ never imports tests/, and the measured signature stays put when tests change.


class Theme(enum.StrEnum):
    LIGHT = "light"
    DARK = "dark"


@dataclasses.dataclass
class LineRange:
    start: int
    end: int = -1


class User(BaseModel):
    name: str = Field(max_length=8, description="Login name.")
    age: int = Field(ge=0, le=150)


class Recipient(typing_extensions.TypedDict):
    email: str
    name: typing_extensions.NotRequired[str]


async def wide(
    theme: Theme,
    lines: LineRange,
    user: User,
    to: Recipient,
    scores: dict[str, int],
    point: tuple[int, int],
    limit: Annotated[int, at.Ge(1), at.Le(100)] = 10,
    note: str | None = None,
) -> int:
    """A wide signature."""
    return lines.start + user.age + point[0] + len(scores) + limit + len(theme.value)


ARGUMENTS = {
    "theme": "dark",
    "lines": {"start": 3, "end": 9},
    "user": {"name": "ann", "age": 30},
    "to": {"email": "a@b"},
    "scores": {"a": 1, "b": 2},
    "point": [1, 2],
    "limit": 5,
}
RAW = json.dumps(ARGUMENTS)
EXPECTED = 3 + 30 + 1 + 2 + 5 + 4


def _decorate_runners() -> dict[str, Callable[[], None]]:
    from dsh_codegen.registry._typed import tool

    runners: dict[str, Callable[[], None]] = {"dsh @tool": lambda: [tool(wide) for _ in range(BATCH)] and None}
    try:
        from pydantic_ai import Tool

        runners["pydantic-ai Tool"] = lambda: [Tool(wide) for _ in range(BATCH)] and None
    except ImportError as exc:  # pragma: no cover - optional peer
        print(f"  pydantic-ai: not installed ({exc.name})")
    try:
        from agents import function_tool

        runners["openai-agents function_tool"] = lambda: (
            [function_tool(wide, strict_mode=False) for _ in range(BATCH)] and None
        )
    except ImportError as exc:  # pragma: no cover - optional peer
        print(f"  openai-agents: not installed ({exc.name})")
    return runners


def _dsh_call(loop: asyncio.AbstractEventLoop) -> Callable[[], Awaitable[Any]]:
    from dsh_codegen.registry import AbortController, ToolExecutionInput, ToolRegistry, ToolSuccess
    from dsh_codegen.registry._loop import parse_call_arguments
    from dsh_codegen.registry._typed import tool

    registry = ToolRegistry()
    registry.register(tool(wide))
    signal = AbortController().signal

    async def one() -> Any:
        return await registry.execute(
            ToolExecutionInput(call_id="c1", name="wide", arguments=parse_call_arguments(RAW), signal=signal)
        )

    result = loop.run_until_complete(one())
    assert isinstance(result, ToolSuccess) and result.value == EXPECTED, result
    return one


def _pydantic_ai_call(loop: asyncio.AbstractEventLoop) -> Callable[[], Awaitable[Any]] | None:
    try:
        from pydantic_ai import RunContext
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage
    except ImportError:  # pragma: no cover - optional peer
        return None
    toolset: Any = FunctionToolset([wide])
    context: Any = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    peer = loop.run_until_complete(toolset.get_tools(context))["wide"]

    async def one() -> Any:
        return await toolset.call_tool("wide", peer.args_validator.validate_json(RAW), context, peer)

    assert loop.run_until_complete(one()) == EXPECTED
    return one


def _openai_agents_call(loop: asyncio.AbstractEventLoop) -> Callable[[], Awaitable[Any]] | None:
    try:
        from agents import function_tool, set_tracing_disabled
        from agents.tool_context import ToolContext
    except ImportError:  # pragma: no cover - optional peer
        return None
    set_tracing_disabled(True)
    peer = function_tool(wide, strict_mode=False)
    context: Any = ToolContext(context=None, tool_name="wide", tool_call_id="c1", tool_arguments=RAW)

    def one() -> Awaitable[Any]:
        return peer.on_invoke_tool(context, RAW)

    assert loop.run_until_complete(one()) == EXPECTED
    return one


def _batch(loop: asyncio.AbstractEventLoop, one: Callable[[], Awaitable[Any]]) -> Callable[[], None]:
    async def batch() -> None:
        for _ in range(BATCH):
            await one()

    return lambda: loop.run_until_complete(batch())


def main() -> None:
    decorate = {name: value / BATCH for name, value in _round_robin(_decorate_runners(), rounds=15).items()}
    print(
        ratio_table(
            "typed: decorate the wide signature (median, round-robin)", list(decorate.items()), baseline="dsh @tool"
        )
    )
    loop = asyncio.new_event_loop()
    try:
        runners = {"dsh @tool execute": _batch(loop, _dsh_call(loop))}
        for name, make in (
            ("pydantic-ai FunctionToolset", _pydantic_ai_call),
            ("openai-agents function_tool", _openai_agents_call),
        ):
            one = make(loop)
            if one is not None:
                runners[name] = _batch(loop, one)
        calls = {name: value / BATCH for name, value in _round_robin(runners, rounds=41).items()}
    finally:
        loop.close()
    print(
        ratio_table(
            "typed: one call of the wide tool from raw text (median, round-robin)",
            list(calls.items()),
            baseline="dsh @tool execute",
        )
    )


if __name__ == "__main__":
    main()
