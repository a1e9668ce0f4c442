"""The per-run sub-call pool of Code Mode's dispatch bridge.

One :class:`SubCallPool` serves one ``run_code`` run. The runtime calls
:meth:`SubCallPool.dispatch` once per binding call the program makes; the pool
numbers the call, snapshots its arguments and schedules it through the full
registry pipeline as a nested call of the outer ``run_code`` execution.

Scheduling: the one scheduler of ordered calls,
:class:`dsh_codegen.registry.scheduler.CallScheduler` (the loop helper's too),
in its eager form: calls start in submission order, consecutive ``parallel``
calls (``registry.execution_mode``) overlap up to ``max_parallel_sub_calls``,
an ``exclusive`` call runs alone, pre-execute phases and commits keep
submission order, and each call runs in an asyncio task of its own, started
eagerly on Python 3.12 and later (its first step runs inside
:meth:`SubCallPool.dispatch`: a call that never suspends has committed, and
its future resolved, when ``dispatch`` returns). What is the pool's own: the numbering and snapshot of
each call, its classification (tools without a classifier are looked up once
per registry version), its gate only when a stage the gate orders has work
(pre-execute listeners, guards, post-execute, observers, ``finalize_content``),
the dispatch events, and the pool's part of each commit (the settle event,
deferral of contexts, the program's future).

Settlement: the pool's run-scoped signal follows the outer call's signal; when
it aborts (the outer call is aborted) or the run settles, in-flight calls are
aborted, queued ones abandoned (their futures fail with docs/texts.md's
``run_code run is over (<reason>); <name> tool call abandoned``, no events),
and later ``dispatch`` calls are rejected. :meth:`SubCallPool.drain` waits for
every started call, commit included.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final

from dsh_codegen.codemode._journal import RunJournal
from dsh_codegen.codemode._texts import tool_expression
from dsh_codegen.json import (
    JsonBudgetError,
    LosslessJsonError,
    dump_canonical_json,
    snapshot_json,
)
from dsh_codegen.registry import (
    CODE_DISPATCH_EVENT,
    CODE_DISPATCH_START_EVENT,
    RUN_CODE_NAME,
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    UNSET,
    AbortController,
    AbortError,
    AbortSignal,
    CallDeferred,
    SessionEvent,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailure,
    ToolRegistry,
    ToolRunContext,
    ToolSuccess,
    current_suspension_scope,
    error_message,
    event_time,
    suspension_scope,
)
from dsh_codegen.registry.cancel import abort_signal
from dsh_codegen.registry.code_runtime import CodeRunSuspended, SubCallSuspended, ToolCallError
from dsh_codegen.registry.scheduler import CallScheduler, CallState, ScheduledCall

if TYPE_CHECKING:
    from dsh_codegen.registry import SessionLog

__all__ = [
    "ARGUMENTS_NOT_LOSSLESS",
    "ARGUMENTS_TOO_LARGE",
    "CODE_MODE_CONTEXT_SOURCE",
    "SETTLED_REASON",
    "SubCallPool",
    "budget_spent_message",
]

_log = logging.getLogger("dsh_codegen")

#: docs/texts.md, "Inside a run_code program": arguments that are not lossless JSON.
ARGUMENTS_NOT_LOSSLESS: Final = (
    "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
)
#: The start of the rejection of arguments past ``snapshot_json``'s default ``max_nodes`` budget.
ARGUMENTS_TOO_LARGE: Final = "tool arguments are too large"
#: The reason a run is over once the program has finished (docs/texts.md, "Inside a run_code program": a call made after the run settled).
SETTLED_REASON: Final = "run_code settled"
#: The reason a run is over when a sub-call's approval was deferred (the run stops, to resume later).
SUSPENDED_REASON: Final = "run_code suspended: a tool call awaits approval"
#: The ``source`` of the additional context that carries a sub-call's images.
CODE_MODE_CONTEXT_SOURCE: Final = "tools-code-mode"
#: Why a started sub-call is aborted when the program stops waiting for it.
_CANCELLED_BY_PROGRAM: Final = "tool call cancelled by the run_code program"
#: How many started calls a failure's report lists (the first and the last halves), and how much of
#: each call's arguments and error message it quotes.
_REPORTED_CALLS: Final = 20
_REPORTED_ARGUMENTS: Final = 100
_REPORTED_MESSAGE: Final = 160


def budget_spent_message(limit: int, name: str) -> str:
    """The rejection of a binding call past the run's ``max_sub_calls``."""
    return f"tool call budget spent: a run_code program may make at most {limit} tool calls; {name} not dispatched"


