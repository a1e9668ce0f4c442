"""``MontyRuntime``: the same programs on ``pydantic-monty``'s sandboxed interpreter.

``_monty_program`` turns the program into one Monty source text (the program's
lines kept where they were, behind a prelude that binds ``tools`` and
``ToolCallError``). This module drives it: each run checks a fresh session out
of the runtime's own worker pool (no state crosses runs) and steps the feed
itself, suspension by suspension, so a binding call is dispatched the moment
the program makes it (a call the program never awaits is still dispatched),
and each suspended ``await`` is answered as soon as one of the calls it waits
for settles.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import sys
import threading
import time
from typing import Any, Final

from dsh_codegen._extras import require_extra
from dsh_codegen.codemode._monty_program import (
    CALL,
    CHECK,
    DIAGNOSE,
    LOG_SEPARATOR,
    TOOL_CALL_ERROR,
    MontySource,
    monty_source,
)
from dsh_codegen.codemode._preflight import preflight_check
from dsh_codegen.codemode._subprocess import _finish  # the one "clean-up to its end" helper of the layer
from dsh_codegen.codemode._texts import LogSink, completion_error_text, program_error_text
from dsh_codegen.json import JsonBudgetError, LosslessJsonError, dump_canonical_json, snapshot_json
from dsh_codegen.registry.code_runtime import (
    CodeRunFailure,
    CodeRunRequest,
    CodeRunResult,
    CodeRunSuccess,
    CodeRunSuspended,
    SubCallSuspended,
    ToolCallError,
)
from dsh_codegen.registry import UNSET
from dsh_codegen.schema import JsonValue

__all__ = ["MontyRuntime"]

_LOSSY_ARGS: Final = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
#: What pydantic-monty hands out in place of a value nested about 1,000 levels deep (counted from
#: the root of what it converts, which for a call's arguments includes a few levels of its own).
_TOO_DEEP: Final = "<deeply nested>"
#: Below this depth the stand-in cannot occur, so a string that equals it there is the program's own.
_TOO_DEEP_FROM: Final = 900
_TOO_DEEP_TEXT: Final = "nested too deeply to leave the Monty sandbox (about 1,000 levels is its limit)"
#: Monty counts every suspension (a call, an ``await`` answered) against a per-session
#: budget whose overrun it reports in its own words; the bridge's ``max_sub_calls`` is
#: the call budget, so Monty's is set out of reach.
_SUSPENSIONS: Final = 1 << 40
#: How long ``aclose`` waits for pydantic-monty's last completion callback to leave Python.
_SETTLE_S: Final = 2.0


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class MontyRuntime:
    """Runs each program in a fresh ``pydantic-monty`` session (extra ``dsh_codegen[monty]``).

    Budgets: ``wall_timeout_s`` (host clock and Monty's feed limit,
    ``timeout``), ``memory_bytes`` (Monty's heap limit; the program sees
    ``MemoryError``), ``max_output_bytes`` and ``max_log_bytes`` as on
    :class:`PythonSubprocessRuntime`, and the same ``preflight`` (on by
    default: the program is read against the SDK before anything runs; see
    ``docs/codemode-runtimes.md`` for why this checker and not Monty's type
    check). The pool starts on the first run and stops with :meth:`aclose`.

    Raised errors: ``ImportError`` naming the extra and its install command
    (``pip install 'dsh_codegen[monty]'``) when ``pydantic-monty`` is not
    installed; ``ValueError`` for a budget that is not a positive finite number.
    """

    language = "python"
    #: What the SDK text tells the model of this runtime, beyond the contract both runtimes keep.
    sdk_notes: tuple[str, ...] = (
        "This runtime is a sandboxed subset of Python (Monty): no files, network, subprocesses or third-party "
        "packages, and no class inheritance. It can import asyncio, base64, binascii, bisect, collections, copy, "
        "csv, dataclasses, datetime, decimal, functools, hashlib, itertools, json, math, random, re, sys, time, "
        "tomllib, typing and unicodedata.",
        "Its `asyncio` has `gather` and `sleep` only: `asyncio.create_task(x)` and `asyncio.ensure_future(x)` "
        "return `x` itself (a tool call starts when it is made), and there is no `async with`, `TaskGroup`, "
        "`wait`, `wait_for` or `as_completed`.",
        "Past its memory budget a program stops with a `MemoryError` that it cannot catch.",
    )
    #: A run whose tool call awaits a deferred approval is dumped where it waits (pydantic-monty's
    #: snapshot) and resumed from there: nothing of the program runs twice.
    snapshots = True

    def __init__(
        self,
        *,
        wall_timeout_s: float = 30.0,
        memory_bytes: int | None = 512 << 20,
        max_output_bytes: int = 64 << 20,
        max_log_bytes: int = 1 << 20,
        preflight: bool = True,
    ) -> None:
        # Fail at construction, naming the extra, when it is missing.
        require_extra("pydantic_monty", "monty", "MontyRuntime")

        if not (isinstance(wall_timeout_s, (int, float)) and 0 < wall_timeout_s < float("inf")):
            raise ValueError("wall_timeout_s must be a positive finite number")
        self.wall_timeout_s = float(wall_timeout_s)
        self.memory_bytes = memory_bytes
        self.max_output_bytes = max_output_bytes
        self.max_log_bytes = max_log_bytes
        self.preflight = bool(preflight)
        self._pool: Any = None
        self._closed = False

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("running" if self._pool is not None else "idle")
        return f"MontyRuntime({state})"

    async def __aenter__(self) -> MontyRuntime:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the worker pool, and return once none of its threads is still in Python.

        pydantic-monty's pool settles the awaited shutdown from one of its own
        threads, which then still has to return from the event loop's
        ``call_soon_threadsafe``. An interpreter that exits before it has done
        so kills that thread inside Rust code, and the process aborts
        (SIGABRT) after the program succeeded; so this waits for it.

        Cancellation: the pool's own shutdown runs to its end (shielded) before
        ``CancelledError`` propagates.
        """
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await _finish(asyncio.ensure_future(_shut_down(pool)))

    async def _session(self) -> Any:
        if self._pool is None:
            import pydantic_monty

            pool = pydantic_monty.AsyncMonty()
            await pool.__aenter__()
            self._pool = pool
        limits: dict[str, Any] = {"max_feed_duration_secs": self.wall_timeout_s, "max_suspensions": _SUSPENSIONS}
        if self.memory_bytes is not None:
            limits["max_memory"] = self.memory_bytes
        # ``assert`` fails with CPython's bare AssertionError, not Monty's annotated one.
        return self._pool.checkout(limits=limits, assert_message_annotations=False)

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run ``request.code`` in a fresh Monty session and describe how it ended.

        Cancellation: the feed is cancelled and awaited to its end (dispatched
        calls are left to the dispatcher, which drains them), then
        ``CancelledError`` is re-raised. An abort of ``request.signal`` does the
        same and returns ``abort``.
        """
        if self._closed:
            raise RuntimeError("this MontyRuntime is closed")
        if request.signal.aborted:
            return CodeRunFailure("abort", "the run was aborted before it started")
        if self.preflight:
            failure = preflight_check(request)
            if failure is not None:
                return failure
        logs = _Logs(self.max_log_bytes)
        try:
            source = monty_source(request.code, request.tool_names)
        except (SyntaxError, ValueError, RecursionError) as error:
            return CodeRunFailure("exception", f"{type(error).__name__}: {error}")
        try:
            session = await self._session()
        except Exception as error:  # the pool could not start a worker: no sandbox to run in
            return CodeRunFailure("worker-exit", f"the Monty worker could not be started: {error}")
        calls = _Calls(request)
        async with session:
            feed = asyncio.ensure_future(_feed(session, source.text, calls, logs, request.resume))
            stop = asyncio.get_running_loop().create_future()
            remove = request.signal.add_listener(lambda _s: _decide(stop, "abort"))
            timer = asyncio.get_running_loop().call_later(self.wall_timeout_s + 1.0, _decide, stop, "timeout")
            try:
                await asyncio.wait([feed, stop], return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                await _stop(feed)
                raise
            finally:
                remove()
                timer.cancel()
            if not feed.done():
                await _stop(feed)
                if stop.result() == "abort":
                    return CodeRunFailure("abort", "the run was aborted", logs.lines())
                return CodeRunFailure(
                    "timeout", f"the program ran past its wall-clock budget of {self.wall_timeout_s:g} s", logs.lines()
                )
            return self._outcome(feed, source, calls, logs)

    def _outcome(self, feed: asyncio.Task[Any], source: MontySource, calls: _Calls, logs: _Logs) -> CodeRunResult:
        import pydantic_monty

        lines = logs.lines()
        error = feed.exception()
        if error is not None:
            if isinstance(error, pydantic_monty.MontyCrashedError):
                return CodeRunFailure("worker-exit", f"the Monty worker died: {error}", lines)
            if not isinstance(error, (pydantic_monty.MontyRuntimeError, pydantic_monty.MontySyntaxError)):
                return CodeRunFailure("exception", f"{type(error).__name__}: {error}", lines)
            raised = error.exception()
            text = str(raised)
            if isinstance(raised, TimeoutError) and text.startswith("feed time limit exceeded"):
                return CodeRunFailure(
                    "timeout", f"the program ran past its wall-clock budget of {self.wall_timeout_s:g} s", lines
                )
            if isinstance(raised, MemoryError) and text.startswith("memory limit exceeded"):
                # Monty's own words carry the heap's size at that moment, which says nothing to the model.
                text = f"memory limit exceeded (this runtime's memory budget is {self.memory_bytes} bytes)"
            if isinstance(raised, SystemExit) and not text:
                return CodeRunSuccess(lines, UNSET)  # ``sys.exit()``, ``sys.exit(0)``: a normal end, as on CPython
            name, tool = type(raised).__name__, None
            if f"{type(raised).__module__}.{name}" == TOOL_CALL_ERROR:
                name, tool = "ToolCallError", calls.tool_failed_with(text)
            message = program_error_text(name, text, _line(error, source), tool)
            return self._checked(CodeRunFailure("exception", message, lines), _utf8_size(message))
        ended = feed.result()
        if isinstance(ended, _Suspended):
            return ended.outcome(calls, lines)
        value, offence = ended
        if offence is not None:
            return CodeRunFailure("invalid-output", completion_error_text(offence), lines)
        if value is None:
            return self._checked(CodeRunSuccess(lines, UNSET), 0)
        if _cut_short(value):
            return CodeRunFailure("invalid-output", f"program completion is {_TOO_DEEP_TEXT}", lines)
        try:
            result = snapshot_json(value)
        except LosslessJsonError as lossy:
            return CodeRunFailure("invalid-output", completion_error_text(lossy), lines)
        except JsonBudgetError:
            return CodeRunFailure("output-limit", f"outer output exceeded {self.max_output_bytes} bytes", lines)
        return self._checked(CodeRunSuccess(lines, result), _utf8_size(dump_canonical_json(result, sort_keys=False)))

    def _checked(self, outcome: CodeRunResult, payload_bytes: int) -> CodeRunResult:
        """``outcome``, or ``output-limit`` when it and the logs are over ``max_output_bytes``."""
        size = payload_bytes
        if outcome.logs:
            size += _utf8_size(dump_canonical_json(list(outcome.logs), sort_keys=False))
        if size > self.max_output_bytes:
            return CodeRunFailure("output-limit", f"outer output exceeded {self.max_output_bytes} bytes", outcome.logs)
        return outcome


def _line(error: Any, source: MontySource) -> int | None:
    """The program's line where ``error`` was raised: its innermost frame of the program's own."""
    line = None
    for frame in error.traceback():
        found = source.program_line(frame.line)
        if found is not None:
            line = found
    return line


def _cut_short(value: object) -> bool:
    """Whether pydantic-monty replaced part of ``value`` with its stand-in for a value nested too deeply."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend((member, depth + 1) for member in item)
        elif isinstance(item, dict):
            stack.extend((member, depth + 1) for member in item.values())
        elif depth >= _TOO_DEEP_FROM and item == _TOO_DEEP:
            return True
    return False


