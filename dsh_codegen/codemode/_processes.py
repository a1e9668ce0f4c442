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
import errno
import json
import os
import shutil
import signal
import site
import socket
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "CHILD_SCRIPT",
    "Child",
    "ExitReport",
    "ForkServer",
    "RunPipes",
    "child_env",
    "fork_server_supported",
    "spawn_command",
    "spawn_keeper",
]

#: The child-side script (stdlib only), run as a file so the package is never imported there.
CHILD_SCRIPT: Final = str(Path(__file__).with_name("_child.py"))
_GRACE_S: Final = 2.0
#: Children a fork server keeps forked ahead of the runs waiting for one, by default. A run takes
#: one and asks for its replacement when it ends (so the fork and the new child's set-up do not
#: compete with the run for the CPU); the second spare serves a run that starts right after another.
SPARES: Final = 2


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
    """How the program process ended: an exit ``code`` or a ``signal``, and the CPU seconds it used;
    ``reason`` says it in words instead when the carrier saw something else (an actor that died)."""

    code: int | None
    signal: int | None
    cpu_s: float
    reason: str | None = None

    def describe(self) -> str:
        if self.reason is not None:
            return self.reason
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            return f"the program process was killed by {name}"
        if self.code is None:
            return "the program process ended after its fork server was lost (its exit status is unknown)"
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


