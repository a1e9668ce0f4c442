"""Policies against a minimal wrap_execute chain (the real registry is tested separately)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest

from dsh_codegen.registry._errors import TOOL_ABORTED, TOOL_TIMEOUT, HarnessError
from dsh_codegen.registry._execution import ToolDispatchExecution, ToolExecution, ToolExecutionToken
from dsh_codegen.registry._results import ToolExecutionResult, ToolFailure, ToolSuccess, failure_from_exception
from dsh_codegen.registry.cancel import AbortController, AbortError, AbortSignal
from dsh_codegen.registry.policies import ToolMetrics, metrics_policy, retry_policy, timeout_policy

from _loop_fakes import wait_or_abort

Body = Callable[[AbortSignal], Awaitable[Any]]


class Chain:
    """wrap_execute registration plus a dispatch that runs the wrappers, first registered outermost."""

    def __init__(self) -> None:
        self.wrappers: list[Any] = []
        self.body_signals: list[AbortSignal] = []

    def wrap_execute(self, fn: Any) -> Callable[[], None]:
        self.wrappers.append(fn)
        return lambda: self.wrappers.remove(fn) if fn in self.wrappers else None

    async def dispatch(
        self, body: Body, signal: AbortSignal, *, timeout_ms: float | None = None, name: str = "t"
    ) -> ToolExecutionResult:
        execution = ToolExecution(ToolExecutionToken(), "c1", name, {}, signal, None, None, None)
        dispatch = ToolDispatchExecution(execution, signal, SimpleNamespace(timeout_ms=timeout_ms))
        wrappers = list(self.wrappers)

        async def call(level: int) -> ToolExecutionResult:
            if level == len(wrappers):
                self.body_signals.append(dispatch.signal)
                try:
                    return ToolSuccess(await body(dispatch.signal), [{"type": "text", "text": "ok"}])
                except Exception as exc:
                    return failure_from_exception(exc)

            async def next(signal: AbortSignal | None = None) -> ToolExecutionResult:
                saved = dispatch.signal
                if signal is not None:
                    dispatch.signal = signal
                try:
                    return await call(level + 1)
                finally:
                    dispatch.signal = saved

            result: ToolExecutionResult = await wrappers[level](dispatch, next)
            return result

        return await call(0)


def run(coro: Awaitable[Any]) -> Any:
    async def main() -> Any:
        return await coro

    return asyncio.run(main())


def code(result: ToolExecutionResult) -> str | None:
    assert isinstance(result, ToolFailure)
    return None if result.error.info is None else result.error.info.code


def sleeping(seconds: float, value: Any = "done") -> Body:
    async def body(signal: AbortSignal) -> Any:
        await wait_or_abort(signal, seconds)
        return value

    return body


# -- timeout_policy --------------------------------------------------------------


def test_151_tools_without_budget_are_delegated_untouched() -> None:
    chain = Chain()
    timeout_policy(chain)
    caller = AbortController().signal
    result = run(chain.dispatch(sleeping(0), caller))
    assert isinstance(result, ToolSuccess)
    assert chain.body_signals == [caller]


def test_151_budgeted_tools_see_a_derived_signal() -> None:
    chain = Chain()
    timeout_policy(chain)
    caller = AbortController().signal
    result = run(chain.dispatch(sleeping(0), caller, timeout_ms=1000))
    assert isinstance(result, ToolSuccess)
    assert chain.body_signals[0] is not caller and not chain.body_signals[0].aborted


def test_152_own_deadline_replaces_the_result_with_tool_timeout() -> None:
    chain = Chain()
    timeout_policy(chain)
    result = run(chain.dispatch(sleeping(5), AbortController().signal, timeout_ms=10))
    assert code(result) == TOOL_TIMEOUT
    assert isinstance(result, ToolFailure)
    assert result.error.message == "tool call timed out after 10ms"
    assert result.error.info is not None and result.error.info.name == "ToolTimeoutError"
    assert result.content == [{"type": "text", "text": "Error: tool call timed out after 10ms"}]


def test_152_deadline_replaces_even_a_provider_abort_error_and_a_late_success() -> None:
    chain = Chain()
    timeout_policy(chain)

    async def provider(signal: AbortSignal) -> Any:
        await signal.wait()
        raise HarnessError("provider aborted", "PROVIDER_ABORT")

    async def ignores_signal(signal: AbortSignal) -> Any:
        await asyncio.sleep(0.03)
        return "late"

    assert code(run(chain.dispatch(provider, AbortController().signal, timeout_ms=5))) == TOOL_TIMEOUT
    assert code(run(chain.dispatch(ignores_signal, AbortController().signal, timeout_ms=5))) == TOOL_TIMEOUT


def test_152_caller_abort_first_is_preserved() -> None:
    chain = Chain()
    timeout_policy(chain)
    controller = AbortController()

    async def main() -> ToolExecutionResult:
        asyncio.get_running_loop().call_later(0.005, controller.abort)
        return await chain.dispatch(sleeping(5), controller.signal, timeout_ms=40)

    assert code(run(main())) == TOOL_ABORTED


def test_152_timeout_first_then_caller_abort_stays_tool_timeout() -> None:
    chain = Chain()
    timeout_policy(chain)
    controller = AbortController()

    async def slow_cleanup(signal: AbortSignal) -> Any:
        await signal.wait()
        await asyncio.sleep(0.02)  # the caller aborts while the body winds down
        raise AbortError("tool call aborted", TOOL_ABORTED)

    async def main() -> ToolExecutionResult:
        asyncio.get_running_loop().call_later(0.01, controller.abort)
        return await chain.dispatch(slow_cleanup, controller.signal, timeout_ms=2)

    assert code(run(main())) == TOOL_TIMEOUT


def test_default_timeout_applies_to_tools_without_one_and_tool_budget_wins() -> None:
    chain = Chain()
    timeout_policy(chain, default_timeout_ms=5)
    assert code(run(chain.dispatch(sleeping(5), AbortController().signal))) == TOOL_TIMEOUT
    assert isinstance(run(chain.dispatch(sleeping(0.02), AbortController().signal, timeout_ms=2000)), ToolSuccess)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), True, "10"])
def test_default_timeout_must_be_positive_finite(bad: Any) -> None:
    with pytest.raises(ValueError, match="^default_timeout_ms must be a positive finite number$"):
        timeout_policy(Chain(), default_timeout_ms=bad)


def test_policies_reject_targets_without_wrap_execute() -> None:
    for make in (lambda t: timeout_policy(t), lambda t: retry_policy(t), lambda t: metrics_policy(t, ToolMetrics())):
        with pytest.raises(TypeError, match="expected a ToolRegistry or ToolScope"):
            make(object())


def test_disposer_removes_the_timeout_wrapper() -> None:
    chain = Chain()
    dispose = timeout_policy(chain)
    assert len(chain.wrappers) == 1
    dispose()
    assert chain.wrappers == []


def test_no_timer_left_behind() -> None:
    chain = Chain()
    timeout_policy(chain)

    async def main() -> None:
        await chain.dispatch(sleeping(0), AbortController().signal, timeout_ms=60_000)
        loop = asyncio.get_running_loop()
        assert not [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]

    run(main())


# -- retry_policy -------------------------------------------------------------------


def flaky(failures: int, exc: Exception | None = None) -> tuple[Body, list[int]]:
    attempts: list[int] = []

    async def body(signal: AbortSignal) -> Any:
        attempts.append(len(attempts) + 1)
        if len(attempts) <= failures:
            raise exc or RuntimeError(f"flake {len(attempts)}")
        return f"ok after {len(attempts)}"

    return body, attempts


def test_retry_reruns_uncoded_failures_up_to_max_attempts() -> None:
    chain = Chain()
    retry_policy(chain, max_attempts=3)
    body, attempts = flaky(2)
    result = run(chain.dispatch(body, AbortController().signal))
    assert isinstance(result, ToolSuccess) and result.value == "ok after 3" and attempts == [1, 2, 3]
    body, attempts = flaky(5)
    result = run(chain.dispatch(body, AbortController().signal))
    assert isinstance(result, ToolFailure) and result.error.message == "flake 3" and attempts == [1, 2, 3]


def test_retry_skips_coded_deterministic_failures_and_other_tools() -> None:
    chain = Chain()
    retry_policy(chain, tools={"t"})
    body, attempts = flaky(1, HarnessError("bad args", "INVALID_ARGS"))
    assert code(run(chain.dispatch(body, AbortController().signal))) == "INVALID_ARGS"
    assert attempts == [1]
    body, attempts = flaky(1)
    assert isinstance(run(chain.dispatch(body, AbortController().signal, name="other")), ToolFailure)
    assert attempts == [1]


def test_retry_with_inner_timeout_gives_each_attempt_a_deadline() -> None:
    chain = Chain()
    retry_policy(chain, max_attempts=3)
    timeout_policy(chain)  # registered after: inside the retry
    attempts: list[int] = []

    async def slow_then_fast(signal: AbortSignal) -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            await wait_or_abort(signal, 5)
        return "second try"

    result = run(chain.dispatch(slow_then_fast, AbortController().signal, timeout_ms=10))
    assert isinstance(result, ToolSuccess) and result.value == "second try" and len(attempts) == 2


def test_retry_stops_when_the_signal_aborts_during_the_pause() -> None:
    chain = Chain()
    retry_policy(chain, max_attempts=5, delay_s=10)
    controller = AbortController()
    body, attempts = flaky(5)

    async def main() -> ToolExecutionResult:
        asyncio.get_running_loop().call_later(0.01, controller.abort)
        return await chain.dispatch(body, controller.signal)

    result = run(main())
    assert attempts == [1] and isinstance(result, ToolFailure)


def test_retry_pause_survives_a_double_cancellation_without_residue() -> None:
    chain = Chain()
    retry_policy(chain, max_attempts=5, delay_s=10)
    controller = AbortController()
    body, attempts = flaky(5)

    async def main() -> None:
        task = asyncio.ensure_future(chain.dispatch(body, controller.signal))
        await asyncio.sleep(0.01)  # the first attempt failed; the retry pause is running
        task.cancel()
        await asyncio.sleep(0)  # let the first cancellation reach the pause's clean-up
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
        assert not controller.signal._listeners  # the pause removed its listener

    run(main())
    assert attempts == [1]


def test_retry_predicate_that_raises_means_no_retry() -> None:
    chain = Chain()

    def broken(dispatch: Any, result: Any) -> bool:
        raise RuntimeError("predicate bug")

    retry_policy(chain, should_retry=broken)
    body, attempts = flaky(1)
    assert isinstance(run(chain.dispatch(body, AbortController().signal)), ToolFailure)
    assert attempts == [1]


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"max_attempts": 0}, "max_attempts must be a positive integer"),
        ({"max_attempts": True}, "max_attempts must be a positive integer"),
        ({"delay_s": -1}, "delay_s must be a non-negative finite number"),
        ({"backoff": 0.5}, "backoff must be a finite number >= 1"),
    ],
)
def test_retry_rejects_bad_settings(kwargs: dict[str, Any], text: str) -> None:
    with pytest.raises(ValueError, match=text):
        retry_policy(Chain(), **kwargs)


# -- metrics_policy -------------------------------------------------------------------


def test_metrics_counts_outcomes_and_time() -> None:
    chain = Chain()
    metrics = ToolMetrics()
    ticks = iter(range(100))
    metrics_policy(chain, metrics, clock=lambda: float(next(ticks)))
    run(chain.dispatch(sleeping(0), AbortController().signal, name="a"))
    body, _ = flaky(1)
    run(chain.dispatch(body, AbortController().signal, name="a"))
    body, _ = flaky(1, HarnessError("x", "SOME_CODE"))
    run(chain.dispatch(body, AbortController().signal, name="b"))
    stats = metrics.snapshot()
    assert stats["a"].calls == 2 and stats["a"].failures == 1 and stats["a"].codes == {"": 1}
    assert stats["a"].total_s == 2.0 and stats["a"].max_s == 1.0 and stats["a"].mean_s == 1.0
    assert stats["b"].codes == {"SOME_CODE": 1}
    stats["a"].codes["x"] = 9  # a snapshot is a copy
    assert "x" not in metrics.snapshot()["a"].codes
    metrics.reset()
    assert metrics.snapshot() == {}


def test_metrics_counts_a_cancelled_dispatch_and_reraises() -> None:
    chain = Chain()
    metrics = ToolMetrics()
    metrics_policy(chain, metrics)

    async def main() -> None:
        task = asyncio.create_task(chain.dispatch(sleeping(5), AbortController().signal))
        await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert metrics.snapshot()["t"].cancelled == 1


def test_metrics_requires_a_metrics_object() -> None:
    with pytest.raises(TypeError, match="metrics must be a ToolMetrics, got dict"):
        metrics_policy(Chain(), {})  # type: ignore[arg-type]