#: The exact types of a value pydantic-monty handed out as it was.
_PLAIN: Final = frozenset({dict, list, tuple, str, int, float, bool, type(None)})


def _stand_in(value: object) -> bool:
    """Whether ``value`` may hold one of pydantic-monty's stand-ins for what it could not hand out.

    A cycle comes out as ``'[...]'`` or ``'{...}'``, a function or a class as
    ``"<function 'f' at 0x..>"`` / ``"<class 'A'>"``, an instance as a proxy
    object; anything but plain JSON-shaped values, or such a string, means the
    sandbox must say what the value really is.
    """
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if item in ("[...]", "{...}") or (item.startswith("<") and item.endswith(">")):
                return True
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif kind not in _PLAIN:
            return True
    return False


def _offence(verdict: object) -> LosslessJsonError | None:
    """The program's own verdict on a value (``__dsh_offence__``: ``None`` or ``[path, reason]``)."""
    if verdict is None:
        return None
    if (
        isinstance(verdict, list)
        and len(verdict) == 2
        and isinstance(verdict[0], list)
        and type(verdict[1]) is str
        and all(type(segment) in (str, int) for segment in verdict[0])
    ):
        return LosslessJsonError(verdict[1], tuple(verdict[0]))
    return LosslessJsonError("not JSON")  # a verdict the prelude never gives: the program meddled with it


