"""``MontyRuntime``: the same programs, bindings and failure kinds on pydantic-monty's sandbox.

Where Monty cannot express a case of the subprocess fault matrix, the test says so.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
from _runtime_helpers import FakeTools, request, run_sync
from lossy_cases import LOSSY_COMPLETIONS, LOSSY_PRELUDE

pytest.importorskip("pydantic_monty")

from dsh_codegen.codemode import MontyRuntime  # noqa: E402
from dsh_codegen.registry.code_runtime import CodeRunFailure, CodeRunSuccess  # noqa: E402
from dsh_codegen.registry._results import UNSET  # noqa: E402
from dsh_codegen.registry.cancel import AbortController  # noqa: E402

pytestmark = pytest.mark.once

LOSSY = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"


def go(code: str, tools: FakeTools | None = None, **options: Any) -> Any:
    # What the run does, so without the pre-flight check that would turn some programs back first
    # (its texts are pinned in test_preflight.py).
    options.setdefault("preflight", False)

    async def main() -> Any:
        async with MontyRuntime(**options) as runtime:
            return await runtime.run(request(code, tools or FakeTools()))

    return run_sync(main)


def test_top_level_await_return_and_print() -> None:
    result = go("print('a', 1)\nprint('b')\nx = await tools.echo({'k': [1, 2.5, None]})\nreturn x")
    assert result == CodeRunSuccess(("a 1", "b"), {"echo": {"k": [1, 2.5, None]}})
    assert go("x = 1") == CodeRunSuccess((), UNSET)


def test_bindings_by_attribute_and_subscript() -> None:
    code = (
        "a = await tools['__class__']({})\nb = await tools['my-tool']({})\nc = await tools.echo({})\nreturn [a, b, c]"
    )
    assert go(code) == CodeRunSuccess((), ["__class__", "my-tool", {"echo": {}}])


def test_unawaited_calls_are_dispatched_when_made() -> None:
    # A call starts when the program makes it, as on CPython: a forgotten ``await`` still runs it.
    tools = FakeTools()
    code = "tools.echo({'n': 1})\ntools.echo({'n': 2})\nprint('after')\nreturn {'saved': 2}"
    assert go(code, tools) == CodeRunSuccess(("after",), {"saved": 2})
    assert tools.calls == [("echo", {"n": 1}), ("echo", {"n": 2})]


def test_a_call_is_dispatched_before_the_program_goes_on() -> None:
    tools = FakeTools()
    code = (
        "pending = tools.slow({'s': 0.2, 'v': 'slow'})\nfast = await tools.echo({'n': 1})\nreturn [await pending, fast]"
    )
    assert go(code, tools) == CodeRunSuccess((), ["slow", {"echo": {"n": 1}}])
    assert [name for name, _ in tools.calls] == ["slow", "echo"]


CATCH_AND_CONTINUE = """\
out = []
for name in ['fail', 'echo', 'fail']:
    try:
        await tools[name]({})
        out.append('ok')
    except ToolCallError as e:
        out.append([e.toolName, e.message, str(e), getattr(e, 'toolName'), hasattr(e, 'message'),
                    isinstance(e, Exception), type(e).__name__, list(e.args)])
try:
    await tools.fail({})
except RuntimeError:
    out.append('a RuntimeError')
except Exception as e:
    out.append(f'{e.toolName}: {e}')
return out
"""


def test_tool_call_error_has_tool_name_and_message() -> None:
    caught = [
        "fail",
        "deliberate failure",
        "deliberate failure",
        "fail",
        True,
        True,
        "ToolCallError",
        ["deliberate failure"],
    ]
    assert go(CATCH_AND_CONTINUE) == CodeRunSuccess((), [caught, "ok", caught, "fail: deliberate failure"])


OTHER_OBJECTS = """\
class Box:
    def __init__(self):
        self.message = 'm'
        self.toolName = 't'
b = Box()
try:
    ValueError('x').message
except AttributeError as e:
    missing = str(e)
