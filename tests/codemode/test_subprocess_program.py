"""The program-side contract on ``PythonSubprocessRuntime``, under both start methods."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from typing import Any

import pytest
from lossy_cases import LOSSY_COMPLETIONS, LOSSY_PRELUDE
from _runtime_helpers import STARTS, TOOL_NAMES, FakeTools, request, run_code, run_sync

from dsh_codegen.codemode import PythonSubprocessRuntime
from dsh_codegen.registry.code_runtime import CodeRunFailure, CodeRunSuccess
from dsh_codegen.registry._results import UNSET

pytestmark = [pytest.mark.once, pytest.mark.parametrize("start", STARTS)]

LOSSY = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"


def go(code: str, start: str, tools: FakeTools | None = None, **options: Any) -> Any:
    return run_sync(lambda: run_code(code, start, tools, **options))


def test_top_level_await_return_and_print(start: str) -> None:
    result = go("print('a', 1)\nprint()\nx = await tools.echo({'k': [1, 2.5, None]})\nreturn x", start)
    assert result == CodeRunSuccess(("a 1", ""), {"echo": {"k": [1, 2.5, None]}})
    # print inside functions the program defines feeds the logs too; sep is kept, end is not
    code = "def f(x):\n    print(x, 'y', sep='-', end='!')\nf(1)\nimport asyncio\nawait asyncio.sleep(0)"
    assert go(code, start) == CodeRunSuccess(("1-y",))


def test_returning_none_has_no_result(start: str) -> None:
    assert go("x = 1", start) == CodeRunSuccess((), UNSET)
    assert go("return None", start) == CodeRunSuccess((), UNSET)
    assert go("", start) == CodeRunSuccess((), UNSET)


def test_bindings_by_attribute_and_subscript_any_visible_name(start: str) -> None:
    code = (
        "a = await tools['__class__']({})\n"
        "b = await tools['__getattr__']({})\n"
        "c = await tools['my-tool']({})\n"
        "d = await tools.echo({})\n"
        "return [a, b, c, d, 'echo' in tools, 'nope' in tools]"
    )
    assert go(code, start) == CodeRunSuccess((), ["__class__", "__getattr__", "my-tool", {"echo": {}}, True, False])


def test_only_tools_and_tool_call_error_are_bound(start: str) -> None:
    code = (
        "names = sorted(n for n in globals() if not n.startswith('__'))\n"
        "try:\n    tools.nope\nexcept AttributeError as e:\n    missing = str(e)\n"
        "return [names, missing]"
    )
    result = go(code, start, preflight=False)  # the pre-flight check would name tools.nope first
    assert isinstance(result, CodeRunSuccess)
    assert result.result == [["ToolCallError", "tools"], "no tool named 'nope'"]


def test_tool_call_error_carries_tool_name_and_message(start: str) -> None:
    code = (
        "try:\n    await tools.fail({})\n"
        "except ToolCallError as e:\n    return [e.toolName, e.message, str(e), isinstance(e, Exception)]"
    )
    assert go(code, start) == CodeRunSuccess((), ["fail", "deliberate failure", "deliberate failure", True])


def test_uncaught_tool_call_error_is_an_exception(start: str) -> None:
    result = go("print('before')\nawait tools.fail({})", start)
    assert result == CodeRunFailure(
        "exception", "ToolCallError: tools.fail failed: deliberate failure (line 2)", ("before",)
    )
    # A tool reached by subscript is named the way the program wrote it.
    result = go("x = 1\nawait tools['my-tool'](float('nan'))", start)
    assert result == CodeRunFailure("exception", f'ToolCallError: tools["my-tool"] failed: {LOSSY} (line 2)')


ASYNCIO_IDIOMS = {
    "await": "return await tools.echo({'i': 1})",
    "gather": "return list(await asyncio.gather(tools.echo({'i': 1}), tools.slow({'s': 0.01, 'v': 2})))",
    "create_task": "task = asyncio.create_task(tools.echo({'i': 1}))\nreturn await task",
    "ensure_future": "return await asyncio.ensure_future(tools.echo({'i': 1}))",
    "create_task(ensure_future)": "return await asyncio.ensure_future(asyncio.create_task(tools.echo({'i': 1})))",
    "wait": (
        "done, pending = await asyncio.wait([asyncio.create_task(tools.echo({'i': 1}))])\n"
        "return [t.result() for t in done]"
    ),
    "as_completed": "return [await f for f in asyncio.as_completed([tools.slow({'s': 0.05, 'v': 2}), tools.echo({})])]",
    "TaskGroup": (
        "async with asyncio.TaskGroup() as group:\n    a = group.create_task(tools.echo({'i': 1}))\n"
        "    b = group.create_task(tools.slow({'s': 0.01, 'v': 2}))\nreturn [a.result(), b.result()]"
    ),
    "wait_for": "return await asyncio.wait_for(tools.echo({'i': 1}), 5)",
    "timeout": "async with asyncio.timeout(5):\n    return await tools.echo({'i': 1})",
    "shield": "return await asyncio.shield(tools.echo({'i': 1}))",
    "unawaited": "tools.echo({'i': 1})\ntools['my-tool']({})\nreturn 'fired'",
    "coroutine wrapper": "async def twice(x):\n    return [await tools.echo(x), await tools.echo(x)]\n"
    "return await asyncio.create_task(twice({'i': 1}))",
}
ECHO = {"echo": {"i": 1}}


def test_binding_calls_work_with_every_asyncio_idiom(start: str) -> None:
    async def main() -> dict[str, Any]:
        out = {}
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            for idiom, code in ASYNCIO_IDIOMS.items():
                tools = FakeTools()
                result = await runtime.run(request("import asyncio\n" + code, tools))
                out[idiom] = (result, [name for name, _ in tools.calls])
        return out

    results = run_sync(main)
    assert results == {
        "await": (CodeRunSuccess((), ECHO), ["echo"]),
        "gather": (CodeRunSuccess((), [ECHO, 2]), ["echo", "slow"]),
        "create_task": (CodeRunSuccess((), ECHO), ["echo"]),
        "ensure_future": (CodeRunSuccess((), ECHO), ["echo"]),
        "create_task(ensure_future)": (CodeRunSuccess((), ECHO), ["echo"]),
        "wait": (CodeRunSuccess((), [ECHO]), ["echo"]),
        "as_completed": (CodeRunSuccess((), [{"echo": {}}, 2]), ["slow", "echo"]),
        "TaskGroup": (CodeRunSuccess((), [ECHO, 2]), ["echo", "slow"]),
        "wait_for": (CodeRunSuccess((), ECHO), ["echo"]),
        "timeout": (CodeRunSuccess((), ECHO), ["echo"]),
        "shield": (CodeRunSuccess((), ECHO), ["echo"]),
        # Dispatched when made, though never awaited; the run still ends at once.
        "unawaited": (CodeRunSuccess((), "fired"), ["echo", "my-tool"]),
        "coroutine wrapper": (CodeRunSuccess((), [ECHO, ECHO]), ["echo", "echo"]),
    }


def test_a_binding_call_is_a_coroutine_like_any_async_def(start: str) -> None:
    # So asyncio.wait takes tasks, not the calls themselves, exactly as in Python (the call still ran).
    tools = FakeTools()
    code = (
        "import asyncio, inspect\nc = tools.echo({})\nkind = inspect.iscoroutine(c)\n"
        "try:\n    await asyncio.wait([c])\nexcept TypeError as e:\n    return [kind, str(e)]"
    )
    assert go(code, start, tools) == CodeRunSuccess(
        (), [True, "Passing coroutines is forbidden, use tasks explicitly."]
    )
    assert tools.calls == [("echo", {})]


def test_gather_submits_every_call_before_any_settles(start: str) -> None:
    tools = FakeTools()
    code = (
        "import asyncio\n"
        "r = await asyncio.gather(tools.slow({'s': 0.2, 'v': 1}), tools.slow({'s': 0.2, 'v': 2}),"
        " tools.echo({'n': 3}))\n"
        "return r"
    )
    result = go(code, start, tools)
    assert result == CodeRunSuccess((), [1, 2, {"echo": {"n": 3}}])
    assert [name for name, _ in tools.calls] == ["slow", "slow", "echo"]


@pytest.mark.parametrize(
    "call",
    [
        "tools.echo()",
        "tools.echo({1, 2})",
        "tools.echo({'x': float('nan')})",
        "tools.echo({'x': -0.0})",
        "tools.echo({1: 2})",
        "tools.echo({'f': print})",
    ],
)
def test_non_lossless_arguments_reject_in_the_program(start: str, call: str) -> None:
    tools = FakeTools()
    code = f"try:\n    await {call}\nexcept ToolCallError as e:\n    return [e.toolName, e.message]"
    # (Without the pre-flight check, which would catch tools.echo() before the run.)
    assert go(code, start, tools, preflight=False) == CodeRunSuccess((), ["echo", LOSSY])
    assert tools.calls == []


def test_cyclic_arguments_reject_without_dispatch(start: str) -> None:
    tools = FakeTools()
    code = "a = []\na.append(a)\ntry:\n    await tools.echo({'a': a})\nexcept ToolCallError as e:\n    return e.message"
    assert go(code, start, tools) == CodeRunSuccess((), LOSSY)
    assert tools.calls == []


def test_exception_names_the_program_line(start: str) -> None:
    assert go("x = 1\nraise ValueError('boom')", start) == CodeRunFailure("exception", "ValueError: boom (line 2)")
    result = go("def f(:\n  pass", start)
    assert isinstance(result, CodeRunFailure) and result.kind == "exception"
    assert result.message.startswith("SyntaxError")


def test_lossy_completion_names_the_path_and_the_type(start: str) -> None:
    async def main() -> list[Any]:
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            return [
                await runtime.run(request(f"{LOSSY_PRELUDE}print('x')\nreturn {value}", FakeTools()))
                for value, _ in LOSSY_COMPLETIONS
            ]

    assert run_sync(main) == [
        CodeRunFailure("invalid-output", f"program completion must be lossless JSON: {where}", ("x",))
        for _, where in LOSSY_COMPLETIONS
    ]


def test_a_100000_deep_list_comes_back_exactly(start: str) -> None:
    result = go("x = []\nfor _ in range(100000):\n    x = [x]\nreturn x", start)
    assert isinstance(result, CodeRunSuccess)
    depth, node = 0, result.result
    while node:
        assert isinstance(node, list) and len(node) == 1
        node, depth = node[0], depth + 1
    assert depth == 100000 and node == []


def test_deep_tool_results_reach_the_program(start: str) -> None:
    code = (
        "x = []\nfor _ in range(20000):\n    x = [x]\n"
        "r = await tools.echo({'v': x})\nd = 0\nn = r['echo']['v']\n"
        "while n:\n    n = n[0]\n    d += 1\nreturn d"
    )
    assert go(code, start) == CodeRunSuccess((), 20000)


def test_unicode_and_lone_surrogates_round_trip(start: str) -> None:
    code = "r = await tools.echo({'s': 'é\\ud800\\U0001f600'})\nprint('ü\\udfff')\nreturn r"
    assert go(code, start) == CodeRunSuccess(("ü\udfff",), {"echo": {"s": "é\ud800\U0001f600"}})


def test_output_over_the_cap_is_output_limit(start: str) -> None:
    assert go("return 'x' * 100", start, max_output_bytes=50) == CodeRunFailure(
        "output-limit", "outer output exceeded 50 bytes"
    )
    # docs/texts.md's example: the logs count towards the cap and are still reported.
    assert go("print('captured before failure')", start, max_output_bytes=8) == CodeRunFailure(
        "output-limit", "outer output exceeded 8 bytes", ("captured before failure",)
    )


def test_default_output_cap_is_64_mib(start: str) -> None:
    assert PythonSubprocessRuntime().max_output_bytes == 64 * 1024 * 1024


def test_print_flood_is_truncated_with_a_marker(start: str) -> None:
    result = go("for i in range(20000):\n    print('line', i)\nreturn 'end'", start, max_log_bytes=1000)
    assert isinstance(result, CodeRunSuccess) and result.result == "end"
    assert result.logs[-1] == "[output truncated: the program printed more than 1000 bytes]"
    assert sum(len(line.encode()) for line in result.logs[:-1]) <= 1000
    assert result.logs[0] == "line 0"


def test_raw_fd_writes_are_drained_and_dropped(start: str) -> None:
    code = (
        "import os, sys\n"
        "for _ in range(200):\n    os.write(1, b'o' * 65536)\n    os.write(2, b'e' * 65536)\n"
        "sys.stdout.write('ignored')\nprint('kept')\nreturn 1"
    )
    assert go(code, start) == CodeRunSuccess(("kept",), 1)


def test_environment_is_scrubbed_and_the_workdir_fresh_and_removed(start: str) -> None:
    os.environ["DSH_TEST_SECRET"] = "leak"
    try:
        code = (
            "import os\nopen('scratch.txt', 'w').write('x')\nos.mkdir('sub')\n"
            "return [os.getcwd(), sorted(os.environ), os.listdir('.')]"
        )
        result = go(code, start)
    finally:
        del os.environ["DSH_TEST_SECRET"]
    assert isinstance(result, CodeRunSuccess)
    cwd, env, listing = result.result  # type: ignore[misc]
    assert "DSH_TEST_SECRET" not in env and set(env) <= {
        "PATH",
        "LANG",
        "PYTHONDONTWRITEBYTECODE",
        "HOME",
        "TMPDIR",
        "LC_CTYPE",
    }
    assert sorted(listing) == ["scratch.txt", "sub"]
    assert not os.path.exists(cwd)


def test_no_working_directory_outlives_the_runtime(start: str, tmp_path: Any, monkeypatch: Any) -> None:
    # The runs' directories (the fork server's spares' too) live under the host's temporary directory;
    # the host blocks between runs, so the fork server's replies are still unread when it closes.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    async def main() -> tuple[list[Any], bool]:
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            results = []
            for _ in range(3):
                results.append(await runtime.run(request("import os\nopen('f', 'w')\nreturn os.getcwd()", FakeTools())))
                time.sleep(0.05)
            # A used directory (with the program's file in it) goes while the runtime lives on, too.
            for _ in range(500):
                gone = not any(os.path.exists(str(result.result)) for result in results)
                if gone:
                    break
                await asyncio.sleep(0.01)
            return results, gone

    results, gone_while_open = run_sync(main)
    cwds = [result.result for result in results]
    # A fork server makes them in a directory of its own (one per zygote) under the host's.
    parents = {os.path.dirname(cwd) for cwd in cwds}
    assert len(set(cwds)) == 3 and len(parents) == 1
    assert {os.path.dirname(parent) if start == "fork-server" else parent for parent in parents} == {str(tmp_path)}
    assert gone_while_open
    assert os.listdir(tmp_path) == []


def test_every_run_gets_a_process_no_other_run_used(start: str) -> None:
    async def main() -> list[Any]:
        tools = FakeTools()
        code = (
            "import os, builtins\nseen = hasattr(builtins, 'marker')\nbuiltins.marker = 1\nreturn [os.getpid(), seen]"
        )
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            return [await runtime.run(request(code, tools)) for _ in range(3)]

    results = run_sync(main)
    pids = [r.result[0] for r in results]
    assert len(set(pids)) == 3 and os.getpid() not in pids
    assert [r.result[1] for r in results] == [False, False, False]


def test_repr_names_the_start_method(start: str) -> None:
    async def main() -> list[str]:
        runtime = PythonSubprocessRuntime(start=start)  # type: ignore[arg-type]
        seen = [repr(runtime)]
        await runtime.run(request("pass", FakeTools()))
        seen.append(repr(runtime))
        await runtime.aclose()
        seen.append(repr(runtime))
        return seen

    idle, busy, closed = run_sync(main)
    assert idle == f"PythonSubprocessRuntime(start={start!r}, idle)"
    assert busy == f"PythonSubprocessRuntime(start={start!r}, {'running' if start == 'fork-server' else 'idle'})"
    assert closed == f"PythonSubprocessRuntime(start={start!r}, closed)"


def test_a_closed_runtime_refuses_to_run(start: str) -> None:
    async def main() -> None:
        runtime = PythonSubprocessRuntime(start=start)  # type: ignore[arg-type]
        await runtime.aclose()
        with pytest.raises(RuntimeError, match="closed"):
            await runtime.run(request("pass", FakeTools()))

    run_sync(main)


def test_runs_share_one_runtime_concurrently(start: str) -> None:
    count = 50 if start == "fork-server" else 8

    async def main() -> list[Any]:
        tools = FakeTools()
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            return await asyncio.gather(
                *(
                    runtime.run(request(f"r = await tools.echo({{'i': {i}}})\nreturn r['echo']['i']", tools))
                    for i in range(count)
                )
            )

    assert run_sync(main) == [CodeRunSuccess((), i) for i in range(count)]


class HoldTools(FakeTools):
    """``hold`` settles only once ``release`` is called: a program that waits on anything else
    while a ``hold`` is outstanding must still have its loop woken by that other thing."""

    def dispatch(self, name: str, args: Any) -> asyncio.Future[Any]:
        if name == "hold":
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self.pending.append(future)
            return future
        if name == "release":
            for held in self.pending:
                held.set_result("released")
        return super().dispatch("echo", args)


WAITS_WHILE_A_CALL_IS_OUT = {
    "a thread": "v = await asyncio.to_thread(lambda: 5)",
    "a timer": "await asyncio.sleep(0.01)\nv = 5",
    "a ready callback": "e = asyncio.Event()\nasyncio.get_running_loop().call_soon(e.set)\nawait e.wait()\nv = 5",
    "another descriptor": (
        "import os\nr, w = os.pipe()\nos.write(w, b'5')\nloop = asyncio.get_running_loop()\nf = loop.create_future()\n"
        "loop.add_reader(r, lambda: f.done() or f.set_result(int(os.read(r, 1))))\nv = await f\nloop.remove_reader(r)"
    ),
}


@pytest.mark.parametrize("wait", sorted(WAITS_WHILE_A_CALL_IS_OUT))
def test_the_loop_hears_other_wake_ups_while_a_call_is_out(start: str, wait: str) -> None:
    # The child reads a binding's answer with a bare blocking read only when nothing else can
    # wake its loop; each of these would hang there (the run would time out) if it did otherwise.
    code = f"import asyncio\nh = tools.hold({{}})\n{WAITS_WHILE_A_CALL_IS_OUT[wait]}\nawait tools.release({{}})\nreturn [v, await h]"

    async def main() -> Any:
        async with PythonSubprocessRuntime(start=start, wall_timeout_s=10.0) as runtime:  # type: ignore[arg-type]
            return await runtime.run(request(code, HoldTools(), names=(*TOOL_NAMES, "hold", "release")))

    assert run_sync(main) == CodeRunSuccess((), [5, "released"])
