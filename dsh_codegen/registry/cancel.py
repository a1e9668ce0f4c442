"""Cooperative cancellation: ``AbortController`` / ``AbortSignal`` on asyncio.

A signal is a one-way latch: once aborted it stays aborted with one ``reason``.
Listeners are plain synchronous callbacks run in registration order at the
moment of abort; awaiting code uses ``await signal.wait()``. Nothing here
creates a task: a signal needs a running event loop only for ``wait()`` and
``AbortSignal.timeout()``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Final, final

from dsh_codegen.registry._errors import TOOL_ABORTED, HarnessError

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "SignalListener",
    "abort_signal",
    "derive_signal",
    "fuse_signals",
    "release_signal",
]

_log = logging.getLogger("dsh_codegen")

#: A listener receives the signal that aborted (read ``signal.reason``).
SignalListener = Callable[["AbortSignal"], object]

DEFAULT_ABORT_MESSAGE: Final = "This operation was aborted"


class AbortError(HarnessError):
    """Raised when an operation stops because its signal aborted.

    The default reason of :meth:`AbortController.abort`; the pipeline's own
    cancellation results also carry ``name`` ``AbortError`` with code
    ``ABORTED`` or ``ABORTED_BEFORE_DISPATCH``.
    """

    def __init__(self, message: str = DEFAULT_ABORT_MESSAGE, code: str = TOOL_ABORTED) -> None:
        super().__init__(message, code)


def _noop() -> None:
    return None


@final
class AbortSignal:
    """A read-only view of an abort latch.

    Guarantees: ``aborted`` never goes back to ``False``; ``reason`` is set
    exactly once, before any listener runs; each listener runs at most once, in
    registration order; a raising listener is logged (``dsh_codegen`` logger,
    WARNING) and does not stop the others. A listener added to an already
    aborted signal is never called (check ``aborted`` first).
    """

    __slots__ = (
        "__weakref__",
        "_aborted",
        "_links",
        "_listeners",
        "_next_key",
        "_reason",
        "_sources",
        "_waiters",
    )

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._listeners: dict[int, SignalListener] | None = None
        self._next_key = 0
        self._waiters: list[asyncio.Future[None]] | None = None
        # A derived signal (see derive_signal) follows these sources; it links
        # listeners to them only once someone listens to it, and polls otherwise.
        self._sources: tuple[AbortSignal, ...] | None = None
        self._links: list[Callable[[], None]] | None = None

    def __repr__(self) -> str:
        state = f"aborted reason={self.reason!r}" if self.aborted else "pending"
        return f"<AbortSignal {state}>"

    @property
    def aborted(self) -> bool:
        """Whether the signal has aborted (a signal derived from sources polls them)."""
        if self._aborted:
            return True
        if self._sources is None:
            return False
        return self._poll()

    @property
    def reason(self) -> object:
        """The abort reason (``None`` while not aborted)."""
        if not self._aborted and self._sources is not None:
            self._poll()
        return self._reason

    def _poll(self) -> bool:
        sources = self._sources
        if sources is not None:
            for source in sources:
                if source.aborted:
                    self._abort(source._reason)
                    return True
        return False

    def _link(self) -> None:
        if self._sources is not None and self._links is None:
            self._links = [source.add_listener(self._follow) for source in self._sources]

    def _release(self) -> None:
        """Stop following the sources (the signal keeps its current state)."""
        self._sources = None
        links = self._links
        if links is not None:
            self._links = None
            for remove in links:
                remove()

    def throw_if_aborted(self) -> None:
        """Raise the reason when aborted (an :class:`AbortError` if the reason is not an exception)."""
        if self.aborted:
            reason = self._reason
            if isinstance(reason, BaseException):
                raise reason
            raise AbortError()

    def add_listener(self, listener: SignalListener) -> Callable[[], None]:
        """Call ``listener(signal)`` once when the signal aborts; return an idempotent remover.

        On an already aborted signal the listener is not registered and the
        remover does nothing.
        """
        if self.aborted:
            return _noop
        self._link()
        listeners = self._listeners
        if listeners is None:
            listeners = self._listeners = {}
        key = self._next_key
        self._next_key = key + 1
        listeners[key] = listener

        def remove() -> None:
            current = self._listeners
            if current is not None:
                current.pop(key, None)

        return remove

    async def wait(self) -> object:
        """Return the reason once the signal has aborted (at once if it already has).

        Cancellation: cancelling the waiting task only stops this wait; the
        signal is unaffected.
        """
        if self.aborted:
            return self._reason
        self._link()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = []
        waiters.append(waiter)
        try:
            await waiter
        finally:
            if not self._aborted and self._waiters is not None:
                try:
                    self._waiters.remove(waiter)
                except ValueError:
                    pass
        return self._reason

    def _abort(self, reason: object) -> bool:
        """Latch the signal; return ``False`` if it had already aborted."""
        if self._aborted:
            return False
        self._reason = AbortError() if reason is None else reason
        self._aborted = True
        if self._sources is not None:
            self._release()
        waiters = self._waiters
        if waiters is not None:
            self._waiters = None
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        listeners = self._listeners
        if listeners is not None:
            self._listeners = None
            for listener in listeners.values():
                try:
                    listener(self)
                except Exception:
                    _log.warning("abort listener %r raised", listener, exc_info=True)
        return True

    def _follow(self, source: AbortSignal) -> None:
        # Listener used by fused signals: adopt the first source's reason.
        self._abort(source._reason)

    @staticmethod
    def any(signals: Iterable[AbortSignal]) -> AbortSignal:
        """A new signal that aborts as soon as any of ``signals`` does, with that reason.

        If one is already aborted the result is born aborted with the first
        such reason. The fused signal stops following its sources once it aborts.
        """
        return fuse_signals(signals)[0]

    @staticmethod
    def timeout(seconds: float) -> AbortSignal:
        """A new signal that aborts after ``seconds`` with a ``TimeoutError`` reason.

        Needs a running event loop; schedules a timer handle, never a task.
        """
        if not seconds >= 0 or seconds == float("inf"):
            raise ValueError("seconds must be a non-negative finite number")
        signal = AbortSignal()
        asyncio.get_running_loop().call_later(
            seconds, signal._abort, TimeoutError(f"signal timed out after {seconds!r}s")
        )
        return signal

    @staticmethod
    def aborted_signal(reason: object = None) -> AbortSignal:
        """A new, already aborted signal (``reason`` defaults to an :class:`AbortError`)."""
        signal = AbortSignal()
        signal._abort(reason)
        return signal


def derive_signal(sources: tuple[AbortSignal, ...]) -> AbortSignal:
    """A new signal following ``sources`` lazily; call ``signal._release()`` when done with it.

    Observably the same as :meth:`AbortSignal.any` (listeners and waiters are
    notified at the moment a source aborts), but it registers nothing on the
    sources until someone listens to it, so a body that never listens costs
    one small object.
    """
    signal = AbortSignal()
    signal._sources = sources
    return signal


def abort_signal(signal: AbortSignal, reason: object) -> bool:
    """Abort a signal the caller owns (the registry's fused and loop signals); ``False`` if it had aborted.

    ``AbortSignal`` is a read-only view; code that made a signal itself (and
    has no controller for it) aborts it through this function.
    """
    return signal._abort(reason)


def release_signal(signal: AbortSignal) -> None:
    """Stop a signal made by :func:`derive_signal` following its sources (it keeps its state).

    Its state is settled first: a source that aborted before the release
    (while nobody listened, so nothing polled) aborts it now, so the signal
    reads what an eagerly linked one would.
    """
    if signal._sources is not None and not signal._poll():
        signal._release()


def fuse_signals(signals: Iterable[AbortSignal]) -> tuple[AbortSignal, Callable[[], None]]:
    """A fused signal over ``signals`` and a detach function.

    Calling detach removes the fused signal's listeners from its sources (so
    a long-lived caller signal does not accumulate listeners of finished
    calls); the fused signal keeps whatever state it had.
    """
    fused = AbortSignal()
    sources = list(signals)
    for source in sources:
        if source._aborted:
            fused._abort(source._reason)
            return fused, _noop
    if len(sources) == 1:
        return fused, sources[0].add_listener(fused._follow)
    removers = [source.add_listener(fused._follow) for source in sources]

    def detach() -> None:
        for remove in removers:
            remove()

    if removers:
        # Once fused aborts, the other sources no longer need to notify it.
        fused.add_listener(lambda _signal: detach())
    return fused, detach


@final
class AbortController:
    """Owns one :class:`AbortSignal` and the right to abort it."""

    __slots__ = ("_signal",)

    def __init__(self) -> None:
        self._signal = AbortSignal()

    def __repr__(self) -> str:
        return f"<AbortController signal={self._signal!r}>"

    @property
    def signal(self) -> AbortSignal:
        """The controlled signal."""
        return self._signal

    def abort(self, reason: object = None) -> None:
        """Abort the signal with ``reason`` (default: a new :class:`AbortError`); later calls do nothing."""
        self._signal._abort(reason)