class _SubCall(ScheduledCall):
    """One accepted binding call: its input, its own signal and the program's future.

    ``outcome`` (the scheduler's) is the pipeline's result once the call has
    run (``None`` if it never produced one): what a failure's report lists.
    """

    __slots__ = ("future", "input", "name", "number", "pool", "signal")

    def __init__(
        self,
        pool: SubCallPool,
        number: int,
        name: str,
        input: ToolExecutionInput,
        signal: AbortSignal,
        future: asyncio.Future[Any],
    ) -> None:
        ScheduledCall.__init__(self)
        self.pool = pool
        self.number = number
        self.name = name
        self.input = input
        self.signal = signal
        self.future = future

    def future_done(self, future: asyncio.Future[Any]) -> None:
        # The program stopped waiting (it cancelled the binding's future): a
        # queued call is abandoned, a started one aborted (it still settles).
        # Only calls that did not finish inside dispatch() carry this callback.
        if future.cancelled():
            self.pool._cancelled_by_program(self)

    def classify(self) -> bool:
        return self.pool._classify(self)

    def needs_gate(self) -> bool:
        """Whether a stage the gate orders has work: a pre-execute listener or guard; a post-execute listener, observer or ``finalize_content``.

        Asked just before the call's pipeline reads the registry (which fixes
        those at entry, at once). Without any, the call has no pre-execute
        phase and runs without a gate (the scheduler still orders its commit).
        """
        registry = self.pool.registry
        tool, listeners, guarded, _ = registry.entry_view(self.name, registry.chain_for(self.pool.agent))
        return bool(
            listeners.pre
            or listeners.post
            or listeners.observers
            or guarded
            or (tool is not None and tool.finalize_content is not None)
        )

    def run(self) -> Awaitable[ToolExecutionResult]:
        pool = self.pool
        announced = pool.journal.announced
        if pool.log is not None and self.number not in announced:
            announced.add(self.number)  # a resumed run does not log this call's start again
            if pool.log_listeners:
                return self._run_after_start_event()
            pool._append(pool._start_event(self))
        return pool.registry.execute(self.input, gate=self.gate())

    async def _run_after_start_event(self) -> ToolExecutionResult:
        pool = self.pool
        await pool._rewrite_and_append(pool._start_event(self))
        return await pool.registry.execute(self.input, gate=self.gate())

    def commit(self, outcome: ToolExecutionResult) -> Awaitable[None] | None:
        """The settle event, then the pool's part of the commit (:meth:`_deliver`)."""
        pool = self.pool
        if pool.log is not None:
            if pool.log_listeners:
                return self._commit_after_settle_event(outcome)
            pool._append(pool._settle_event(self, outcome))
        self._deliver(outcome)
        return None

    async def _commit_after_settle_event(self, result: ToolExecutionResult) -> None:
        pool = self.pool
        await pool._rewrite_and_append(pool._settle_event(self, result))
        self._deliver(result)

    def _deliver(self, result: ToolExecutionResult) -> None:
        """The pool's part of a commit (the commit turn held, the settle event logged): contexts, the future."""
        outer = self.pool.outer
        for context in result.additional_contexts:
            outer.defer_context(context)
        if type(result) is ToolSuccess:
            images = None
            for block in result.content:
                if block.get("type") == "image":
                    images = [block] if images is None else [*images, block]
            if images is not None:
                outer.defer_context(
                    {
                        "role": "user",
                        "content": images,
                        "source": CODE_MODE_CONTEXT_SOURCE,
                        "meta": {"subCallId": self.input.call_id, "toolName": self.name},
                    }
                )
            if result.concludes_turn:
                outer.conclude_turn()
        future = self.future
        over = self.pool.over
        if over is None:
            # What the program gets, kept so that a resumed run never runs this body again.
            outcome: dict[str, Any] = (
                {"error": result.error.message} if isinstance(result, ToolFailure) else {"value": result.value}
            )
            self.pool.journal.record(self.number, self.name, self.input.arguments, outcome)
            if self.pool.suspending_now:
                self.pool.loop.call_soon(self.pool._stop_if_idle)
        if future.done():
            return
        if over is not None:
            _fail(future, self.name, f"run_code run is over ({over}); {self.name} result discarded")
        elif isinstance(result, ToolFailure):
            _fail(future, self.name, result.error.message)
        else:
            future.set_result(result.value)

    def failed(self, error: BaseException) -> None:
        self.pool._failed(self, error)

    def task_name(self) -> str:
        return f"dsh_codegen code sub-call {self.input.call_id}"