return [b.message, b.toolName, getattr(b, 'message'), type(b).__name__, missing]
"""


def test_other_objects_keep_their_own_attributes() -> None:
    # The reads of ``toolName`` / ``message`` / ``__name__`` go through helpers; other objects answer as written.
    assert go(OTHER_OBJECTS) == CodeRunSuccess(
        (), ["m", "t", "m", "Box", "'ValueError' object has no attribute 'message'"]
    )


LINES = [
    ("x = 1\nraise ValueError('boom')", "ValueError: boom (line 2)"),
    ("def f():\n    return {}['k']\n\nf()", "KeyError: 'k' (line 2)"),
    (
        's = """\nline\n  more\n"""\nt = f"""{s}\n{1}"""\nundefined_name',
        "NameError: name 'undefined_name' is not defined (line 7)",
    ),
    ("if True:\n\tx = 1\n\tx.nope", "AttributeError: 'int' object has no attribute 'nope' (line 3)"),
    ("print('a')\nawait tools.fail({})", "ToolCallError: tools.fail failed: deliberate failure (line 2)"),
    ("tools['nope']", "KeyError: 'nope' (line 1)"),
    ("raise ValueError", "ValueError (line 1)"),
]


@pytest.mark.parametrize(("code", "message"), LINES)
def test_errors_name_the_program_line(code: str, message: str) -> None:
    result = go(code)
    assert isinstance(result, CodeRunFailure) and (result.kind, result.message) == ("exception", message)


def test_gather_overlaps_the_calls() -> None:
    tools = FakeTools()
    code = "import asyncio\nreturn await asyncio.gather(tools.slow({'s': 0.1, 'v': 1}), tools.slow({'s': 0.1, 'v': 2}))"
    assert go(code, tools) == CodeRunSuccess((), [1, 2])
    assert [name for name, _ in tools.calls] == ["slow", "slow"]


@pytest.mark.parametrize("call", ["tools.echo()", "tools.echo({1, 2})", "tools.echo({'x': float('nan')})"])
def test_non_lossless_arguments_reject_in_the_program(call: str) -> None:
    tools = FakeTools()
    assert go(f"try:\n    await {call}\nexcept ToolCallError as e:\n    return str(e)", tools) == CodeRunSuccess(
        (), LOSSY
    )
    assert tools.calls == []


@pytest.mark.parametrize(
    ("value", "where"),
    [
        case
        if "OrderedDict" not in case[0]
        else pytest.param(*case, marks=pytest.mark.skip("Monty has no OrderedDict"))
        for case in LOSSY_COMPLETIONS
    ],
)
def test_a_lossy_completion_names_the_path_and_the_type(value: str, where: str) -> None:
    # The same text as on the subprocess runtime, also where pydantic-monty would hand out a stand-in string
    # (a cycle, a function, a class instance): the sandbox says what the value really is.
    assert go(f"{LOSSY_PRELUDE}return {value}") == CodeRunFailure(
        "invalid-output", f"program completion must be lossless JSON: {where}"
    )


def test_strings_like_monty_stand_ins_are_kept() -> None:
    value = ["[...]", "{...}", "<b>", "<function 'f' at 0x1>", {"<k>": "<v>"}]
    tools = FakeTools()
    code = f"r = await tools.echo({{'v': {value!r}}})\nreturn [r, {value!r}]"
    assert go(code, tools) == CodeRunSuccess((), [{"echo": {"v": value}}, value])
    assert tools.calls == [("echo", {"v": value})]


@pytest.mark.parametrize("argument", ["cyclic", "[len]", "{'f': lambda: 1}", "{'p': Point(1, 2)}"])
def test_arguments_monty_cannot_hand_out_are_refused_in_the_program(argument: str) -> None:
    tools = FakeTools()
    code = f"{LOSSY_PRELUDE}try:\n    await tools.echo({argument})\nexcept ToolCallError as e:\n    return e.message"
    assert go(code, tools) == CodeRunSuccess((), LOSSY)
    assert tools.calls == []


def test_an_exception_is_exception() -> None:
    assert go("print('x')\nraise ValueError('boom')") == CodeRunFailure(
        "exception", "ValueError: boom (line 2)", ("x",)
    )


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
    assert go("return 'x' * 100", max_output_bytes=50) == CodeRunFailure(
        "output-limit", "outer output exceeded 50 bytes"
    )


def test_print_flood_is_truncated_with_a_marker() -> None:
    result = go("for i in range(5000):\n    print('line', i)\nreturn 1", max_log_bytes=500)
    assert isinstance(result, CodeRunSuccess)
    assert result.logs[-1] == "[output truncated: the program printed more than 500 bytes]"


def test_no_state_crosses_runs() -> None:
    async def main() -> list[Any]:
        async with MontyRuntime() as runtime:
            first = await runtime.run(request("global marker\nmarker = 1\nreturn 1", FakeTools()))
            second = await runtime.run(
                request("try:\n    return marker\nexcept NameError:\n    return 'fresh'", FakeTools())
            )
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
            return await asyncio.gather(
                *(
                    runtime.run(request(f"r = await tools.echo({{'i': {i}}})\nreturn r['echo']['i']", tools))
                    for i in range(50)
                )
            )

    assert run_sync(main) == [CodeRunSuccess((), i) for i in range(50)]


EXIT_SCRIPT = """\
import asyncio
from dsh_codegen.codemode import MontyRuntime
from dsh_codegen.registry.code_runtime import CodeRunRequest
from dsh_codegen.registry.cancel import AbortController

