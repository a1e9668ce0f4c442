"""A call walks from ``ToolRegistry.execute`` to the body through named Python functions only.

The body looks at its own stack: every frame between the awaiting test and
the body is a function of a ``dsh_codegen`` ``.py`` source, found under its
qualified name in its module (what "go to definition" finds), or one of the
test's own listeners. Nothing compiled, generated or patched in sits on the
path, in the compiled pass as in the pure one (the compiled twins transform
data; they are called, never walked through). The plain walk and the hooked
walk are pinned name by name, so a layer added to the common path shows here.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import dsh_codegen
from _registry_helpers import async_test, call, echo_tool, registry_with, text
from dsh_codegen.registry import Allow, ToolRegistry, ToolRunContext

PACKAGE = Path(dsh_codegen.__file__).resolve().parent


def _defined_as(frame: FrameType) -> str:
    """``module:qualname`` of a package frame, after checking that name leads back to this code."""
    code = frame.f_code
    module_name = frame.f_globals["__name__"]
    module = sys.modules[module_name]
    source = Path(module.__file__ or "").resolve()
    assert source.suffix == ".py", f"{module_name} is not a Python source: {source}"
    assert source == Path(code.co_filename).resolve()
    assert PACKAGE in source.parents
    assert not code.co_name.startswith("<"), f"anonymous code on the path: {code.co_qualname}"
    target: Any = module
    for part in code.co_qualname.split("."):
        target = getattr(target, part)
    function = getattr(target, "__func__", target)
    assert function.__code__ is code, f"{module_name}.{code.co_qualname} is not the code that ran"
    return f"{module_name.rsplit('.', 1)[-1]}:{code.co_qualname}"


def _stack_below(caller: FrameType) -> list[FrameType]:
    """The live frames from ``caller`` (exclusive) down to the current one (exclusive), outermost first.

    Read while the body runs: a finished frame no longer knows its caller.
    """
    frames: list[FrameType] = []
    frame = sys._getframe(1).f_back
    while frame is not None and frame is not caller:
        frames.append(frame)
        frame = frame.f_back
    assert frame is caller, "the body did not run under the awaiting coroutine"
    return frames[::-1]


async def _walk(registry: ToolRegistry, seen: dict[str, Any], test_code: set[Any]) -> list[str]:
    seen["caller"] = sys._getframe()
    result = await registry.execute(call())
    assert text(result) == "echo:hi"
    return [
        f"test:{frame.f_code.co_name}" if frame.f_code in test_code else _defined_as(frame) for frame in seen["stack"]
    ]


def _recording_tool(seen: dict[str, Any], *, suspend: bool = False) -> Any:
    async def body(args: Any, run: ToolRunContext) -> str:
        if suspend:
            await asyncio.sleep(0)  # resumed by the event loop, through the shielded driver
        seen["stack"] = _stack_below(seen["caller"])
        return "echo:" + args["text"]

    return echo_tool(execute=body)


@pytest.mark.parametrize(
    ("suspend", "expected"),
    [
        (
            False,
            [
                "_run:run_pipeline",
                "_dispatch:run_dispatch",
                "_dispatch:dispatch_started",
                "_trampoline:body_steps",
            ],
        ),
        (
            True,  # resumed by the event loop after its first step
            [
                "_run:run_pipeline",  # which awaits the coroutine run_dispatch returned
                "_dispatch:drive_body",
                "_trampoline:BodyDriver.__await__",
                "_trampoline:body_steps",
            ],
        ),
    ],
)
@async_test
async def test_a_plain_call_reaches_the_body_through_the_pipeline_functions(suspend: bool, expected: list[str]) -> None:
    seen: dict[str, Any] = {}
    registry = registry_with(_recording_tool(seen, suspend=suspend))
    assert await _walk(registry, seen, set()) == expected


@async_test
async def test_a_hooked_call_passes_through_the_listeners_and_named_pipeline_functions() -> None:
    seen: dict[str, Any] = {}
    registry = registry_with(_recording_tool(seen))

    async def pre(execution: Any, next: Any) -> Any:
        return Allow()

    async def wrapper(dispatch: Any, next: Any) -> Any:
        return await next()

    registry.on_pre_execute(pre)
    registry.guard(lambda execution: None)
    registry.wrap_execute(wrapper)
    registry.on_result(lambda execution, result: None)
    walk = await _walk(registry, seen, {wrapper.__code__})
    assert walk == [
        "_run:run_pipeline",
        "_dispatch:_run_wrapped",
        "_dispatch:_wrap_chain",
        "test:wrapper",
        "_dispatch:_WrapNext.__call__",
        "_dispatch:dispatch_core",
        "_dispatch:dispatch_started",
        "_trampoline:body_steps",
    ]


def test_the_walk_check_refuses_what_is_not_a_named_function_of_a_source() -> None:
    # The check itself can fail: for this test's own frame (not the package) and for an
    # anonymous function that claims a package module and file.
    namespace = {"__name__": "dsh_codegen", "sys": sys}
    exec(compile("probe = lambda: sys._getframe()", dsh_codegen.__file__, "exec"), namespace)
    for frame in (sys._getframe(), namespace["probe"]()):
        try:
            _defined_as(frame)
        except AssertionError:
            continue
        raise AssertionError(f"{frame.f_code.co_qualname} passed the walk check")
