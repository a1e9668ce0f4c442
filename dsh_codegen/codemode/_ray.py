"""``RayRuntime``: Code Mode programs run on a Ray cluster's nodes, their tool calls come home.

A pool of actors (``_ray_node.CodeModeNode``), each holding a fork server on its
node, runs the programs; the host keeps the registry and the pipeline. Each run
is the protocol of docs/codemode-protocol.md carried over the actor channel by a
:class:`_RayLink`, read by the same host reader as every other process runtime
(``_subprocess.ProcessHost``): every ``await tools.x(...)`` comes back here as a
frame and re-enters the registry, under its concurrency classes, guards and
events. Ray is imported only when a ``RayRuntime`` is made (extra ``ray``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Mapping
from typing import Any, Final, Unpack

from dsh_codegen._extras import require_extra
from dsh_codegen.codemode._processes import SPARES, Child, ExitReport
from dsh_codegen.codemode._ray_node import Batch, CodeModeNode
from dsh_codegen.codemode._links import LinkSink
from dsh_codegen.codemode._subprocess import Launched, ProcessHost, ProcessOptions

__all__ = ["RayRuntime"]

_log = logging.getLogger("dsh_codegen")

#: How long ``aclose`` gives an actor to stop its fork server before it is killed outright.
_CLOSE_S: Final = 10.0


class _Slot:
    """One actor of the pool, as the host holds it: its handle and the runs it carries now."""

    __slots__ = ("actor", "dead", "runs", "warmed")

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self.runs = 0
        self.dead = False
        self.warmed: asyncio.Future[Any] | None = None


class _RayLink:
    """One run's link over its actor: an exchange call always waiting for the child's next bytes."""

    def __init__(self, runtime: RayRuntime, slot: _Slot, run_id: int, exited: asyncio.Future[ExitReport]) -> None:
        self._runtime = runtime
        self._slot = slot
        self._run_id = run_id
        self._exited = exited
        self._sink: LinkSink | None = None
        self._seq = 0
        self._pending = bytearray()
        self._polling = False
        self._input_ended = False
        self._eof = False
        self._kill = False
        self._pump: asyncio.Task[None] | None = None

    def open(self, first: bytes, sink: LinkSink) -> None:
        self._sink = sink
        self._pending += first
        self._pump = asyncio.get_running_loop().create_task(self._run(), name=f"dsh_codegen ray run {self._run_id}")
        self._runtime._pumps.add(self._pump)
        self._pump.add_done_callback(self._runtime._pumps.discard)

    def send(self, data: bytes) -> None:
        if self._input_ended:
            return
        if self._polling:  # an exchange waits for the child: these bytes go on their own
            self._seq += 1
            _quiet(self._slot.actor.send.remote(self._run_id, self._seq, data))
        else:  # sent with the next exchange
            self._pending += data

    def end_input(self) -> None:
        if not self._input_ended:
            self._input_ended = True
            self._pending.clear()
            _quiet(self._slot.actor.end_input.remote(self._run_id))

    def kill(self) -> None:
        self._input_ended = True
        if self._polling:
            _quiet(self._slot.actor.kill.remote(self._run_id))
        else:  # asked with the next exchange (a completed run's, which only waits for the exit)
            self._kill = True

    def close(self) -> None:
        # Delivery stops; the exchanges go on until the child's exit is known (``aclose`` waits for it).
        self._sink = None

    async def _run(self) -> None:
        """Exchange until the child's last batch, delivering each to the run's reader.

        Cancellation: only by ``aclose`` of the runtime, once the actors are gone.
        """
        actor = self._slot.actor
        try:
            while True:
                data, seq = bytes(self._pending), 0
                self._pending.clear()
                if data:
                    self._seq += 1
                    seq = self._seq
                self._polling = True
                batch: Batch = await actor.exchange.remote(self._run_id, seq, data, self._kill)
                self._polling = False
                frames, eof, raw, report = batch
                sink = self._sink
                if sink is not None:
                    if frames:
                        sink.on_frames(frames)
                    if raw:
                        sink.on_raw(raw)
                    if eof and not self._eof:
                        self._eof = True
                        sink.on_frames_eof()
                if report is not None:
                    self._settle(ExitReport(*report))
                    return
                if self._eof:
                    # The run has most likely ended on this batch: its clean-up (asking for the kill)
                    # goes first, and rides on the exchange that waits for the exit.
                    await asyncio.sleep(0)
        except Exception as error:  # the actor (or its node) is gone: the run's process with it
            self._runtime._lost(self._slot)
            if self._sink is not None and not self._eof:
                self._eof = True
                self._sink.on_frames_eof()
            self._settle(ExitReport(None, None, 0.0, f"the Ray actor running the program died ({_why(error)})"))
        finally:
            self._slot.runs -= 1

    def _settle(self, report: ExitReport) -> None:
        if not self._exited.done():
            self._exited.set_result(report)


class RayRuntime(ProcessHost):
    """Runs each program on a Ray cluster, in a fresh process forked by an actor on one of its nodes.

    ``address``: the cluster to connect to (``ray.init(address=...)``) when
    this process is not connected to Ray yet; ``None``: what ``ray.init()``
    finds or starts. A connection the runtime made, :meth:`aclose` ends; one it
    found, it leaves alone.
    ``actors``: the pool's size, actors spread over the nodes (Ray's ``SPREAD``
    unless ``actor_options`` says otherwise, e.g. ``{"resources": {...}}`` to pin
    them to nodes made for it); each holds a fork server with
    ``spares_per_actor`` processes forked ahead. A run goes to the actor with
    the fewest runs. Its tool calls come back to this process over the actor
    channel and re-enter the registry's pipeline, so guards, approvals, the
    concurrency classes and the events are the host's. An actor or node that
    dies ends its runs as ``worker-exit`` and is replaced. The budgets (the
    same keywords and defaults), the pre-flight check, the failure kinds and the texts are those of
    :class:`PythonSubprocessRuntime` (the child applies ``cpu_seconds``,
    ``memory_bytes``, ``max_processes`` and ``network=False`` on its node).

    :meth:`start` (or ``async with``) makes the pool and waits until every actor
    has its spares; otherwise the first run makes it. :meth:`aclose` stops
    every fork server (each kills and reaps its children) and kills every actor.

    Raised errors: ``ImportError`` naming the extra (``pip install
    'dsh_codegen[ray]'``) when Ray is not installed; ``ValueError`` for a bad
    size or budget. See ``docs/codemode-runtimes.md`` for what it isolates.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        actors: int = 1,
        spares_per_actor: int = SPARES,
        actor_options: Mapping[str, Any] | None = None,
        **limits: Unpack[ProcessOptions],
    ) -> None:
        self._ray = require_extra("ray", "ray", "RayRuntime")
        if type(actors) is not int or actors < 1:
            raise ValueError("actors must be a positive integer")
        if type(spares_per_actor) is not int or spares_per_actor < 0:
            raise ValueError("spares_per_actor must be a non-negative integer")
        super().__init__(**limits)
        self.address = address
        self.actors = actors
        self.spares_per_actor = spares_per_actor
        self._options: dict[str, Any] = {"scheduling_strategy": "SPREAD", **(actor_options or {})}
        self._slots: list[_Slot] = []
        self._started_ray = False
        self._run_ids = itertools.count(1)
        self._turn = itertools.count()
        self._pumps: set[asyncio.Task[None]] = set()
        self._replaced = 0

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._slots)} actors, {len(self._runs)} running"
        return f"RayRuntime(address={self.address!r}, {state})"

    async def __aenter__(self) -> RayRuntime:
        await self.start()
        return self

    @property
    def replaced(self) -> int:
        """How many actors were replaced after they (or their node) died."""
        return self._replaced

    async def start(self) -> None:
        """Make the pool (connecting to Ray if needed) and wait until every actor's spares are forked.

        Cancellation: propagates; actors made so far stay in the pool (:meth:`aclose` ends them).
        """
        self._pool()
        await asyncio.gather(*(self._warm(slot) for slot in self._slots))

    def _connect(self) -> None:
        ray = self._ray
        if not ray.is_initialized():
            ray.init(address=self.address, log_to_driver=False, configure_logging=False)
            self._started_ray = True

    def _pool(self) -> list[_Slot]:
        if self._closed:
            raise OSError("the runtime was closed")
        if not self._slots:
            self._connect()
            self._slots = [self._new_slot() for _ in range(self.actors)]
        return self._slots

    def _new_slot(self) -> _Slot:
        actor_class = self._ray.remote(CodeModeNode).options(**self._options)
        slot = _Slot(actor_class.remote(self.spares_per_actor))
        return slot

    async def _warm(self, slot: _Slot) -> None:
        if slot.warmed is None:
            slot.warmed = asyncio.ensure_future(_awaitable(slot.actor.warm.remote()))
        await asyncio.shield(slot.warmed)

    def _lost(self, slot: _Slot) -> None:
        """``slot``'s actor died (a call to it failed): a new one takes its place (once)."""
        if slot.dead:
            return
        slot.dead = True
        _log.warning("code mode: a Ray actor of the pool died; replacing it")
        with contextlib.suppress(Exception):  # best effort: an actor already gone, Ray shut down
            self._ray.kill(slot.actor, no_restart=True)
        if self._closed or slot not in self._slots:
            return
        replacement = self._new_slot()
        self._slots[self._slots.index(slot)] = replacement
        self._replaced += 1
        replacement.warmed = asyncio.ensure_future(_awaitable(replacement.actor.warm.remote()))
        replacement.warmed.add_done_callback(_retrieved)

    async def _launch(self) -> Launched:
        slots = self._pool()
        turn = next(self._turn)
        # The least busy actor; among equals, the next in turn (so runs go round the pool).
        slot = min(slots, key=lambda s: (s.runs, (slots.index(s) - turn) % len(slots)))
        slot.runs += 1
        exited: asyncio.Future[ExitReport] = asyncio.get_running_loop().create_future()
        link = _RayLink(self, slot, next(self._run_ids), exited)

        def kill() -> None:
            link.kill()

        return Launched(Child(exited, kill), link)

    async def _close_carrier(self) -> None:
        slots, self._slots = self._slots, []
        if slots:
            closing = [asyncio.ensure_future(_awaitable(slot.actor.close.remote())) for slot in slots if not slot.dead]
            if closing:
                done, pending = await asyncio.wait(closing, timeout=_CLOSE_S)
                for future in (*done, *pending):
                    future.add_done_callback(_retrieved)
            for slot in slots:
                with contextlib.suppress(Exception):  # best effort: an actor already gone, Ray shut down
                    self._ray.kill(slot.actor, no_restart=True)
        if self._pumps:  # exchanges of runs whose actor is gone: they end now
            for pump in self._pumps:
                pump.cancel()
            await asyncio.wait(list(self._pumps))
        if self._started_ray:
            self._started_ray = False
            self._ray.shutdown()


async def _awaitable(ref: Any) -> Any:
    return await ref


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _quiet(ref: Any) -> None:
    """A call whose answer nobody awaits: its failure (an actor gone) is read, so Ray does not report it."""
    ref.future().add_done_callback(lambda done: done.exception())


def _why(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return type(error).__name__ + (f": {text[0][:200]}" if text else "")
