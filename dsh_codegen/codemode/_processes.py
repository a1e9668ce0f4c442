"""Starting, killing and reaping the child processes of ``PythonSubprocessRuntime``.

Two strategies give a run its fresh process. Each returns a :class:`Child`
whose ``kill()`` stops the program (its whole process group and session) and
whose ``exited`` future carries the :class:`ExitReport` once the run's keeper
(the fork server, or the per-run keeper process) has killed and reaped
everything the program started.

- :class:`ForkServer`: one pristine ``python -I _child.py zygote`` per runtime,
  asked over a ``SOCK_SEQPACKET`` socket to fork a child per run; the run's pipe
  ends travel with the request (``SCM_RIGHTS``).
- :func:`spawn_keeper`: ``python -I _child.py keeper`` per run, which forks the
  program and reports its exit on a status pipe.

The host only ever signals processes it has not reaped (through a pidfd where
the kernel has them), so a recycled pid is never hit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import site
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["CHILD_SCRIPT", "Child", "ExitReport", "ForkServer", "RunFds", "fork_server_supported", "spawn_keeper"]

#: The child-side script (stdlib only), run as a file so the package is never imported there.
CHILD_SCRIPT: Final = str(Path(__file__).with_name("_child.py"))
_GRACE_S: Final = 2.0


def _site_dirs() -> list[str]:
    """The interpreter's site-packages, which the child (started with ``-S``) adds to ``sys.path``.

    ``-S`` spares every child the ``site`` module and the ``.pth`` hooks of editable
    installs (tens of milliseconds); plain installed packages stay importable.
    """
    try:
        return [path for path in site.getsitepackages() if os.path.isdir(path)]
    except AttributeError:  # a virtualenv's old site module
        return []


def fork_server_supported() -> bool:
    """Whether this platform can run the fork server (Linux: fork, fd passing, pidfds)."""
    return sys.platform == "linux" and hasattr(os, "fork") and hasattr(socket, "send_fds")


@dataclass(frozen=True, slots=True)
class ExitReport:
    """How the program process ended: an exit ``code`` or a ``signal``, and the CPU seconds it used."""

    code: int | None
    signal: int | None
    cpu_s: float

    def describe(self) -> str:
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            return f"the program process was killed by {name}"
        return f"the program process exited with code {self.code} before completing"


def _parse_report(data: object) -> ExitReport:
    if isinstance(data, dict):
        cpu = data.get("cpu")
        cpu_s = float(cpu) if isinstance(cpu, (int, float)) else 0.0
        if type(data.get("signal")) is int:
            return ExitReport(None, data["signal"], cpu_s)
        if type(data.get("code")) is int:
            return ExitReport(data["code"], None, cpu_s)
    return ExitReport(None, signal.SIGKILL, 0.0)


@dataclass(slots=True)
class RunFds:
    """The child's ends of one run's pipes: frames in (read), frames out (write), raw output (write)."""

    frames_in: int
    frames_out: int
    raw: int

    def close(self) -> None:
        for fd in (self.frames_in, self.frames_out, self.raw):
            with contextlib.suppress(OSError):
                os.close(fd)


class Child:
    """One run's program process, as the host sees it."""

    def __init__(self, exited: asyncio.Future[ExitReport], kill: object) -> None:
        self.exited = exited
        self._kill = kill

    def kill(self) -> None:
        """Stop the program and everything it started (idempotent; never raises)."""
        if not self.exited.done():
            with contextlib.suppress(Exception):
                self._kill()  # type: ignore[operator]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The scrubbed environment a child starts with (nothing of the host's but what Python needs)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    if extra:
        env.update(extra)
    return env


