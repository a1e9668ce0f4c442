"""Starting, killing and reaping the child processes of ``PythonSubprocessRuntime``.

Two strategies give a run its fresh process. Each returns a :class:`Child`
whose ``kill()`` stops the program (its whole process group and session) and
whose ``exited`` future carries the :class:`ExitReport` once the run's keeper
(the fork server, or the per-run keeper process) has killed and reaped
everything the program started.

- :class:`ForkServer`: one pristine ``python -I _child.py zygote`` per runtime,
  asked over a ``SOCK_SEQPACKET`` socket to fork children; each answer carries
  the host's ends of the child's three pipes (``SCM_RIGHTS``). The host asks
  children ahead, so a run usually finds a spare already set up and waiting for
  its init frame (each child still serves exactly one run).
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
import shutil
import signal
import site
import socket
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["CHILD_SCRIPT", "Child", "ExitReport", "ForkServer", "RunPipes", "fork_server_supported", "spawn_keeper"]

#: The child-side script (stdlib only), run as a file so the package is never imported there.
CHILD_SCRIPT: Final = str(Path(__file__).with_name("_child.py"))
_GRACE_S: Final = 2.0
#: Children the fork server keeps forked ahead of the runs waiting for one. A run takes one and
#: asks for its replacement when it ends (so the fork and the new child's set-up do not compete
#: with the run for the CPU); the second spare serves a run that starts right after another.
_SPARES: Final = 2


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


@dataclass(frozen=True, slots=True)
class RunPipes:
    """The host's ends of one run's pipes: frames to the child, frames from it, its raw fd 1/2 output."""

    to_child: int
    from_child: int
    raw: int

    def close(self) -> None:
        for fd in (self.to_child, self.from_child, self.raw):
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


async def spawn_keeper(python: str, env: dict[str, str]) -> tuple[Child, RunPipes]:
    """Start ``python -I _child.py keeper`` for one run, on three new pipes.

    Cancellation: none to speak of (the spawn itself is synchronous); the
    returned child is the caller's to kill and await, the pipes its to close.
    """
    loop = asyncio.get_running_loop()
    frames_in, to_child = os.pipe()
    from_child, frames_out = os.pipe()
    raw_r, raw_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        pid = _spawn(
            [python, "-I", "-S", CHILD_SCRIPT, "keeper", *_site_dirs()],
            {1: raw_w, 2: raw_w, 3: frames_in, 4: frames_out, 5: status_w},
            env,
        )
    except BaseException:
        for fd in (to_child, from_child, raw_r, status_r):
            os.close(fd)
        raise
    finally:
        for fd in (frames_in, frames_out, raw_w, status_w):
            os.close(fd)
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

    return Child(exited, kill), RunPipes(to_child, from_child, raw_r)


class ForkServer:
    """A pristine zygote process that forks one child per run (see ``_child.py``).

    Children are asked for ahead: besides one per run waiting, ``_SPARES`` more
    are kept forked, set up (in the working directory the zygote made for each)
    and blocked on their init frame, so a run that finds one pays neither the
    fork, nor the child's set-up, nor a ``mkdir``.
    """

    def __init__(self, python: str, env: dict[str, str], tmp: str, remove: Callable[[str], None]) -> None:
        self._python = python
        self._env = env
        self._tmp = tmp  # where the zygote makes (and removes) each child's working directory
        self._remove = remove  # removes a directory the zygote leaves to the host, off the loop
        self._sock: socket.socket | None = None
        self._process: _Watched | None = None
        self._next_id = 0
        self._asked = 0  # fork requests not answered yet
        self._ready: deque[tuple[int, RunPipes]] = deque()
        self._waiters: deque[asyncio.Future[tuple[int, RunPipes]]] = deque()
        self._exits: dict[int, asyncio.Future[ExitReport]] = {}
        self._early_exits: dict[int, ExitReport] = {}
        #: Working directories of the zygote's children not reported exited: the zygote removes them,
        #: the host only if the zygote died without doing so.
        self._workdirs: dict[int, str] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and not self._process.done.done()

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = _spawn([self._python, "-I", "-S", CHILD_SCRIPT, "zygote", self._tmp, *_site_dirs()],
                         {3: child.fileno()}, self._env)
        except BaseException:
            host.close()
            raise
        finally:
            child.close()
        host.setblocking(False)
        self._sock = host
        self._loop = loop
        self._asked = 0
        self._process = _Watched(loop, pid)
        self._process.done.add_done_callback(lambda _: self._lost())
        loop.add_reader(host.fileno(), self._readable)

    def _send(self, message: bytes) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            sock.send(message)
        except BlockingIOError:  # the zygote is behind: wait for room rather than drop a request
            sock.setblocking(True)
            try:
                sock.send(message)
            finally:
                sock.setblocking(False)

    def replenish(self) -> None:
        """A run has ended: ask for the children that keep the spares full (see ``_SPARES``)."""
        self._top_up()

    def _top_up(self) -> None:
        """Ask for as many children as the waiting runs need, plus the spares."""
        while self._waiters and self._waiters[0].done():
            self._waiters.popleft()
        waiting = sum(1 for waiter in self._waiters if not waiter.done())
        while self._sock is not None and self._asked + len(self._ready) < waiting + _SPARES:
            self._next_id += 1
            self._asked += 1
            self._send(b'{"op":"fork","id":%d}' % self._next_id)

    def _readable(self) -> None:
        while self._sock is not None:
            try:
                message, fds, _flags, _addr = socket.recv_fds(self._sock, 1 << 16, 3, socket.MSG_CMSG_CLOEXEC)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message, fds = b"", []
            if not message:
                for fd in fds:
                    os.close(fd)
                self._detach()
                return
            try:
                reply = json.loads(message)
                op = reply.get("op")
            except (ValueError, AttributeError):
                op = None
            if op == "forked" and len(fds) == 3:
                self._asked -= 1
                workdir = reply.get("cwd")
                if isinstance(workdir, str) and os.path.dirname(workdir) == self._tmp:
                    self._workdirs[int(reply["pid"])] = workdir
                self._arrived(int(reply["pid"]), RunPipes(fds[0], fds[1], fds[2]))
                continue
            for fd in fds:
                os.close(fd)
            if op == "forked":  # its descriptors did not all arrive (the host is out of them): unusable
                self._send(b'{"op":"kill","pid":%d}' % int(reply["pid"]))
                reply = {"message": "the child's pipes did not arrive (too many open files?)"}
                op = "failed"
            if op == "failed":
                self._asked -= 1
                error = OSError(f"the fork server could not fork: {reply.get('message')}")
                waiter = self._next_waiter()
                if waiter is not None:
                    waiter.set_exception(error)
            elif op == "leftover":  # a run's directory the program left files in
                workdir = reply.get("cwd")
                if isinstance(workdir, str) and os.path.dirname(workdir) == self._tmp:
                    self._remove(workdir)
            elif op == "exit":
                pid = int(reply["pid"])
                self._workdirs.pop(pid, None)
                report = _parse_report(reply.get("status"))
                exit_waiter = self._exits.pop(pid, None)
                if exit_waiter is None:
                    self._early_exits[pid] = report
                elif not exit_waiter.done():
                    exit_waiter.set_result(report)

    def _next_waiter(self) -> asyncio.Future[tuple[int, RunPipes]] | None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a run cancelled while waiting leaves its waiter cancelled
                return waiter
        return None

    def _arrived(self, pid: int, pipes: RunPipes) -> None:
        waiter = self._next_waiter()
        if waiter is None:
            self._ready.append((pid, pipes))
        else:
            waiter.set_result((pid, pipes))

    def _detach(self) -> None:
        if self._sock is not None and self._loop is not None:
            self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
        while self._ready:  # the spares die with the zygote
            self._ready.popleft()[1].close()

    def _lost(self) -> None:
        """The zygote is gone: every outstanding run ends as a killed worker.

        The working directories of its children are its to remove, and it does
        before it exits; a zygote that was killed leaves them to the host.
        """
        self._detach()
        for workdir in self._workdirs.values():
            shutil.rmtree(workdir, ignore_errors=True)
        self._workdirs.clear()
        lost = ExitReport(None, signal.SIGKILL, 0.0)
        while (waiter := self._next_waiter()) is not None:
            waiter.set_exception(ConnectionError("the fork server exited"))
        for exit_waiter in self._exits.values():
            if not exit_waiter.done():
                exit_waiter.set_result(lost)
        self._exits.clear()

    async def fork(self) -> tuple[Child, RunPipes]:
        """A fresh child for one run (starting the zygote on first use) and the host's ends of its pipes.

        Cancellation: a run cancelled while its child is on the way leaves the
        child to the next run (it has not seen an init frame, so it is still
        unused); nothing leaks.
        """
        if not self.running:
            self._start()
        assert self._loop is not None
        if self._ready:  # its replacement is asked for when the run ends (``replenish``)
            pid, pipes = self._ready.popleft()
        else:
            waiter: asyncio.Future[tuple[int, RunPipes]] = self._loop.create_future()
            self._waiters.append(waiter)
            self._top_up()
            pid, pipes = await waiter
        return self._child(pid), pipes

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
            with contextlib.suppress(OSError):
                self._send(b'{"op":"kill","pid":%d}' % pid)

        return Child(exited, kill)

    async def aclose(self) -> None:
        """Stop the zygote: it kills and reaps every child it still has (spares too), then exits.

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
