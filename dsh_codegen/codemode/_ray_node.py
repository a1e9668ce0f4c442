"""The node side of ``RayRuntime``: one actor per pool slot, holding a fork server on its node.

:class:`CodeModeNode` is a plain class (this module never imports Ray); the
host wraps it with ``ray.remote`` and Ray starts it on a node of the cluster,
where ``dsh_codegen`` must be installed. Its fork server is the local runtime's
own (``_processes.ForkServer``, kept ``spares`` children ahead), so every run
still gets a fresh process. The actor only relays bytes between each child's
pipes (``_links.PipeLink``) and the host, which reads the frames: nothing here
parses or trusts them.

The host talks to it with four calls per run: :meth:`CodeModeNode.exchange`
(send bytes, then wait for the next batch of what the child wrote: the first one
starts the run), :meth:`~CodeModeNode.send` (bytes while an exchange is
waiting), :meth:`~CodeModeNode.end_input` and :meth:`~CodeModeNode.kill`. Sent
bytes carry a sequence number, so they reach the child in order whatever order
Ray runs the calls of an async actor in.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from typing import Final

from dsh_codegen.codemode._links import PipeLink
from dsh_codegen.codemode._processes import Child, ForkServer, child_env

__all__ = ["Batch", "CodeModeNode"]

#: What the host gets per exchange: the frame bytes, whether the frame stream ended, the last raw
#: output (with the exit), and the exit (code, signal, CPU seconds, reason) once the child is reaped.
Batch = tuple[bytes, bool, bytes, "tuple[int | None, int | None, float, str | None] | None"]

#: Frame bytes held for the host before the actor stops reading the child (it reads on once they go).
_HOLD: Final = 1 << 20
#: Raw output (fds 1 and 2) kept for a worker-exit message; the rest is read and dropped.
_RAW_KEEP: Final = 2048
#: How long after a child's exit its frame stream may stay open (a descendant outside its group
#: holding it) before the run's last batch goes without the end of file.
_EOF_AFTER_EXIT_S: Final = 1.0


class _Relay:
    """One run on this node: the child, its link, and what it wrote that the host has not taken yet."""

    def __init__(self, child: Child, link: PipeLink) -> None:
        self.child = child
        self.link = link
        self.frames = bytearray()
        self.eof = False
        self.eof_sent = False
        self.raw = bytearray()
        self.next_seq = 1
        self.held: dict[int, bytes] = {}
        #: The child is reaped and its frame stream ended (or did not, a while after: a descendant that
        #: escaped its group holds it): the next batch is the last.
        self.finished = False
        self.changed = asyncio.Event()
        child.exited.add_done_callback(self._exited)

    def _exited(self, _exited: object) -> None:
        asyncio.get_running_loop().call_later(_EOF_AFTER_EXIT_S, self._finish)
        self._check_finished()

    def _finish(self) -> None:
        self.finished = True
        self.changed.set()

    def _check_finished(self) -> None:
        if self.eof and self.child.exited.done():
            self._finish()
        self.changed.set()

    # --- the link's sink --------------------------------------------------------------------

    def on_frames(self, chunk: bytes) -> None:
        self.frames += chunk
        if len(self.frames) >= _HOLD:
            self.link.pause()
        self.changed.set()

    def on_frames_eof(self) -> None:
        self.eof = True
        self._check_finished()

    def on_raw(self, chunk: bytes) -> None:
        self.raw += chunk
        if len(self.raw) > _RAW_KEEP:
            del self.raw[:-_RAW_KEEP]

    def awaits_eof(self) -> bool:
        # Only the host reads frames, so this side cannot tell a completion; one more read after each
        # chunk (nothing there costs a failed non-blocking read) finds the end of file that follows a
        # completion, so the host gets both in one batch instead of a second round trip.
        return not self.eof

    # --- the host's calls -------------------------------------------------------------------

    def deliver(self, seq: int, data: bytes) -> None:
        """Write the host's bytes numbered ``seq`` once every earlier number has been written."""
        self.held[seq] = data
        while self.next_seq in self.held:
            self.link.send(self.held.pop(self.next_seq))
            self.next_seq += 1

    async def batch(self) -> Batch:
        """What the child wrote since the last batch; waits until there is something new."""
        while not (self.frames or (self.eof and not self.eof_sent) or self.finished):
            self.changed.clear()
            await self.changed.wait()
        frames, self.frames = bytes(self.frames), bytearray()
        self.link.resume()
        self.eof_sent = self.eof
        if not self.finished:
            return frames, self.eof, b"", None
        exited = self.child.exited.result()
        return frames, self.eof, bytes(self.raw), (exited.code, exited.signal, exited.cpu_s, exited.reason)


class CodeModeNode:
    """The actor: a fork server on this node and the runs it relays (see the module docstring)."""

    def __init__(self, spares: int) -> None:
        self._removals: set[asyncio.Future[None]] = set()
        self._server = ForkServer(sys.executable, child_env(), tempfile.gettempdir(), self._remove_later, spares)
        self._runs: dict[int, _Relay] = {}

    def _remove_later(self, workdir: str) -> None:
        removal = asyncio.get_running_loop().run_in_executor(None, shutil.rmtree, workdir, True)
        self._removals.add(removal)
        removal.add_done_callback(self._removals.discard)

    async def warm(self) -> int:
        """Start the fork server and its spares now; the process id of this actor (for the host's logs)."""
        self._server.replenish()
        return os.getpid()

    async def exchange(self, run_id: int, seq: int, data: bytes, kill: bool = False) -> Batch:
        """Send ``data`` (numbered ``seq``; ``0``: nothing) to run ``run_id``'s child, starting the run
        if it is new (``data`` is then its init frame), stop it if ``kill`` (see :meth:`kill`), and
        return the next batch of what it wrote."""
        relay = self._runs.get(run_id)
        if relay is None:
            try:
                child, pipes = await self._server.fork()
            except OSError as error:  # no process to run the program in
                return b"", True, b"", (None, None, 0.0, f"the program process could not be started: {error}")
            relay = self._runs[run_id] = _Relay(child, PipeLink(pipes))
            relay.link.open(b"", relay)
            child.exited.add_done_callback(lambda _: self._server.replenish())
        if seq:
            relay.deliver(seq, data)
        if kill:
            await self.kill(run_id)
        batch = await relay.batch()
        if batch[3] is not None:  # the last batch of this run: the child is reaped and its output taken
            self._forget(run_id)
        return batch

    async def send(self, run_id: int, seq: int, data: bytes) -> None:
        relay = self._runs.get(run_id)
        if relay is not None:
            relay.deliver(seq, data)

    async def end_input(self, run_id: int) -> None:
        relay = self._runs.get(run_id)
        if relay is not None:
            relay.link.end_input()

    async def kill(self, run_id: int) -> None:
        """Stop run ``run_id``'s program (its group and session, by the fork server); its exit follows
        in the next batch."""
        relay = self._runs.get(run_id)
        if relay is not None:
            relay.link.end_input()
            relay.child.kill()

    def _forget(self, run_id: int) -> None:
        relay = self._runs.pop(run_id, None)
        if relay is not None:
            relay.link.close()

    async def close(self) -> None:
        """Kill every run, stop the fork server (it reaps everything), remove every directory."""
        for relay in self._runs.values():
            relay.child.kill()
        await self._server.aclose()
        for run_id in list(self._runs):
            self._forget(run_id)
        if self._removals:
            await asyncio.wait(list(self._removals))
