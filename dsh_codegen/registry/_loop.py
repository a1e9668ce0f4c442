"""The agent-loop helper: run one model turn's tool calls through a registry.

:func:`execute_tool_calls` takes the calls a model emitted in one turn and
returns one result per call, in model order. Bodies of consecutive
``parallel`` calls overlap in a rolling pool of at most ``max_parallel``;
an ``exclusive`` call is a barrier (it starts when nothing else is in flight
and nothing starts until it has committed). The classification of the next
call is asked again after every commit, so a commit that changes the
registry is seen by the calls after it.

Ordering (CONTRACT.md behaviours 153-155): calls start in model order; the
pre-execute phase (waterfall, approval, guards) of each call runs after the
previous call's, and its commit (post-execute, ``finalize_content``,
``on_result``, then the ``tool/result`` event) after the previous call's
commit. The loop hands the registry a :class:`PipelineGate` per call that
may overlap others to get this; only bodies (and around-dispatch wrappers)
overlap. A call that runs alone (nothing in flight, nothing may start before
it commits) needs no ordering: it runs inline in the loop's own task, with
no gate and no task of its own (see :class:`_Batch`).

Session log: ``tool/call`` is appended when a call starts, ``tool/result``
when it commits; both carry the batch's ``batchId`` so
:func:`derive_messages` can rebuild the turn.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import uuid
from collections.abc import Callable, Coroutine, Generator, Hashable, Sequence
from dataclasses import dataclass
from types import CoroutineType, GeneratorType
from typing import TYPE_CHECKING, Any, Final, Protocol

from dsh_codegen._backend import load_compiled
from dsh_codegen.json import LosslessJsonError, is_json_value, parse_json
from dsh_codegen.registry._errors import TOOL_ABORTED_BEFORE_DISPATCH
from dsh_codegen.registry._execution import ToolExecutionInput
from dsh_codegen.registry._gate import PipelineGate
from dsh_codegen.registry._results import (
    UNSET,
    JsonValue,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    failure_from_exception,
)
from dsh_codegen.registry._session_log import (
    TOOL_CALL_EVENT,
    TOOL_RESULT_EVENT,
    SessionEvent,
    SessionLog,
    event_time,
)
from dsh_codegen.registry._shield import Yielded, classify_yield, one_iteration, wait_shielded
from dsh_codegen.registry.cancel import AbortError, AbortSignal

__all__ = [
    "ABORTED_BEFORE_DISPATCH_MESSAGE",
    "ToolCall",
    "ToolCallExecutor",
    "execute_tool_calls",
    "parse_call_arguments",
]

ABORTED_BEFORE_DISPATCH_MESSAGE: Final = "tool call aborted before dispatch"
#: The reason the loop aborts its started calls when it stops early.
_STOP_MESSAGE: Final = "tool call loop stopped"
#: What the loop steps to run a call inline: the call's coroutine, or the iterator of its ``__await__``.
_Steps = Coroutine[Any, Any, Any] | Generator[Any, None, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the model emitted it.

    ``arguments`` is the model's raw argument text (parsed by the loop, see
    :func:`parse_call_arguments`) or an already parsed JSON value.
    """

    call_id: str
    name: str
    arguments: str | JsonValue


class ToolCallExecutor(Protocol):
    """What :func:`execute_tool_calls` needs from a registry."""

    async def execute(self, input: ToolExecutionInput, *, gate: PipelineGate | None = None) -> ToolExecutionResult:
        """Run one call through the pipeline and return its final result.

        Cancellation: the loop never cancels the task awaiting this (it aborts
        ``input.signal`` instead); an implementation must settle the body
        before it returns.
        """
        ...

    def execution_mode(self, input: ToolExecutionInput) -> str:
        """``"parallel"`` or ``"exclusive"`` for one call."""
        ...


