"""The host side of Code Mode's run protocol, and the runtimes that start a fresh process per run.

:class:`ProcessHost` is the one host half of the protocol docs/codemode-protocol.md
specifies, whatever carries it: a local process's pipes (:class:`PythonSubprocessRuntime`),
a command's stdin and stdout (:class:`CommandRuntime`), a Ray actor's channel
(``_ray.RayRuntime``). Everything the child writes is treated as hostile: each frame
is capped in size, parsed by the project's stack-safe lossless parser, checked
against its one legal shape and rebuilt from plain values before anything else sees
it. A frame that breaks the protocol ends the run as ``invalid-output``; nothing the
child does raises in the host.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, Literal, TypedDict, Unpack

from dsh_codegen.codemode._links import PipeLink, RunLink
from dsh_codegen.codemode._processes import (
    Child,
    ExitReport,
    ForkServer,
    child_env,
    fork_server_supported,
    spawn_command,
    spawn_keeper,
)
from dsh_codegen.codemode._preflight import preflight_check
from dsh_codegen.codemode._texts import LogSink, completion_error_text, program_error_text
from dsh_codegen.json import LosslessJsonError, dump_canonical_json, parse_json
from dsh_codegen.registry.code_runtime import (
    CodeRunFailure,
    CodeRunRequest,
    CodeRunResult,
    CodeRunSuccess,
    ToolCallError,
)
from dsh_codegen.registry import UNSET, Unset
from dsh_codegen.schema import JsonValue

__all__ = [
    "CommandRuntime",
    "Launched",
    "ProcessHost",
    "ProcessLimits",
    "ProcessOptions",
    "PythonSubprocessRuntime",
    "StartMethod",
]

StartMethod = Literal["fork-server", "spawn"]

_MIB: Final = 1 << 20
#: Bytes of fixed frame syntax allowed beyond a frame's payload cap.
_FRAME_SLACK: Final = 64 * 1024
#: Raw writes to fds 1 and 2 are read and dropped; this much is kept for a worker-exit message.
RAW_KEEP: Final = 2048
_EXIT_GRACE_S: Final = 2.0
#: The longest reason text of a lossy completion the host passes on (the child's text is hostile).
_REASON_CAP: Final = 1000


class _ProtocolError(Exception):
    """The child broke the protocol (the message says how, for the host's own diagnosis)."""


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True, slots=True)
class Launched:
    """A started run's process as the host holds it: the ``child`` (its exit, its kill), the ``link``
    carrying its bytes, and ``workdir``, a directory this host made for the run (sent as the init
    frame's ``cwd``, removed once the process is reaped), or ``None``."""

    child: Child
    link: RunLink
    workdir: str | None = None


class ProcessOptions(TypedDict, total=False):
    """The keywords for budgets and settings that every process runtime's constructor takes.

    What each means, its default and its check: :class:`ProcessLimits` (a test
    keeps the two lists of names equal).
    """

    wall_timeout_s: float
    cpu_seconds: int | None
    memory_bytes: int | None
    max_processes: int | None
    max_output_bytes: int
    max_log_bytes: int
    network: bool
    preflight: bool


@dataclass(frozen=True, slots=True)
class ProcessLimits:
    """A process runtime's budgets and settings: their defaults and the one check of their values.

    What each means is said once, in :class:`PythonSubprocessRuntime`'s
    docstring; the other process runtimes take the same keywords.
    """

    wall_timeout_s: float = 30.0
    cpu_seconds: int | None = None
    memory_bytes: int | None = 2 << 30
    max_processes: int | None = None
    max_output_bytes: int = 64 * _MIB
    max_log_bytes: int = 1 * _MIB
    network: bool = True
    preflight: bool = True

    def __post_init__(self) -> None:
        for name, value in (("max_output_bytes", self.max_output_bytes), ("max_log_bytes", self.max_log_bytes)):
            if type(value) is not int or value < 0:
                raise ValueError(f"{name} must be a non-negative integer")
        for name, limit in (
            ("cpu_seconds", self.cpu_seconds),
            ("memory_bytes", self.memory_bytes),
            ("max_processes", self.max_processes),
        ):
            if limit is not None and (type(limit) is not int or limit <= 0):
                raise ValueError(f"{name} must be a positive integer or None")
        timeout = self.wall_timeout_s
        if not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
            raise ValueError("wall_timeout_s must be a positive finite number")


