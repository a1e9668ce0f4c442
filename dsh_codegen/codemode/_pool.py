"""The per-run sub-call pool of Code Mode's dispatch bridge.

One :class:`SubCallPool` serves one ``run_code`` run. The runtime calls
:meth:`SubCallPool.dispatch` once per binding call the program makes; the pool
numbers the call, snapshots its arguments and schedules it through the full
registry pipeline as a nested call of the outer ``run_code`` execution.

Scheduling (the native contract of ``execute_tool_calls``, applied to calls
that arrive one by one):

- calls start strictly in submission order;
- consecutive ``parallel`` calls (``registry.execution_mode``) overlap, at
  most ``max_parallel_sub_calls`` started and not yet committed;
- an ``exclusive`` call waits until nothing is in flight, runs alone, and no
  later call starts before it has committed; the head of the queue is
  classified again whenever the pool looks at it (so a commit that changes the
  registry is seen by the calls after it); a call submitted while nothing is
  in flight or queued starts at once and is classified only if it suspends
  (until then nothing can start beside it);
- a parallel call runs under a gate only when a stage the gate orders has
  work (pre-execute listeners, guards, post-execute, observers,
  ``finalize_content``); the pool orders its own commits in any case;
- pre-execute phases run in submission order, one at a time, and so do commits
  (post-execute, ``finalize_content``, ``on_result``, then the pool's own
  commit: the settle event, deferral of contexts, the program's future).

Settlement: the pool's run-scoped signal follows the outer call's signal; when
it aborts (the outer call is aborted) or the run settles, in-flight calls are
aborted, queued ones abandoned (their futures fail with docs/texts.md's
``run_code run is over (<reason>); <name> tool call abandoned``, no events),
and later ``dispatch`` calls are rejected. :meth:`SubCallPool.drain` waits for
every started call, commit included.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final

from dsh_codegen.codemode._texts import tool_expression
from dsh_codegen.json import JsonBudgetError, LosslessJsonError, dump_canonical_json, snapshot_json
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    UNSET,
    AbortController,
    AbortError,
    AbortSignal,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailure,
    ToolRegistry,
    ToolRunContext,
    ToolSuccess,
)
from dsh_codegen.registry._code_runtime import ToolCallError
from dsh_codegen.registry._errors import error_message
from dsh_codegen.registry.cancel import abort_signal
from dsh_codegen.registry._session_log import (
    CODE_DISPATCH_EVENT,
    CODE_DISPATCH_START_EVENT,
    SessionEvent,
    event_time,
)

if TYPE_CHECKING:
    from dsh_codegen.registry._session_log import SessionLog

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
    return (
        f"tool call budget spent: a run_code program may make at most {limit} tool calls;"
        f" {name} not dispatched"
    )


#: What stepping a sub-call's coroutine gives once it has returned (see ``SubCallPool._start``).
_FINISHED: Final = object()

# Sub-call states.
_QUEUED: Final = 0
_STARTED: Final = 1
_DONE: Final = 2
_ABANDONED: Final = 3


class _SubCall:
    """One accepted binding call: its input, the program's future, and its two turns.

    Turns: call ``n`` passes its *policy* turn once it can no longer run
    pre-execute (its policy context exited, or it reached its commit) and its
    *commit* turn after the pool's commit; call ``n + 1`` waits for call
    ``n``'s turns, one wait at a time (so one waiter future per call suffices).
    A turn already passed costs no wait, coroutine or future.
    """

    __slots__ = (
        "commit_passed",
        "future",
        "input",
        "name",
        "parallel",
        "policy_passed",
        "pool",
        "prev",
        "result",
        "signal",
        "state",
        "waiter",
    )

    def __init__(
        self,
        pool: SubCallPool,
        name: str,
        input: ToolExecutionInput,
        signal: AbortSignal,
        future: asyncio.Future[Any],
        prev: _SubCall | None,
    ) -> None:
        self.pool = pool
        self.name = name
        self.input = input
        self.signal = signal
        self.future = future
        self.prev = prev
        self.state = _QUEUED
        #: ``None`` until classified (a call started on an idle pool is classified only if it suspends).
        self.parallel: bool | None = None
        self.policy_passed = False
        self.commit_passed = False
        self.waiter: asyncio.Future[None] | None = None
        #: The pipeline's result, once the call has run (``None`` if it never produced one).
        self.result: ToolExecutionResult | None = None

    def future_done(self, future: asyncio.Future[Any]) -> None:
        # The program stopped waiting (it cancelled the binding's future): a
        # queued call is abandoned, a started one aborted (it still settles).
        # Only calls that did not finish inside dispatch() carry this callback.
        if future.cancelled():
            self.pool._cancelled_by_program(self)

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def pass_policy(self) -> None:
        if not self.policy_passed:
            self.policy_passed = True
            self._wake()

    def pass_turns(self) -> None:
        self.policy_passed = True
        self.commit_passed = True
        self._wake()
        self.prev = None

    async def _wait(self) -> None:
        """Wait for this call's next turn change. Cancellation: propagates; nothing is held."""
        waiter = self.waiter
        if waiter is None or waiter.done():
            waiter = self.waiter = asyncio.get_running_loop().create_future()
        await waiter

    def previous(self) -> _SubCall | None:
        """The nearest earlier call not abandoned while queued (an abandoned call never runs, so turns pass through it)."""
        prev = self.prev
        while prev is not None and prev.state == _ABANDONED:
            prev = prev.prev
        return prev

    async def acquire_policy_turn(self) -> None:
        """Wait until the previous sub-call is past pre-execute. Cancellation: propagates."""
        prev = self.previous()
        while prev is not None and not prev.policy_passed:
            await prev._wait()

    async def acquire_commit_turn(self) -> None:
        """Wait until the previous sub-call has committed (passing this call's policy turn first).

        Cancellation: propagates; nothing is held (the turns are passed when
        the call's task ends).
        """
        prev = self.previous()
        while prev is not None and not prev.policy_passed:
            await prev._wait()
        self.pass_policy()
        while prev is not None and not prev.commit_passed:
            await prev._wait()
        self.prev = None


