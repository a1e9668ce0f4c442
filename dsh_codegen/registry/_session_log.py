"""The durable session log: events the agent loop and the Code Mode bridge append.

A session log is anything with ``append(event)`` (:class:`SessionLog`). Two
implementations ship:

- :class:`MemorySessionLog` keeps detached copies of the events in a list;
- :class:`JsonlSessionLog` writes one compact JSON object per line to a file,
  with one ``write`` system call per event (nothing is buffered in the
  process, so an event is in the kernel when ``append`` returns) and an
  optional ``fsync`` per event.

Events are JSON objects with camelCase keys. The loop writes ``tool/call``
(``callId``, ``name``, ``arguments``) and ``tool/result`` (``callId``,
``name``, ``isError``, ``content`` and, when present, ``error``, ``meta``,
``additionalContexts``, ``concludesTurn``); every event carries ``type`` and
``time`` (seconds since the epoch, a float). The bridge writes
``tool/code-dispatch-start`` and ``tool/code-dispatch``, which are log-only,
as are ``tool/approval-pending`` (a call suspended on a deferred approval)
and ``tool/approval-resolved`` (its decision arrived), both with the
``approvalId``.

:func:`derive_messages` rebuilds the model-facing call/result messages from a
log; :func:`read_session_log` reads a JSONL file back, recovering every
complete line even after a writer was killed mid-line.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from dsh_codegen.registry._results import ToolExecutionResult

__all__ = [
    "APPROVAL_PENDING_EVENT",
    "APPROVAL_RESOLVED_EVENT",
    "CODE_DISPATCH_EVENT",
    "CODE_DISPATCH_START_EVENT",
    "JsonlSessionLog",
    "MemorySessionLog",
    "SessionEvent",
    "SessionLog",
    "SessionLogContents",
    "TOOL_CALL_EVENT",
    "TOOL_RESULT_EVENT",
    "derive_messages",
    "event_time",
    "read_session_log",
    "replay_result",
    "result_fields",
]

_logger = logging.getLogger("dsh_codegen")

#: A session event or a derived message: a JSON object with camelCase keys.
SessionEvent = dict[str, Any]

TOOL_CALL_EVENT = "tool/call"
TOOL_RESULT_EVENT = "tool/result"
CODE_DISPATCH_START_EVENT = "tool/code-dispatch-start"
CODE_DISPATCH_EVENT = "tool/code-dispatch"
APPROVAL_PENDING_EVENT = "tool/approval-pending"
APPROVAL_RESOLVED_EVENT = "tool/approval-resolved"


@runtime_checkable
class SessionLog(Protocol):
    """Where the loop and the bridge append durable events.

    ``append`` receives a JSON object (a mapping with ``str`` keys and a
    ``type``). It must not keep a reference to the mapping it was given (the
    caller may reuse it) and should raise when the event cannot be stored: the
    loop treats a raising log as an internal failure (it drains the started
    calls and re-raises).
    """

    def append(self, event: Mapping[str, Any]) -> None: ...


def event_time() -> float:
    """The ``time`` field of a new event: seconds since the epoch (``time.time()``)."""
    return time.time()


def _encode_event(event: Mapping[str, Any]) -> str:
    """Check ``event`` and return its compact JSON text (one line, no newline).

    Raised errors: ``TypeError`` when ``event`` is not a mapping; ``ValueError``
    when it has no ``type`` string or is not JSON (NaN, a cycle, a set, ...).
    """
    if not isinstance(event, Mapping):
        raise TypeError(f"session log event must be a mapping, got {type(event).__name__}")
    kind = event.get("type")
    if not isinstance(kind, str) or not kind:
        raise ValueError("session log event must have a non-empty string 'type'")
    try:
        # json.dumps escapes every control character, so the text never
        # contains a newline: one event is exactly one line.
        return json.dumps(event, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"session log event {kind!r} is not JSON: {exc}") from None


def _line_bytes(text: str) -> bytes:
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate cannot be written as UTF-8: re-escape the whole
        # event as ASCII JSON, which reads back to the same value.
        return json.dumps(json.loads(text), ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


class MemorySessionLog:
    """A session log held in memory.

    Guarantees: each appended event is checked and stored as a detached copy
    (exactly what a :class:`JsonlSessionLog` would read back: plain ``dict``
    and ``list`` containers), so later changes to the caller's mapping are
    not seen. Appends are thread-safe.
    """

    __slots__ = ("_events", "_lock")

    def __init__(self) -> None:
        self._events: list[SessionEvent] = []
        self._lock = threading.Lock()

    def append(self, event: Mapping[str, Any]) -> None:
        """Store a detached copy of ``event``.

        Raised errors: ``TypeError`` / ``ValueError`` as :class:`JsonlSessionLog`
        (not a mapping, no ``type``, not JSON); nothing is stored then.
        """
        copy: SessionEvent = json.loads(_encode_event(event))
        with self._lock:
            self._events.append(copy)

    @property
    def events(self) -> list[SessionEvent]:
        """The events appended so far, in order (a new list of the stored copies)."""
        with self._lock:
            return list(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[SessionEvent]:
        return iter(self.events)

    def clear(self) -> None:
        """Forget every event."""
        with self._lock:
            self._events.clear()


class JsonlSessionLog:
    """A session log appended to a JSON Lines file, one event per line.

    Guarantees:

    - each event is one compact JSON object followed by ``\\n``, handed to the
      kernel with one ``write`` call per event (looping only on a short
      write), so an event is durable against a crash of this process when
      ``append`` returns; with ``fsync=True`` it is also flushed to the disk
      (durable against a power loss), at a cost of one ``fsync`` per event;
    - the file is opened in append mode and created when missing; existing
      content is kept;
    - if the file does not end with a newline (a previous writer was killed
      mid-line), the first append writes a newline first, so the torn
      fragment stays a line of its own that readers skip, and the new event
      never glues onto it;
    - appends are thread-safe within one process. Several processes appending
      to one file are not coordinated (each event is one ``write`` in append
      mode, which keeps small lines whole on local file systems, but that is
      the operating system's promise, not ours).

    Not guaranteed: a crash can lose the event being written; it then leaves
    at most one torn line, which :func:`read_session_log` skips.
    """

    __slots__ = ("_fd", "_fsync", "_lock", "_needs_newline", "path")

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        """Open (or create) ``path`` for appending.

        Raised errors: ``OSError`` when the file cannot be opened (a missing
        directory, no permission).
        """
        self.path = Path(path)
        self._fsync = bool(fsync)
        self._lock = threading.Lock()
        self._fd: int | None = None
        # Read-write (not write-only) so the torn-tail check can read the last byte.
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            self._needs_newline = _ends_torn(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def append(self, event: Mapping[str, Any]) -> None:
        """Write ``event`` as one line and hand it to the kernel before returning.

        Raised errors: ``TypeError`` when ``event`` is not a mapping,
        ``ValueError`` when it has no ``type`` string or is not JSON, or when
        the log is closed (nothing is written then); ``OSError`` from the file.
        """
        data = _line_bytes(_encode_event(event))
        with self._lock:
            fd = self._fd
            if fd is None:
                raise ValueError(f"JsonlSessionLog({str(self.path)!r}) is closed")
            if self._needs_newline:
                _write_all(fd, b"\n")
                self._needs_newline = False
            _write_all(fd, data)
            if self._fsync:
                os.fsync(fd)

    def read(self) -> SessionLogContents:
        """Read the whole file back (see :func:`read_session_log`)."""
        return read_session_log(self.path)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._fd is None

    def close(self) -> None:
        """Close the file; idempotent. Later appends raise ``ValueError``."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> JsonlSessionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        # A log dropped without close() must not leak its descriptor.
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)

    def __repr__(self) -> str:
        return f"JsonlSessionLog({str(self.path)!r})"


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@dataclass(frozen=True, slots=True)
class SessionLogContents:
    """What :func:`read_session_log` recovered from a file.

    ``events`` are the objects of every readable line, in file order;
    ``skipped_lines`` are the 1-based numbers of lines that were not a JSON
    object with a ``type`` string (a torn line left by a killed writer);
    ``torn_tail`` says whether the file ended without a newline.
    """

    events: list[SessionEvent]
    skipped_lines: tuple[int, ...]
    torn_tail: bool


