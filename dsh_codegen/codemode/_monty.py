"""``MontyRuntime``: the same programs on ``pydantic-monty``'s sandboxed interpreter.

The program is rewritten on the host (Python's own ``ast``) into the body of
``async def __program__()`` awaited at the top level, behind a short prelude
that binds ``tools`` and ``ToolCallError``. Monty has no ``__getattr__`` and no
class inheritance, so the prelude declares one method per tool whose name is a
plain identifier, ``tools["any name"]`` for every tool, and ``ToolCallError``
is Monty's built-in ``RuntimeError`` (it carries the message; ``toolName`` is
not available there). Each run gets a fresh session from the runtime's own
worker pool, so no state crosses runs.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import keyword
from typing import Any, Final

from dsh_codegen.codemode._preflight import preflight_findings, preflight_message
from dsh_codegen.json import LosslessJsonError, dump_canonical_json, snapshot_json
from dsh_codegen.registry._code_runtime import (
    CodeRunFailure,
    CodeRunRequest,
    CodeRunResult,
    CodeRunSuccess,
    ToolCallError,
)
from dsh_codegen.registry._results import UNSET, JsonValue

__all__ = ["MontyRuntime"]

_LOSSY_ARGS: Final = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
_LOG_MARKER: Final = "[output truncated: the program printed more than {} bytes]"


def _prelude(names: tuple[str, ...]) -> str:
    methods = []
    for name in names:
        if name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_"):
            methods.append(f"    async def {name}(self, args=...):\n        return await __dsh_call__({name!r}, args)\n")
    return (
        "ToolCallError = RuntimeError\n"
        "class _Tools:\n"
        f"    _names = {sorted(names)!r}\n"
        + "".join(methods)
        + "    def __getitem__(self, name):\n"
        "        if name not in self._names:\n"
        "            raise KeyError(name)\n"
        "        async def bound(args=...):\n"
        "            return await __dsh_call__(name, args)\n"
        "        return bound\n"
        "    def __contains__(self, name):\n"
        "        return name in self._names\n"
        "tools = _Tools()\n"
    )


def _wrap(code: str) -> str:
    """The program as the body of ``async def __program__()``, re-rendered from its syntax tree."""
    module = ast.parse(code, filename="<program>", mode="exec")
    function = ast.AsyncFunctionDef(
        name="__program__",
        args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                           defaults=[]),
        body=module.body or [ast.Pass()],
        decorator_list=[],
        returns=None,
    )
    if hasattr(ast, "TypeVar"):  # Python 3.12+ nodes carry type parameters
        setattr(function, "type_params", [])
    return ast.unparse(ast.fix_missing_locations(ast.Module(body=[function], type_ignores=[])))


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class MontyRuntime:
    """Runs each program in a fresh ``pydantic-monty`` session (extra ``dsh_codegen[monty]``).

    Budgets: ``wall_timeout_s`` (host clock and Monty's feed limit,
    ``timeout``), ``memory_bytes`` (Monty's heap limit; the program sees
    ``MemoryError``), ``max_output_bytes`` and ``max_log_bytes`` as on
    :class:`PythonSubprocessRuntime`, and the same opt-in ``preflight``. The
    pool starts on the first run and stops with :meth:`aclose`.
    """

    language = "python"

    def __init__(
        self,
        *,
        wall_timeout_s: float = 30.0,
        memory_bytes: int | None = 512 << 20,
        max_output_bytes: int = 64 << 20,
        max_log_bytes: int = 1 << 20,
        preflight: bool = False,
    ) -> None:
        import pydantic_monty  # noqa: F401 (fail at construction when the extra is missing)

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
        """Stop the worker pool.

        Cancellation: the pool's own shutdown runs to its end (shielded) before
        ``CancelledError`` propagates.
        """
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            closing = asyncio.ensure_future(pool.__aexit__(None, None, None))
            cancelled = False
            while not closing.done():
                try:
                    await asyncio.shield(closing)
                except asyncio.CancelledError:
                    cancelled = True
            if cancelled:
                raise asyncio.CancelledError

    async def _session(self) -> Any:
        if self._pool is None:
            import pydantic_monty

            pool = pydantic_monty.AsyncMonty()
            await pool.__aenter__()
            self._pool = pool
        limits: dict[str, Any] = {"max_feed_duration_secs": self.wall_timeout_s}
        if self.memory_bytes is not None:
            limits["max_memory"] = self.memory_bytes
        return self._pool.checkout(limits=limits)

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run ``request.code`` in a fresh Monty session and describe how it ended.

        Cancellation: the feed is cancelled and awaited to its end (its pending
        binding futures are left to the dispatcher), then ``CancelledError`` is
        re-raised. An abort of ``request.signal`` does the same and returns
        ``abort``.
        """
        if self._closed:
            raise RuntimeError("this MontyRuntime is closed")
        if request.signal.aborted:
            return CodeRunFailure("abort", "the run was aborted before it started")
        if self.preflight:
            findings = preflight_findings(request.code, request.tool_names, request.catalog)
            if findings:
                return CodeRunFailure("exception", preflight_message(findings))
        logs = _Logs(self.max_log_bytes)
        try:
            source = _prelude(request.tool_names) + _wrap(request.code) + "\nawait __program__()\n"
        except (SyntaxError, ValueError, RecursionError) as error:
            return CodeRunFailure("exception", f"{type(error).__name__}: {error}")
        names = frozenset(request.tool_names)

        async def call(name: object, args: object) -> Any:
            if type(name) is not str or name not in names:
                raise KeyError(name)
            try:
                frozen = snapshot_json(args)
            except LosslessJsonError:
                raise RuntimeError(_LOSSY_ARGS) from None
            try:
                value = await request.dispatch(name, frozen)
            except ToolCallError as error:
                raise RuntimeError(error.message) from None
            return snapshot_json(value, freeze=False)

        try:
            session = await self._session()
        except Exception as error:  # the pool could not start a worker: no sandbox to run in
            return CodeRunFailure("worker-exit", f"the Monty worker could not be started: {error}")
        feed: asyncio.Task[Any] | None = None
        async with session:
            feed = asyncio.ensure_future(
                session.feed_run(source, external_lookup={"__dsh_call__": call}, print_callback=logs.write)
            )
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
                return CodeRunFailure("timeout", f"the program ran past its wall-clock budget of {self.wall_timeout_s:g} s",
                                      logs.lines())
            return self._outcome(feed, logs)

    def _outcome(self, feed: asyncio.Task[Any], logs: _Logs) -> CodeRunResult:
        import pydantic_monty

        lines = logs.lines()
        error = feed.exception()
        if error is not None:
            if isinstance(error, pydantic_monty.MontyCrashedError):
                return CodeRunFailure("worker-exit", f"the Monty worker died: {error}", lines)
            text = error.display("type-msg") if isinstance(
                error, (pydantic_monty.MontyRuntimeError, pydantic_monty.MontySyntaxError)) else str(error)
            if text.startswith("TimeoutError: feed time limit exceeded"):
                return CodeRunFailure(
                    "timeout", f"the program ran past its wall-clock budget of {self.wall_timeout_s:g} s", lines)
            return CodeRunFailure("exception", text, lines)
        value = feed.result()
        if value is None:
            result: JsonValue | Any = UNSET
            size = 0
        else:
            try:
                result = snapshot_json(value)
            except LosslessJsonError:
                return CodeRunFailure("invalid-output", "program completion must be lossless JSON", lines)
            size = _utf8_size(dump_canonical_json(result, sort_keys=False))
        if lines:
            size += _utf8_size(dump_canonical_json(list(lines), sort_keys=False))
        if size > self.max_output_bytes:
            return CodeRunFailure("output-limit", f"outer output exceeded {self.max_output_bytes} bytes", lines)
        return CodeRunSuccess(lines, result)


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
    """``print`` output as one entry per line, capped with one marker line."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.used = 0
        self.entries: list[str] = []
        self.partial = ""
        self.closed = False

    def write(self, stream: str, text: str) -> None:
        if stream != "stdout" or self.closed:
            return
        self.partial += text
        *complete, self.partial = self.partial.split("\n")
        for entry in complete:
            self._add(entry)

    def _add(self, entry: str) -> None:
        if self.closed:
            return
        size = _utf8_size(entry)
        if self.used + size > self.cap:
            cut = entry.encode("utf-8", "surrogatepass")[: self.cap - self.used].decode("utf-8", "ignore")
            if cut:
                self.entries.append(cut)
            self.entries.append(_LOG_MARKER.format(self.cap))
            self.closed = True
            return
        self.used += size
        self.entries.append(entry)

    def lines(self) -> tuple[str, ...]:
        if self.partial and not self.closed:
            self._add(self.partial)
            self.partial = ""
        return tuple(self.entries)