def parse_call_arguments(arguments: str | JsonValue) -> JsonValue:
    """The arguments a model-emitted call passes to the registry (CONTRACT.md behaviour 156).

    A ``str`` (a subclass is read as its plain value) is parsed by
    :func:`dsh_codegen.json.parse_json`, whose result is already frozen
    lossless JSON, so the registry's snapshot of it is free. The empty string
    (or only whitespace, in ``str.strip``'s sense) is ``{}``. Text that is not
    JSON (including ``NaN`` and ``Infinity``, which Python's parser would
    otherwise accept, trailing data, or an integer beyond
    ``sys.get_int_max_str_digits()``) is kept as the raw string, so the tool's
    own validation reports it. Nesting of any depth parses. Valid JSON that is
    not lossless (``-0.0``, a float overflowing to infinity) returns
    ``json.loads``'s plain value, so the registry reports it as not lossless
    (or, nested too deep for ``json.loads``, the raw string). Anything else
    is returned unchanged. Never raises.
    """
    if not isinstance(arguments, str):
        return arguments
    try:
        value: JsonValue = parse_json(arguments)
    except LosslessJsonError:
        try:
            lossy: JsonValue = json.loads(arguments)
        except RecursionError:
            return arguments
        return lossy
    except ValueError:  # json.JSONDecodeError, NaN/Infinity, an int beyond the digit limit
        if not arguments.strip():
            return {}
        return arguments
    return value


_c = load_compiled("_pipeline_c")
if _c is not None and not TYPE_CHECKING:
    # The compiled twin: text that parses cleanly skips this function's Python frame.
    parse_call_arguments = _c.install_parse_call_arguments(parse_call_arguments)


async def execute_tool_calls(
    registry: ToolCallExecutor,
    calls: Sequence[ToolCall],
    *,
    signal: AbortSignal,
    max_parallel: int = 10,
    log: SessionLog | None = None,
    agent: Hashable | None = None,
) -> list[ToolExecutionResult]:
    """Execute one turn's tool calls and return their results in model order.

    Guarantees:

    - exactly one result per call, at the call's index;
    - consecutive ``parallel`` calls overlap, at most ``max_parallel`` in flight
      (started and not yet committed); an ``exclusive`` call runs alone and
      later calls wait for its commit; classification is re-read after every
      commit;
    - pre-execute phases, commits and ``tool/result`` events follow model
      order whatever order bodies finish in;
    - when ``signal`` aborts: no call starts any more, the started calls are
      drained (they see the abort through their signal) and committed, then
      every call never started gets a synthetic ``tool/call`` event and an
      ``ABORTED_BEFORE_DISPATCH`` result (also logged). Synthetic results are
      made by the loop; the registry, and so ``on_result``, never sees them.

    Calls run with ``agent`` as their scope key and a signal that follows
    ``signal`` and the loop's own stop signal.

    Raised errors: ``ValueError`` for ``max_parallel`` that is not a positive
    ``int`` (``max_parallel must be a positive integer``) or duplicate call
    ids; ``TypeError`` for calls that are not :class:`ToolCall` with ``str``
    ids and names, or a ``signal`` that is not an :class:`AbortSignal`.
    Nothing runs then. An internal failure (the log or the registry raising,
    a result of the wrong type) aborts the started calls, waits for them to
    settle and re-raises, without fabricating results for the others.

    Cancellation: cancelling the awaiting task aborts every started call,
    waits for each to settle and commit (a second cancellation does not cut
    the wait short), then re-raises ``CancelledError``. No task outlives the
    call.
    """
    if type(max_parallel) is not int or max_parallel < 1:
        raise ValueError("max_parallel must be a positive integer")
    if not isinstance(signal, AbortSignal):
        raise TypeError(f"signal must be an AbortSignal, got {type(signal).__name__}")
    call_list = list(calls)
    seen: dict[str, int] = {}
    for index, call in enumerate(call_list):
        if not isinstance(call, ToolCall):
            raise TypeError(f"calls[{index}] must be a ToolCall, got {type(call).__name__}")
        if not isinstance(call.call_id, str):
            raise TypeError(f"calls[{index}].call_id must be a str, got {type(call.call_id).__name__}")
        if not isinstance(call.name, str):
            raise TypeError(f"calls[{index}].name must be a str, got {type(call.name).__name__}")
        first = seen.setdefault(call.call_id, index)
        if first != index:
            raise ValueError(f"calls[{index}].call_id {call.call_id!r} duplicates calls[{first}]")
    if not call_list:
        return []
    return await _Batch(registry, call_list, signal, max_parallel, log, agent).run()