_LIMIT_NAMES: Final = frozenset(field.name for field in fields(ProcessLimits))


class ProcessHost:
    """The host half of the run protocol, for runtimes that run each program in a fresh process.

    A subclass says how a run's process starts (:meth:`_launch`) and what
    carries its bytes; this class does everything else the same way for all of
    them: the init frame, the budgets (``wall_timeout_s``, ``max_output_bytes``,
    ``max_log_bytes``; ``cpu_seconds``, ``memory_bytes``, ``max_processes`` and
    ``network=False``, which the child applies to the program), the pre-flight
    check, reading the hostile frames, dispatching binding calls, the failure
    kinds and their texts, and the kill and reap on every exit path.
    """

    language = "python"

    def __init__(self, **options: Unpack[ProcessOptions]) -> None:
        unknown = sorted(options.keys() - _LIMIT_NAMES)
        if unknown:  # what Python says of a keyword a signature lacks, naming the runtime rather than the record
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument {unknown[0]!r}")
        limits = ProcessLimits(**options)
        self.wall_timeout_s = float(limits.wall_timeout_s)
        self.cpu_seconds = limits.cpu_seconds
        self.memory_bytes = limits.memory_bytes
        self.max_processes = limits.max_processes
        self.max_output_bytes = limits.max_output_bytes
        self.max_log_bytes = limits.max_log_bytes
        self.network = bool(limits.network)
        self.preflight = bool(limits.preflight)
        self._runs: set[_Run] = set()
        self._removals: set[asyncio.Future[None]] = set()
        #: Completed runs' processes, killed and not yet reaped, with the directory to remove after.
        self._exiting: dict[asyncio.Future[ExitReport], str | None] = {}
        self._closed = False

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- what a subclass provides -----------------------------------------------------------

    async def _launch(self) -> Launched:
        """Start one run's process (raise ``OSError`` when it cannot start)."""
        raise NotImplementedError

    def _run_ended(self) -> None:
        """A run has ended (its process killed, or reaped): a chance to get the next one ready."""

    async def _close_carrier(self) -> None:
        """Stop what runs the processes (a fork server, actors); every process is reaped after it.

        Cancellation: the close completes before ``CancelledError`` propagates.
        """

    # --- shared -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop this runtime; no process of it outlives it, no working directory either.

        Cancellation: the close completes (bounded: a grace period, then
        SIGKILL) before ``CancelledError`` propagates. Runs still in flight are
        killed and end as ``worker-exit``.
        """
        self._closed = True
        for run in list(self._runs):
            run.stop(CodeRunFailure("worker-exit", "the runtime was closed during the run"))
        exits = [run.child.exited for run in self._runs if run.child is not None]
        exits += self._exiting
        if exits:
            waiting = asyncio.ensure_future(asyncio.wait(exits, timeout=_EXIT_GRACE_S + 1.0))
            await _finish(waiting)
        await self._close_carrier()
        for exited in list(self._exiting):  # their processes are gone with the carrier (or the grace ran out)
            self._exited(exited)
        if self._removals:
            await _finish(asyncio.ensure_future(asyncio.wait(list(self._removals))))

    def _after_exit(self, child: Child, workdir: str | None) -> None:
        """Keep ``child`` (killed already) for :meth:`aclose`; remove ``workdir`` once it is reaped."""
        self._exiting[child.exited] = workdir
        child.exited.add_done_callback(self._exited)

    def _exited(self, exited: asyncio.Future[ExitReport]) -> None:
        if exited in self._exiting:
            workdir = self._exiting.pop(exited)
            if workdir is not None:
                self._remove_later(workdir)

    def _remove_later(self, workdir: str) -> None:
        """Remove a finished run's working directory in a worker thread; :meth:`aclose` waits for it.

        Removing a directory is a journal write on a disk-backed ``/tmp``
        (milliseconds on a busy disk), which the run's caller need not wait for.
        """
        removal = asyncio.get_running_loop().run_in_executor(None, _remove_tree, workdir)
        self._removals.add(removal)
        removal.add_done_callback(self._removals.discard)

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run ``request.code`` in a fresh process and describe how it ended.

        A run that completed returns as soon as the program has sent its
        completion and closed its frame stream; its process is killed and
        reaped right after, and its working directory removed once it is
        (:meth:`aclose` waits for both). Every other ending returns only once
        the process is reaped.

        Cancellation: if the task awaiting ``run`` is cancelled, the program's
        process (group and session, where the child runs locally) is killed and
        reaped and its channel closed, then ``CancelledError`` is re-raised; a
        second cancellation during that bounded clean-up does not cut it short.
        An abort of ``request.signal`` does the same and returns ``abort``.
        """
        if self._closed:
            raise RuntimeError(f"this {type(self).__name__} is closed")
        if request.signal.aborted:
            return CodeRunFailure("abort", "the run was aborted before it started")
        if self.preflight:
            failure = preflight_check(request)
            if failure is not None:
                return failure
        return await _Run(self, request).main()


