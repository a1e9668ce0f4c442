"""``CommandRuntime``: programs run through real commands that speak the run protocol on stdio.

The child is ``python -m dsh_codegen.codemode.child`` (and the same file run as a
script), started plainly and under new Linux namespaces; commands that exit at
once, print garbage or never answer end in the right failure, killed and reaped
(the autouse fixture finds any process left behind). The budgets, failure kinds
and texts are those of ``PythonSubprocessRuntime``: each is checked against it.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from typing import Any

import pytest
from _runtime_helpers import COMMAND_MARKER, FakeTools, request, run_sync

from dsh_codegen.codemode import CommandRuntime, PythonSubprocessRuntime
from dsh_codegen.codemode._processes import CHILD_SCRIPT
from dsh_codegen.registry import (
    AbortController,
    MemorySessionLog,
    ToolExecutionInput,
    ToolOutput,
    ToolRegistry,
    define_tool,
)
from dsh_codegen.registry.code_runtime import CodeRunFailure, CodeRunSuccess

pytestmark = pytest.mark.once

PYTHON = sys.executable
#: The documented entry point, and the same child file run as a script (no package import).
MODULE = [PYTHON, "-m", "dsh_codegen.codemode.child"]
SCRIPT = [PYTHON, "-I", "-S", CHILD_SCRIPT, "stdio"]


async def _run(runtime: Any, code: str, tools: FakeTools | None = None) -> Any:
    async with runtime:
        return await runtime.run(request(code, tools or FakeTools()))


def go(argv: list[str], code: str, tools: FakeTools | None = None, **options: Any) -> Any:
    options.setdefault("wall_timeout_s", 5.0)
    return run_sync(lambda: _run(CommandRuntime(argv, **options), code, tools))


def local(code: str, **options: Any) -> Any:
    options.setdefault("wall_timeout_s", 5.0)
    return run_sync(lambda: _run(PythonSubprocessRuntime(**options), code))


PROGRAM = (
    "print('hi')\n"
    "one = await tools.echo({'n': 1})\n"
    "both = await asyncio.gather(tools.slow({'s': 0.05, 'v': 'a'}), tools.echo({'n': 2}))\n"
    "try:\n"
    "    await tools.fail({})\n"
    "except ToolCallError as e:\n"
    "    failed = [e.toolName, e.message]\n"
    "return {'one': one, 'both': both, 'failed': failed, 'exotic': await tools['my-tool']({})}"
)
EXPECTED = CodeRunSuccess(
    ("hi",),
    {
        "one": {"echo": {"n": 1}},
        "both": ["a", {"echo": {"n": 2}}],
        "failed": ["fail", "deliberate failure"],
        "exotic": "my-tool",
    },
)


def test_the_module_runs_a_program_with_sub_calls() -> None:
    tools = FakeTools()
    assert go(MODULE, "import asyncio\n" + PROGRAM, tools) == EXPECTED
    assert [name for name, _ in tools.calls] == ["echo", "slow", "echo", "fail", "my-tool"]


def test_the_child_file_run_as_a_script_is_the_same_child() -> None:
    assert go(SCRIPT, "import asyncio\n" + PROGRAM) == EXPECTED


#: Programs whose endings must read exactly as on the local runtime.
SAME_AS_LOCAL = {
    "os-exit": "print('bye')\nimport os\nos._exit(3)",
    "killed-outright": "import os, signal\nprint('going')\nos.kill(os.getpid(), signal.SIGKILL)",
    "segfault": "import ctypes\nctypes.string_at(0)",
    "endless-loop": "print('spinning')\nwhile True:\n    pass",
    "forged-frame": "import os\nprint('before')\nos.write(4, b'not json at all\\n')\nimport time\ntime.sleep(0.3)",
    "truncated-frame": 'import os\nos.write(4, b\'{"t": "do\')\nos._exit(0)',
    "pipe-closed-early": "import os\nos.close(4)\nreturn 1",
    "uncaught-tool-error": "await tools.fail({})",
    "lossy-completion": "import datetime\nreturn {'when': datetime.date(2024, 1, 1)}",
    "output-limit": "print('x' * 5000)\nreturn 1",
    "log-cap": "for i in range(100):\n    print('y' * 100)",
    "memory": "b = b'x' * (10 * 2**30)",
    "raw-writes": "import os, sys\nos.write(1, b'raw')\nsys.stdout.write('dropped')\nreturn 'kept'",
    "workdir-and-env": "import os\nreturn [os.listdir('.'), os.getcwd() == os.environ['HOME'] == os.environ['TMPDIR']]",
    "sys-exit-0": "print('ok')\nimport sys\nsys.exit(0)",
}
OPTIONS = {"wall_timeout_s": 1.0, "max_output_bytes": 4000, "max_log_bytes": 2000, "memory_bytes": 512 << 20}


@pytest.mark.parametrize("case", sorted(SAME_AS_LOCAL))
def test_endings_read_as_on_the_local_runtime(case: str) -> None:
    code = SAME_AS_LOCAL[case]
    assert go(SCRIPT, code, **OPTIONS) == local(code, **OPTIONS)


def test_cpu_budget_of_a_program_that_ignores_sigxcpu_is_a_timeout() -> None:
    code = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass"
    assert go(SCRIPT, code, cpu_seconds=1, wall_timeout_s=20) == CodeRunFailure(
        "timeout", "the program ran past its CPU budget of 1 s"
    )


def test_grandchildren_in_their_own_session_are_killed() -> None:
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "time.sleep(0.2)\n"
        "return 'escaped?'"
    )
    assert go(SCRIPT, code) == CodeRunSuccess((), "escaped?")


# --- commands that do not speak the protocol ----------------------------------------------------


def test_a_command_that_exits_at_once_is_a_worker_exit() -> None:
    assert go(["true"], "return 1") == CodeRunFailure(
        "worker-exit", "the program process exited with code 0 before completing"
    )


def test_a_command_that_fails_says_why_from_its_stderr() -> None:
    argv = [PYTHON, "-c", "import sys; sys.stderr.write('no sandbox here\\n'); sys.exit(3)", COMMAND_MARKER]
    assert go(argv, "return 1") == CodeRunFailure(
        "worker-exit", "the program process exited with code 3 before completing; its last output: no sandbox here"
    )


def test_a_command_that_prints_garbage_is_invalid_output_and_is_killed() -> None:
    argv = [PYTHON, "-c", "print('garbage', flush=True); import time; time.sleep(60)", COMMAND_MARKER]
    assert go(argv, "return 1") == CodeRunFailure(
        "invalid-output", "the program process broke the protocol (a frame that is not lossless JSON)"
    )


def test_a_command_that_floods_one_endless_line_is_cut_at_the_frame_cap() -> None:
    argv = [PYTHON, "-c", "import os\nwhile True: os.write(1, b'x' * 65536)", COMMAND_MARKER]
    assert go(argv, "return 1", max_output_bytes=1000, max_log_bytes=1000) == CodeRunFailure(
        "invalid-output", "the program process broke the protocol (an oversized frame)"
    )


def test_a_command_that_never_answers_times_out_and_is_killed() -> None:
    argv = [PYTHON, "-c", "import time; time.sleep(60)", COMMAND_MARKER]
    assert go(argv, "return 1", wall_timeout_s=0.5) == CodeRunFailure(
        "timeout", "the program ran past its wall-clock budget of 0.5 s"
    )


def test_a_command_that_ignores_sigterm_is_killed_with_its_process_group() -> None:
    code = "import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nos.fork()\ntime.sleep(60)"
    argv = [PYTHON, "-c", code, COMMAND_MARKER]
    assert go(argv, "return 1", wall_timeout_s=0.5) == CodeRunFailure(
        "timeout", "the program ran past its wall-clock budget of 0.5 s"
    )


def test_a_command_that_does_not_exist_is_a_worker_exit() -> None:
    result = go(["dsh-no-such-command"], "return 1")
    assert result.kind == "worker-exit"
    assert result.message.startswith("the program process could not be started: ")
    assert "dsh-no-such-command" in result.message


def test_argv_is_a_list_of_strings() -> None:
    with pytest.raises(TypeError, match="argv must be a list of strings"):
        CommandRuntime("python -m dsh_codegen.codemode.child")  # type: ignore[arg-type]
    for argv in ([], ["python", 3], ["a\0b"]):
        with pytest.raises(ValueError, match="argv must be a non-empty list of strings"):
            CommandRuntime(argv)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wall_timeout_s"):
        CommandRuntime(SCRIPT, wall_timeout_s=0)
    assert repr(CommandRuntime(["a", "b"])) == "CommandRuntime(['a', 'b'], 0 running)"


# --- the caller stops the run -------------------------------------------------------------------


async def _until_called(tools: FakeTools, name: str) -> None:
    while name not in [called for called, _ in tools.calls]:
        await asyncio.sleep(0.01)


def test_an_abort_mid_call_ends_the_run_as_abort() -> None:
    async def main() -> Any:
        controller = AbortController()
        tools = FakeTools()
        async with CommandRuntime(SCRIPT) as runtime:
            task = asyncio.ensure_future(
                runtime.run(request("print('working')\nawait tools.hang({})", tools, controller.signal))
            )
            await _until_called(tools, "hang")
            controller.abort()
            return await task

    assert run_sync(main) == CodeRunFailure("abort", "the run was aborted", ("working",))


def test_caller_cancellation_and_aclose_stop_and_reap() -> None:
    async def main() -> Any:
        runtime = CommandRuntime(SCRIPT)
        tools = FakeTools()
        cancelled = asyncio.ensure_future(runtime.run(request("await tools.hang({})", tools)))
        closed = asyncio.ensure_future(runtime.run(request("import time\ntime.sleep(30)", FakeTools())))
        await _until_called(tools, "hang")
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        await asyncio.sleep(0.3)
        await runtime.aclose()
        with pytest.raises(RuntimeError, match="this CommandRuntime is closed"):
            await runtime.run(request("return 1", FakeTools()))
        return await closed

    assert run_sync(main) == CodeRunFailure("worker-exit", "the runtime was closed during the run")


# --- a command that isolates: new Linux namespaces ----------------------------------------------

UNSHARE = ["unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=30).returncode == 0


def test_under_new_user_pid_and_network_namespaces() -> None:
    if not _unshare_works():
        pytest.skip("unshare cannot make user, pid and network namespaces here")
    code = (
        "import os, socket\n"
        "if os.fork() == 0:\n"  # left running: the namespace's end takes it
        "    import time\n"
        "    time.sleep(60)\n"
        "await tools.echo({})\n"
        "return {'pid': os.getpid(), 'interfaces': [name for _, name in socket.if_nameindex()],"
        " 'processes': sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}"
    )
    result = go([*UNSHARE, *MODULE], code)
    # The child is the namespace's first process; the program its first fork; nothing else is seen.
    assert result == CodeRunSuccess((), {"pid": 2, "interfaces": ["lo"], "processes": [1, 2, 3]})
    assert go([*UNSHARE, *MODULE], "while True:\n    pass", wall_timeout_s=0.5).kind == "timeout"


# --- through a registry: the same texts and events as the local runtime -------------------------


def _registry(runtime: Any, log: MemorySessionLog) -> ToolRegistry:
    registry = ToolRegistry(mode="code", code_runtime=runtime, log=log)

    async def note(args: Any, run: Any) -> Any:
        if args["text"] == "bad":
            raise ValueError("no bad notes")
        return {"saved": args["text"]}

    registry.register(
        define_tool(
            name="note",
            description="Save a note.",
            parameters={"text": {"type": "string"}},
            execute=note,
            output=ToolOutput(
                schema={"type": "object"}, render=lambda args, value: [{"type": "text", "text": str(value)}]
            ),
        )
    )
    return registry


async def _through_registry(runtime: Any) -> tuple[Any, list[dict[str, Any]]]:
    log = MemorySessionLog()
    code = (
        "print('start')\nawait tools.note({'text': 'a'})\n"
        "await asyncio.gather(tools.note({'text': 'b'}), tools.note({'text': 'bad'}))"
    )
    async with runtime:
        result = await _registry(runtime, log).execute(
            ToolExecutionInput(
                "c1",
                "run_code",
                {"code": "import asyncio\n" + code, "description": "notes"},
                AbortController().signal,
                agent="main",
            )
        )
    events = [{key: value for key, value in event.items() if key != "time"} for event in log.events]
    return (result.is_error, result.content), events


def test_through_a_registry_the_model_and_the_log_see_what_the_local_runtime_gives() -> None:
    command = asyncio.run(_through_registry(CommandRuntime(SCRIPT)))
    assert command == asyncio.run(_through_registry(PythonSubprocessRuntime()))
    (is_error, content), events = command
    assert is_error and "ToolCallError: tools.note failed: no bad notes" in content[0]["text"]
    assert [event["type"] for event in events].count("tool/code-dispatch") == 3