def read_session_log(path: str | os.PathLike[str]) -> SessionLogContents:
    """Read a JSONL session log, keeping every complete event.

    Guarantees: every line that holds one JSON object with a string ``type``
    becomes an event, whatever surrounds it; any other line (a torn fragment,
    garbage, blank) is skipped, counted in ``skipped_lines`` and reported once
    on the ``dsh_codegen`` logger at WARNING. A last line without its newline
    is kept when it is a complete event (a writer killed between the object
    and its newline) and skipped otherwise. Never raises for bad content.

    Raised errors: ``OSError`` when the file cannot be read.
    """
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    torn_tail = bool(lines) and lines[-1] != b""
    if not torn_tail:
        lines.pop()  # the empty piece after the final newline
    events: list[SessionEvent] = []
    skipped: list[int] = []
    for number, raw in enumerate(lines, start=1):
        event = _parse_line(raw)
        if event is None:
            skipped.append(number)
        else:
            events.append(event)
    if skipped:
        _logger.warning("session log %s: skipped %d unreadable line(s): %s", path, len(skipped), skipped[:10])
    return SessionLogContents(events=events, skipped_lines=tuple(skipped), torn_tail=torn_tail)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_line(raw: bytes) -> SessionEvent | None:
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return value
    return None


# ---------------------------------------------------------------------------
# derive_messages