def _spawn(argv: Sequence[str], fd_map: dict[int, int], env: Mapping[str, str], cwd: str | None = None) -> int:
    """``posix_spawn`` ``argv`` in a new session, with exactly the fds of ``fd_map`` (target: source)."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        actions: list[tuple[Any, ...]] = [
            (os.POSIX_SPAWN_DUP2, fd_map.get(target, null), target) for target in (0, 1, 2)
        ]
        actions += [(os.POSIX_SPAWN_DUP2, source, target) for target, source in fd_map.items() if target > 2]
        if cwd is not None:
            if not hasattr(os, "POSIX_SPAWN_CHDIR"):  # posix_spawn_file_actions_addchdir: glibc 2.29+
                raise OSError(f"cannot start a command in {cwd!r} on this platform")
            actions.append((os.POSIX_SPAWN_CHDIR, cwd))  # type: ignore[attr-defined, unused-ignore]
        return os.posix_spawn(argv[0], list(argv), dict(env), file_actions=actions, setsid=True)
    finally:
        os.close(null)


def _command_report(status: int) -> ExitReport:
    """How a command ended, read as the stdio child reports its program: an exit code of
    ``128 + N`` for a signal N (as shells and ``docker exec`` do), else the code itself."""
    if os.WIFSIGNALED(status):
        return ExitReport(None, os.WTERMSIG(status), 0.0)
    code = os.waitstatus_to_exitcode(status)
    if 128 < code <= 128 + signal.SIGRTMAX:
        return ExitReport(None, code - 128, 0.0)
    return ExitReport(code, None, 0.0)


#: How long a command whose stdin has ended may take to exit before it is sent ``SIGTERM``.
_COMMAND_TERM_S: Final = 1.0


def spawn_command(argv: Sequence[str], env: Mapping[str, str], cwd: str | None) -> tuple[Child, RunPipes]:
    """Start ``argv`` for one run, in a new session, on three new pipes (its stdin, stdout, stderr).

    ``argv[0]`` is looked up on ``env``'s ``PATH`` when it names no directory.
    Its :class:`Child`'s ``kill`` expects the caller to have closed the
    command's stdin (which the stdio child takes as "stop the program", through
    ``docker exec``, ``ssh`` or a namespace launcher alike): if the command has
    not exited a second later it is sent ``SIGTERM``, and a second after that
    its whole process group ``SIGKILL``; ``exited`` follows its reap. Raised errors: ``OSError`` when it cannot start
    (nothing is left open then).
    """
    loop = asyncio.get_running_loop()
    program = argv[0]
    if os.sep not in program:
        found = shutil.which(program, path=env.get("PATH", os.defpath))
        if found is None:
            raise FileNotFoundError(errno.ENOENT, f"no command {program!r} on the PATH {env.get('PATH', os.defpath)!r}")
        program = found
    stdin_r, to_child = os.pipe()
    from_child, stdout_w = os.pipe()
    raw_r, stderr_w = os.pipe()
    try:
        pid = _spawn([program, *argv[1:]], {0: stdin_r, 1: stdout_w, 2: stderr_w}, env, cwd)
    except BaseException:
        for fd in (to_child, from_child, raw_r):
            os.close(fd)
        raise
    finally:
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
    watched = _Watched(loop, pid)
    exited: asyncio.Future[ExitReport] = loop.create_future()

    def reaped(done: asyncio.Future[int]) -> None:
        if not exited.done():
            exited.set_result(_command_report(done.result()))

    watched.done.add_done_callback(reaped)

    killing: list[asyncio.TimerHandle] = []

    def kill() -> None:
        # The host has ended the command's stdin already (the stop request the child hears through any
        # transport, and a completed run's child exits on its own): signals only follow if it lingers.
        if not killing:
            killing.append(loop.call_later(_COMMAND_TERM_S, watched.signal, signal.SIGTERM))
            killing.append(loop.call_later(_GRACE_S, kill_group))

    def kill_group() -> None:
        # Only this loop reaps the command, so while it is unreaped its id still names its group.
        if not watched.done.done():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)

    return Child(exited, kill), RunPipes(to_child, from_child, raw_r)


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


class _Forked:
    """A child a zygote forked, as the host holds it: its pid, a pidfd of it (when the zygote could
    open one), the working directory the zygote made for it, and its exit."""

    __slots__ = ("exited", "kill_requested", "pid", "pidfd", "workdir", "zygote")

    def __init__(
        self, zygote: _Zygote, pid: int, pidfd: int, workdir: str | None, exited: asyncio.Future[ExitReport]
    ) -> None:
        self.zygote = zygote
        self.pid = pid
        self.pidfd = pidfd
        self.workdir = workdir
        self.exited = exited
        self.kill_requested = False

    def kill_directly(self) -> None:
        """SIGKILL the child through its pidfd (its zygote is gone; its process group is out of reach)."""
        if self.pidfd >= 0 and not self.exited.done():
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)


class _Zygote:
    """One zygote process and what the host holds of it. A lost zygote's state is never reused: a
    callback of the old one can only ever touch the old one."""

    __slots__ = ("asked", "children", "lost", "orphans", "process", "ready", "served", "sock", "tmp")

    def __init__(self, process: _Watched, sock: socket.socket, tmp: str) -> None:
        self.process = process
        self.sock: socket.socket | None = sock
        #: The directory it makes its children's working directories in (removed with the last of them).
        self.tmp = tmp
        self.asked = 0  # fork requests not answered yet
        self.served = 0  # children it forked
        self.ready: deque[tuple[_Forked, RunPipes]] = deque()
        #: Its children not reported exited, by pid (spares, and the children of running runs).
        self.children: dict[int, _Forked] = {}
        self.lost = False
        self.orphans = 0  # children still running after it was lost


#: The exit of a child whose zygote was lost: it is no child of ours, so its status is unknown.
_ORPHAN_EXIT: Final = ExitReport(None, None, 0.0)


class ForkServer:
    """A pristine zygote process that forks one child per run (see ``_child.py``).

    Children are asked for ahead: besides one per run waiting, ``spares`` more
    are kept forked, set up (in the working directory the zygote made for each)
    and blocked on their init frame, so a run that finds one pays neither the
    fork, nor the child's set-up, nor a ``mkdir``.

    A zygote can die under it (a program may kill its parent). A new one is
    started for the runs that follow (at once when a run ends, or by the next
    run that finds the old one dead), and the runs waiting for a child are
    served by it. The old zygote's children are no longer ours to reap, but the
    zygote handed the host a pidfd of each: a child already running its program
    goes on to its end (killed through its pidfd when its run asks), and its
    exit and the removal of its working directory follow its pidfd.
    """

    def __init__(
        self, python: str, env: dict[str, str], tmp: str, remove: Callable[[str], None], spares: int = SPARES
    ) -> None:
        self._python = python
        self._spares = spares
        self._env = env
        self._tmp = tmp  # where the zygote makes (and removes) each child's working directory
        self._remove = remove  # removes a directory the zygote leaves to the host, off the loop
        self._zygote: _Zygote | None = None
        self._next_id = 0
        self._waiters: deque[asyncio.Future[tuple[_Forked, RunPipes]]] = deque()
        #: Exits of children whose zygote was lost, watched through their pidfds (``aclose`` waits for them).
        self._orphans: set[asyncio.Future[ExitReport]] = set()
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        zygote = self._zygote
        return zygote is not None and not zygote.lost and not zygote.process.done.done()

    def _start(self) -> _Zygote:
        loop = asyncio.get_running_loop()
        # Each zygote makes its children's directories in one of its own, so whatever it leaves
        # behind when a program kills it (directories it had not removed yet) goes with that one.
        tmp = tempfile.mkdtemp(prefix="dsh-fork-", dir=self._tmp)
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = _spawn(
                [self._python, "-I", "-S", CHILD_SCRIPT, "zygote", tmp, *_site_dirs()], {3: child.fileno()}, self._env
            )
        except BaseException:
            host.close()
            os.rmdir(tmp)
            raise
        finally:
            child.close()
        host.setblocking(False)
        self._loop = loop
        zygote = _Zygote(_Watched(loop, pid), host, tmp)
        self._zygote = zygote
        zygote.process.done.add_done_callback(lambda _: self._lost(zygote))
        loop.add_reader(host.fileno(), self._readable, zygote)
        return zygote

    def _current(self) -> _Zygote:
        """The live zygote, started if there is none. One that has died without the loop having
        noticed yet (its exit is reaped here, now) is given up first, so no run takes its spares."""
        zygote = self._zygote
        if zygote is not None and not zygote.lost and zygote.process._try_reap():
            self._lost(zygote)  # which may start the next one already, for runs waiting
            zygote = self._zygote
        if zygote is None or zygote.lost:
            zygote = self._start()
        return zygote

    def _send(self, zygote: _Zygote, message: bytes) -> None:
        sock = zygote.sock
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
        """A run has ended: ask for the children that keep the spares full (see ``SPARES``), starting
        a new zygote if the last one was lost."""
        if self._closing:
            return
        try:
            self._current()
        except OSError:
            return  # the next run reports why a zygote cannot start
        self._top_up()

    def _top_up(self) -> None:
        """Ask the live zygote for as many children as the waiting runs need, plus the spares."""
        zygote = self._zygote
        if zygote is None or zygote.lost or zygote.sock is None:
            return
        while self._waiters and self._waiters[0].done():
            self._waiters.popleft()
        waiting = sum(1 for waiter in self._waiters if not waiter.done())
        while zygote.asked + len(zygote.ready) < waiting + self._spares:
            self._next_id += 1
            zygote.asked += 1
            with contextlib.suppress(OSError):  # a dead zygote: its exit brings the next one
                self._send(zygote, b'{"op":"fork","id":%d}' % self._next_id)

    def _readable(self, zygote: _Zygote) -> None:
        assert self._loop is not None
        while zygote.sock is not None:
            try:
                message, fds, _flags, _addr = socket.recv_fds(zygote.sock, 1 << 16, 4, socket.MSG_CMSG_CLOEXEC)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message, fds = b"", []
            if not message:
                for fd in fds:
                    os.close(fd)
                self._detach(zygote)
                return
            try:
                reply = json.loads(message)
                op = reply.get("op")
            except (ValueError, AttributeError):
                op = None
            if op == "forked" and len(fds) in (3, 4):
                zygote.asked -= 1
                zygote.served += 1
                pid = int(reply["pid"])
                workdir = reply.get("cwd")
                forked = _Forked(
                    zygote,
                    pid,
                    fds[3] if len(fds) == 4 else -1,
                    workdir if isinstance(workdir, str) and os.path.dirname(workdir) == zygote.tmp else None,
                    self._loop.create_future(),
                )
                zygote.children[pid] = forked
                self._arrived(forked, RunPipes(fds[0], fds[1], fds[2]))
                continue
            for fd in fds:
                os.close(fd)
            if op == "forked":  # its descriptors did not all arrive (the host is out of them): unusable
                self._send(zygote, b'{"op":"kill","pid":%d}' % int(reply["pid"]))
                reply = {"message": "the child's pipes did not arrive (too many open files?)"}
                op = "failed"
            if op == "failed":
                zygote.asked -= 1
                error = OSError(f"the fork server could not fork: {reply.get('message')}")
                waiter = self._next_waiter()
                if waiter is not None:
                    waiter.set_exception(error)
            elif op == "leftover":  # a run's directory the program left files in
                workdir = reply.get("cwd")
                if isinstance(workdir, str) and os.path.dirname(workdir) == zygote.tmp:
                    self._remove(workdir)
            elif op == "exit":
                gone = zygote.children.pop(int(reply["pid"]), None)
                if gone is not None:
                    _close_pidfd(gone)
                    if not gone.exited.done():
                        gone.exited.set_result(_parse_report(reply.get("status")))

    def _next_waiter(self) -> asyncio.Future[tuple[_Forked, RunPipes]] | None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a run cancelled while waiting leaves its waiter cancelled
                return waiter
        return None

    def _arrived(self, forked: _Forked, pipes: RunPipes) -> None:
        waiter = self._next_waiter()
        if waiter is None:
            forked.zygote.ready.append((forked, pipes))
        else:
            waiter.set_result((forked, pipes))

    def _detach(self, zygote: _Zygote) -> None:
        """Stop talking to ``zygote``; its unused spares are closed (they exit on the end of file)."""
        sock = zygote.sock
        if sock is not None:
            zygote.sock = None
            if self._loop is not None:
                self._loop.remove_reader(sock.fileno())
            sock.close()
        while zygote.ready:
            forked, pipes = zygote.ready.popleft()
            pipes.close()
            if zygote.lost:
                forked.kill_directly()

    def _lost(self, zygote: _Zygote) -> None:
        """``zygote`` is gone (once per zygote, whoever notices first).

        Its children are no longer its to kill, reap and clean up after: each
        one's exit is now watched through its pidfd (a child already asked to
        stop is killed through it), and its working directory removed after.
        The runs waiting for a child are served by a new zygote, unless this
        one never forked one (then the fork server cannot start: they fail).
        """
        if zygote.lost:
            return
        zygote.lost = True
        self._detach(zygote)
        if self._zygote is zygote:
            self._zygote = None
        for forked in list(zygote.children.values()):
            self._orphaned(forked)
        zygote.children.clear()
        if not zygote.orphans:
            self._remove(zygote.tmp)
        if self._zygote is not None or not any(not waiter.done() for waiter in self._waiters):
            return
        if zygote.served and not self._closing:
            try:
                self._start()
            except OSError as error:
                self._fail_waiters(error)
                return
            self._top_up()
        else:
            self._fail_waiters(ConnectionError("the fork server exited"))

    def _fail_waiters(self, error: Exception) -> None:
        while (waiter := self._next_waiter()) is not None:
            waiter.set_exception(error)

    def _orphaned(self, forked: _Forked) -> None:
        """``forked``'s zygote is gone: follow its exit through its pidfd, then remove its directory."""
        if forked.exited.done():
            return
        if forked.kill_requested:
            forked.kill_directly()
        if forked.pidfd < 0 or self._loop is None:  # nothing to follow it by: count it gone now
            forked.exited.set_result(_ORPHAN_EXIT)
            return
        forked.zygote.orphans += 1
        self._orphans.add(forked.exited)
        forked.exited.add_done_callback(self._orphans.discard)
        self._loop.add_reader(forked.pidfd, self._orphan_exited, forked)

    def _orphan_exited(self, forked: _Forked) -> None:
        if self._loop is not None and forked.pidfd >= 0:
            self._loop.remove_reader(forked.pidfd)
        _close_pidfd(forked)
        if not forked.exited.done():
            forked.exited.set_result(_ORPHAN_EXIT)
        zygote = forked.zygote
        zygote.orphans -= 1
        if not zygote.orphans:  # the last of its children: its directory, with theirs, goes now
            self._remove(zygote.tmp)

    async def fork(self) -> tuple[Child, RunPipes]:
        """A fresh child for one run (starting a zygote if none is alive) and the host's ends of its pipes.

        Cancellation: a run cancelled while its child is on the way leaves the
        child to the next run (it has not seen an init frame, so it is still
        unused); nothing leaks.
        """
        zygote = self._current()
        assert self._loop is not None
        if zygote.ready:  # its replacement is asked for when the run ends (``replenish``)
            forked, pipes = zygote.ready.popleft()
        else:
            waiter: asyncio.Future[tuple[_Forked, RunPipes]] = self._loop.create_future()
            self._waiters.append(waiter)
            self._top_up()
            forked, pipes = await waiter
        return self._child(forked), pipes

    def _child(self, forked: _Forked) -> Child:
        def kill() -> None:
            forked.kill_requested = True
            zygote = forked.zygote
            if zygote.lost:
                forked.kill_directly()
                return
            try:
                self._send(zygote, b'{"op":"kill","pid":%d}' % forked.pid)
            except OSError:  # the zygote is dying: its loss kills this child through its pidfd
                pass

        return Child(forked.exited, kill)

    async def aclose(self) -> None:
        """Stop the zygote: it kills and reaps every child it still has (spares too), then exits.

        Children of zygotes lost earlier are waited for through their pidfds.
        Cancellation: the close is finished (bounded by a grace period, then
        SIGKILL) before a ``CancelledError`` propagates.
        """
        self._closing = True
        zygote = self._zygote
        if zygote is not None:
            process = zygote.process
            self._detach(zygote)  # EOF on the socket tells the zygote to stop
            if not process.done.done():
                try:
                    await _bounded(asyncio.shield(process.done), _GRACE_S)
                finally:
                    if not process.done.done():
                        process.signal(signal.SIGKILL)
                        await _uncancellable(process.done)
            self._lost(zygote)
        if self._orphans:  # killed already (spares when their zygote was lost, runs by their own end)
            await _uncancellable(asyncio.ensure_future(asyncio.wait(list(self._orphans), timeout=_GRACE_S)))
        self._fail_waiters(ConnectionError("the fork server was closed"))


def _close_pidfd(forked: _Forked) -> None:
    if forked.pidfd >= 0:
        with contextlib.suppress(OSError):
            os.close(forked.pidfd)
        forked.pidfd = -1


async def _bounded(awaitable: asyncio.Future[int], timeout_s: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(awaitable, timeout_s)


async def _uncancellable(future: asyncio.Future[Any]) -> None:
    """Await ``future`` to the end, then re-raise a cancellation that arrived meanwhile."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