class _Calls:
    """The run's binding calls, by Monty's call id: dispatched at once, answered when settled."""

    def __init__(self, request: CodeRunRequest) -> None:
        self.request = request
        self.names = frozenset(request.tool_names)
        self.loop = asyncio.get_running_loop()
        self.futures: dict[int, asyncio.Future[JsonValue]] = {}
        self.tools: dict[int, str] = {}
        #: The arguments of the calls handed to ``dispatch``, by Monty's call id (what a resumed run dispatches again).
        self.dispatched: dict[int, JsonValue] = {}
        #: Each failure handed to the program, in order: (tool name, message).
        self.failures: list[tuple[str, str]] = []

    def start(self, call_id: int, args: tuple[Any, ...]) -> bool:
        """Dispatch ``__dsh_call__(name, arguments)`` now (or keep a failed future for what cannot be).

        ``False`` instead when the arguments hold a stand-in: the program is asked to check them
        and to call again as ``__dsh_call__(name, arguments, verdict)``.
        """
        name = args[0] if args and type(args[0]) is str else None
        if len(args) not in (2, 3) or name not in self.names:
            future = self._failed(ToolCallError(str(name), f"{CALL} takes a bound tool's name"))
        elif len(args) == 2 and _stand_in(args[1]):
            return False
        elif args[1] is Ellipsis or (len(args) == 3 and _offence(args[2]) is not None):
            future = self._failed(ToolCallError(name, _LOSSY_ARGS))  # no argument, or not lossless JSON
        elif _cut_short(args[1]):
            future = self._failed(ToolCallError(name, f"tool arguments are {_TOO_DEEP_TEXT}"))
        else:
            try:
                frozen = snapshot_json(args[1])
            except (LosslessJsonError, JsonBudgetError):
                future = self._failed(ToolCallError(name, _LOSSY_ARGS))
            else:
                self.dispatch(call_id, name, frozen)
                return True
        self.futures[call_id] = future
        self.tools[call_id] = str(name)
        return True

    def dispatch(self, call_id: int, name: str, frozen: JsonValue) -> None:
        """Hand the call to the bridge (a resumed run's held calls come here again, in their order)."""
        try:
            future = self.request.dispatch(name, frozen)
            if not isinstance(future, asyncio.Future):
                raise TypeError(f"dispatch returned {type(future).__name__}, not a future")
        except Exception as error:  # dispatch never raises by contract; a broken one fails the call only
            future = self._failed(ToolCallError(name, str(error) or type(error).__name__))
        else:
            self.dispatched[call_id] = frozen
        self.futures[call_id] = future
        self.tools[call_id] = name

    def suspended(self, call_ids: list[int]) -> bool:
        """Whether one of ``call_ids`` waits for a deferred approval (its future says so)."""
        for call_id in call_ids:
            future = self.futures[call_id]
            if future.done() and not future.cancelled() and isinstance(future.exception(), SubCallSuspended):
                return True
        return False

    def held(self) -> list[list[Any]]:
        """The calls the program still holds, in the order they were made: ``[id, tool, arguments, error]``.

        ``arguments`` for a call handed to ``dispatch`` (dispatched again on
        resume), else ``None`` and the ``error`` the program gets.
        """
        out: list[list[Any]] = []
        for call_id, future in self.futures.items():
            if call_id in self.dispatched:
                out.append([call_id, self.tools[call_id], self.dispatched[call_id], None])
            else:
                error = future.exception() if future.done() and not future.cancelled() else None
                message = error.message if isinstance(error, ToolCallError) else "tool call failed"
                out.append([call_id, self.tools[call_id], None, message])
        return out

    def restore(self, held: list[list[Any]]) -> None:
        """A resumed run's held calls (see :meth:`held`): dispatched again, or failed again, in order."""
        for call_id, name, arguments, error in held:
            if error is None:
                self.dispatch(call_id, name, arguments)
            else:
                self.futures[call_id] = self._failed(ToolCallError(name, error))
                self.tools[call_id] = name

    def tool_failed_with(self, message: str) -> str | None:
        """The tool of the latest failure handed to the program with ``message`` (what an uncaught
        ``ToolCallError`` reports; Monty's traceback does not carry the error's tool)."""
        for tool, text in reversed(self.failures):
            if text == message:
                return tool
        return None

    def _failed(self, error: ToolCallError) -> asyncio.Future[JsonValue]:
        future: asyncio.Future[JsonValue] = self.loop.create_future()
        future.set_exception(error)
        return future

    def knows(self, call_ids: list[int]) -> bool:
        return all(call_id in self.futures for call_id in call_ids)

    async def wait_any(self, call_ids: list[int]) -> None:
        """Wait until one of ``call_ids`` has settled."""
        pending = [self.futures[call_id] for call_id in call_ids]
        if not any(future.done() for future in pending):
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)

    def answers(self, call_ids: list[int]) -> dict[int, Any]:
        """The answers of the calls among ``call_ids`` that have settled (handed to the program now)."""
        return {call_id: self._answer(call_id) for call_id in call_ids if self.futures[call_id].done()}

    def _answer(self, call_id: int) -> dict[str, Any]:
        future = self.futures.pop(call_id)
        self.dispatched.pop(call_id, None)
        if future.cancelled():
            message = "tool call cancelled"
        else:
            error = future.exception()
            if error is None:
                return {"return_value": snapshot_json(future.result(), freeze=False)}
            message = error.message if isinstance(error, ToolCallError) else (str(error) or type(error).__name__)
        self.failures.append((self.tools[call_id], message))
        return {"exc_type": TOOL_CALL_ERROR, "message": message}