class _Batch:
    """The scheduler state of one :func:`execute_tool_calls` run.

    Two ways to run a call:

    - **inline** (:meth:`_start_alone`): a call that runs alone (nothing in
      flight, and nothing may start before it commits: an ``exclusive`` call,
      the batch's last call, or any call when ``max_parallel == 1``) runs in the
      loop's own task, without a gate (there is nothing to order it against)
      and without a task or an event-loop turn of its own;
    - **as a task** (:meth:`_start`, :meth:`_run_call`): a call that may
      overlap others gets a task and a :class:`_CallGate`.

    Both end the same way: the result is committed and logged in model order,
    and a cancellation of the loop's task becomes the loop's stop abort for
    the running calls, which are waited for (see :meth:`run`).
    """

    def __init__(
        self,
        registry: ToolCallExecutor,
        calls: list[ToolCall],
        signal: AbortSignal,
        max_parallel: int,
        log: SessionLog | None,
        agent: Hashable | None,
    ) -> None:
        count = len(calls)
        self.registry = registry
        self.calls = calls
        self.arguments = [parse_call_arguments(call.arguments) for call in calls]
        self.signal = signal
        self.max_parallel = max_parallel
        self.log = log
        self.agent = agent
        # Only events carry the batch id: no log, no id.
        self.batch_id = "" if log is None else uuid.uuid4().hex
        # Every call's signal: it follows the caller's signal (see run()) and
        # the loop aborts it itself to stop its started calls (_stop()).
        self.call_signal = AbortSignal()
        self._unfollow: Callable[[], None] = _noop
        self.results: list[ToolExecutionResult | None] = [None] * count
        self.inputs: list[ToolExecutionInput | None] = [None] * count
        # The gates' turns, made when the first call starts as a task (calls
        # run inline never wait for a turn; see _start()).
        self.policy_done: _Turns | None = None
        self.commit_done: _Turns | None = None
        # Call tasks started and not yet finished, by call index.
        self.in_flight: dict[int, asyncio.Task[None]] = {}
        self.next_start = 0
        self.failure: BaseException | None = None
        # Made by the first wait (a batch whose calls all run inline never waits).
        self.wake: asyncio.Event | None = None

    # -- scheduling ----------------------------------------------------------

    async def run(self) -> list[ToolExecutionResult]:
        """Schedule every call and return the results in model order.

        Cancellation: a ``CancelledError`` (or an internal failure) aborts
        the calls' signal, drains every started call (surviving further
        cancellations) and is re-raised; see :func:`execute_tool_calls`. A
        call running inline turns the cancellation into the same abort and
        finishes first (see :class:`_InlineCall`).
        """
        self._follow_caller()
        try:
            try:
                await self._schedule()
            except BaseException as exc:
                self._stop()
                if await self._drain() and not isinstance(exc, asyncio.CancelledError):
                    raise asyncio.CancelledError() from exc
                raise
            return self._finish()
        finally:
            self._unfollow()

    def _follow_caller(self) -> None:
        """Make the calls' signal follow the caller's (``_unfollow()`` detaches it)."""
        caller = self.signal
        if caller.aborted:
            self.call_signal._abort(caller.reason)
            self._unfollow = _noop
        else:
            self._unfollow = caller.add_listener(self._caller_aborted)

    def _renew_call_signal(self) -> None:
        """Give the calls after a withdrawn cancellation a fresh signal (see :meth:`_finish_alone`)."""
        self._unfollow()
        self.call_signal = AbortSignal()
        self._follow_caller()

    def _caller_aborted(self, caller: AbortSignal) -> None:
        # The caller's signal listener: the calls follow it, the scheduler stops starting.
        self.call_signal._abort(caller.reason)
        self._wake()

    def _stop(self) -> None:
        """Abort every started call's signal (the loop is stopping early)."""
        self.call_signal._abort(AbortError(_STOP_MESSAGE))

    def _wake(self) -> None:
        wake = self.wake
        if wake is not None:
            wake.set()

    async def _schedule(self) -> None:
        """Start calls while the pool allows, then wait for the started ones to commit.

        A call that runs alone runs inline, here (:meth:`_start_alone`, and
        :meth:`_finish_alone` if it suspends); the others start as tasks.

        Cancellation: while waiting it only waits on the wake event, so a
        cancellation leaves the call tasks untouched (:meth:`run` drains
        them); an inline call absorbs the cancellation until it has committed,
        then re-raises it.
        """
        count = len(self.calls)
        in_flight = self.in_flight
        while self.next_start < count and not self.signal.aborted:
            self._raise_failure()
            if len(in_flight) >= self.max_parallel:
                # Nothing can start whatever the next call is; classify it
                # after the next commit, when the answer can matter.
                await self._wait_for_change()
                continue
            index = self.next_start
            input = self._input(index)
            parallel = self.registry.execution_mode(input) == "parallel"
            if not in_flight and (not parallel or index == count - 1 or self.max_parallel == 1):
                # Nothing runs and nothing may start before this call commits.
                inline = self._start_alone(index, input)
                if inline is not None:
                    await self._finish_alone(index, inline)
            elif parallel:
                self._start(index)
            else:
                await self._wait_for_change()
        while in_flight:
            self._raise_failure()
            await self._wait_for_change()
        self._raise_failure()

    async def _wait_for_change(self) -> None:
        """Wait for a commit, a failure or the caller's abort.

        Cancellation: propagates at once; nothing is held.
        """
        wake = self.wake
        if wake is None:
            wake = self.wake = asyncio.Event()
        wake.clear()
        await wake.wait()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def _input(self, index: int) -> ToolExecutionInput:
        # One input per call, built on first use (classification or start):
        # the registry reads it, never changes it (it is frozen).
        made = self.inputs[index]
        if made is None:
            call = self.calls[index]
            made = self.inputs[index] = ToolExecutionInput(
                call_id=call.call_id,
                name=call.name,
                arguments=self.arguments[index],
                signal=self.call_signal,
                agent=self.agent,
            )
        return made

    def _start(self, index: int) -> None:
        if self.log is not None:
            self.log.append(self._call_event(index))
        self.next_start = index + 1
        if self.policy_done is None:
            # The first call started as a task: every earlier call ran inline
            # and has committed, so their turns are passed already.
            count = len(self.calls)
            self.policy_done = _Turns(count, index)
            self.commit_done = _Turns(count, index)
        loop = asyncio.get_running_loop()
        self.in_flight[index] = loop.create_task(
            self._run_call(index), name=f"dsh_codegen tool call {self.calls[index].call_id}"
        )

    async def _drain(self) -> bool:
        """Wait until no call task is left; return whether a cancellation arrived meanwhile.

        Cancellation: absorbed and reported through the return value, so the
        drain always completes (the calls were aborted, so it is bounded by
        how fast bodies honour their signal).
        """
        cancelled = False
        while self.in_flight:
            try:
                await asyncio.wait(list(self.in_flight.values()))
            except asyncio.CancelledError:
                cancelled = True
        return cancelled

    def _finish(self) -> list[ToolExecutionResult]:
        # Only reached when the signal aborted or every call ran: the unstarted
        # tail (if any) gets its synthetic pair, in model order after the
        # commits of the started calls.
        for index in range(self.next_start, len(self.calls)):
            if self.log is not None:
                self.log.append(self._call_event(index))
            synthetic = failure_from_exception(AbortError(ABORTED_BEFORE_DISPATCH_MESSAGE, TOOL_ABORTED_BEFORE_DISPATCH))
            self.results[index] = synthetic
            if self.log is not None:
                self.log.append(self._result_event(index, synthetic))
        results: list[ToolExecutionResult] = []
        for result in self.results:
            assert result is not None  # every index was committed or synthesized above
            results.append(result)
        return results

    # -- one call -------------------------------------------------------------

    def _commit(self, index: int, result: object) -> None:
        """Record and log a call's result (its commit turn held). Raises ``TypeError`` for a non-result."""
        if type(result) is not ToolSuccess and type(result) is not ToolFailure:
            if not isinstance(result, (ToolSuccess, ToolFailure)):
                raise TypeError(f"registry.execute returned {type(result).__name__}, not a ToolExecutionResult")
        self.results[index] = result
        if self.log is not None:
            self.log.append(self._result_event(index, result))

    def _start_alone(self, index: int, input: ToolExecutionInput) -> _InlineCall | None:
        """Start call ``index`` inline in the loop's task; commit it if its first step finishes it.

        Only for a call that runs alone (see :meth:`_schedule`): every earlier
        call has committed and nothing starts before this one commits, so it
        gets no gate (``gate=None``: the registry's fastest path) and no task.
        Returns ``None`` once committed, or the :class:`_InlineCall` that
        :meth:`_finish_alone` drives when the call suspends. Errors (the
        registry or the log raising, a result of the wrong type) propagate as
        the loop's internal failure. Synchronous: no cancellation can land.
        """
        if self.log is not None:
            self.log.append(self._call_event(index))
        self.next_start = index + 1
        # The call runs in a copy of the loop's context, as a task would: what
        # it sets in context variables stays its own.
        context = contextvars.copy_context()
        finished = True
        try:
            awaitable = context.run(self.registry.execute, input, gate=None)
            steps = awaitable if type(awaitable) is CoroutineType else _await_steps(awaitable)
            try:
                yielded = context.run(steps.send, None)
            except StopIteration as stop:
                self._commit(index, stop.value)
                return None
            finished = False
            return _InlineCall(self, context, steps, yielded)
        finally:
            if finished:
                self._pass_turns(index)

    async def _finish_alone(self, index: int, inline: _InlineCall) -> None:
        """Drive a suspended inline call to its end and commit it.

        Errors: as :meth:`_start_alone`.

        Cancellation: a cancellation of the loop's task never reaches the
        call: the first one aborts the calls' signal (as :meth:`run` does for
        task calls), the call is driven until it has settled, committed and
        been logged, and then the first ``CancelledError`` is raised (also
        when the call or its commit failed meanwhile: cancellation wins, as it
        does for task calls). Unless the cancellation was withdrawn meanwhile
        (``Task.uncancel()``): code inside the call that cancels "its" task,
        which is the loop's (``asyncio.timeout()`` or a ``TaskGroup`` in a
        listener, wrapper or body), withdraws its request when it handles it.
        Then the call keeps its (aborted) result, nothing is raised, and the
        batch goes on with a fresh signal for the calls after it.
        """
        try:
            result = await inline
            self._commit(index, result)
        except BaseException as exc:
            cancelled = inline.cancel_exc
            if cancelled is not None and exc is not cancelled and not inline.withdrawn():
                raise cancelled from exc
            raise
        finally:
            self._pass_turns(index)
        if inline.cancel_exc is not None:
            if not inline.withdrawn():
                raise inline.cancel_exc
            self._renew_call_signal()

    def _pass_turns(self, index: int) -> None:
        # An inline call has committed: a later call run as a task may wait for its turns.
        if self.policy_done is not None and self.commit_done is not None:
            self.policy_done.pass_turn(index)
            self.commit_done.pass_turn(index)

    async def _run_call(self, index: int) -> None:
        """Execute one call as a task, then commit it in model order.

        Cancellation: the loop never cancels these tasks (it aborts their
        signal); an outside cancellation is recorded as an internal failure.
        """
        gate = _CallGate(self, index)
        error: BaseException | None = None
        result: object = None
        try:
            result = await self.registry.execute(self._input(index), gate=gate)
        except (Exception, asyncio.CancelledError) as exc:
            error = exc
        try:
            await gate.acquire_commit_turn()
            if error is None:
                self._commit(index, result)
        except (Exception, asyncio.CancelledError) as exc:
            if error is None:
                error = exc
        finally:
            gate.release()
            del self.in_flight[index]
            if error is not None and self.failure is None:
                self.failure = error
                self._stop()
            self._wake()

    # -- events ---------------------------------------------------------------

    def _call_event(self, index: int) -> SessionEvent:
        call = self.calls[index]
        event: SessionEvent = {
            "type": TOOL_CALL_EVENT,
            "batchId": self.batch_id,
            "callId": call.call_id,
            "name": call.name,
        }
        arguments = self.arguments[index]
        # Arguments a caller passed pre-parsed may be lossy; the registry
        # reports that as the call's result, so the event just leaves them out.
        if isinstance(call.arguments, str) or is_json_value(arguments):
            event["arguments"] = arguments
        if isinstance(self.agent, str):
            event["agent"] = self.agent
        event["time"] = event_time()
        return event

    def _result_event(self, index: int, result: ToolExecutionResult) -> SessionEvent:
        call = self.calls[index]
        event: SessionEvent = {
            "type": TOOL_RESULT_EVENT,
            "batchId": self.batch_id,
            "callId": call.call_id,
            "name": call.name,
            "isError": result.is_error,
            "content": result.content,
        }
        if isinstance(result, ToolFailure):
            error: SessionEvent = {"message": result.error.message}
            if result.error.info is not None:
                error["info"] = result.error.info.to_json()
            event["error"] = error
        if result.meta is not UNSET:
            event["meta"] = result.meta
        if result.additional_contexts:
            event["additionalContexts"] = list(result.additional_contexts)
        if isinstance(result, ToolSuccess) and result.concludes_turn:
            event["concludesTurn"] = True
        event["time"] = event_time()
        return event