def derive_messages(events: Iterable[Mapping[str, Any]]) -> list[SessionEvent]:
    """Rebuild the model-facing tool messages from a session log.

    The log holds ``tool/call`` and ``tool/result`` events; every other event
    type (the Code Mode ``tool/code-dispatch`` pair included) is log-only and
    never becomes a message. Consecutive call/result events that share a
    ``batchId`` (one :func:`execute_tool_calls` run; events without one form
    batches by adjacency) become, in this order:

    1. one ``{"role": "assistant", "toolCalls": [{"callId", "name",
       "arguments"}, ...]}`` message, calls in log order;
    2. one ``{"role": "tool", "callId", "name", "isError", "content"}``
       message per call, in the same order;
    3. the ``additionalContexts`` of those results, in result order (the
       loop's post-result FIFO). They follow the whole batch because chat
       providers require the tool messages to follow their call message
       directly.

    A call without a result (a log cut short by a crash) and a result
    without a call are left out: a model-facing pair is whole or absent. The
    first result for a call id wins. The canonical value is never logged, so
    it never appears; messages are detached copies.

    Raised errors: ``ValueError`` naming the event index when a
    ``tool/call`` / ``tool/result`` event lacks a required field or has one
    of the wrong type; ``TypeError`` when an event is not a mapping.
    """
    messages: list[SessionEvent] = []
    batch: _Batch | None = None
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            raise TypeError(f"session event {index} must be a mapping, got {type(event).__name__}")
        kind = event.get("type")
        if kind != TOOL_CALL_EVENT and kind != TOOL_RESULT_EVENT:
            continue
        batch_id = event.get("batchId")
        if batch is None or batch.batch_id != batch_id:
            if batch is not None:
                batch.emit(messages)
            batch = _Batch(batch_id)
        if kind == TOOL_CALL_EVENT:
            batch.add_call(index, event)
        else:
            batch.add_result(index, event)
    if batch is not None:
        batch.emit(messages)
    detached: list[SessionEvent] = json.loads(json.dumps(messages))
    return detached


class _Batch:
    __slots__ = ("batch_id", "calls", "results")

    def __init__(self, batch_id: object) -> None:
        self.batch_id = batch_id
        self.calls: list[SessionEvent] = []
        self.results: dict[str, Mapping[str, Any]] = {}

    def add_call(self, index: int, event: Mapping[str, Any]) -> None:
        call_id = _field(index, event, "callId", str)
        name = _field(index, event, "name", str)
        self.calls.append({"callId": call_id, "name": name, "arguments": event.get("arguments")})

    def add_result(self, index: int, event: Mapping[str, Any]) -> None:
        call_id = _field(index, event, "callId", str)
        _field(index, event, "isError", bool)
        _field(index, event, "content", list)
        contexts = event.get("additionalContexts", [])
        if not isinstance(contexts, list):
            raise ValueError(f"session event {index} (tool/result): additionalContexts must be a list")
        self.results.setdefault(call_id, event)

    def emit(self, out: list[SessionEvent]) -> None:
        answered = [call for call in self.calls if call["callId"] in self.results]
        if not answered:
            return
        out.append({"role": "assistant", "toolCalls": answered})
        contexts: list[Any] = []
        for call in answered:
            result = self.results[call["callId"]]
            out.append(
                {
                    "role": "tool",
                    "callId": call["callId"],
                    "name": call["name"],
                    "isError": result["isError"],
                    "content": result["content"],
                }
            )
            contexts.extend(result.get("additionalContexts", []))
        out.extend(contexts)


def _field(index: int, event: Mapping[str, Any], key: str, kind: type) -> Any:
    value = event.get(key)
    if not isinstance(value, kind):
        raise ValueError(f"session event {index} ({event.get('type')}): {key} must be a {kind.__name__}")
    return value


