"""Progress and log events a tool body reports while it runs (``run.report_progress``, ``run.log``).

A body reports; whoever started the call listens. Listeners are attached to
the calling context with :func:`watch_tool_events` (a context variable), so
an event reaches the listeners of the code that awaited ``registry.execute``:
``serve_mcp`` turns the events of the call it serves into MCP progress and
log notifications, and a harness can show them. With no listener an event
costs one context-variable read and goes nowhere.

Context variables are copied into the tasks a call starts (a Code Mode run's
sub-calls) and into ``asyncio.to_thread`` workers, so nested calls report to
the same listeners; each event carries its call's execution so a listener can
keep only the calls it owns.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias, get_args

from dsh_codegen.json import snapshot_json

if TYPE_CHECKING:
    from dsh_codegen.registry._execution import ToolExecution
    from dsh_codegen.registry._results import JsonValue

__all__ = [
    "LOG_LEVELS",
    "LogLevel",
    "ToolEvent",
    "ToolLog",
    "ToolProgress",
    "emit_tool_event",
    "has_tool_event_listeners",
    "watch_tool_events",
]

_log = logging.getLogger("dsh_codegen")

#: The syslog severities MCP uses, least severe first.
LogLevel: TypeAlias = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
"""Every :data:`LogLevel`, least severe first (a level and those after it are "at least" that level)."""


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """``run.report_progress(progress, total, message)`` of the call ``execution``."""

    execution: ToolExecution
    progress: float
    total: float | None
    message: str | None


@dataclass(frozen=True, slots=True)
class ToolLog:
    """``run.log(level, data, logger=...)`` of the call ``execution``; ``data`` is frozen lossless JSON."""

    execution: ToolExecution
    level: LogLevel
    data: JsonValue
    logger: str | None


ToolEvent: TypeAlias = ToolProgress | ToolLog
Listener: TypeAlias = Callable[[ToolEvent], object]

_listeners: ContextVar[tuple[Listener, ...]] = ContextVar("dsh_codegen_tool_event_listeners", default=())


@contextmanager
def watch_tool_events(listener: Listener) -> Iterator[None]:
    """Send the events of every call started inside this ``with`` block (and its tasks) to ``listener``.

    ``listener(event)`` is called synchronously in the reporting body's thread
    (a worker thread for a sync body run with ``asyncio.to_thread``); it must
    not block. Blocks nest: an event reaches every enclosing listener,
    outermost first. A raising listener is logged and never reaches the body.
    """
    token = _listeners.set((*_listeners.get(), listener))
    try:
        yield
    finally:
        _listeners.reset(token)


def has_tool_event_listeners() -> bool:
    """Whether the current context has a listener (a body's report is checked and built only then)."""
    return bool(_listeners.get())


def emit_tool_event(event: ToolEvent) -> None:
    """Deliver ``event`` to the listeners of the current context (none: nothing happens)."""
    for listener in _listeners.get():
        try:
            listener(event)
        except Exception:  # noqa: BLE001 - a listener never fails the body that reported
            _log.exception("dsh_codegen: a tool event listener raised")


def progress_event(execution: ToolExecution, progress: object, total: object, message: object) -> ToolProgress:
    """A checked :class:`ToolProgress`.

    Raised errors: ``TypeError``/``ValueError`` naming the bad argument (a
    number that is a bool, not finite, or a message that is not a string).
    """
    return ToolProgress(
        execution, _number("progress", progress), None if total is None else _number("total", total), _text(message)
    )


def log_event(execution: ToolExecution, level: object, data: object, logger: object) -> ToolLog:
    """A checked :class:`ToolLog` (``data`` snapshotted as lossless JSON).

    Raised errors: ``ValueError`` for an unknown level or data that is not
    lossless JSON; ``TypeError`` for a logger name that is not a string.
    """
    if level not in LOG_LEVELS:
        raise ValueError(f"run.log() level must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
    if logger is not None and not isinstance(logger, str):
        raise TypeError(f"run.log() logger must be a string or None, got {type(logger).__name__}")
    return ToolLog(execution, level, snapshot_json(data), logger)


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"run.report_progress() {name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"run.report_progress() {name} must be finite, got {value!r}")
    return value


def _text(message: object) -> str | None:
    if message is not None and not isinstance(message, str):
        raise TypeError(f"run.report_progress() message must be a string or None, got {type(message).__name__}")
    return message