# -- driving an inline call -------------------------------------------------------


def _noop() -> None:
    return None


def _await_steps(awaitable: object) -> _Steps:
    """What ``await awaitable`` would step, for an awaitable that is not a native coroutine.

    A generator-based coroutine (``types.coroutine``) is stepped itself;
    anything else through its ``__await__``. Raises ``TypeError`` (as
    ``await`` does) for an object that is not awaitable.
    """
    if isinstance(awaitable, GeneratorType) and awaitable.gi_code.co_flags & inspect.CO_ITERABLE_COROUTINE:
        return awaitable
    method = getattr(type(awaitable), "__await__", None)
    if method is None:
        raise TypeError(f"registry.execute returned {type(awaitable).__name__}, which cannot be awaited")
    steps: Generator[Any, None, Any] = method(awaitable)
    return steps


def _yield_error(kind: Yielded, yielded: object, loop: asyncio.AbstractEventLoop) -> RuntimeError:
    """The ``RuntimeError`` an ``asyncio.Task`` (the loop's) would throw back for ``yielded``.

    The texts are the Task's own, naming the task the call runs in.
    """
    task = asyncio.current_task(loop)
    if kind is Yielded.OTHER_LOOP:
        return RuntimeError(f"Task {task!r} got Future {yielded!r} attached to a different loop")
    if kind is Yielded.NOT_BLOCKING:
        return RuntimeError(f"yield was used instead of yield from in task {task!r} with {yielded!r}")
    if kind is Yielded.CURRENT_TASK:
        return RuntimeError(f"Task cannot await on itself: {task!r}")
    if kind is Yielded.GENERATOR:
        return RuntimeError(f"yield was used instead of yield from for generator in task {task!r} with {yielded!r}")
    return RuntimeError(f"Task got bad yield: {yielded!r}")