def _never_called(*_args: object) -> None:
    """``__dsh_call__``'s name resolves to a host function; its calls are answered by ``_feed``."""
    raise RuntimeError(f"{CALL} is answered by the runtime")


class _Suspended:
    """The program waits for a call whose approval was deferred: its dumped state and the calls it holds."""

    def __init__(self, dump: bytes, held: list[list[Any]]) -> None:
        self.dump = dump
        self.held = held

    def outcome(self, calls: _Calls, logs: tuple[str, ...]) -> CodeRunSuspended:
        state = {"snapshot": base64.b64encode(self.dump).decode("ascii"), "calls": self.held, "logs": list(logs)}
        waiting = tuple(calls.futures[call_id] for call_id, _, arguments, _ in self.held if arguments is not None)
        return CodeRunSuspended(state, waiting, logs)


async def _feed(
    session: Any, source: str, calls: _Calls, logs: _Logs, resume: Any = None
) -> tuple[Any, LosslessJsonError | None] | _Suspended:
    """Step the feed to its end: binding calls dispatched as made, awaits answered as calls settle.

    Returns the program's value, and where it stops being lossless JSON when it showed one of
    pydantic-monty's stand-ins (the sandbox, which holds the real value, is asked). When the
    program waits for a call whose approval was deferred, returns its dumped state instead;
    ``resume`` (that state, as ``CodeRunSuspended`` carried it) starts the feed from there.
    """
    import pydantic_monty

    if resume is None:
        snapshot = await session.feed_start(source, external_lookup={CALL: _never_called}, print_callback=logs.write)
    else:
        for line in resume["logs"]:
            logs.sink.add(line)
        snapshot = await session.load_snapshot(
            base64.b64decode(resume["snapshot"]), external_lookup={CALL: _never_called}, print_callback=logs.write
        )
        calls.restore(resume["calls"])
    while not isinstance(snapshot, pydantic_monty.MontyComplete):
        if (
            isinstance(snapshot, pydantic_monty.AsyncFunctionSnapshot)
            and not snapshot.is_os_function
            and snapshot.function_name == CALL
        ):
            started = calls.start(snapshot.call_id, snapshot.args)
            snapshot = await snapshot.resume({"future": ...} if started else {"return_value": CHECK})
        elif isinstance(snapshot, pydantic_monty.AsyncFutureSnapshot) and calls.knows(snapshot.pending_call_ids):
            await calls.wait_any(snapshot.pending_call_ids)
            if calls.suspended(snapshot.pending_call_ids):
                return _Suspended(snapshot.dump(), calls.held())
            snapshot = await snapshot.resume(calls.answers(snapshot.pending_call_ids))
        else:  # imports, OS calls (Monty's own answer: no filesystem, no network), sleeps
            snapshot = await snapshot.resume_auto()
    value = snapshot.output
    if not _stand_in(value):
        return value, None
    return value, _offence(await session.feed_run(DIAGNOSE))