class _SubGate:
    """The ``PipelineGate`` of a sub-call that may overlap others."""

    __slots__ = ("_call",)

    def __init__(self, call: _SubCall) -> None:
        self._call = call

    def policy(self) -> _PolicyTurn:
        return _PolicyTurn(self._call)

    def commit(self) -> _CommitTurn:
        return _CommitTurn(self._call)


class _PolicyTurn:
    __slots__ = ("_call",)

    def __init__(self, call: _SubCall) -> None:
        self._call = call

    async def __aenter__(self) -> None:
        """Wait for the policy turn. Cancellation: propagates; nothing is held."""
        await self._call.acquire_policy_turn()

    async def __aexit__(self, *exc_info: object) -> None:
        """Pass the policy turn on. Cancellation: never awaits."""
        self._call.pass_policy()


class _CommitTurn:
    __slots__ = ("_call",)

    def __init__(self, call: _SubCall) -> None:
        self._call = call

    async def __aenter__(self) -> None:
        """Wait for the commit turn. Cancellation: propagates; nothing is held."""
        await self._call.acquire_commit_turn()

    async def __aexit__(self, *exc_info: object) -> None:
        """Keep the turn: the pool passes it after its own commit. Cancellation: never awaits."""
        return None


class SubCallPool:
    """The scheduler and dispatch-event writer of one ``run_code`` run.

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
        self.max_parallel: int = registry.max_parallel_sub_calls
        self.max_calls: int = registry.max_sub_calls
        # Events go to the registry's session log, for calls made as an agent (docs/registry-loop.md, "Session log").
        log: SessionLog | None = getattr(registry, "log", None)
        self.log = log if self.agent is not None else None
        self.log_listeners: tuple[Callable[..., Any], ...] = (
            registry.dispatch_log_listeners(self.chain) if self.log is not None else ()
        )
        self.queue: deque[_SubCall] = deque()
        self.started: set[_SubCall] = set()
        #: Every call that started, in start order (what a failure's report lists).
        self.history: list[_SubCall] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self.in_flight = 0
        self.exclusive = False
        self.accepted = 0
        self.last: _SubCall | None = None
        #: Why the run is over (``None`` while it runs): the outer abort's message or ``run_code settled``.
        self.over: str | None = None
        self.failure: BaseException | None = None
        self._pumping = False
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
        if self.accepted >= self.max_calls:
            return budget_spent_message(self.max_calls, name)
        self.accepted += 1
        # The call's own signal: the pool aborts it when the run ends (see
        # _end) or when the program stops waiting for the call. (Not a signal
        # derived from the run's: the pipeline would poll that at every stage.)
        signal = AbortSignal()
        input = ToolExecutionInput(
            f"{self.parent_call_id}:code:{self.accepted}",
            name,
            frozen,
            signal,
            self.agent,
            self.token,
            self.root_call_id,
        )
        call = _SubCall(self, name, input, signal, future, self.last)
        self.last = call
        if self.queue or self._pumping:
            self.queue.append(call)
            self._pump()
        elif not self.in_flight:
            # The pool is idle: the call starts at once, unclassified (see _start).
            self._start(call, None)
        else:
            parallel = self._admission(call)
            if parallel is None:
                self.queue.append(call)
            else:
                self._start(call, parallel)
        if not future.done():
            # Queued, or started and suspended: the program may stop waiting.
            future.add_done_callback(call.future_done)
        return None

    def _cancelled_by_program(self, call: _SubCall) -> None:
        if call.state == _QUEUED:
            # Abandoned: it keeps its place in the chain of turns (see _SubCall._previous).
            call.state = _ABANDONED
            self._pump()
        elif call.state == _STARTED:
            abort_signal(call.signal, AbortError(_CANCELLED_BY_PROGRAM))

    # -- scheduling --------------------------------------------------------------------

    def _pump(self) -> None:
        """Start queued calls while the pool allows (synchronous; see the module docstring).

        Not re-entrant: a call that commits during its first step pumps again
        from inside :meth:`_start`; that inner pump returns at once and the
        outer loop, which re-reads the pool's state each round, goes on (so a
        long run of calls that finish synchronously does not nest).
        """
        if self._pumping:
            return
        self._pumping = True
        queue = self.queue
        try:
            while queue and self.over is None and self.failure is None:
                head = queue[0]
                if head.state != _QUEUED:
                    queue.popleft()
                    continue
                parallel = self._admission(head)
                if parallel is None:
                    return
                queue.popleft()
                self._start(head, parallel)
        finally:
            self._pumping = False

    def _admission(self, call: _SubCall) -> bool | None:
        """Whether ``call``, the next to start, may start now: ``None`` to wait, else whether it is ``parallel``."""
        if self.exclusive or self.in_flight >= self.max_parallel:
            return None
        parallel = self._classify(call)
        if not parallel and self.in_flight:
            return None
        return parallel

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

    def _start(self, call: _SubCall, parallel: bool | None) -> None:
        """Start ``call`` (``parallel``: its classification, or ``None`` on an idle pool).

        A call started on an idle pool runs alone whatever its class, so it
        is classified only if it suspends (before it first yields to the
        event loop; nothing but its own first step has run since it started):
        that is the first moment another call could be admitted beside it.
        """
        call.state = _STARTED
        call.parallel = parallel
        self.in_flight += 1
        self.started.add(call)
        self.history.append(call)
        if not parallel:
            self.exclusive = True
        # The first step runs here, synchronously (in a context of its own, as
        # a task's would be): a call that never suspends is committed, and its
        # future resolved, before dispatch() returns, without a task or an
        # event-loop turn. One that suspends goes on in a task from where it is.
        steps = self._run(call)
        context = contextvars.copy_context()
        # next(..., _FINISHED) steps the coroutine like send(None), but a
        # coroutine that returns (None) ends it without a StopIteration.
        yielded = context.run(next, steps.__await__(), _FINISHED)
        if yielded is _FINISHED:
            return
        task = self.loop.create_task(
            _resume(steps, yielded), name=f"dsh_codegen code sub-call {call.input.call_id}", context=context
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        if call.parallel is None:
            call.parallel = self._classify(call)
            if call.parallel:
                self.exclusive = False
                if self.queue:  # only a dispatch made from inside that first step
                    self._pump()

    async def _run(self, call: _SubCall) -> None:
        """Run one started sub-call through the pipeline, then commit it in submission order.

        Cancellation: the pool never cancels these tasks (it aborts the call's
        signal); an outside cancellation is recorded as the run's failure.
        """
        error: BaseException | None = None
        result: ToolExecutionResult | None = None
        try:
            if self.log is not None:
                if self.log_listeners:
                    await self._rewrite_and_append(self._start_event(call))
                else:
                    self._append(self._start_event(call))
            result = call.result = await self.registry.execute(call.input, gate=self._gate(call))
        except (Exception, asyncio.CancelledError) as exc:
            error = exc
        try:
            prev = call.prev
            if prev is None or prev.commit_passed:
                call.prev = None  # the turn is free: no coroutine, no wait
            else:
                await call.acquire_commit_turn()
            if error is None and result is not None:
                if self.log is not None:
                    if self.log_listeners:
                        await self._rewrite_and_append(self._settle_event(call, result))
                    else:
                        self._append(self._settle_event(call, result))
                self._commit(call, result)
        except (Exception, asyncio.CancelledError) as exc:
            if error is None:
                error = exc
        finally:
            call.state = _DONE
            call.policy_passed = call.commit_passed = True
            call.prev = None
            if call.waiter is not None:
                call._wake()
            self.started.discard(call)
            self.in_flight -= 1
            if call.parallel is not True:
                self.exclusive = False
            if error is not None:
                _fail(call.future, call.name, error_message(error))
                if self.failure is None:
                    self.failure = (
                        error
                        if isinstance(error, Exception)
                        else RuntimeError(f"code mode sub-call {call.input.call_id} was cancelled")
                    )
                    self._end("code mode bridge failed", AbortError("code mode bridge failed"))
            if self.queue:
                self._pump()

    def _gate(self, call: _SubCall) -> _SubGate | None:
        """The gate ``call`` runs under, decided just before its pipeline reads the registry.

        An exclusive call runs alone (every earlier call has committed and
        none starts before it commits): nothing to order, so no gate. A
        parallel or not yet classified call gets one only when a stage the
        gate wraps has work for it (a pre-execute listener or guard; a
        post-execute listener, observer or ``finalize_content``): the pipeline
        fixes those at entry, which follows at once. Without one the call has
        no pre-execute phase, so its policy turn passes now; its commit is
        still ordered by :meth:`_run`.
        """
        if call.parallel is False:
            return None
        tool, listeners, guarded, _ = self.registry.entry_view(call.name, self.registry.chain_for(self.agent))
        if (
            listeners.pre
            or listeners.post
            or listeners.observers
            or guarded
            or (tool is not None and tool.finalize_content is not None)
        ):
            return _SubGate(call)
        call.pass_policy()
        return None

    def _commit(self, call: _SubCall, result: ToolExecutionResult) -> None:
        """The pool's part of a commit (the commit turn held, the settle event logged): contexts, the future."""
        outer = self.outer
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
                        "meta": {"subCallId": call.input.call_id, "toolName": call.name},
                    }
                )
            if result.concludes_turn:
                outer.conclude_turn()
        future = call.future
        if future.done():
            return
        if self.over is not None:
            _fail(future, call.name, f"run_code run is over ({self.over}); {call.name} result discarded")
        elif isinstance(result, ToolFailure):
            _fail(future, call.name, result.error.message)
        else:
            future.set_result(result.value)

    # -- settlement --------------------------------------------------------------------

    def _outer_aborted(self, signal: AbortSignal) -> None:
        reason = signal.reason
        text = error_message(reason) if isinstance(reason, BaseException) else str(reason)
        self._end(text, reason)

    def _end(self, text: str, reason: object) -> None:
        """The run is over: no new calls, in-flight ones aborted, queued ones abandoned."""
        if self.over is None:
            self.over = text
        for call in list(self.started):
            abort_signal(call.signal, reason)
        self._controller.abort(reason)
        queue = self.queue
        while queue:
            call = queue.popleft()
            if call.state == _QUEUED:
                call.state = _ABANDONED
                _fail(
                    call.future,
                    call.name,
                    f"run_code run is over ({self.over}); {call.name} tool call abandoned",
                )

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
        cancelled = False
        while self.tasks:
            try:
                await asyncio.wait(list(self.tasks))
            except asyncio.CancelledError:
                cancelled = True
        return cancelled

    def report(self) -> list[str]:
        """One line per call that started, in order, saying how it ended (for a failed run's text).

        ``2. tools.write_note({"path":"a.txt"}): succeeded``. Past
        ``_REPORTED_CALLS`` calls, the first and the last halves are listed
        around a line counting the rest. Read it once the pool has drained.
        """
        calls = self.history
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
            lines.append(f"{number}. {tool_expression(call.name)}({arguments}): {_ending(call.result)}")
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


async def _resume(steps: Coroutine[Any, Any, None], yielded: object) -> None:
    """Go on with a sub-call whose first step ran outside this task (see ``SubCallPool._start``).

    Cancellation: a ``CancelledError`` thrown into the task is passed on to
    the sub-call, as if the task had run it from the start.
    """
    await _Resumed(steps, yielded)


class _Resumed:
    """Awaitable handing the task exactly what the suspended coroutine yields, and back."""

    __slots__ = ("_steps", "_yielded")

    def __init__(self, steps: Coroutine[Any, Any, None], yielded: object) -> None:
        self._steps = steps
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, None]:
        steps = self._steps
        yielded = self._yielded
        self._yielded = None
        while True:
            try:
                sent = yield yielded
            except BaseException as exc:  # thrown in by the task: the sub-call handles it
                try:
                    yielded = steps.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    yielded = steps.send(sent)
                except StopIteration:
                    return


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