def result_fields(result: ToolExecutionResult) -> SessionEvent:
    """The fields of a ``tool/result`` event that carry ``result`` (what :func:`replay_result` reads back).

    ``isError``, ``content`` and, when present, ``error`` (``message``,
    ``info``), ``meta``, ``additionalContexts``, ``concludesTurn``. The
    canonical value is not among them.
    """
    from dsh_codegen.registry._results import UNSET, ToolFailure, ToolSuccess

    fields: SessionEvent = {"isError": result.is_error, "content": result.content}
    if isinstance(result, ToolFailure):
        error: SessionEvent = {"message": result.error.message}
        if result.error.info is not None:
            error["info"] = result.error.info.to_json()
        fields["error"] = error
    if result.meta is not UNSET:
        fields["meta"] = result.meta
    if result.additional_contexts:
        fields["additionalContexts"] = list(result.additional_contexts)
    if isinstance(result, ToolSuccess) and result.concludes_turn:
        fields["concludesTurn"] = True
    return fields


def replay_result(event: Mapping[str, Any]) -> ToolExecutionResult:
    """Rebuild a result from a logged ``tool/result`` event, for presenters.

    The log never holds the canonical value, so a replayed success has
    ``value=UNSET``; ``content``, ``meta``, ``additional_contexts``,
    ``concludes_turn`` and a failure's ``error`` (message and ``{name, code}``
    info) are as logged, frozen. Pass it with the logged call arguments to
    ``definition.result_view(arguments, result)`` to render a card the way it
    rendered live (presenters that read ``result.value`` see ``UNSET``).

    Guarantees: the result has the shapes a live one has, so a hand-edited or
    corrupt log cannot hand presenters anything else: ``content`` is a list
    of ``{"type": str, ...}`` blocks and every additional context is
    ``{"role": "user", "content": [blocks], "source": str, "meta"?: {...}}``
    (the checks ``defer_context()`` applies).

    Raised errors: ``ValueError`` when ``event`` is not a well-formed
    ``tool/result`` event, naming the event by its call id and the bad place:
    ``session event (tool/result, callId 'c1'): content block [1] must be an
    object with a string "type"`` (a field of the wrong type, a bad content
    block, a malformed additional context: ``additional context [<i>] ...``).
    Lossy JSON (NaN, ``-0.0``) raises ``LosslessJsonError`` (a ``ValueError``)
    whose reason ends with the same event name and place.
    """
    from dsh_codegen.registry._materialize import ContentShapeError, check_content, snapshot_context
    from dsh_codegen.registry._results import UNSET, ToolError, ToolErrorInfo, ToolFailure, ToolSuccess

    if not isinstance(event, Mapping) or event.get("type") != TOOL_RESULT_EVENT:
        raise ValueError("replay_result() needs a tool/result event")
    call_id = event.get("callId")
    named = f"callId {call_id!r}" if isinstance(call_id, str) else "no callId"
    where = f"session event ({TOOL_RESULT_EVENT}, {named})"
    is_error = event.get("isError")
    if not isinstance(is_error, bool):
        raise ValueError(f"{where}: isError must be a bool")
    logged_content = event.get("content")
    if not isinstance(logged_content, list):
        raise ValueError(f"{where}: content must be a list")
    try:
        content = check_content(_replay_json(where, "content", logged_content))
    except ContentShapeError as exc:
        raise ValueError(f"{where}: {exc}") from None
    meta = _replay_json(where, "meta", event["meta"]) if "meta" in event else UNSET
    contexts = event.get("additionalContexts", [])
    if not isinstance(contexts, list):
        raise ValueError(f"{where}: additionalContexts must be a list")
    frozen_contexts = tuple(snapshot_context(context, where, index=index) for index, context in enumerate(contexts))
    if not is_error:
        return ToolSuccess(UNSET, content, meta, frozen_contexts, event.get("concludesTurn") is True)
    error = event.get("error")
    if not isinstance(error, Mapping) or not isinstance(error.get("message"), str):
        raise ValueError(f"{where}: error.message must be a str")
    info = error.get("info")
    error_info = None
    if isinstance(info, Mapping) and isinstance(info.get("name"), str) and isinstance(info.get("code"), str):
        error_info = ToolErrorInfo(info["name"], info["code"])
    return ToolFailure(ToolError(error["message"], error_info), content, meta, frozen_contexts)


def _replay_json(where: str, place: str, value: object) -> Any:
    """Snapshot a logged ``value``; a lossy one raises ``LosslessJsonError`` naming ``where`` and ``place``."""
    from dsh_codegen.json import LosslessJsonError, snapshot_json

    try:
        return snapshot_json(value)
    except LosslessJsonError as exc:
        raise LosslessJsonError(f"{exc.reason} ({where}: in {place})", exc.path) from None
