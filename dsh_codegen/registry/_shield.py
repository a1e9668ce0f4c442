"""What the registry's two coroutine drivers share: stepping a coroutine as a Task would, shielded.

The body trampoline (``_pipeline._BodyDriver``) and the loop helper's inline
call (``_loop._InlineCall``) each drive a coroutine themselves instead of
awaiting it, so that a cancellation of the task running them never reaches a
future the coroutine waits for. Both treat what the coroutine yields as an
``asyncio.Task`` does; only the texts of their errors and what a cancellation
means differ, so those stay with each driver.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import inspect
from collections.abc import Callable, Generator
from typing import Any

__all__ = ["Yielded", "classify_yield", "one_iteration", "wait_shielded"]

#: What a driver does when the awaiting task is cancelled at one of its yields.
OnCancel = Callable[[asyncio.CancelledError], None]


class Yielded(enum.Enum):
    """What a coroutine handed to its driver, as ``asyncio.Task`` sorts it."""

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


def _wake(proxy: asyncio.Future[None], _future: object) -> None:
    if not proxy.done():
        proxy.set_result(None)


def one_iteration(on_cancel: OnCancel) -> Generator[None, None, None]:
    """Give the event loop one iteration (a bare ``yield``); a cancellation arriving there goes to ``on_cancel``."""
    try:
        yield None
    except asyncio.CancelledError as exc:
        on_cancel(exc)


def wait_shielded(
    future: asyncio.Future[Any], loop: asyncio.AbstractEventLoop, on_cancel: OnCancel
) -> Generator[asyncio.Future[None], None, None]:
    """Wait until ``future`` is done through fresh proxy futures, never exposing ``future`` itself.

    Takes the future over as a Task does (``_asyncio_future_blocking`` reset).
    Cancelling the awaiting task cancels only the current proxy: the
    cancellation goes to ``on_cancel`` and the wait goes on with a new proxy,
    so the future (someone else's work) is never cancelled by it.
    """
    future._asyncio_future_blocking = False
    while not future.done():
        proxy: asyncio.Future[None] = loop.create_future()
        waker = functools.partial(_wake, proxy)
        future.add_done_callback(waker)
        proxy._asyncio_future_blocking = True
        try:
            yield proxy
        except asyncio.CancelledError as exc:
            future.remove_done_callback(waker)
            on_cancel(exc)