class SubCallPool:
    """The sub-calls and dispatch events of one ``run_code`` run (their order is a :class:`CallScheduler`'s).

    ``registry`` runs the sub-calls; ``outer`` is the ``run_code`` body's run
    context (its token becomes every sub-call's ``parent``, its
    ``defer_context`` / ``conclude_turn`` receive what sub-calls forward).
    Must be made inside the running event loop.
    """

    def __init__(self, registry: ToolRegistry, outer: ToolRunContext) -> None:
        self.registry = registry
        self.outer = outer
        self.loop = asyncio.get_running_loop()
        self.agent: Hashable | None = outer.agent
        self.chain = registry.chain_for(outer.agent)
        self.parent_call_id = outer.call_id
        self.token = outer.token
        self.root_call_id = outer.root_call_id if outer.root_call_id is not None else outer.call_id
        self.max_calls: int = registry.max_sub_calls
        #: How many binding calls were numbered (submitted, or answered from the journal).
        self.count = 0
        # Whoever can suspend the outer call (its batch): then this pool can suspend its sub-calls.
        self.outer_scope = current_suspension_scope()
        state = None if self.outer_scope is None else self.outer_scope.resumed_state(outer.call_id)
        #: The finished sub-calls (a resumed run's, answered again as its program replays).
        self.journal = RunJournal() if state is None else RunJournal.from_state(state)
        #: Whether the runtime stops a suspended run by dumping its state (else it is stopped, and replayed).
        self.snapshots = getattr(registry.code_runtime, "snapshots", False) is True
        #: A run resumed from its runtime's snapshot: that state, and the numbers of the calls the
        #: runtime dispatches again first (the ones its program still waited for), in order.
        self.runtime_state: Any = None
        self.resume_numbers: deque[int] = deque()
        if state is not None and "runtime" in state:
            self.runtime_state = state["runtime"]
            self.resume_numbers = deque(state["resume"])
            self.count = state["count"]
        #: Every numbered dispatch's future, and its number.
        self.number_of: dict[asyncio.Future[Any], int] = {}
        #: Whether a sub-call's approval was deferred: nothing starts any more and the run stops once idle.
        self.suspending_now = False
        #: The deferred sub-calls by number: (sub-call id, tool, arguments, reason).
        self.deferred: dict[int, tuple[str, str, Any, str | None]] = {}
        #: Every numbered call left without an answer by the suspension (deferred, held, never started).
        self.waiting: dict[int, tuple[str, Any, asyncio.Future[Any]]] = {}
        #: Why a resumed run's program diverged from its journal, if it did.
        self.divergence: str | None = None
        # Events go to the registry's session log, for calls made as an agent (docs/registry-loop.md, "Session log").
        log: SessionLog | None = getattr(registry, "log", None)
        self.log = log if self.agent is not None else None
        self.log_listeners: tuple[Callable[..., Any], ...] = (
            registry.dispatch_log_listeners(self.chain) if self.log is not None else ()
        )
        self.scheduler: CallScheduler[_SubCall] = CallScheduler(registry.max_parallel_sub_calls, eager=True)
        #: Every accepted call, in submission order (numbered from 1; the started ones are what a failure's report lists).
        self.calls: list[_SubCall] = []
        #: Why the run is over (``None`` while it runs): the outer abort's message or ``run_code settled``.
        self.over: str | None = None
        self.failure: BaseException | None = None
        # Tools without a concurrency classifier, as of registry version _classified_version.
        self._unclassified: set[str] = set()
        self._classified_version = -1
        self._controller = AbortController()
        outer_signal = outer.signal
        self._unfollow: Callable[[], None] = outer_signal.add_listener(self._outer_aborted)
        if outer_signal.aborted:
            self._outer_aborted(outer_signal)

    @property
    def signal(self) -> AbortSignal:
        """The run-scoped signal: aborts with the outer call's signal, or when the run settles."""
        return self._controller.signal

    def tool_names(self) -> tuple[str, ...]:
        """The names the program's ``tools`` namespace binds: the visible tools, sorted, never ``run_code``."""
        return tuple(sorted(name for name in self.registry.view(self.chain) if name != RUN_CODE_NAME))

    # -- submission ------------------------------------------------------------------

    def dispatch(self, name: str, arguments: Any = UNSET) -> asyncio.Future[Any]:
        """Submit one binding call; return the future of its canonical value (see ``CodeRunRequest``).

        Never raises: a call that cannot be dispatched (the run is over, the
        arguments are not lossless JSON, the budget is spent, the name is not
        a tool name) gets a future already failed with :class:`ToolCallError`,
        and nothing is logged for it.
        """
        future: asyncio.Future[Any] = self.loop.create_future()
        try:
            rejection = self._submit(name, arguments, future)
        except Exception as exc:  # a defect in the pool: the program still gets an answer
            _log.warning("code mode: dispatch of %r failed", name, exc_info=True)
            rejection = error_message(exc)
        if rejection is not None:
            _fail(future, name if type(name) is str else repr(name), rejection)
        return future

    def _submit(self, name: object, arguments: object, future: asyncio.Future[Any]) -> str | None:
        if type(name) is not str:
            return "tool name must be a string"
        if self.over is not None:
            return f"run_code run is over ({self.over}); {name} not dispatched"
        if name == RUN_CODE_NAME:
            return f'unknown tool "{name}"'  # never bound: no recursion
        if arguments is UNSET:
            return ARGUMENTS_NOT_LOSSLESS
        # The walk inspects exact types only and runs no code of the value (a
        # Mapping whose items raise is simply not a dict), so it fails in two
        # ways only: not lossless, or more values than its budget allows.
        try:
            frozen = snapshot_json(arguments)
        except LosslessJsonError:
            return ARGUMENTS_NOT_LOSSLESS
        except JsonBudgetError as exc:
            return f"{ARGUMENTS_TOO_LARGE}: {exc}"
        if self.resume_numbers:
            number = self.resume_numbers.popleft()  # a call the resumed snapshot's program was waiting for
        else:
            if self.count >= self.max_calls:
                return budget_spent_message(self.max_calls, name)
            number = self.count = self.count + 1
        self.number_of[future] = number
        if self.suspending_now:
            # The run stops at its deferred call: this one is made again when it resumes.
            self.waiting[number] = (name, frozen, future)
            return None
        answered, diverged = self.journal.match(number, name, frozen)
        if diverged is not None:
            self.divergence = diverged
            self._end("run_code replay diverged", AbortError(diverged))
            return diverged
        if answered is not None:
            # A call the suspended run finished: the program gets what it got then, the pipeline is not entered.
            outcome = answered.outcome or {}
            if "value" in outcome:
                future.set_result(outcome["value"])
            else:
                _fail(future, name, outcome["error"])
            return None
        # The call's own signal: the pool aborts it when the run ends (see
        # _end) or when the program stops waiting for the call. (Not a signal
        # derived from the run's: the pipeline would poll that at every stage.)
        signal = AbortSignal()
        input = ToolExecutionInput(
            f"{self.parent_call_id}:code:{number}",
            name,
            frozen,
            signal,
            self.agent,
            self.token,
            self.root_call_id,
        )
        call = _SubCall(self, number, name, input, signal, future)
        self.calls.append(call)
        # The sub-calls' suspension scope is this pool, when the outer call's batch can suspend it.
        with suspension_scope(self if self.outer_scope is not None else None):
            self.scheduler.submit(call)
        if not future.done():
            # Queued, or started and suspended: the program may stop waiting.
            future.add_done_callback(call.future_done)
        return None

    def _cancelled_by_program(self, call: _SubCall) -> None:
        # A queued call is withdrawn (it never runs; the turns pass through it).
        if not self.scheduler.withdraw(call) and call.state is CallState.IN_FLIGHT:
            abort_signal(call.signal, AbortError(_CANCELLED_BY_PROGRAM))

    # -- what the scheduler asks of a sub-call ---------------------------------------------

    def _classify(self, call: _SubCall) -> bool:
        """Whether ``call`` is ``parallel`` (``registry.execution_mode``), remembering the tools that never are.

        A tool without ``is_concurrency_safe`` is ``exclusive`` whatever its
        arguments, so it is looked up once per registry version (every change
        of tools, masks, presentations or scopes bumps it) rather than
        classified again for each call.
        """
        registry = self.registry
        version = registry.version
        if version != self._classified_version:
            self._classified_version = version
            self._unclassified.clear()
        elif call.name in self._unclassified:
            return False
        try:
            parallel = registry.execution_mode(call.input) == "parallel"
        except Exception:
            return False
        if not parallel:
            definition = registry.get(call.name, self.agent)
            safe = definition.is_concurrency_safe if definition is not None else True
            if safe is None or safe is False:
                self._unclassified.add(call.name)
        return parallel

    # -- the suspension scope of the sub-calls (read by their policy stage) ------------------

    def decision(self, call_id: str) -> str | None:
        return None if self.outer_scope is None else self.outer_scope.decision(call_id)

    def suspending(self) -> bool:
        return self.suspending_now

    def deferring(self, call_id: str) -> None:
        self.suspending_now = True
        # The queued calls wait: the program makes them again when it resumes.
        for call in self.scheduler.stop():
            self.waiting[call.number] = (call.name, call.input.arguments, call.future)

    def resumed_state(self, call_id: str) -> Any:
        return None  # a sub-call is never a Code Mode run

    def _stop_if_idle(self) -> None:
        """Once nothing is in flight after a deferral, stop the run (the bridge then suspends the outer call).

        A runtime with snapshots is told through the waiting calls' futures
        (:class:`SubCallSuspended`) and dumps its program where it waits;
        any other is stopped through the run's signal.
        """
        if self.over is not None or self.scheduler.in_flight():
            return
        if not self.snapshots:
            self._end(SUSPENDED_REASON, AbortError(SUSPENDED_REASON))
            return
        for name, _, future in self.waiting.values():
            if not future.done():
                future.set_exception(SubCallSuspended(name, SUSPENDED_REASON))
                future.exception()

    def suspended(self, run: ToolRunContext, outcome: object) -> CallDeferred | None:
        """The outer call's suspension, once the run stopped at deferred sub-calls (``None`` if none was).

        With the runtime's :class:`CodeRunSuspended`, the state resumes from
        its snapshot; otherwise the program is replayed against the journal.
        """
        if not self.deferred:
            return None
        state = self.journal.state({n: (name, args) for n, (name, args, _) in self.waiting.items()})
        if isinstance(outcome, CodeRunSuspended):
            numbers = [self.number_of.get(future) for future in outcome.waiting]
            if None not in numbers:
                state.update({"runtime": outcome.state, "resume": numbers, "count": self.count})
        sub_calls = tuple(self.deferred[n] for n in sorted(self.deferred))
        return CallDeferred(RUN_CODE_NAME, run.call_id, None, sub_calls=sub_calls, state=state)

    def _failed(self, call: _SubCall, error: BaseException) -> None:
        """A sub-call ended with ``error``: its future fails with the message, and the first such error ends the run."""
        if isinstance(error, CallDeferred):
            # Suspended, not failed: the program waits for it until the run stops.
            if not error.held:
                self.deferred[call.number] = (call.input.call_id, call.name, call.input.arguments, error.reason)
            self.waiting[call.number] = (call.name, call.input.arguments, call.future)
            self.loop.call_soon(self._stop_if_idle)
            return
        _fail(call.future, call.name, error_message(error))
        if self.failure is None:
            self.failure = (
                error
                if isinstance(error, Exception)
                else RuntimeError(f"code mode sub-call {call.input.call_id} was cancelled")
            )
            self._end("code mode bridge failed", AbortError("code mode bridge failed"))

    # -- settlement --------------------------------------------------------------------

    def _outer_aborted(self, signal: AbortSignal) -> None:
        reason = signal.reason
        text = error_message(reason) if isinstance(reason, BaseException) else str(reason)
        self._end(text, reason)

    def _end(self, text: str, reason: object) -> None:
        """The run is over: no new calls, in-flight ones aborted, queued ones abandoned."""
        if self.over is None:
            self.over = text
        abandoned = self.scheduler.stop()
        for call in self.scheduler.in_flight():
            abort_signal(call.signal, reason)
        self._controller.abort(reason)
        for call in abandoned:
            _fail(call.future, call.name, f"run_code run is over ({self.over}); {call.name} tool call abandoned")

    def settle(self) -> None:
        """The program has finished (for any reason): end the run (see :meth:`_end`)."""
        self._unfollow()
        self._end(SETTLED_REASON, AbortError(SETTLED_REASON))

    async def drain(self) -> bool:
        """Wait until every started sub-call has committed; return whether a cancellation arrived meanwhile.

        Cancellation: absorbed and reported through the return value, so the
        drain always completes (the calls were aborted, so it is bounded by
        how fast their bodies honour their signal).
        """
        return await self.scheduler.drain()

    def report(self) -> list[str]:
        """One line per call that started, in order, saying how it ended (for a failed run's text).

        ``2. tools.write_note({"path":"a.txt"}): succeeded``. Past
        ``_REPORTED_CALLS`` calls, the first and the last halves are listed
        around a line counting the rest. Read it once the pool has drained.
        """
        # Calls start in submission order: the ones that started, in start order.
        calls = [call for call in self.calls if call.started]
        half = _REPORTED_CALLS // 2
        shown: list[_SubCall | None] = (
            list(calls) if len(calls) <= _REPORTED_CALLS else [*calls[:half], None, *calls[-half:]]
        )
        lines = []
        for call in shown:
            if call is None:
                lines.append(f"... {len(calls) - 2 * half} more ...")
                continue
            number = call.input.call_id.rsplit(":", 1)[-1]
            arguments = _clip(dump_canonical_json(call.input.arguments, sort_keys=False), _REPORTED_ARGUMENTS)
            lines.append(f"{number}. {tool_expression(call.name)}({arguments}): {_ending(call.outcome)}")
        return lines

    # -- events ------------------------------------------------------------------------

    def _start_event(self, call: _SubCall) -> SessionEvent:
        event: SessionEvent = {
            "type": CODE_DISPATCH_START_EVENT,
            "rootCallId": self.root_call_id,
            "parentCallId": self.parent_call_id,
            "subCallId": call.input.call_id,
            "name": call.name,
            "arguments": call.input.arguments,
        }
        if isinstance(self.agent, str):
            event["agent"] = self.agent
        event["time"] = event_time()
        return event

    def _settle_event(self, call: _SubCall, result: ToolExecutionResult) -> SessionEvent:
        event: SessionEvent = {
            "type": CODE_DISPATCH_EVENT,
            "rootCallId": self.root_call_id,
            "parentCallId": self.parent_call_id,
            "subCallId": call.input.call_id,
            "name": call.name,
            "arguments": call.input.arguments,
            "isError": result.is_error,
            "content": result.content,
        }
        if isinstance(self.agent, str):
            event["agent"] = self.agent
        event["time"] = event_time()
        return event

    async def _rewrite_and_append(self, event: SessionEvent) -> None:
        """Run the ``on_code_dispatch_log`` waterfall over ``event`` and append the outcome.

        A listener that raises, or returns something other than a mapping of
        the same event ``type``, is logged at WARNING and skipped (its input
        goes on).

        Cancellation: propagates from an async listener.
        """
        for listener in self.log_listeners:
            try:
                out = listener(event)
                if inspect.isawaitable(out):
                    out = await out
            except Exception:
                _log.warning("on_code_dispatch_log listener %r raised", listener, exc_info=True)
                continue
            if out is None:
                continue
            if not isinstance(out, Mapping) or out.get("type") != event["type"]:
                _log.warning(
                    "on_code_dispatch_log listener %r returned %s, not a %s event",
                    listener,
                    type(out).__name__,
                    event["type"],
                )
                continue
            event = dict(out)
        self._append(event)

    def _append(self, event: SessionEvent) -> None:
        """Append ``event``; a log whose ``append`` raises is logged at WARNING (the run goes on)."""
        log = self.log
        if log is not None:
            try:
                log.append(event)
            except Exception:
                _log.warning("code mode: the session log rejected a %s event", event["type"], exc_info=True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ending(result: ToolExecutionResult | None) -> str:
    """How a started call ended, in a failed run's report."""
    if result is None:
        return "did not finish (the bridge failed)"
    if isinstance(result, ToolSuccess):
        return "succeeded"
    info = result.error.info
    code = info.code if info is not None else None
    if code == TOOL_ABORTED_BEFORE_DISPATCH:
        return "aborted before its tool ran"
    if code == TOOL_ABORTED:
        return "aborted while it ran (it may have done part of its work)"
    message = result.error.message.strip().splitlines()
    return "failed: " + _clip(message[0] if message else "", _REPORTED_MESSAGE)


def _fail(future: asyncio.Future[Any], name: str, message: str) -> None:
    """Fail the program's future with ``ToolCallError(name, message)`` (unless it is done already)."""
    if not future.done():
        future.set_exception(ToolCallError(name, message))
        # The runtime owns the program-facing side; an unread failure (a run
        # that is over) is not an asyncio "exception never retrieved".
        future.exception()