class _Watched:
    """A direct child of the host, watched through a pidfd (or polled), reaped exactly once."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pid: int) -> None:
        self.loop = loop
        self.pid = pid
        self.done: asyncio.Future[int] = loop.create_future()
        self.pidfd = -1
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._poll()
        else:
            loop.add_reader(self.pidfd, self._reap)

    def _poll(self) -> None:
        if self._try_reap():
            return
        self.loop.call_later(0.005, self._poll)

    def _reap(self) -> None:
        self._try_reap()

    def _try_reap(self) -> bool:
        if self.done.done():
            return True
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, 0
        if pid == 0:
            return False
        if self.pidfd >= 0:
            self.loop.remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = -1
        self.done.set_result(status)
        return True

    def signal(self, signum: int) -> None:
        if self.done.done():
            return
        if self.pidfd >= 0:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.pidfd, signum)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)


def _spawn(argv: list[str], fd_map: dict[int, int], env: dict[str, str]) -> int:
    """``posix_spawn`` ``argv`` in a new session, with exactly the fds of ``fd_map`` (target: source)."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        actions: list[tuple[int, int, int]] = [
            (os.POSIX_SPAWN_DUP2, fd_map.get(target, null), target) for target in (0, 1, 2)
        ]
        actions += [(os.POSIX_SPAWN_DUP2, source, target) for target, source in fd_map.items() if target > 2]
        return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
    finally:
        os.close(null)


async def spawn_keeper(python: str, fds: RunFds, env: dict[str, str]) -> Child:
    """Start ``python -I _child.py keeper`` for one run.

    Cancellation: none to speak of (the spawn itself is synchronous); the
    returned child is the caller's to kill and await.
    """
    loop = asyncio.get_running_loop()
    status_r, status_w = os.pipe()
    try:
        pid = _spawn(
            [python, "-I", "-S", CHILD_SCRIPT, "keeper", *_site_dirs()],
            {1: fds.raw, 2: fds.raw, 3: fds.frames_in, 4: fds.frames_out, 5: status_w},
            env,
        )
    except BaseException:
        os.close(status_r)
        raise
    finally:
        os.close(status_w)
    watched = _Watched(loop, pid)
    exited: asyncio.Future[ExitReport] = loop.create_future()
    buffer = bytearray()
    os.set_blocking(status_r, False)

    def readable() -> None:
        try:
            chunk = os.read(status_r, 4096)
        except BlockingIOError:
            return
        if chunk and len(buffer) < 4096:
            buffer.extend(chunk)
            return
        loop.remove_reader(status_r)
        os.close(status_r)
        watched.done.add_done_callback(lambda _: _settle())

    def _settle() -> None:
        if exited.done():
            return
        try:
            exited.set_result(_parse_report(json.loads(bytes(buffer).split(b"\n")[0])))
        except ValueError:
            exited.set_result(ExitReport(None, signal.SIGKILL, 0.0))

    loop.add_reader(status_r, readable)

    def kill() -> None:
        watched.signal(signal.SIGTERM)
        # A keeper that does not report within the grace period is killed outright.
        loop.call_later(_GRACE_S, watched.signal, signal.SIGKILL)

    return Child(exited, kill)


