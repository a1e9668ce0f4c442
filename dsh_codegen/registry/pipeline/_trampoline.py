"""The body trampoline: the registry steps a tool body itself, and cancels it as asyncio cancels a task.

A body runs in the task that awaits ``execute`` (no task per call). The
registry steps the body itself and does with what it yields what an
``asyncio.Task`` does:

- a bare ``yield`` (``asyncio.sleep(0)``) gives the loop one iteration;
- a future ``F`` of the running loop is waited for through a
  :class:`_ShieldedWait`, which the task waits on instead of ``F``: the task
  resumes in ``F``'s own callback round (so an ``await`` in a body costs the
  loop iterations it costs under plain asyncio);
- anything else is thrown back into the body as the ``RuntimeError`` a Task
  would throw, after one loop iteration, as a Task does.

Cancellation: when the body's signal aborts (the caller's signal, a
wrapper's such as ``timeout_policy``'s deadline, or a cancellation of the
awaiting task), the driver cancels the body the way ``Task.cancel()`` cancels
a task: it cancels the future the body waits on (or, if that refuses, the
next one the body awaits; a bare yield raises at once), so the body's
``await`` raises ``CancelledError``. A future that has already completed
keeps its outcome (``await run.signal.wait()`` returns normally). The driver then keeps driving the
body until it returns or raises: a started body is never abandoned (its
``finally`` blocks and cleanup awaits run to their end). The awaiting task's
own ``CancelledError`` is recorded on the call and absorbed at the driver's
yields (the dispatch stage re-raises it once the body settled).

This is the only place in the package that steps a coroutine by hand.
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import functools
import inspect
import types
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, Final

from dsh_codegen.registry.cancel import AbortError, AbortSignal, abort_signal
from dsh_codegen.registry.pipeline._call import ABORTED_MESSAGE, CallEntry, CallSettlement, record_cancellation

if TYPE_CHECKING:
    from dsh_codegen.registry._execution import ToolRunContext

__all__ = ["DONE", "BodyDriver", "await_any", "body_steps"]

#: What ``next(steps, DONE)`` returns when the body has returned.
DONE: Final = object()


def body_steps(settlement: CallSettlement, body: Any) -> Generator[Any, None, None]:
    """The steps of ``body``: its yields pass out, its return value lands in ``settlement.value``.

    ``yield from`` hands the return value over without a ``StopIteration``
    object; the function is a "coroutine generator" (below) so it may
    delegate to a native coroutine.
    """
    settlement.value = yield from body


types.coroutine(body_steps)  # sets CO_ITERABLE_COROUTINE on the function in place


async def await_any(awaitable: Awaitable[Any]) -> Any:
    """A coroutine awaiting ``awaitable`` (a body returned a Future or a custom ``__await__``)."""
    return await awaitable


class Yielded(enum.Enum):
    """What a body handed to its driver, as ``asyncio.Task`` sorts it."""

    FUTURE = "a future of the running loop to wait for"
    OTHER_LOOP = "a future attached to a different loop"
    NOT_BLOCKING = "a future yielded with ``yield`` instead of ``yield from``"
    CURRENT_TASK = "the task that runs the driver itself"
    GENERATOR = "a generator yielded with ``yield`` instead of ``yield from``"
    BAD = "anything else"


def classify_yield(yielded: object, loop: asyncio.AbstractEventLoop) -> Yielded:
    """Sort a non-``None`` yielded value the way ``asyncio.Task`` does before waiting on it."""
    blocking = getattr(yielded, "_asyncio_future_blocking", None)
    if blocking is not None:
        get_loop = getattr(yielded, "get_loop", None)
        future_loop = get_loop() if get_loop is not None else getattr(yielded, "_loop", None)
        if future_loop is not loop:
            return Yielded.OTHER_LOOP
        if not blocking:
            return Yielded.NOT_BLOCKING
        if yielded is asyncio.current_task(loop):
            return Yielded.CURRENT_TASK
        return Yielded.FUTURE
    if inspect.isgenerator(yielded):
        return Yielded.GENERATOR
    return Yielded.BAD


def bad_yield(kind: Yielded, yielded: object) -> RuntimeError:
    """The ``RuntimeError`` an ``asyncio.Task`` would throw into a coroutine for ``yielded``, worded for a tool body."""
    if kind is Yielded.OTHER_LOOP:
        return RuntimeError(f"tool body awaited Future {yielded!r} attached to a different loop")
    if kind is Yielded.NOT_BLOCKING:
        return RuntimeError(f"yield was used instead of yield from in a tool body with {yielded!r}")
    if kind is Yielded.CURRENT_TASK:
        return RuntimeError("a tool body cannot await the task that runs it")
    if kind is Yielded.GENERATOR:
        return RuntimeError(f"yield was used instead of yield from for generator in a tool body with {yielded!r}")
    return RuntimeError(f"tool body got bad yield: {yielded!r}")


def _resume(wait: _ShieldedWait, wake_task: Callable[[Any], object], _future: object) -> None:
    # F's done callback, run by the loop in the task's context: resume the task now, as the
    # task's own callback on F would have (a foreign future calling back from inside a task
    # gets the ordinary loop round instead).
    wait.resumer = None
    if asyncio.current_task(wait.loop) is None:
        wake_task(wait)
    else:
        wait.loop.call_soon(wake_task, wait)


class _ShieldedWait:
    """What the task waits on while a body waits for a future ``F``.

    ``asyncio.Task`` accepts any future-like object (one with
    ``_asyncio_future_blocking``): it registers its wake-up with
    ``add_done_callback`` and calls ``cancel()`` when it is cancelled. This
    one hands the wake-up to ``F`` (so the task resumes in ``F``'s callback
    round) and refuses ``cancel()``: the request goes to the driver
    (:meth:`BodyDriver._cancel_requested`), which aborts the body's signal and
    cancels ``F`` for the body; the task, which marks itself cancelled
    instead, throws its ``CancelledError`` into the driver (not the body) when
    ``F`` is done. The body reads ``F``'s own outcome.
    """

    __slots__ = ("_asyncio_future_blocking", "future", "loop", "on_cancel", "resumer")

    def __init__(
        self,
        future: asyncio.Future[Any],
        loop: asyncio.AbstractEventLoop,
        on_cancel: Callable[[], None],
    ) -> None:
        self.future = future
        self.loop = loop
        self.on_cancel = on_cancel
        self.resumer: Callable[[Any], None] | None = None
        self._asyncio_future_blocking = True

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self.loop

    def done(self) -> bool:
        return self.future.done()

    def cancelled(self) -> bool:
        return False

    def result(self) -> None:
        return None

    def exception(self) -> None:
        return None

    def add_done_callback(self, fn: Callable[[Any], object], *, context: contextvars.Context | None = None) -> None:
        self.resumer = functools.partial(_resume, self, fn)
        self.future.add_done_callback(self.resumer, context=context)

    def detach(self) -> None:
        """Forget the task's wake-up (the task was resumed some other way)."""
        resumer = self.resumer
        if resumer is not None:
            self.resumer = None
            self.future.remove_done_callback(resumer)

    def cancel(self, msg: object = None) -> bool:
        self.on_cancel()
        return False


