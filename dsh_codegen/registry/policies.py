"""Around-dispatch policies built on ``wrap_execute``.

- :func:`timeout_policy` enforces ``timeout_ms`` (guarantees
  151-152): the registry itself never enforces deadlines.
- :func:`retry_policy` and :func:`metrics_policy` are worked examples of
  wrappers (``docs/registry-loop.md`` walks through them).

Each function registers one wrapper on a registry or a scope (anything with
``wrap_execute``) and returns that registration's ``Disposer``. Wrappers run in
registration order, the first registered outermost: register the timeout
before the retry to bound all attempts together, after it to bound each.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

from dsh_codegen.registry._errors import (
    INVALID_ARGS,
    INVALID_TOOL_OUTPUT,
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    UNKNOWN_TOOL,
    ToolTimeoutError,
)
from dsh_codegen.registry._execution import ToolDispatchExecution
from dsh_codegen.registry._results import ToolExecutionResult, ToolFailure, failure_from_exception
from dsh_codegen.registry.cancel import AbortController, AbortSignal, fuse_signals

__all__ = [
    "DEFAULT_NON_RETRYABLE_CODES",
    "DispatchNext",
    "ToolMetrics",
    "ToolStats",
    "WrapTarget",
    "metrics_policy",
    "retry_policy",
    "timeout_policy",
]


class DispatchNext(Protocol):
    """The ``next`` a wrapper receives: runs the rest of the dispatch, returns a normalized result."""

    def __call__(self, signal: AbortSignal | None = None) -> Awaitable[ToolExecutionResult]: ...


#: A ``wrap_execute`` wrapper: ``fn(dispatch, next)``.
Wrapper = Callable[[ToolDispatchExecution, DispatchNext], Awaitable[ToolExecutionResult]]


class WrapTarget(Protocol):
    """A registry or scope: anything that registers around-dispatch wrappers."""

    def wrap_execute(self, fn: Any) -> Callable[[], object]: ...


def _check_target(target: object) -> WrapTarget:
    if not callable(getattr(target, "wrap_execute", None)):
        raise TypeError(f"expected a ToolRegistry or ToolScope (with wrap_execute), got {type(target).__name__}")
    return target  # type: ignore[return-value]


def _is_positive_finite(value: object) -> bool:
    return type(value) in (int, float) and 0 < value < math.inf  # type: ignore[operator]


# ---------------------------------------------------------------------------
# timeout


def timeout_policy(target: WrapTarget, default_timeout_ms: float | None = None) -> Callable[[], object]:
    """Enforce each tool's ``timeout_ms`` with a ``TOOL_TIMEOUT`` wrapper.

    Guarantees (151-152, docs/guarantees.md):

    - a call whose tool has no ``timeout_ms`` (and no ``default_timeout_ms``
      is given) is delegated untouched: ``next()`` with no signal, so the
      body sees the signal it would have seen without this policy;
    - a budgeted call runs with a derived signal that aborts when the
      current signal does or when the deadline passes; later phases
      (post-execute) see the caller's signal again, since the registry
      restores it after the wrapper;
    - if the deadline fires before the current signal aborted, the result
      is replaced (whatever it is, a provider's own abort error included) by
      ``Error: tool call timed out after <ms>ms`` with info
      ``{ToolTimeoutError, TOOL_TIMEOUT}``, keeping the replaced result's
      additional contexts; the registry preserves this failure even if the
      caller aborts afterwards;
    - if the caller's signal aborted first, the result is returned as it is
      (the registry turns a success into ``ABORTED``).

    The deadline is a timer handle on the running loop (no task); it is
    cancelled when the call settles. At the deadline the derived signal
    aborts, which cancels the body (its pending ``await`` raises
    ``CancelledError``; a thread is offered the signal); the wrapper then
    waits for the body to settle (it never abandons a started body).

    Raised errors: ``ValueError`` (``default_timeout_ms must be a positive
    finite number``) for a bad default; ``TypeError`` for a target without
    ``wrap_execute``.
    """
    wrap_target = _check_target(target)
    if default_timeout_ms is not None and not _is_positive_finite(default_timeout_ms):
        raise ValueError("default_timeout_ms must be a positive finite number")
    default = default_timeout_ms

    async def timeout_wrapper(dispatch: ToolDispatchExecution, next: DispatchNext) -> ToolExecutionResult:
        """Run the dispatch under the tool's deadline.

        Cancellation: a cancelled call propagates ``CancelledError`` from
        ``next()`` unchanged; the timer is cancelled and the derived signal
        detached on the way out.
        """
        definition = dispatch.definition
        budget = getattr(definition, "timeout_ms", None) if definition is not None else None
        if budget is None:
            budget = default
        if budget is None:
            return await next()
        current = dispatch.signal
        deadline = AbortController()
        timed_out = False

        def expire() -> None:
            nonlocal timed_out
            # Only a deadline that wins the race owns the outcome (behaviour 152).
            timed_out = not current.aborted
            deadline.abort(ToolTimeoutError(budget))

        derived, detach = fuse_signals([current, deadline.signal])
        handle = asyncio.get_running_loop().call_later(budget / 1000, expire)
        try:
            result = await next(signal=derived)
        finally:
            handle.cancel()
            detach()
        if timed_out:
            return failure_from_exception(ToolTimeoutError(budget), additional_contexts=result.additional_contexts)
        return result

    return wrap_target.wrap_execute(timeout_wrapper)


# ---------------------------------------------------------------------------
# retry (worked example)

#: Failure codes :func:`retry_policy` never retries by default: aborts, and
#: errors that would fail the same way again.
DEFAULT_NON_RETRYABLE_CODES: Final = frozenset(
    {TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH, INVALID_ARGS, UNKNOWN_TOOL, INVALID_TOOL_OUTPUT}
)


def _default_should_retry(dispatch: ToolDispatchExecution, result: ToolExecutionResult) -> bool:
    if not isinstance(result, ToolFailure):
        return False
    info = result.error.info
    return info is None or info.code not in DEFAULT_NON_RETRYABLE_CODES


def retry_policy(
    target: WrapTarget,
    *,
    max_attempts: int = 3,
    tools: Collection[str] | None = None,
    should_retry: Callable[[ToolDispatchExecution, ToolExecutionResult], bool] | None = None,
    delay_s: float = 0.0,
    backoff: float = 2.0,
) -> Callable[[], object]:
    """Re-run failed dispatches (a worked example of ``wrap_execute``).

    Only the tools named in ``tools`` are retried (``None``: every tool; a
    body that is not idempotent must not be retried). A dispatch is
    re-run while ``should_retry(dispatch, result)`` says so, up to
    ``max_attempts`` dispatches in all. The default retries a failure that
    has no code (the body raised) or a ``TOOL_TIMEOUT`` (when the timeout
    policy is registered after this one, so each attempt has its own
    deadline), and never an abort, ``INVALID_ARGS``, ``UNKNOWN_TOOL`` or
    ``INVALID_TOOL_OUTPUT``. Nothing is retried once the dispatch's signal
    has aborted. Between attempts it waits ``delay_s * backoff**(n-1)``
    seconds, cut short by an abort (the last result is then returned). An
    attempt that comes back ``ABORTED`` / ``ABORTED_BEFORE_DISPATCH`` because
    the signal aborted meanwhile is dropped in favour of the previous
    attempt's failure, which is more specific (the body did run).

    Guarantees: the returned result is the last attempt's, exactly as
    ``next()`` normalized it; a predicate that raises is treated as "do not
    retry" (the failure is kept, never an exception out of the pipeline).

    Raised errors: ``ValueError`` for ``max_attempts`` that is not a positive
    ``int`` or a negative/non-finite ``delay_s`` / ``backoff`` below 1;
    ``TypeError`` for a target without ``wrap_execute``.
    """
    wrap_target = _check_target(target)
    if type(max_attempts) is not int or max_attempts < 1:
        raise ValueError("max_attempts must be a positive integer")
    if type(delay_s) not in (int, float) or not 0 <= delay_s < math.inf:
        raise ValueError("delay_s must be a non-negative finite number")
    if type(backoff) not in (int, float) or not 1 <= backoff < math.inf:
        raise ValueError("backoff must be a finite number >= 1")
    names = None if tools is None else frozenset(tools)
    predicate = _default_should_retry if should_retry is None else should_retry

    async def retry_wrapper(dispatch: ToolDispatchExecution, next: DispatchNext) -> ToolExecutionResult:
        """Dispatch, and dispatch again while the predicate asks for it.

        Cancellation: ``CancelledError`` from ``next()`` or the pause
        propagates at once; no attempt is started after it.
        """
        if names is not None and dispatch.name not in names:
            return await next()
        attempt = 1
        result = await next()
        while attempt < max_attempts and not dispatch.signal.aborted and _wants_retry(predicate, dispatch, result):
            pause = delay_s * backoff ** (attempt - 1)
            if pause and await _sleep_unless_aborted(dispatch.signal, pause):
                break
            attempt += 1
            retried = await next()
            if dispatch.signal.aborted and _is_abort(retried):
                # Cancelled while retrying: the earlier attempt's failure says
                # more than "aborted", and the body did run (behaviour 73).
                break
            result = retried
        return result

    return wrap_target.wrap_execute(retry_wrapper)


def _is_abort(result: ToolExecutionResult) -> bool:
    info = result.error.info if isinstance(result, ToolFailure) else None
    return info is not None and info.code in (TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH)


def _wants_retry(
    predicate: Callable[[ToolDispatchExecution, ToolExecutionResult], bool],
    dispatch: ToolDispatchExecution,
    result: ToolExecutionResult,
) -> bool:
    try:
        return predicate(dispatch, result) is True
    except Exception:
        return False


async def _sleep_unless_aborted(signal: AbortSignal, seconds: float) -> bool:
    """Sleep ``seconds``; return ``True`` early if ``signal`` aborts first.

    Cancellation: only a plain future is awaited; the timer and the signal
    listener are removed synchronously in ``finally``, so a second
    cancellation cannot interrupt the clean-up and no task is left behind.
    """
    if signal.aborted:
        return True
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def wake(*_: object) -> None:
        if not woken.done():
            woken.set_result(None)

    remove = signal.add_listener(wake)
    timer = loop.call_later(seconds, wake)
    try:
        await woken
    finally:
        timer.cancel()
        remove()
    return signal.aborted


# ---------------------------------------------------------------------------
# metrics (worked example)


@dataclass(slots=True)
class ToolStats:
    """What :class:`ToolMetrics` knows about one tool.

    ``calls`` counts dispatches that settled (a result or a cancellation);
    ``failures`` counts failed results, by code in ``codes`` (``""`` for a
    failure without a code); ``cancelled`` counts dispatches whose awaiting
    task was cancelled; ``total_s`` / ``max_s`` are wall-clock seconds spent
    in ``next()``.
    """

    calls: int = 0
    failures: int = 0
    cancelled: int = 0
    codes: dict[str, int] = field(default_factory=dict)
    total_s: float = 0.0
    max_s: float = 0.0

    @property
    def mean_s(self) -> float:
        """Mean seconds per settled dispatch (``0.0`` before the first)."""
        return self.total_s / self.calls if self.calls else 0.0


class ToolMetrics:
    """Thread-safe per-tool counters filled by :func:`metrics_policy`."""

    __slots__ = ("_lock", "_stats")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats: dict[str, ToolStats] = {}

    def record(self, name: str, result: ToolExecutionResult | None, seconds: float) -> None:
        """Count one settled dispatch (``result=None``: its task was cancelled)."""
        with self._lock:
            stats = self._stats.get(name)
            if stats is None:
                stats = self._stats[name] = ToolStats()
            stats.calls += 1
            stats.total_s += seconds
            stats.max_s = max(stats.max_s, seconds)
            if result is None:
                stats.cancelled += 1
            elif isinstance(result, ToolFailure):
                stats.failures += 1
                code = "" if result.error.info is None else result.error.info.code
                stats.codes[code] = stats.codes.get(code, 0) + 1

    def snapshot(self) -> Mapping[str, ToolStats]:
        """Independent copies of the current counters, by tool name."""
        with self._lock:
            return {name: replace(stats, codes=dict(stats.codes)) for name, stats in self._stats.items()}

    def reset(self) -> None:
        """Forget every counter."""
        with self._lock:
            self._stats.clear()


def metrics_policy(
    target: WrapTarget, metrics: ToolMetrics, *, clock: Callable[[], float] = time.perf_counter
) -> Callable[[], object]:
    """Count dispatches, failures by code and time spent, per tool (a worked example).

    The wrapper observes only: it returns ``next()``'s result unchanged and
    never replaces the signal. Time is measured with ``clock`` around
    ``next()`` (the dispatch, body and output handling of wrappers registered
    after it).

    Raised errors: ``TypeError`` when ``metrics`` is not a :class:`ToolMetrics`
    or the target has no ``wrap_execute``.
    """
    wrap_target = _check_target(target)
    if not isinstance(metrics, ToolMetrics):
        raise TypeError(f"metrics must be a ToolMetrics, got {type(metrics).__name__}")

    async def metrics_wrapper(dispatch: ToolDispatchExecution, next: DispatchNext) -> ToolExecutionResult:
        """Time one dispatch and count its outcome.

        Cancellation: a cancelled dispatch is counted as ``cancelled`` and
        ``CancelledError`` propagates.
        """
        started = clock()
        try:
            result = await next()
        except asyncio.CancelledError:
            metrics.record(dispatch.name, None, clock() - started)
            raise
        metrics.record(dispatch.name, result, clock() - started)
        return result

    return wrap_target.wrap_execute(metrics_wrapper)