def dispatch(name, args):
    future = asyncio.get_running_loop().create_future()
    future.set_result(args)
    return future

async def main():
    async with MontyRuntime() as runtime:
        request = CodeRunRequest("return await tools.echo({})", ("echo",), dispatch, AbortController().signal, "c")
        assert (await runtime.run(request)).result == {}

asyncio.run(main())
"""


def test_the_process_exits_cleanly_after_aclose() -> None:
    # pydantic-monty's pool settles its shutdown from a thread of its own that must leave Python before the
    # interpreter exits; before aclose() waited for it, about one exit in four was a SIGABRT.
    codes = []
    for _batch in range(4):
        processes = [subprocess.Popen([sys.executable, "-c", EXIT_SCRIPT], stderr=subprocess.PIPE) for _ in range(4)]
        codes += [(process.wait(), process.communicate()[1].decode()[-300:]) for process in processes]
    assert codes == [(0, "")] * 16


DEEP = "x = 0\nfor i in range({n}):\n    x = [x]\n{tail}"


def test_a_value_too_deep_for_monty_is_a_failure_never_a_substitute() -> None:
    # pydantic-monty hands a value out of the sandbox with '<deeply nested>' in place of whatever lies inside
    # about 1,000 containers; the runtime refuses such a value instead of passing the stand-in on.
    too_deep = "program completion is nested too deeply to leave the Monty sandbox (about 1,000 levels is its limit)"
    assert go(DEEP.format(n=100_000, tail="return x")) == CodeRunFailure("invalid-output", too_deep)
    assert go(DEEP.format(n=1000, tail="return x")) == CodeRunFailure("invalid-output", too_deep)
    result = go(DEEP.format(n=999, tail="return x"))
    assert isinstance(result, CodeRunSuccess)
    value, depth = result.result, 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    assert (depth, value) == (999, 0)
    assert go("return ['<deeply nested>']") == CodeRunSuccess((), ["<deeply nested>"])  # the program's own string


def test_arguments_too_deep_for_monty_are_refused_in_the_program() -> None:
    tools = FakeTools()
    code = DEEP.format(
        n=5000, tail="try:\n    await tools.echo({'x': x})\nexcept ToolCallError as e:\n    return e.message"
    )
    assert go(code, tools) == CodeRunSuccess(
        (), "tool arguments are nested too deeply to leave the Monty sandbox (about 1,000 levels is its limit)"
    )
    assert tools.calls == []


def test_the_sdk_text_says_what_monty_supports() -> None:
    from dsh_codegen.registry import ToolRegistry

    async def main() -> str:
        async with MontyRuntime() as runtime:
            registry = ToolRegistry(mode="code", code_runtime=runtime)
            return registry.assemble().sections[1].text

    text = run_sync(main)
    for note in MontyRuntime.sdk_notes:
        assert f"\n- {note}\n" in text
    assert "no class inheritance" in text and "`asyncio` has `gather` and `sleep` only" in text