class BodyDriver:
    """Awaitable that drives a suspended body to completion, cancelling it as asyncio cancels a task.

    Cancellation: when the body's fused signal aborts, the body is cancelled
    (:meth:`_cancel_body`): the future it waits on is cancelled, or its next
    suspension is. A cancellation
    request of the awaiting task aborts that signal (reason
    ``AbortError("tool call aborted")``), or cancels the body again if the
    signal had already aborted; the first ``CancelledError`` the task then
    delivers is recorded on the call (``settlement.body_cancellation``) and absorbed, as
    are later ones. The driver keeps driving the body until it settles, then
    returns (or raises the body's exception) normally; the dispatch stage
    turns the settled outcome into the call's result and re-raises the
    recorded ``CancelledError``. ``cancelled_body`` says whether the registry
    cancelled the body (a ``CancelledError`` it raises is then the call's).
    """

    __slots__ = ("call", "cancelled_body", "must_cancel", "run", "steps", "waiting", "yielded")

    def __init__(
        self,
        call: CallEntry,
        steps: Generator[Any, None, None],
        yielded: object,
        run: ToolRunContext,
    ) -> None:
        self.call = call
        self.steps = steps
        self.yielded = yielded
        # This body's own run (and fused signal): a wrapper may run bodies concurrently
        # (each in its own task), and each driver cancels the body it drives.
        self.run = run
        # The future the body waits on now (None while it runs or takes a bare yield).
        self.waiting: asyncio.Future[Any] | None = None
        # A cancellation that could not be delivered through a future: thrown at the next step.
        self.must_cancel = False
        self.cancelled_body = False

    def _cancel_body(self, _signal: object = None) -> None:
        """Cancel the body as ``Task.cancel()`` would: its pending ``await`` raises ``CancelledError``.

        The future the body waits on is cancelled now. If it refuses (a nested
        call's wait), or the body is running or taking a bare yield, the body's
        next suspension is cancelled instead. A future that has already
        completed keeps its outcome: the body resumes with it, uncancelled
        (``await run.signal.wait()`` returns, so a body that waits for its
        signal runs its own cleanup).
        """
        self.cancelled_body = True
        waiting = self.waiting
        if waiting is None or (not waiting.done() and not waiting.cancel()):
            self.must_cancel = True

    def _cancel_requested(self) -> None:
        # The task awaiting execute() was asked to cancel: abort the body's signal and cancel
        # the body (again, if its signal had aborted already: as a second Task.cancel() would).
        abort_signal(self.run.signal, AbortError(ABORTED_MESSAGE))
        self._cancel_body()

    def _listen(self) -> list[Callable[[], None]]:
        """Cancel the body when a source of its fused signal aborts; the removers of the listeners.

        The sources (the caller's signal, a wrapper's) are listened to directly:
        the fused signal need not be made for that (most bodies never read it).
        """
        run = self.run
        follows = run._follows
        if follows is None:
            sources: tuple[AbortSignal, ...] = (run.signal,)
        else:
            sources = (follows,) if type(follows) is AbortSignal else follows
        removers = []
        for source in sources:
            if source.aborted:
                self._cancel_body()  # aborted while the body ran its first step
                break
            removers.append(source.add_listener(self._cancel_body))
        return removers

    def _cancelled(self, exc: asyncio.CancelledError) -> None:
        record_cancellation(self.call, exc)

    def _wait(self, future: asyncio.Future[Any], loop: asyncio.AbstractEventLoop) -> Generator[Any, None, None]:
        future._asyncio_future_blocking = False  # taken over, as a Task takes it over
        if self.must_cancel and future.cancel():
            self.must_cancel = False  # delivered through the future, as a Task delivers it
        self.waiting = future
        try:
            while not future.done():
                wait = _ShieldedWait(future, loop, self._cancel_requested)
                try:
                    yield wait
                except asyncio.CancelledError as exc:
                    wait.detach()
                    self._cancelled(exc)
        finally:
            self.waiting = None

    def _one_iteration(self) -> Generator[None, None, None]:
        try:
            yield None
        except asyncio.CancelledError as exc:
            # The task's cancellation arrived here (not through a wait): cancel the body too.
            self._cancel_requested()
            self._cancelled(exc)

    def __await__(self) -> Generator[Any, None, None]:
        steps = self.steps
        yielded = self.yielded
        self.yielded = None
        loop = asyncio.get_running_loop()
        removers = self._listen()
        try:
            while True:
                error: BaseException | None = None
                if yielded is None:
                    yield from self._one_iteration()  # a bare yield (asyncio.sleep(0))
                    if self.must_cancel:
                        self.must_cancel = False
                        error = asyncio.CancelledError()
                else:
                    kind = classify_yield(yielded, loop)
                    if kind is Yielded.FUTURE:
                        yield from self._wait(yielded, loop)  # type: ignore[arg-type]
                    else:
                        error = bad_yield(kind, yielded)
                        # Delivered after one loop iteration, as a Task delivers it.
                        yield from self._one_iteration()
                try:
                    yielded = next(steps, DONE) if error is None else steps.throw(error)
                except StopIteration:
                    return
                if yielded is DONE:
                    return
        finally:
            for remove in removers:
                remove()