class PythonSubprocessRuntime(ProcessHost):
    """Runs each ``run_code`` program in a process no other run has used.

    ``start="fork-server"`` (the default where the platform allows) forks each
    run's process from one pristine zygote this runtime owns, started on the
    first run and stopped by :meth:`aclose`; ``start="spawn"`` starts
    ``python -I`` per run; ``python``: the interpreter (default: this one).

    Budgets, each a keyword with its default: ``wall_timeout_s=30.0`` (seconds
    of wall clock, then ``timeout``), ``cpu_seconds=None`` (``RLIMIT_CPU``, then
    ``timeout``), ``memory_bytes=2 << 30`` (``RLIMIT_AS``),
    ``max_processes=None`` (``RLIMIT_NPROC``, not enforced for root),
    ``max_output_bytes=64 << 20`` (``output-limit``), ``max_log_bytes=1 << 20``
    (later ``print`` output is dropped behind one marker line); ``None`` sets no
    limit. ``network=True``; ``False`` starts the program in new user and
    network namespaces (Linux; a run whose namespaces cannot be made fails as
    ``exception``). ``preflight=True`` reads the program against
    ``request.catalog`` before starting anything and returns the findings as an
    ``exception`` failure (see ``_preflight.py``). A bad value raises
    ``ValueError`` naming the keyword; an unknown keyword, ``TypeError``.

    Not a security sandbox: see ``docs/codemode-runtimes.md``.
    """

    def __init__(
        self,
        *,
        start: StartMethod | None = None,
        python: str | None = None,
        **limits: Unpack[ProcessOptions],
    ) -> None:
        if start is None:
            start = "fork-server" if fork_server_supported() else "spawn"
        elif start not in ("fork-server", "spawn"):
            raise ValueError(f'start must be "fork-server" or "spawn", not {start!r}')
        elif start == "fork-server" and not fork_server_supported():
            raise ValueError("the fork server needs Linux (fork and file-descriptor passing)")
        super().__init__(**limits)
        self.start: StartMethod = start
        self._python = python or sys.executable
        self._env = child_env()
        self._server: ForkServer | None = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("running" if self._server and self._server.running else "idle")
        return f"PythonSubprocessRuntime(start={self.start!r}, {state})"

    async def __aenter__(self) -> PythonSubprocessRuntime:
        return self

    async def _launch(self) -> Launched:
        if self._closed:  # closed while this run was being set up: start nothing
            raise OSError("the runtime was closed")
        if self.start == "spawn":  # a fork server's child comes in a directory its zygote made
            workdir = tempfile.mkdtemp(prefix="dsh-run-")
            try:
                child, pipes = await spawn_keeper(self._python, self._env)
            except BaseException:
                self._remove_later(workdir)
                raise
            return Launched(child, PipeLink(pipes, blocking=True), workdir)
        if self._server is None:
            self._server = ForkServer(self._python, self._env, tempfile.gettempdir(), self._remove_later)
        child, pipes = await self._server.fork()
        return Launched(child, PipeLink(pipes))

    def _run_ended(self) -> None:
        if self._server is not None and not self._closed:
            self._server.replenish()

    async def _close_carrier(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await server.aclose()


class CommandRuntime(ProcessHost):
    """Runs each program through a command that speaks the run protocol on its stdin and stdout.

    Each run starts ``argv`` (a list of strings, never a shell line), for example
    ``["docker", "exec", "-i", "box", "python", "-m", "dsh_codegen.codemode.child"]``:
    the init frame and the answers go to its stdin, the frames come from its
    stdout, its stderr is the program's raw output, and its exit status says how
    the program ended (docs/codemode-protocol.md). The command starts in a new
    session with exactly the environment ``env`` (default: the scrubbed one the
    local runtime gives its children) in ``cwd``; every run ends with the command
    killed (``SIGTERM``, then its whole process group ``SIGKILL`` after a grace
    period) and reaped, its pipes drained and closed, every byte it writes
    capped. The budgets (the same keywords and defaults), failure kinds, texts
    and events are those of :class:`PythonSubprocessRuntime`; ``cpu_seconds``, ``memory_bytes``,
    ``max_processes`` and ``network=False`` are applied by the child, wherever
    the command runs it.

    What isolates the program is whatever the command runs it in (a container, a
    pod, a namespace, another machine); this runtime is only the channel. See
    ``docs/codemode-runtimes.md``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        **limits: Unpack[ProcessOptions],
    ) -> None:
        if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
            raise TypeError(f"argv must be a list of strings (no shell line), not {type(argv).__name__}")
        if not argv or any(type(arg) is not str or "\0" in arg for arg in argv):
            raise ValueError("argv must be a non-empty list of strings without NUL characters")
        if env is not None and any(type(key) is not str or type(value) is not str for key, value in env.items()):
            raise ValueError("env must map strings to strings")
        super().__init__(**limits)
        self.argv: tuple[str, ...] = tuple(argv)
        self.env: dict[str, str] = dict(env) if env is not None else child_env()
        self.cwd = cwd

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._runs)} running"
        return f"CommandRuntime({list(self.argv)!r}, {state})"

    async def __aenter__(self) -> CommandRuntime:
        return self

    async def _launch(self) -> Launched:
        if self._closed:
            raise OSError("the runtime was closed")
        child, pipes = spawn_command(self.argv, self.env, self.cwd)
        return Launched(child, PipeLink(pipes, blocking=True))


class _Run:
    """One program run: its link, the frame stream, the budgets, the clean-up."""

    def __init__(self, runtime: ProcessHost, request: CodeRunRequest) -> None:
        self.runtime = runtime
        self.request = request
        self.loop = asyncio.get_running_loop()
        self.names = frozenset(request.tool_names)
        self.outcome: asyncio.Future[CodeRunResult | None] = self.loop.create_future()
        self.completion: CodeRunResult | None = None
        self.logs = LogSink(runtime.max_log_bytes)
        self.next_call = 1
        self.frame_cap = max(runtime.max_output_bytes, runtime.max_log_bytes) * 6 + _FRAME_SLACK
        self.frames = bytearray()
        self.frames_eof = False
        self.raw = bytearray()
        self.child: Child | None = None
        self.link: RunLink | None = None
        self.workdir: str | None = None

    # --- lifetime ---------------------------------------------------------------------------

    async def main(self) -> CodeRunResult:
        self.runtime._runs.add(self)
        try:
            result = await self._drive()
        finally:
            # On every exit path (a result, a cancellation, a defect): kill, reap, close, remove.
            child = self.child
            if child is None or child.exited.done():
                self._release()
            elif self._completed():
                # The program completed and closed its frame stream: its process is on its
                # way out. It (and anything it left behind) is killed and reaped without the
                # caller waiting; the workdir goes once it has; aclose() waits for both.
                child.kill()
                workdir, self.workdir = self.workdir, None
                self._release()
                self.runtime._after_exit(child, workdir)
            else:
                await _finish(asyncio.ensure_future(self._cleanup()))
            self.runtime._runs.discard(self)
            self.runtime._run_ended()
        return result

    def stop(self, failure: CodeRunFailure) -> None:
        """End the run from outside (the runtime is closing) with ``failure``."""
        self._settle(failure)

    async def _drive(self) -> CodeRunResult:
        runtime = self.runtime
        try:
            launched = await runtime._launch()
        except OSError as error:  # no process to run the program in (fork, spawn or command refused)
            decided = self.outcome.result() if self.outcome.done() else None
            if decided is not None:  # the runtime closed while the process was on its way: that came first
                return decided
            return CodeRunFailure("worker-exit", f"the program process could not be started: {error}")
        self.child, self.link, self.workdir = launched.child, launched.link, launched.workdir
        self.link.open(self._init_frame().encode("utf-8", "surrogatepass") + b"\n", self)
        timer = self.loop.call_later(
            runtime.wall_timeout_s,
            self._settle,
            CodeRunFailure("timeout", f"the program ran past its wall-clock budget of {runtime.wall_timeout_s:g} s"),
        )
        remove = self.request.signal.add_listener(
            lambda _signal: self._settle(CodeRunFailure("abort", "the run was aborted"))
        )
        self.child.exited.add_done_callback(lambda _: self._check_end())
        try:
            settled = await self.outcome
        finally:
            timer.cancel()
            remove()
        if settled is None:
            settled = self._ending()
        return self._with_logs(settled)

    def _init_frame(self) -> str:
        runtime = self.runtime
        limits: dict[str, JsonValue] = {
            "cwd": self.workdir,
            "max_log_bytes": runtime.max_log_bytes,
            "max_output_bytes": runtime.max_output_bytes,
            "cpu_seconds": runtime.cpu_seconds,
            "memory_bytes": runtime.memory_bytes,
            "max_processes": runtime.max_processes,
            "network": None if runtime.network else False,
        }
        init = {"code": self.request.code, "tools": list(self.request.tool_names), "limits": limits}
        return dump_canonical_json(init, sort_keys=False)

    def _settle(self, result: CodeRunResult | None) -> None:
        """Decide the outcome (first decision wins); a failure decided here kills the child."""
        if self.outcome.done():
            return
        if result is not None and self.child is not None:
            if self.link is not None:
                self.link.end_input()  # the stop request a child reached through any command hears
            self.child.kill()
        self.outcome.set_result(result)

    def _check_end(self) -> None:
        """The run ends normally once its frame stream is closed and it completed or its process exited."""
        if self.child is not None and self.frames_eof and (self.completion is not None or self.child.exited.done()):
            self._settle(None)

    def _completed(self) -> bool:
        """Whether the run ended on its own completion (not a kill: a timeout, an abort, a violation)."""
        outcome = self.outcome  # cancelled along with the task that awaited it
        return outcome.done() and not outcome.cancelled() and outcome.result() is None and self.completion is not None

    def _ending(self) -> CodeRunResult:
        """The outcome once the process is gone: its completion, or why it died."""
        if self.completion is not None:
            return self.completion
        assert self.child is not None
        report: ExitReport = self.child.exited.result()
        cpu = self.runtime.cpu_seconds
        if report.signal == signal.SIGXCPU or (
            cpu is not None and report.signal == signal.SIGKILL and report.cpu_s >= cpu
        ):
            return CodeRunFailure("timeout", f"the program ran past its CPU budget of {cpu} s")
        message = report.describe()
        tail = self.raw[-RAW_KEEP:].decode("utf-8", "replace").strip()
        if tail:
            message += f"; its last output: {tail.splitlines()[-1][:500]}"
        return CodeRunFailure("worker-exit", message)

    def _with_logs(self, result: CodeRunResult) -> CodeRunResult:
        logs = self.logs.lines()
        if isinstance(result, CodeRunFailure):
            return CodeRunFailure(result.kind, result.message, logs)
        assert isinstance(result, CodeRunSuccess)
        return CodeRunSuccess(logs, result.result)

    async def _cleanup(self) -> None:
        """Kill, reap and wait for the child; close the link; have the workdir removed."""
        child = self.child
        if child is not None:
            if not child.exited.done():
                if self.link is not None:
                    self.link.end_input()
                child.kill()
                try:
                    await asyncio.wait_for(asyncio.shield(child.exited), _EXIT_GRACE_S + 1.0)
                except TimeoutError:
                    pass
        self._release()

    def _release(self) -> None:
        """Close the link; have the workdir removed."""
        if self.link is not None:
            self.link.close()
        if self.workdir is not None:
            workdir, self.workdir = self.workdir, None
            self.runtime._remove_later(workdir)

    # --- the host's writes ------------------------------------------------------------------

    def _send(self, line: str) -> None:
        if self.link is not None:
            self.link.send(line.encode("utf-8", "surrogatepass") + b"\n")

    # --- the child's bytes (the link calls these) -------------------------------------------

    def on_raw(self, chunk: bytes) -> None:
        self.raw += chunk
        if len(self.raw) > RAW_KEEP:
            del self.raw[:-RAW_KEEP]

    def awaits_eof(self) -> bool:
        return self.completion is not None and not self.frames_eof and not self.outcome.done()

    def on_frames_eof(self) -> None:
        self.frames_eof = True
        if self.frames and not self.outcome.done():
            self._violation("a truncated frame")
        self._check_end()

    def on_frames(self, chunk: bytes) -> None:
        start = len(self.frames)
        self.frames += chunk
        begin = 0
        while not self.outcome.done():
            end = self.frames.find(b"\n", max(begin, start))
            if end < 0:
                break
            line = bytes(self.frames[begin:end])
            begin = end + 1
            start = begin
            try:
                self._on_line(line)
            except Exception as error:  # a defect of ours must still end the run, not escape into the loop
                self._violation(f"a frame the host could not handle: {type(error).__name__}")
        del self.frames[:begin]
        if len(self.frames) > self.frame_cap and not self.outcome.done():
            self._violation("an oversized frame")

    def _violation(self, what: str) -> None:
        self._settle(CodeRunFailure("invalid-output", f"the program process broke the protocol ({what})"))

    def _on_line(self, line: bytes) -> None:
        if len(line) > self.frame_cap:
            self._violation("an oversized frame")
            return
        try:
            frame = parse_json(line.decode("utf-8"))
        except (ValueError, LosslessJsonError):
            self._violation("a frame that is not lossless JSON")
            return
        try:
            self._on_frame(frame)
        except _ProtocolError as error:
            self._violation(str(error))

    def _on_frame(self, frame: object) -> None:
        if not isinstance(frame, dict) or type(frame.get("t")) is not str:
            raise _ProtocolError("a frame that is not an object with a type")
        kind: str = frame["t"]
        keys = frozenset(frame)
        if self.completion is not None:
            raise _ProtocolError("a frame after the completion")
        if kind == "log" and keys == {"t", "text"} and type(frame["text"]) is str:
            self._on_log(str(frame["text"]))
        elif kind == "logcap" and keys == {"t"}:
            self.logs.close()
        elif kind == "call" and keys == {"t", "id", "tool", "args"}:
            self._on_call(frame["id"], frame["tool"], frame["args"])
        elif kind == "done" and keys in ({"t"}, {"t", "result"}):
            self._on_done(frame.get("result", UNSET))
        elif (
            kind == "fail"
            and keys == {"t", "kind", "message"}
            and frame["kind"] == "exception"
            and type(frame["message"]) is str
        ):
            message = str(frame["message"])
            self._complete(CodeRunFailure("exception", message), _utf8_size(message))
        elif kind == "error" and keys == {"t", "type", "text", "line", "tool"}:
            self._on_error(frame["type"], frame["text"], frame["line"], frame["tool"])
        elif kind == "fail" and keys == {"t", "kind", "path", "reason"} and frame["kind"] == "invalid-output":
            self._on_lossy(frame["path"], frame["reason"])
        elif kind == "fail" and keys == {"t", "kind"} and frame["kind"] == "output-limit":
            self.completion = CodeRunFailure(
                "output-limit", f"outer output exceeded {self.runtime.max_output_bytes} bytes"
            )
        else:
            raise _ProtocolError(f"an unexpected {kind!r} frame")

    def _on_error(self, type_name: object, text: object, line: object, tool: object) -> None:
        if (
            type(type_name) is not str
            or type(text) is not str
            or not (line is None or type(line) is int)
            or not (tool is None or type(tool) is str)
        ):
            raise _ProtocolError("a malformed 'error' frame")
        message = program_error_text(
            str(type_name), str(text), line if type(line) is int else None, str(tool) if tool is not None else None
        )
        self._complete(CodeRunFailure("exception", message), _utf8_size(message))

    def _on_lossy(self, path: object, reason: object) -> None:
        if (
            not isinstance(path, list)
            or any(type(segment) not in (str, int) for segment in path)
            or type(reason) is not str
        ):
            raise _ProtocolError("a malformed 'fail' frame")
        error = LosslessJsonError(str(reason)[:_REASON_CAP], tuple(path))
        self.completion = CodeRunFailure("invalid-output", completion_error_text(error))

    def _on_log(self, text: str) -> None:
        self.logs.add(text)

    def _on_call(self, call_id: object, tool: object, args: object) -> None:
        if type(call_id) is not int or call_id != self.next_call:
            raise _ProtocolError("a call with an out-of-sequence id")
        if type(tool) is not str or tool not in self.names:
            raise _ProtocolError("a call to a tool that is not bound")
        self.next_call += 1
        name = str(tool)
        try:
            future = self.request.dispatch(name, args)
            if not isinstance(future, asyncio.Future):
                raise TypeError(f"dispatch returned {type(future).__name__}, not a future")
        except Exception as error:  # dispatch never raises by contract; a broken one fails the call only
            self._answer(call_id, None, _message(error))
            return
        if future.done():  # settled at once (a cached or rejected call): answer without a loop turn
            self._on_result(call_id, future)
        else:
            future.add_done_callback(lambda done: self._on_result(call_id, done))

    def _on_result(self, call_id: int, done: asyncio.Future[JsonValue]) -> None:
        if self.outcome.done() or self.completion is not None:
            return
        if done.cancelled():
            self._answer(call_id, None, "tool call cancelled")
            return
        error = done.exception()
        if error is not None:
            self._answer(call_id, None, error.message if isinstance(error, ToolCallError) else _message(error))
            return
        try:
            text = dump_canonical_json(done.result(), sort_keys=False)
        except (LosslessJsonError, TypeError, ValueError):
            self._answer(call_id, None, "tool result is not lossless JSON")
            return
        self._send('{"t":"ok","id":%d,"value":%s}' % (call_id, text))

    def _answer(self, call_id: int, value: None, message: str) -> None:
        self._send(dump_canonical_json({"t": "err", "id": call_id, "message": message}, sort_keys=False))

    def _on_done(self, result: JsonValue | Unset) -> None:
        size = 0 if isinstance(result, Unset) else _utf8_size(dump_canonical_json(result, sort_keys=False))
        self._complete(CodeRunSuccess((), result), size)

    def _complete(self, result: CodeRunResult, payload_bytes: int) -> None:
        cap = self.runtime.max_output_bytes
        lines = self.logs.lines()
        logs_bytes = _utf8_size(dump_canonical_json(lines, sort_keys=False)) if lines else 0
        if payload_bytes + logs_bytes > cap:
            result = CodeRunFailure("output-limit", f"outer output exceeded {cap} bytes")
        self.completion = result


def _remove_tree(path: str) -> None:
    try:
        os.rmdir(path)  # the common case: the program left nothing behind
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def _message(error: BaseException) -> str:
    message = getattr(error, "message", None)
    if isinstance(message, str):
        return message
    try:
        return str(error) or type(error).__name__
    except Exception:
        return "<unprintable thrown value>"


async def _finish(task: asyncio.Future[Any]) -> None:
    """Await a clean-up task to its end; a cancellation meanwhile is re-raised afterwards."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    task.result()
    if cancelled:
        raise asyncio.CancelledError
