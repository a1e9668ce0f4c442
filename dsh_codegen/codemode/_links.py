"""How one run's bytes travel between the host's protocol reader and the program process.

The host's reader (``_subprocess._Run``) speaks the run protocol of
docs/codemode-protocol.md over a :class:`RunLink`: it hands the link the init
frame and later answers as bytes, and the link hands back what the program
process wrote, as three streams of bytes (the frames, their end of file, the
raw output of fds 1 and 2) to a :class:`LinkSink`. Nothing here parses a
frame: the reader does, and trusts none of it.

:class:`PipeLink` carries them over the three pipes of a local process (a fork
server's child, a spawned keeper, a command's stdin, stdout and stderr), on the
event loop. A Ray node actor uses the same class between its fork server's
child and the actor channel (``_ray_node.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Final, Protocol

from dsh_codegen.codemode._processes import RunPipes

__all__ = ["LinkSink", "PipeLink", "RunLink"]

#: Bytes asked of one read: what a pipe holds (a larger request only costs a larger buffer per read).
READ_SIZE: Final = 1 << 16


class LinkSink(Protocol):
    """Where a link delivers what the program process wrote."""

    def on_frames(self, chunk: bytes) -> None:
        """More of the frame stream (any cut: the sink splits lines)."""

    def on_frames_eof(self) -> None:
        """The frame stream ended (every writer closed it)."""

    def on_raw(self, chunk: bytes) -> None:
        """More of the raw output (fds 1 and 2), to be drained; the sink keeps what it wants."""

    def awaits_eof(self) -> bool:
        """Whether the end of the frame stream is expected next (the run completed): read it at once."""


class RunLink(Protocol):
    """One run's two-way byte channel to its program process."""

    def open(self, first: bytes, sink: LinkSink) -> None:
        """Send ``first`` (the init frame) and start delivering to ``sink``."""

    def send(self, data: bytes) -> None:
        """Send ``data`` (whole frames), in order; never raises (a gone process is its exit's to report)."""

    def end_input(self) -> None:
        """Send nothing more: the child's end of file on its input, which asks it to stop (idempotent)."""

    def close(self) -> None:
        """Stop delivering and release the channel (idempotent)."""


class PipeLink:
    """A run's link over the host's ends of three pipes, read and written on the running loop.

    ``blocking``: whether the ends still need switching to non-blocking (a fork
    server hands them over non-blocking already).
    """

    def __init__(self, pipes: RunPipes, *, blocking: bool = False) -> None:
        self._loop = asyncio.get_running_loop()
        self._pipes = pipes
        self._fds = [pipes.to_child, pipes.from_child, pipes.raw]
        if blocking:
            for fd in self._fds:
                os.set_blocking(fd, False)
        self._reading: list[int] = []
        self._writing = False
        self._out = bytearray()
        self._sink: LinkSink | None = None
        self._paused = False

    def open(self, first: bytes, sink: LinkSink) -> None:
        self._sink = sink
        self.send(first)  # what the child (perhaps set up and waiting already) starts from
        self._loop.add_reader(self._pipes.from_child, self._on_frames)
        self._loop.add_reader(self._pipes.raw, self._on_raw)
        self._reading = [self._pipes.from_child, self._pipes.raw]

    def send(self, data: bytes) -> None:
        if self._pipes.to_child not in self._fds:
            return
        self._out += data
        self._flush()

    def end_input(self) -> None:
        fd = self._pipes.to_child
        if fd not in self._fds:
            return
        if self._writing:
            self._loop.remove_writer(fd)
            self._writing = False
        self._out.clear()
        self._fds.remove(fd)
        with contextlib.suppress(OSError):
            os.close(fd)

    def pause(self) -> None:
        """Stop reading the frame stream until :meth:`resume` (its reader's buffer is full)."""
        fd = self._pipes.from_child
        if not self._paused and fd in self._reading:
            self._paused = True
            self._loop.remove_reader(fd)

    def resume(self) -> None:
        fd = self._pipes.from_child
        if self._paused and fd in self._reading:
            self._paused = False
            self._loop.add_reader(fd, self._on_frames)

    def close(self) -> None:
        for fd in self._reading:
            if not (fd == self._pipes.from_child and self._paused):
                self._loop.remove_reader(fd)
        self._reading = []
        if self._writing:
            self._loop.remove_writer(self._pipes.to_child)
            self._writing = False
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    def _flush(self) -> None:
        fd = self._pipes.to_child
        try:
            while self._out:
                written = os.write(fd, self._out)
                del self._out[:written]
        except BlockingIOError:
            if not self._writing:
                self._loop.add_writer(fd, self._flush)
                self._writing = True
            return
        except OSError:
            self._out.clear()  # the child is gone; its exit decides the run
        if self._writing:
            self._loop.remove_writer(fd)
            self._writing = False

    def _stop_reading(self, fd: int) -> None:
        self._loop.remove_reader(fd)
        self._reading.remove(fd)

    def _on_raw(self) -> None:
        fd = self._pipes.raw
        chunk = _read(fd)
        if chunk is None:
            return
        if not chunk:
            self._stop_reading(fd)
            return
        assert self._sink is not None
        self._sink.on_raw(chunk)

    def _on_frames(self) -> None:
        self._read_frames()
        sink = self._sink
        if sink is not None and sink.awaits_eof():
            # The child closes its frame stream right after its completion: that end of file is
            # usually there already, and reading it now saves the run a turn of the loop.
            self._read_frames()

    def _read_frames(self) -> None:
        fd = self._pipes.from_child
        if fd not in self._reading:  # closed meanwhile
            return
        chunk = _read(fd)
        if chunk is None:
            return
        assert self._sink is not None
        if not chunk:
            self._stop_reading(fd)
            self._sink.on_frames_eof()
            return
        self._sink.on_frames(chunk)


def _read(fd: int) -> bytes | None:
    """One read of ``fd``: ``None`` if nothing is there yet, ``b""`` at its end (or on an error)."""
    try:
        return os.read(fd, READ_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""