class _InlineCall:
    """Awaitable that drives a suspended inline call to its end, shielded from the loop task's cancellation.

    It steps the call in its own context copy and does with what the call
    yields what an ``asyncio.Task`` would (a bare ``yield`` or a done future
    gives up one loop iteration; a pending future is waited for; anything
    else gets the Task's ``RuntimeError`` thrown back after one iteration),
    except that a future is waited for through a fresh proxy future of its
    own: cancelling the loop's task cancels only the proxy, never a future
    the call (a listener, a wrapper, the registry) waits for. That keeps the
    guarantee a call task has: the loop never cancels a call.

    Cancellation: the first ``CancelledError`` arriving at one of its yields
    is kept in ``cancel_exc`` (with the task's ``cancelling()`` count then)
    and stops the batch (the calls' signal aborts with
    ``AbortError("tool call loop stopped")``); it keeps driving the call,
    absorbing further cancellations, until the call returns or raises, and
    then returns or raises as the call did. :meth:`_Batch._finish_alone`
    re-raises ``cancel_exc`` after the commit unless :meth:`withdrawn`.
    """

    __slots__ = ("batch", "cancel_exc", "cancelling", "context", "steps", "task", "yielded")

    def __init__(self, batch: _Batch, context: contextvars.Context, steps: _Steps, yielded: object) -> None:
        self.batch = batch
        self.context = context
        self.steps = steps
        self.yielded = yielded
        self.cancel_exc: asyncio.CancelledError | None = None
        # The loop's task and its count of cancellation requests when the first one arrived.
        self.task: asyncio.Task[Any] | None = None
        self.cancelling = 0

    def _cancelled(self, exc: asyncio.CancelledError) -> None:
        if self.cancel_exc is None:
            self.cancel_exc = exc
            task = asyncio.current_task()
            if task is not None:
                self.task = task
                self.cancelling = task.cancelling()
            self.batch._stop()

    def withdrawn(self) -> bool:
        """Whether the cancellation request that reached the call was withdrawn since (``Task.uncancel()``)."""
        task = self.task
        return task is not None and task.cancelling() < self.cancelling

    def __await__(self) -> Generator[Any, None, object]:
        steps = self.steps
        run = self.context.run
        yielded = self.yielded
        self.yielded = None
        loop = asyncio.get_running_loop()
        on_cancel = self._cancelled
        try:
            while True:
                error: RuntimeError | None = None
                if yielded is None:
                    yield from one_iteration(on_cancel)  # a bare yield (asyncio.sleep(0))
                else:
                    kind = classify_yield(yielded, loop)
                    if kind is Yielded.FUTURE:
                        future: asyncio.Future[Any] = yielded  # type: ignore[assignment]
                        if future.done():
                            # A Task resumes after a done future's callback: one loop iteration.
                            future._asyncio_future_blocking = False
                            yield from one_iteration(on_cancel)
                        yield from wait_shielded(future, loop, on_cancel)
                    else:
                        error = _yield_error(kind, yielded, loop)
                        yield from one_iteration(on_cancel)  # delivered after one iteration, as a Task does
                try:
                    if error is None:
                        yielded = run(steps.send, None)
                    else:
                        yielded = run(steps.throw, error)
                except StopIteration as stop:
                    return stop.value
        except GeneratorExit:
            # The loop's task was closed without finishing (its loop shut down).
            steps.close()
            raise