class ForkServer:
    """A pristine zygote process that forks one child per run (see ``_child.py``)."""

    def __init__(self, python: str, env: dict[str, str]) -> None:
        self._python = python
        self._env = env
        self._sock: socket.socket | None = None
        self._process: _Watched | None = None
        self._next_id = 0
        self._forked: dict[int, asyncio.Future[int]] = {}
        self._exits: dict[int, asyncio.Future[ExitReport]] = {}
        self._early_exits: dict[int, ExitReport] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and not self._process.done.done()

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = _spawn([self._python, "-I", "-S", CHILD_SCRIPT, "zygote", *_site_dirs()], {3: child.fileno()}, self._env)
        except BaseException:
            host.close()
            raise
        finally:
            child.close()
        host.setblocking(False)
        self._sock = host
        self._loop = loop
        self._process = _Watched(loop, pid)
        self._process.done.add_done_callback(lambda _: self._lost())
        loop.add_reader(host.fileno(), self._readable)

    def _readable(self) -> None:
        sock = self._sock
        if sock is None:
            return
        while True:
            try:
                message = sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message = b""
            if not message:
                self._detach()
                return
            try:
                reply = json.loads(message)
            except ValueError:
                continue
            if reply.get("op") == "forked":
                future = self._forked.pop(reply.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(int(reply["pid"]))
            elif reply.get("op") == "failed":
                future = self._forked.pop(reply.get("id"), None)
                if future is not None and not future.done():
                    future.set_exception(OSError(f"the fork server could not fork: {reply.get('message')}"))
            elif reply.get("op") == "exit":
                pid = int(reply["pid"])
                report = _parse_report(reply.get("status"))
                waiter = self._exits.pop(pid, None)
                if waiter is None:
                    self._early_exits[pid] = report
                elif not waiter.done():
                    waiter.set_result(report)

    def _detach(self) -> None:
        if self._sock is not None and self._loop is not None:
            self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None

    def _lost(self) -> None:
        """The zygote is gone: every outstanding run ends as a killed worker."""
        self._detach()
        lost = ExitReport(None, signal.SIGKILL, 0.0)
        for future in self._forked.values():
            if not future.done():
                future.set_exception(ConnectionError("the fork server exited"))
        for waiter in self._exits.values():
            if not waiter.done():
                waiter.set_result(lost)
        self._forked.clear()
        self._exits.clear()

    async def fork(self, fds: RunFds) -> Child:
        """Fork a fresh child for one run (starting the zygote on first use).

        Cancellation: a cancelled request still gets its child killed once the
        zygote reports it (the kill is queued on the reply).
        """
        if not self.running:
            self._start()
        assert self._sock is not None and self._loop is not None
        loop = self._loop
        self._next_id += 1
        request_id = self._next_id
        forked: asyncio.Future[int] = loop.create_future()
        self._forked[request_id] = forked
        request = json.dumps({"op": "fork", "id": request_id}).encode("ascii")
        self._sock.setblocking(True)
        try:
            socket.send_fds(self._sock, [request], [fds.frames_in, fds.frames_out, fds.raw])
        finally:
            self._sock.setblocking(False)
        try:
            pid = await asyncio.shield(forked)
        except asyncio.CancelledError:
            forked.add_done_callback(lambda done: self._orphan(done))
            raise
        return self._child(pid)

    def _orphan(self, done: asyncio.Future[int]) -> None:
        if not done.cancelled() and done.exception() is None:
            child = self._child(done.result())
            child.kill()

    def _child(self, pid: int) -> Child:
        assert self._loop is not None
        exited: asyncio.Future[ExitReport] = self._loop.create_future()
        early = self._early_exits.pop(pid, None)
        if early is not None:
            exited.set_result(early)
        elif not self.running:
            exited.set_result(ExitReport(None, signal.SIGKILL, 0.0))
        else:
            self._exits[pid] = exited

        def kill() -> None:
            sock = self._sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.send(json.dumps({"op": "kill", "pid": pid}).encode("ascii"))

        return Child(exited, kill)

    async def aclose(self) -> None:
        """Stop the zygote: it kills and reaps every run it still has, then exits.

        Cancellation: the close is finished (bounded by a grace period, then
        SIGKILL) before a ``CancelledError`` propagates.
        """
        process = self._process
        if process is None:
            return
        self._detach()  # EOF on the socket tells the zygote to stop
        if not process.done.done():
            try:
                await _bounded(asyncio.shield(process.done), _GRACE_S)
            finally:
                if not process.done.done():
                    process.signal(signal.SIGKILL)
                    await _uncancellable(process.done)
        self._process = None


async def _bounded(awaitable: asyncio.Future[int], timeout_s: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(awaitable, timeout_s)


async def _uncancellable(future: asyncio.Future[int]) -> None:
    """Await ``future`` to the end, then re-raise a cancellation that arrived meanwhile."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