async def _shut_down(pool: Any) -> None:
    await pool.__aexit__(None, None, None)
    loop = asyncio.get_running_loop()
    deadline = time.monotonic() + _SETTLE_S
    while _completing(loop) and time.monotonic() < deadline:
        await asyncio.sleep(0.001)


def _completing(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether another thread is still inside ``loop.call_soon_threadsafe`` (a pool thread settling a future)."""
    entry = getattr(type(loop).call_soon_threadsafe, "__code__", None)
    if entry is None:
        return False
    me = threading.get_ident()
    for ident, frame in sys._current_frames().items():  # noqa: SLF001 (the one public view of other threads' stacks)
        walked: Any = frame
        while walked is not None and ident != me:
            if walked.f_code is entry:
                return True
            walked = walked.f_back
    return False


def _decide(stop: asyncio.Future[str], why: str) -> None:
    if not stop.done():
        stop.set_result(why)


async def _stop(feed: asyncio.Task[Any]) -> None:
    """Cancel the feed and wait for it to settle; a second cancellation waits too, then propagates."""
    feed.cancel()
    cancelled = False
    while not feed.done():
        try:
            await asyncio.shield(feed)
        except asyncio.CancelledError:
            cancelled = cancelled or not feed.done()
        except Exception:
            break
    with contextlib.suppress(BaseException):
        feed.exception() if not feed.cancelled() else None
    if cancelled:
        raise asyncio.CancelledError


class _Logs:
    """The program's ``print`` records (``<length>:<text>``, one per call) read into a :class:`LogSink`."""

    def __init__(self, cap: int) -> None:
        self.sink = LogSink(cap)
        self.buffer = ""

    def write(self, _stream: str, text: str) -> None:
        if self.sink.closed:
            return
        self.buffer += text
        while True:
            head, separator, rest = self.buffer.partition(LOG_SEPARATOR)
            if not separator:
                return
            if not head.isdigit():  # not a record of ours (nothing else prints there): kept as it came
                entry, newline, rest = self.buffer.partition("\n")
                if not newline:
                    return
                self.sink.add(entry)
                self.buffer = rest
                continue
            size = int(head)
            if len(rest) <= size:
                return  # the rest of the record is still on its way
            self.sink.add(rest[:size])
            self.buffer = rest[size + 1 :]  # the record's newline

    def lines(self) -> tuple[str, ...]:
        return self.sink.lines()
