"""``MontyRuntime``: the same programs, bindings and failure kinds on pydantic-monty's sandbox.

Where Monty cannot express a case of the subprocess fault matrix, the test says so.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _runtime_helpers import FakeTools, request, run_sync

pytest.importorskip("pydantic_monty")

from dsh_codegen.codemode import MontyRuntime  # noqa: E402
from dsh_codegen.registry._code_runtime import CodeRunFailure, CodeRunSuccess  # noqa: E402
from dsh_codegen.registry._results import UNSET  # noqa: E402
from dsh_codegen.registry.cancel import AbortController  # noqa: E402

pytestmark = pytest.mark.once

LOSSY = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"


def go(code: str, tools: FakeTools | None = None, **options: Any) -> Any:
    async def main() -> Any:
        async with MontyRuntime(**options) as runtime:
            return await runtime.run(request(code, tools or FakeTools()))

    return run_sync(main)


def test_top_level_await_return_and_print() -> None:
    result = go("print('a', 1)\nprint('b')\nx = await tools.echo({'k': [1, 2.5, None]})\nreturn x")
    assert result == CodeRunSuccess(("a 1", "b"), {"echo": {"k": [1, 2.5, None]}})
    assert go("x = 1") == CodeRunSuccess((), UNSET)


def test_bindings_by_attribute_and_subscript() -> None:
    code = "a = await tools['__class__']({})\nb = await tools['my-tool']({})\nc = await tools.echo({})\nreturn [a, b, c]"
    assert go(code) == CodeRunSuccess((), ["__class__", "my-tool", {"echo": {}}])


def test_try_except_tool_call_error_has_the_message_but_no_tool_name_on_monty() -> None:
    # Monty has no class inheritance: ToolCallError is its built-in RuntimeError, without ``toolName``.
    code = "try:\n    await tools.fail({})\nexcept ToolCallError as e:\n    return [str(e), hasattr(e, 'toolName')]"
    assert go(code) == CodeRunSuccess((), ["deliberate failure", False])


def test_gather_overlaps_the_calls() -> None:
    tools = FakeTools()
    code = "import asyncio\nreturn await asyncio.gather(tools.slow({'s': 0.1, 'v': 1}), tools.slow({'s': 0.1, 'v': 2}))"
    assert go(code, tools) == CodeRunSuccess((), [1, 2])
    assert [name for name, _ in tools.calls] == ["slow", "slow"]


@pytest.mark.parametrize("call", ["tools.echo()", "tools.echo({1, 2})", "tools.echo({'x': float('nan')})"])
def test_non_lossless_arguments_reject_in_the_program(call: str) -> None:
    tools = FakeTools()
    assert go(f"try:\n    await {call}\nexcept ToolCallError as e:\n    return str(e)", tools) == CodeRunSuccess(
        (), LOSSY)
    assert tools.calls == []


@pytest.mark.parametrize("value", ["{1, 2}", "float('nan')", "-0.0"])
def test_lossy_completion_is_invalid_output(value: str) -> None:
    assert go(f"return {value}") == CodeRunFailure("invalid-output", "program completion must be lossless JSON")


def test_an_exception_is_exception() -> None:
    assert go("print('x')\nraise ValueError('boom')") == CodeRunFailure("exception", "ValueError: boom", ("x",))


def test_an_endless_loop_times_out() -> None:
    result = go("while True:\n    pass", wall_timeout_s=0.5)
    assert isinstance(result, CodeRunFailure) and result.kind == "timeout"


def test_a_10_gb_allocation_is_an_exception() -> None:
    # Monty's heap limit raises a MemoryError the program cannot catch; the run ends as ``exception``.
    code = "try:\n    b = 'x' * (10 * 2**30)\nexcept MemoryError:\n    return 'caught'"
    result = go(code, memory_bytes=64 << 20)
    assert isinstance(result, CodeRunFailure) and result.kind == "exception"
    assert result.message.startswith("MemoryError: memory limit exceeded")


def test_output_over_the_cap_is_output_limit() -> None:
    assert go("return 'x' * 100", max_output_bytes=50) == CodeRunFailure("output-limit", "outer output exceeded 50 bytes")


def test_print_flood_is_truncated_with_a_marker() -> None:
    result = go("for i in range(5000):\n    print('line', i)\nreturn 1", max_log_bytes=500)
    assert isinstance(result, CodeRunSuccess)
    assert result.logs[-1] == "[output truncated: the program printed more than 500 bytes]"


def test_no_state_crosses_runs() -> None:
    async def main() -> list[Any]:
        async with MontyRuntime() as runtime:
            first = await runtime.run(request("global marker\nmarker = 1\nreturn 1", FakeTools()))
            second = await runtime.run(request("try:\n    return marker\nexcept NameError:\n    return 'fresh'",
                                               FakeTools()))
            return [first, second]

    assert run_sync(main) == [CodeRunSuccess((), 1), CodeRunSuccess((), "fresh")]


def test_abort_and_cancellation_mid_binding() -> None:
    async def main() -> Any:
        controller = AbortController()
        async with MontyRuntime() as runtime:
            asyncio.get_running_loop().call_later(0.3, controller.abort)
            aborted = await runtime.run(request("print('w')\nawait tools.hang({})", FakeTools(), controller.signal))
            task = asyncio.ensure_future(runtime.run(request("await tools.hang({})", FakeTools())))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            after = await runtime.run(request("return 2", FakeTools()))
            return aborted, after

    assert run_sync(main) == (CodeRunFailure("abort", "the run was aborted", ("w",)), CodeRunSuccess((), 2))


def test_cases_monty_cannot_express() -> None:
    # No os.fork, os._exit, ctypes or raw fds in the sandbox: those rows of the fault matrix become an
    # exception the program sees, never a process of ours.
    for code in ("import os\nos.fork()", "import ctypes", "import os\nos._exit(3)"):
        result = go(code)
        assert isinstance(result, CodeRunFailure) and result.kind == "exception", (code, result)


def test_50_concurrent_runs() -> None:
    async def main() -> list[Any]:
        tools = FakeTools()
        async with MontyRuntime() as runtime:
            return await asyncio.gather(*(
                runtime.run(request(f"r = await tools.echo({{'i': {i}}})\nreturn r['echo']['i']", tools))
                for i in range(50)
            ))

    assert run_sync(main) == [CodeRunSuccess((), i) for i in range(50)]