class _CallGate:
    """The :class:`PipelineGate` of one call run as a task: model-order turns for policy and commit.

    Call ``i`` passes its policy turn (``policy_done``) once it can no
    longer run pre-execute (its policy context exited, or it reached its
    commit), and only after call ``i-1`` did; it passes its commit turn
    (``commit_done``) after its ``tool/result`` event, and only after call
    ``i-1`` did. So a call that skips pre-execute never holds up the next
    call's pre-execute behind an earlier body. A turn already passed costs
    no wait (no coroutine, no future, no loop iteration).
    """

    __slots__ = ("_commit", "_commit_entered", "_holds_commit", "_index", "_policy", "_policy_entered")

    def __init__(self, batch: _Batch, index: int) -> None:
        assert batch.policy_done is not None and batch.commit_done is not None  # made by _start()
        self._policy = batch.policy_done
        self._commit = batch.commit_done
        self._index = index
        self._policy_entered = False
        self._commit_entered = False
        self._holds_commit = False

    def policy(self) -> _PolicyTurn:
        if self._policy_entered:
            raise RuntimeError("PipelineGate.policy() entered twice for one call")
        self._policy_entered = True
        return _PolicyTurn(self)

    def commit(self) -> _CommitTurn:
        if self._commit_entered:
            raise RuntimeError("PipelineGate.commit() entered twice for one call")
        self._commit_entered = True
        return _CommitTurn(self)

    async def acquire_policy_turn(self) -> None:
        """Wait until every earlier call is past pre-execute.

        Cancellation: a cancelled wait leaves nothing held.
        """
        index = self._index
        if index and not self._policy.passed(index - 1):
            await self._policy.wait(index - 1)

    def policy_finished(self) -> None:
        self._policy.pass_turn(self._index)

    async def acquire_commit_turn(self) -> None:
        """Wait until every earlier call has committed; then this call holds the commit turn.

        Cancellation: a cancelled wait leaves nothing held (``release`` still
        runs in the call task's ``finally``).
        """
        if self._holds_commit:
            return
        index = self._index
        policy = self._policy
        if index and not policy.passed(index - 1):
            await policy.wait(index - 1)
        policy.pass_turn(index)
        if index and not self._commit.passed(index - 1):
            await self._commit.wait(index - 1)
        self._holds_commit = True

    def release(self) -> None:
        """Pass both turns of this call (called once, when the call task ends)."""
        self._policy.pass_turn(self._index)
        self._commit.pass_turn(self._index)


