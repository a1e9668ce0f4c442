"""An in-process ``CodeRuntime`` for the bridge tests, and small tool builders.

:class:`ProgramRuntime` is a real implementation of the runtime contract
(``dsh_codegen.codemode.CodeRunRequest`` in, ``CodeRunResult`` out) that runs a
Python coroutine ``async def program(tools, print)`` in the event loop instead
of a subprocess: ``request.code`` names the program. ``tools.x(args)`` calls
``request.dispatch("x", args)`` at once and returns its future, exactly the
transport a real runtime uses; only the process boundary is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from _shared_helpers import async_test, render_text
from dsh_codegen.codemode import (
    CodeRunFailure,
    CodeRunRequest,
    CodeRunResult,
    CodeRunSuccess,
    ToolCallError,
)
from dsh_codegen.registry import (
    UNSET,
    AbortController,
    MemorySessionLog,
    RUN_CODE_NAME,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolOutput,
    ToolRegistry,
    ToolRunContext,
    define_tool,
)

__all__ = [
    "ProgramRuntime",
    "Tools",
    "ToolCallError",
    "async_test",
    "code_registry",
    "run_code",
    "text",
    "text_tool",
]

Program = Callable[["Tools", Callable[[str], None]], Awaitable[Any]]


class Tools:
    """The program's ``tools`` namespace: ``tools.x(args)`` / ``tools["x"](args)`` submit at once."""

    def __init__(self, request: CodeRunRequest) -> None:
        self._request = request

    def __getitem__(self, name: str) -> Callable[..., asyncio.Future[Any]]:
        if name not in self._request.tool_names:
            raise KeyError(name)
        dispatch = self._request.dispatch

        def binding(args: Any = UNSET) -> asyncio.Future[Any]:
            return dispatch(name, args)

        return binding

    def __getattr__(self, name: str) -> Callable[..., asyncio.Future[Any]]:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def raw(self, name: str, args: Any = UNSET) -> asyncio.Future[Any]:
        """Dispatch ``name`` without the namespace check (a runtime that does not enforce it)."""
        return self._request.dispatch(name, args)


class ProgramRuntime:
    """Runs ``programs[request.code]`` in-process; follows ``request.signal`` by cancelling it."""

    def __init__(self, programs: dict[str, Program] | None = None, language: str = "python") -> None:
        self.language = language
        self.programs: dict[str, Program] = dict(programs or {})
        self.requests: list[CodeRunRequest] = []
        self.raise_after: BaseException | None = None

    def add(self, name: str, program: Program) -> str:
        self.programs[name] = program
        return name

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run the program; an abort of ``request.signal`` cancels it (kind ``abort``).

        Cancellation: the program task is cancelled and waited for, then
        ``CancelledError`` is re-raised.
        """
        self.requests.append(request)
        logs: list[str] = []
        program = self.programs[request.code]
        tools = Tools(request)
        task = asyncio.ensure_future(program(tools, logs.append))
        remove = request.signal.add_listener(lambda _s: task.cancel())
        if request.signal.aborted:
            task.cancel()
        try:
            try:
                await asyncio.wait([task])
            except asyncio.CancelledError:
                task.cancel()
                while not task.done():
                    try:
                        await asyncio.wait([task])
                    except asyncio.CancelledError:
                        pass
                raise
        finally:
            remove()
        if self.raise_after is not None:
            raise self.raise_after
        if task.cancelled():
            return CodeRunFailure("abort", "the run was aborted", tuple(logs))
        exc = task.exception()
        if exc is not None:
            return CodeRunFailure("exception", f"{type(exc).__name__}: {exc}", tuple(logs))
        result = task.result()
        return CodeRunSuccess(tuple(logs), UNSET if result is None else result)


def text_tool(
    name: str,
    body: Callable[[Any, ToolRunContext], Awaitable[Any]] | None = None,
    *,
    safe: bool | None = None,
    output_schema: Any = None,
    render: Callable[[Any, Any], Any] = render_text,
    **extra: Any,
) -> ToolDefinition:
    """A tool with one optional string ``text``; default body returns ``"<name>:<text>"``."""

    async def default(args: Any, run: ToolRunContext) -> Any:
        return f"{name}:{args.get('text', '')}"

    if safe is not None:
        extra["is_concurrency_safe"] = lambda args: safe
    return define_tool(
        name=name,
        description=f"The {name} tool.",
        parameters={"text": {"type": "string"}},
        output=ToolOutput(schema=output_schema if output_schema is not None else {"type": "string"}, render=render),
        execute=body or default,
        **extra,
    )


def code_registry(
    *tools: ToolDefinition, runtime: ProgramRuntime | None = None, mode: str = "code", **config: Any
) -> tuple[ToolRegistry, ProgramRuntime, MemorySessionLog]:
    runtime = runtime or ProgramRuntime()
    log = MemorySessionLog()
    registry = ToolRegistry(mode=mode, code_runtime=runtime, log=log, **config)  # type: ignore[arg-type]
    for definition in tools:
        registry.register(definition)
    return registry, runtime, log


async def run_code(
    registry: ToolRegistry,
    program: str,
    *,
    call_id: str = "outer",
    agent: Any = "main",
    signal: Any = None,
    description: str = "a program",
) -> ToolExecutionResult:
    return await registry.execute(
        ToolExecutionInput(
            call_id=call_id,
            name=RUN_CODE_NAME,
            arguments={"code": program, "description": description},
            signal=signal if signal is not None else AbortController().signal,
            agent=agent,
        )
    )


def text(result: ToolExecutionResult) -> str:
    (block,) = result.content
    return str(block["text"])


def events(log: MemorySessionLog, *types: str) -> list[dict[str, Any]]:
    return [e for e in log.events if not types or e["type"] in types]
