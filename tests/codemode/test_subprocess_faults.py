"""The fault matrix on ``PythonSubprocessRuntime``: each case ends in the right failure kind,
the host unharmed, and (the autouse fixture) no process left behind."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest
from _runtime_helpers import STARTS, FakeTools, our_processes, request, run_code, run_sync

from dsh_codegen.codemode import PythonSubprocessRuntime
from dsh_codegen.registry.code_runtime import CodeRunFailure, CodeRunRequest, CodeRunSuccess
from dsh_codegen.registry.cancel import AbortController

pytestmark = [pytest.mark.once, pytest.mark.parametrize("start", STARTS)]


def go(code: str, start: str, **options: Any) -> Any:
    options.setdefault("wall_timeout_s", 5.0)
    return run_sync(lambda: run_code(code, start, **options))


def kind_of(result: Any) -> str:
    return result.kind if isinstance(result, CodeRunFailure) else "success"


# --- frames the child forges --------------------------------------------------------------------

FORGED = {
    "garbage": "os.write(4, b'not json at all\\n')",
    "not an object": "os.write(4, b'[1, 2]\\n')",
    "unknown type": 'os.write(4, b\'{"t": "hello"}\\n\')',
    "wrong shape": 'os.write(4, b\'{"t": "log", "text": 5}\\n\')',
    "extra key": 'os.write(4, b\'{"t": "log", "text": "a", "x": 1}\\n\')',
    "id out of sequence": 'os.write(4, b\'{"t": "call", "id": 7, "tool": "echo", "args": {}}\\n\')',
    "unbound tool": 'os.write(4, b\'{"t": "call", "id": 1, "tool": "run_code", "args": {}}\\n\')',
    "second completion": 'os.write(4, b\'{"t": "done"}\\n\')',
    "forged fail kind": 'os.write(4, b\'{"t": "fail", "kind": "timeout"}\\n\')',
    "lossy number": 'os.write(4, b\'{"t": "done", "result": NaN}\\n\')',
    "invalid utf-8": 'os.write(4, b\'{"t": "log", "text": "\\xff"}\\n\')',
}


@pytest.mark.parametrize("case", sorted(FORGED))
def test_a_forged_frame_is_invalid_output(start: str, case: str) -> None:
    result = go(f"import os\nprint('before')\n{FORGED[case]}\nimport time\ntime.sleep(0.3)\nreturn 1", start)
    assert kind_of(result) == "invalid-output", result
    assert result.message.startswith("the program process broke the protocol")
    assert result.logs == ("before",)


def test_a_forged_completion_before_the_real_one_wins_then_the_real_one_is_a_violation(start: str) -> None:
    # The forged ``done`` is well formed; the program's own completion that follows is a second one.
    result = go('import os\nos.write(4, b\'{"t": "done", "result": 7}\\n\')\nreturn 1', start)
    assert kind_of(result) == "invalid-output"


def test_an_oversized_frame_is_invalid_output(start: str) -> None:
    code = 'import os\nos.write(4, b\'{"t": "log", "text": "\' + b\'x\' * 400000)\nimport time\ntime.sleep(2)'
    result = go(code, start, max_output_bytes=1000, max_log_bytes=1000)
    assert result == CodeRunFailure("invalid-output", "the program process broke the protocol (an oversized frame)")


def test_a_truncated_frame_then_exit_is_invalid_output(start: str) -> None:
    result = go('import os\nos.write(4, b\'{"t": "do\')\nos._exit(0)', start)
    assert kind_of(result) == "invalid-output"


def test_the_pipe_closed_early_is_a_worker_exit(start: str) -> None:
    result = go("import os\nos.close(4)\nreturn 1", start)
    assert kind_of(result) == "worker-exit", result


# --- the process dies or misbehaves -------------------------------------------------------------


def test_os_exit_is_a_worker_exit(start: str) -> None:
    result = go("print('bye')\nimport os\nos._exit(3)", start)
    assert result == CodeRunFailure("worker-exit", "the program process exited with code 3 before completing", ("bye",))


def test_a_segfault_is_a_worker_exit(start: str) -> None:
    result = go("import ctypes\nctypes.string_at(0)", start)
    assert kind_of(result) == "worker-exit"
    assert result.message.startswith("the program process was killed by SIGSEGV")


def test_an_endless_loop_times_out(start: str) -> None:
    # 2 s: a spawned interpreter on a loaded machine must reach its first print within the budget.
    result = go("print('spinning')\nwhile True:\n    pass", start, wall_timeout_s=2)
    assert result == CodeRunFailure("timeout", "the program ran past its wall-clock budget of 2 s", ("spinning",))


def test_a_sleep_past_the_deadline_times_out(start: str) -> None:
    result = go("import asyncio\nawait asyncio.sleep(30)", start, wall_timeout_s=0.5)
    assert kind_of(result) == "timeout"


def test_cpu_seconds_exhausted_is_a_timeout(start: str) -> None:
    result = go("while True:\n    pass", start, cpu_seconds=1, wall_timeout_s=20)
    assert result == CodeRunFailure("timeout", "the program ran past its CPU budget of 1 s")


def test_cpu_limit_survives_an_ignored_sigxcpu(start: str) -> None:
    if start == "spawn":
        pytest.skip("the limit is set by the same child code under both start methods; once is enough (slow)")
    code = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass"
    result = go(code, start, cpu_seconds=1, wall_timeout_s=20)
    assert result == CodeRunFailure("timeout", "the program ran past its CPU budget of 1 s")


def test_a_10_gb_allocation_is_a_memory_error_the_program_sees(start: str) -> None:
    code = "try:\n    b = bytearray(10 * 2**30)\nexcept MemoryError:\n    return 'caught'"
    assert go(code, start, memory_bytes=512 << 20) == CodeRunSuccess((), "caught")
    result = go("b = b'x' * (10 * 2**30)", start, memory_bytes=512 << 20)
    assert result == CodeRunFailure("exception", "MemoryError (line 1)")


def test_grandchildren_that_outlive_the_program_are_killed(start: str) -> None:
    code = (
        "import os, time\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "return 'left them'"
    )
    assert go(code, start) == CodeRunSuccess((), "left them")


def test_a_grandchild_in_its_own_session_is_killed_too(start: str) -> None:
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
    assert go(code, start) == CodeRunSuccess((), "escaped?")


def test_a_bounded_fork_bomb_ends_within_the_wall_budget_and_the_host_stays_responsive(start: str) -> None:
    # Bounded by construction (2**5 processes) and by RLIMIT_NPROC (enforced for non-root users).
    code = "import os\nfor _ in range(5):\n    os.fork()\nwhile True:\n    pass"

    async def main() -> tuple[Any, int]:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                await asyncio.sleep(0.02)
                ticks += 1

        task = asyncio.ensure_future(ticker())
        result = await run_code(code, start, wall_timeout_s=1.0, max_processes=256)
        stop.set()
        await task
        return result, ticks

    started = time.monotonic()
    result, ticks = run_sync(main)
    assert kind_of(result) == "timeout"
    assert ticks > 10  # the host's loop kept turning during the bomb
    assert time.monotonic() - started < 20


# --- the caller stops the run -------------------------------------------------------------------


async def _until_called(tools: FakeTools, name: str) -> None:
    while name not in [called for called, _ in tools.calls]:
        await asyncio.sleep(0.01)


async def _cancel_after(start: str, code: str, delay_s: float, tools: FakeTools) -> None:
    async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
        task = asyncio.ensure_future(runtime.run(request(code, tools)))
        if "hang" in code:
            await _until_called(tools, "hang")
        else:
            await asyncio.sleep(delay_s)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_caller_cancellation_mid_run_stops_and_reaps(start: str) -> None:
    run_sync(lambda: _cancel_after(start, "import time\ntime.sleep(30)", 0.4, FakeTools()))


def test_caller_cancellation_mid_binding_stops_and_reaps(start: str) -> None:
    tools = FakeTools()
    run_sync(lambda: _cancel_after(start, "await tools.hang({})", 0.6, tools))
    assert [name for name, _ in tools.calls] == ["hang"]


def test_a_second_cancellation_does_not_cut_the_clean_up_short(start: str) -> None:
    async def main() -> None:
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            task = asyncio.ensure_future(runtime.run(request("import time\ntime.sleep(30)", FakeTools())))
            await asyncio.sleep(0.4)
            task.cancel()
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    run_sync(main)


def test_an_abort_signal_ends_the_run_as_abort_after_it_stopped(start: str) -> None:
    async def main() -> Any:
        controller = AbortController()
        tools = FakeTools()
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            task = asyncio.ensure_future(
                runtime.run(request("print('working')\nawait tools.hang({})", tools, controller.signal))
            )
            await _until_called(tools, "hang")
            controller.abort()
            return await task

    assert run_sync(main) == CodeRunFailure("abort", "the run was aborted", ("working",))


def test_a_pre_aborted_signal_never_starts_a_process(start: str) -> None:
    async def main() -> Any:
        controller = AbortController()
        controller.abort()
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            result = await runtime.run(request("return 1", FakeTools(), controller.signal))
            return result, repr(runtime)

    result, text = run_sync(main)
    assert kind_of(result) == "abort" and text.endswith("idle)")


def test_aclose_mid_run_kills_the_run(start: str) -> None:
    async def main() -> Any:
        runtime = PythonSubprocessRuntime(start=start, wall_timeout_s=10)  # type: ignore[arg-type]
        task = asyncio.ensure_future(runtime.run(request("import time\ntime.sleep(30)", FakeTools())))
        await asyncio.sleep(0.5)
        await runtime.aclose()
        return await task

    assert run_sync(main) == CodeRunFailure("worker-exit", "the runtime was closed during the run")


def test_aclose_while_the_process_is_on_its_way_says_the_runtime_closed(start: str) -> None:
    # The run is still waiting for its process (a fork server starting, a spawn) when the runtime
    # closes: the close came first, so the run says so, not that its process could not start.
    async def main() -> Any:
        runtime = PythonSubprocessRuntime(start=start, wall_timeout_s=10)  # type: ignore[arg-type]
        task = asyncio.ensure_future(runtime.run(request("return 1", FakeTools())))
        await asyncio.sleep(0)
        await runtime.aclose()
        return await task

    assert run_sync(main) == CodeRunFailure("worker-exit", "the runtime was closed during the run")


def test_network_false_leaves_only_loopback(start: str) -> None:
    code = "import socket\nreturn sorted(name for _, name in socket.if_nameindex())"
    result = go(code, start, network=False)
    if isinstance(result, CodeRunFailure) and result.message.startswith("the run could not be confined"):
        pytest.skip(f"the kernel refuses new network namespaces here: {result.message}")
    assert result == CodeRunSuccess((), ["lo"])
    host = sorted(name for _, name in socket.if_nameindex())
    assert go(code, start) == CodeRunSuccess((), host)


def test_no_interpreter_to_start_is_a_worker_exit_not_a_host_exception(start: str) -> None:
    result = go("return 1", start, python="/nonexistent/python3")
    assert kind_of(result) == "worker-exit"
    assert result.message.startswith("the program process could not be started:")


def test_a_broken_dispatch_fails_only_that_call(start: str) -> None:
    async def main() -> Any:
        def dispatch(name: str, args: Any) -> Any:
            return None  # breaks the contract: not a future

        broken = CodeRunRequest(
            "try:\n    await tools.echo({})\nexcept ToolCallError as e:\n    return e.message",
            ("echo",),
            dispatch,
            AbortController().signal,
            "c",
        )
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            return await runtime.run(broken)

    assert run_sync(main) == CodeRunSuccess((), "dispatch returned NoneType, not a future")


def test_a_process_killed_outright_is_a_worker_exit(start: str) -> None:
    # What the kernel's memory killer does (RLIMIT_AS itself only makes allocations fail).
    result = go("import os, signal\nprint('going')\nos.kill(os.getpid(), signal.SIGKILL)", start)
    assert result == CodeRunFailure("worker-exit", "the program process was killed by SIGKILL", ("going",))


def test_a_completion_the_program_forges_then_keeps_running_is_its_result_and_it_is_killed(start: str) -> None:
    # A run ends once its frame stream is closed after a completion, without waiting for the
    # process to be reaped; the process is killed all the same (the fixture counts it), and
    # aclose() returns well before the program's 30-second sleep would have.
    code = 'import os, time\nos.write(4, b\'{"t": "done", "result": 5}\\n\')\nos.close(4)\ntime.sleep(30)'

    async def main() -> tuple[Any, float]:
        async with PythonSubprocessRuntime(start=start, wall_timeout_s=20) as runtime:  # type: ignore[arg-type]
            result = await runtime.run(request(code, FakeTools()))
            started = time.monotonic()
        return result, time.monotonic() - started

    result, closing_s = run_sync(main)
    assert result == CodeRunSuccess((), 5)
    assert closing_s < 15


def test_a_run_cancelled_while_its_process_is_on_the_way_leaves_nothing_and_the_next_run_works(start: str) -> None:
    async def main() -> list[Any]:
        async with PythonSubprocessRuntime(start=start) as runtime:  # type: ignore[arg-type]
            results = []
            for turns in (0, 1, 3):  # cancelled before, at and after the request for its process
                task = asyncio.ensure_future(runtime.run(request("return 1", FakeTools())))
                for _ in range(turns):
                    await asyncio.sleep(0)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                results.append(await runtime.run(request("import os\nreturn os.getpid()", FakeTools())))
            return results

    results = run_sync(main)
    assert all(isinstance(result, CodeRunSuccess) for result in results), results
    assert len({result.result for result in results}) == 3


def test_a_killed_fork_server_leaves_no_directory_and_the_next_run_works(
    start: str, tmp_path: Any, monkeypatch: Any
) -> None:
    if start != "fork-server":
        pytest.skip("the spawn strategy has no fork server")
    import os
    import signal
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    async def main() -> tuple[list[str], list[str], Any]:
        async with PythonSubprocessRuntime(start="fork-server") as runtime:
            await runtime.run(request("pass", FakeTools()))
            await asyncio.sleep(0.2)  # the spares' replies arrive
            (own,) = os.listdir(tmp_path)  # the zygote's own directory, with its spares' in it
            spares = os.listdir(tmp_path / own)
            server = runtime._server
            assert server is not None and server._zygote is not None
            os.kill(server._zygote.process.pid, signal.SIGKILL)
            for _ in range(200):  # its spares exit, then their directories and its own are removed
                if not server.running and own not in os.listdir(tmp_path):
                    break
                await asyncio.sleep(0.01)
            left = os.listdir(tmp_path)
            again = await runtime.run(request("return 2", FakeTools()))
        return spares, left, again

    spares, left, again = run_sync(main)
    assert len(spares) == 2 and left == [] and again == CodeRunSuccess((), 2)
    assert os.listdir(tmp_path) == []


KILL_PARENT = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
HOSTILE = [
    KILL_PARENT + "return 'after'",  # completes normally once its zygote is gone
    KILL_PARENT + "await tools.echo({})\nreturn 1",  # binding calls still work
    KILL_PARENT + "import time\ntime.sleep(0.05)\nraise ValueError('x')",
    KILL_PARENT + "os._exit(3)",  # an orphan's exit: seen through its pidfd
    KILL_PARENT + "while True:\n    pass",  # timed out: killed through its pidfd
]


def test_runs_after_programs_that_kill_their_fork_server_all_succeed(
    start: str, tmp_path: Any, monkeypatch: Any
) -> None:
    # Issue 34: in a sequence, a run after such a program sometimes failed ("the fork server exited",
    # or a spare whose directory the host had already removed): the old zygote's loss, noticed late,
    # tore down the new one's state. Each hostile run here is followed at once by two concurrent runs.
    if start != "fork-server":
        pytest.skip("the spawn strategy has no fork server")
    import os
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    async def main() -> tuple[list[Any], list[Any]]:
        hostile, after = [], []
        async with PythonSubprocessRuntime(start="fork-server", wall_timeout_s=0.5) as runtime:
            for _round in range(3):
                for code in HOSTILE:
                    hostile.append(await runtime.run(request(code, FakeTools())))
                    after += await asyncio.gather(*(runtime.run(request(f"return {i}", FakeTools())) for i in (1, 2)))
        return hostile, after

    hostile, after = run_sync(main)
    assert after == [CodeRunSuccess((), i) for _ in range(15) for i in (1, 2)]
    assert [type(result).__name__ for result in hostile[:5]] == [
        "CodeRunSuccess",
        "CodeRunSuccess",
        "CodeRunFailure",
        "CodeRunFailure",
        "CodeRunFailure",
    ]
    assert hostile[3] == CodeRunFailure(
        "worker-exit", "the program process ended after its fork server was lost (its exit status is unknown)"
    )
    assert hostile[4].kind == "timeout"  # type: ignore[union-attr]
    assert os.listdir(tmp_path) == []


def test_a_host_that_exits_without_closing_its_runtime_leaves_no_directory(start: str, tmp_path: Any) -> None:
    # The zygote sees its socket's end of file and cleans up alone: its runs' directories, and the
    # directory the host made for them (which the host, gone, cannot remove).
    if start != "fork-server":
        pytest.skip("the spawn strategy has no fork server")
    import os
    import subprocess
    import sys
    import time

    script = (
        "import asyncio, sys\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from _runtime_helpers import FakeTools, request\n"
        "from dsh_codegen.codemode import PythonSubprocessRuntime\n"
        "runtime = PythonSubprocessRuntime(start='fork-server')\n"
        "async def main():\n"
        "    print(await runtime.run(request(\"open('left', 'w')\\nreturn 1\", FakeTools())))\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "CodeRunSuccess(logs=(), result=1)" in done.stdout, done.stderr

    def zygotes() -> list[str]:
        # The host's zygote is the process whose directory argument lies in the host's TMPDIR (another
        # worker's processes at the same time are not this test's to wait for).
        return [line for line in our_processes() if str(tmp_path) in line]

    for _ in range(1000):  # the zygote's exit follows its host's (within its 2 s sweep)
        if not os.listdir(tmp_path) and not zygotes():
            break
        time.sleep(0.01)
    assert os.listdir(tmp_path) == []
    assert zygotes() == []