class _Turns:
    """Which calls of a batch have passed one kind of turn (policy or commit).

    Only call ``i + 1`` ever waits for call ``i``'s turn, one wait at a time,
    so each wait has a future of its own and a cancelled wait leaves nothing
    behind.
    """

    __slots__ = ("_passed", "_waiters")

    def __init__(self, count: int, passed_before: int) -> None:
        # The calls before ``passed_before`` ran inline and committed already.
        self._passed = [True] * passed_before + [False] * (count - passed_before)
        self._waiters: dict[int, asyncio.Future[None]] = {}

    def passed(self, index: int) -> bool:
        return self._passed[index]

    def pass_turn(self, index: int) -> None:
        """Mark call ``index`` as past this turn (idempotent) and wake its waiter."""
        if not self._passed[index]:
            self._passed[index] = True
            waiter = self._waiters.pop(index, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    async def wait(self, index: int) -> None:
        """Return once call ``index`` has passed this turn.

        Cancellation: propagates; the wait's future is dropped.
        """
        while not self._passed[index]:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters[index] = waiter
            try:
                await waiter
            finally:
                if self._waiters.get(index) is waiter:
                    del self._waiters[index]


class _PolicyTurn:
    __slots__ = ("_gate",)

    def __init__(self, gate: _CallGate) -> None:
        self._gate = gate

    async def __aenter__(self) -> None:
        """Wait for the policy turn. Cancellation: propagates; nothing is held."""
        await self._gate.acquire_policy_turn()

    async def __aexit__(self, *exc_info: object) -> None:
        """Pass the policy turn on. Cancellation: never awaits."""
        self._gate.policy_finished()


class _CommitTurn:
    __slots__ = ("_gate",)

    def __init__(self, gate: _CallGate) -> None:
        self._gate = gate

    async def __aenter__(self) -> None:
        """Wait for the commit turn. Cancellation: propagates; nothing is held."""
        await self._gate.acquire_commit_turn()

    async def __aexit__(self, *exc_info: object) -> None:
        """Keep the turn. Cancellation: never awaits."""
        # The turn stays held until the loop has logged the result (release()).
        return None
