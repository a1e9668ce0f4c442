"""Where tool calls are ordered: the one scheduler of the loop helper and of Code Mode's sub-calls.

A :class:`CallScheduler` runs the calls submitted to it in their submission
order. What a call does is its own (a subclass of :class:`ScheduledCall`:
how it is classified, what it runs, how it commits, what a failure does); the
order is the scheduler's, with this contract:

- calls start in submission order;
- consecutive calls whose :meth:`~ScheduledCall.classify` says "parallel"
  overlap, at most ``max_parallel`` in flight (started and not yet
  committed, so a call waiting for its commit turn holds its slot);
- an exclusive call starts when nothing is in flight, and nothing starts
  until it has committed;
- the next call is classified only when it could start (no exclusive call
  in flight, fewer than ``max_parallel`` in flight), and again each time
  that is so again while it waits, i.e. after every commit; a commit that
  changes what ``classify`` answers is seen by the calls after it;
- the pre-execute phase of each call runs after the previous call's (its
  *policy turn*), and its commit after the previous call's commit (its
  *commit turn*), whatever order the bodies finish in; the call's pipeline
  takes the turns through the :class:`~dsh_codegen.registry.PipelineGate`
  that :meth:`ScheduledCall.gate` gives, and the scheduler takes the commit
  turn itself before :meth:`~ScheduledCall.commit` in any case;
- a call that runs alone (nothing in flight, and nothing may start before it
  commits: an exclusive call, every call when ``max_parallel`` is 1, the
  last call of a batch submitted whole) has nothing to be ordered against
  and gets no gate;
- a call withdrawn before it started never runs; the turns pass through it.

How a call starts: :meth:`~ScheduledCall.starting` runs, then the call's
run and commit go on in an asyncio task of its own (so ``asyncio.timeout``,
``wait_for`` and ``current_task`` work in it as anywhere), in a copy of the
context the call was submitted from, started by whoever made the call start
(the submitter, or the task of the call whose commit let it start). A
scheduler made with ``eager=True`` starts that task eagerly where asyncio
can (Python 3.12 and later): its first step runs at once, inside the task,
so a call that never suspends has committed when :meth:`CallScheduler.submit`
returns; on 3.11 it runs on the next loop iteration. A call submitted while
nothing is in flight or queued starts unclassified (it may start whatever
its class) and is classified only when another call could start beside it:
when one is submitted while it is in flight.

Cancellation: the scheduler never cancels a call's task. Whoever stops the
calls aborts their signals (the scheduler knows none), calls
:meth:`CallScheduler.stop` so that nothing starts any more, and awaits
:meth:`CallScheduler.drain`, which waits for every started call to commit
and absorbs cancellations. Cancelling a task awaiting
:meth:`CallScheduler.wait` stops the scheduler at once (no call starts
after that request, even before the task sees it) and propagates; the
calls in flight go on. A call task that someone else cancels ends that call
with the ``CancelledError`` as its error (:meth:`ScheduledCall.failed`).
"""

from __future__ import annotations

import abc
import asyncio
import contextvars
import enum
import sys
from collections import deque
from collections.abc import Awaitable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

if TYPE_CHECKING:
    from dsh_codegen.registry._gate import PipelineGate

__all__ = ["CallScheduler", "CallState", "ScheduledCall"]


class CallState(enum.Enum):
    """Where a :class:`ScheduledCall` is in its scheduler."""

    QUEUED = "submitted, not started"
    IN_FLIGHT = "started, not yet committed"
    DONE = "committed, or ended by a failure"
    WITHDRAWN = "withdrawn before it started: it never runs"


# The states by plain name: on Python 3.11 reading a member through its class is a descriptor call.
QUEUED: Final = CallState.QUEUED
IN_FLIGHT: Final = CallState.IN_FLIGHT
DONE: Final = CallState.DONE
WITHDRAWN: Final = CallState.WITHDRAWN


class ScheduledCall(abc.ABC):
    """One call's place in a :class:`CallScheduler`'s order; subclass it with the call's work.

    The scheduler calls the hooks below; each runs in the event loop's thread.
    A subclass with an ``__init__`` of its own calls ``ScheduledCall.__init__(self)``.

    ``outcome`` is what :meth:`run` returned, once it has (``None`` until
    then, and when it raised).
    """

    __slots__ = (
        "_alone",
        "_commit_passed",
        "_context",
        "_parallel",
        "_policy_passed",
        "_previous",
        "_state",
        "_task",
        "_waiter",
        "outcome",
    )

    def __init__(self) -> None:
        self._state = QUEUED
        #: ``None`` until classified (a call started on an idle scheduler is classified only if another call comes).
        self._parallel: bool | None = None
        self._alone = False
        #: The context the call will run in (a copy of its submitter's, made at submission), until it starts.
        self._context: contextvars.Context | None = None
        #: The nearest earlier call, while this call may still have to wait for its turns.
        self._previous: ScheduledCall | None = None
        self._policy_passed = False
        self._commit_passed = False
        #: The one future the next call waits on for this call's turns (only the next call waits).
        self._waiter: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self.outcome: Any = None

    @property
    def state(self) -> CallState:
        """Queued, in flight, done or withdrawn."""
        return self._state

    @property
    def started(self) -> bool:
        """Whether the call has started (it is in flight or done)."""
        return self._state is IN_FLIGHT or self._state is DONE

    # -- the hooks ----------------------------------------------------------------------------

    @abc.abstractmethod
    def classify(self) -> bool:
        """Whether this call may overlap other calls (``True``) or must run alone.

        Asked only when the call could start, possibly several times while it
        waits. A raising ``classify`` is this call's failure (:meth:`failed`);
        the call stays queued.
        """

    def starting(self) -> None:
        """The call starts now (before anything of it runs). Raising: the call never starts (:meth:`failed`)."""
        return None

    @abc.abstractmethod
    def run(self) -> Awaitable[Any]:
        """The call's work up to its commit: usually ``registry.execute(input, gate=self.gate())``.

        Called once, in the call's task; what it
        returns is awaited and its value handed to :meth:`commit`. An
        exception (also one raised by ``run`` itself) is the call's failure.
        """

    def needs_gate(self) -> bool:
        """Whether a stage the gate orders has work for this call (asked by :meth:`gate`; default ``True``).

        ``False`` means the call has no pre-execute phase and nothing to
        order in its pipeline's commit: it runs without a gate and its policy
        turn passes at once (the scheduler still orders its commit).
        """
        return True

    @abc.abstractmethod
    def commit(self, outcome: Any) -> Awaitable[None] | None:
        """Commit the call, its commit turn held (every earlier call has committed).

        Called once, only if :meth:`run` succeeded; may return an awaitable,
        which is awaited with the turn still held. Raising is the call's failure.
        """

    @abc.abstractmethod
    def failed(self, error: BaseException) -> None:
        """The call ended with ``error`` (raised by :meth:`starting`, :meth:`run` or :meth:`commit`, or a cancellation of its task), or :meth:`classify` raised ``error``.

        Called once per error, after the call has left the scheduler's
        accounting; whether anything else may start is the subclass's call
        (:meth:`CallScheduler.stop`).
        """

    def task_name(self) -> str:
        """The name of the call's task (for debugging)."""
        return f"dsh_codegen scheduled call {id(self):#x}"

    # -- what the call's work uses ------------------------------------------------------------

    def gate(self) -> PipelineGate | None:
        """The gate the call's pipeline runs under, decided when asked (just before the pipeline reads the registry).

        ``None`` when the call runs alone, or when :meth:`needs_gate` says no
        stage the gate orders has work (its policy turn passes now).
        """
        if self._alone:
            return None
        if not self.needs_gate():
            self._pass_policy()
            return None
        return _Gate(self)

    # -- turns --------------------------------------------------------------------------------

    def _previous_live(self) -> ScheduledCall | None:
        """The nearest earlier call not withdrawn (a withdrawn call never runs: the turns pass through it)."""
        previous = self._previous
        while previous is not None and previous._state is WITHDRAWN:
            previous = previous._previous
        return previous

    def _pass_policy(self) -> None:
        if not self._policy_passed:
            self._policy_passed = True
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def _turn_change(self) -> None:
        """Wait until one of this call's turns passes. Cancellation: propagates; nothing is held."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            waiter = self._waiter = asyncio.get_running_loop().create_future()
        await waiter

    async def _acquire_policy_turn(self) -> None:
        """Wait until every earlier call is past pre-execute. Cancellation: propagates; nothing is held."""
        previous = self._previous_live()
        while previous is not None and not previous._policy_passed:
            await previous._turn_change()

    async def _acquire_commit_turn(self) -> None:
        """Pass this call's policy turn (once every earlier call's has passed), then wait until every earlier call has committed.

        Holding it is idempotent. Cancellation: propagates; nothing is held
        (the turns pass when the call ends).
        """
        previous = self._previous_live()
        while previous is not None and not previous._policy_passed:
            await previous._turn_change()
        self._pass_policy()
        while previous is not None and not previous._commit_passed:
            await previous._turn_change()
        self._previous = None  # the turn is held: nothing left to wait for


class _Gate:
    """The :class:`PipelineGate` of a call that may overlap others: its two turns."""

    __slots__ = ("_call", "_commit_entered", "_policy_entered")

    def __init__(self, call: ScheduledCall) -> None:
        self._call = call
        self._policy_entered = False
        self._commit_entered = False

    def policy(self) -> _PolicyTurn:
        if self._policy_entered:
            raise RuntimeError("PipelineGate.policy() entered twice for one call")
        self._policy_entered = True
        return _PolicyTurn(self._call)

    def commit(self) -> _CommitTurn:
        if self._commit_entered:
            raise RuntimeError("PipelineGate.commit() entered twice for one call")
        self._commit_entered = True
        return _CommitTurn(self._call)


class _PolicyTurn:
    __slots__ = ("_call",)

    def __init__(self, call: ScheduledCall) -> None:
        self._call = call

    async def __aenter__(self) -> None:
        """Wait for the policy turn. Cancellation: propagates; nothing is held."""
        await self._call._acquire_policy_turn()

    async def __aexit__(self, *exc_info: object) -> None:
        """Pass the policy turn on. Cancellation: never awaits."""
        self._call._pass_policy()


class _CommitTurn:
    __slots__ = ("_call",)

    def __init__(self, call: ScheduledCall) -> None:
        self._call = call

    async def __aenter__(self) -> None:
        """Wait for the commit turn. Cancellation: propagates; nothing is held."""
        await self._call._acquire_commit_turn()

    async def __aexit__(self, *exc_info: object) -> None:
        """Keep the turn: the scheduler passes it after the call's own commit. Cancellation: never awaits."""
        return None


C = TypeVar("C", bound=ScheduledCall)


class CallScheduler(Generic[C]):
    """The order of one run's calls (see the module docstring for the contract).

    ``max_parallel``: at most this many calls in flight (a positive ``int``).
    ``eager``: start each call's task eagerly where asyncio can (see the
    module docstring). Must be made inside the running event loop.
    """

    __slots__ = (
        "_closed",
        "_eager",
        "_exclusive_in_flight",
        "_idle",
        "_in_flight",
        "_last",
        "_loop",
        "_max_parallel",
        "_pumping",
        "_queue",
        "_stopped",
        "_unclassified",
    )

    def __init__(self, max_parallel: int, *, eager: bool = False) -> None:
        if type(max_parallel) is not int or max_parallel < 1:
            raise ValueError(f"max_parallel must be a positive integer, got {max_parallel!r}")
        self._max_parallel = max_parallel
        self._eager = eager
        self._loop = asyncio.get_running_loop()
        self._queue: deque[C] = deque()
        self._in_flight: set[C] = set()
        #: An exclusive (or not yet classified) call is in flight: nothing else starts.
        self._exclusive_in_flight = False
        #: The call in flight that started unclassified on an idle scheduler, until it is classified.
        self._unclassified: C | None = None
        #: The last call submitted: the next one's previous call.
        self._last: C | None = None
        #: No call is submitted after the batch (:meth:`submit_batch`).
        self._closed = False
        self._stopped = False
        self._pumping = False
        #: The future :meth:`wait` awaits, resolved when nothing is in flight any more.
        self._idle: asyncio.Future[None] | None = None

    # -- submission ---------------------------------------------------------------------------

    def submit(self, call: C) -> None:
        """Append ``call`` to the order; it starts now if it may (see the module docstring for how).

        Raises ``RuntimeError`` after :meth:`stop` or :meth:`submit_batch`,
        or for a call submitted before.
        """
        self._enqueue(call)
        if not self._queue and not self._pumping and not self._in_flight:
            self._start(call, None)
        else:
            self._queue.append(call)
            self._pump()

    def submit_batch(self, calls: Iterable[C]) -> None:
        """Append ``calls`` to the order; nothing is submitted after them (so the last one may run alone).

        Raises ``RuntimeError`` as :meth:`submit` does.
        """
        queue = self._queue
        for call in calls:
            self._enqueue(call)
            queue.append(call)
        self._closed = True
        self._pump()

    def _enqueue(self, call: C) -> None:
        """Give ``call`` its place after the last call submitted, and its context."""
        if self._stopped or self._closed:
            raise RuntimeError("CallScheduler: no call can be submitted after stop() or submit_batch()")
        if call._context is not None or call._state is not QUEUED:
            raise RuntimeError("CallScheduler: a call can be submitted once")
        call._context = contextvars.copy_context()
        call._previous = self._last
        self._last = call

    def withdraw(self, call: C) -> bool:
        """Withdraw ``call`` if it has not started (it never runs); ``False`` if it has (or was withdrawn)."""
        if call._state is not QUEUED:
            return False
        call._state = WITHDRAWN
        self._pump()  # the call may have been the head that waited
        return True

    def stop(self) -> list[C]:
        """No call starts any more; return the queued calls, now withdrawn, in submission order.

        The calls in flight go on (abort them through their signals).
        """
        self._stopped = True
        withdrawn: list[C] = []
        queue = self._queue
        while queue:
            call = queue.popleft()
            if call._state is QUEUED:
                call._state = WITHDRAWN
                withdrawn.append(call)
        return withdrawn

    def in_flight(self) -> list[C]:
        """The calls started and not yet committed (in no particular order)."""
        return list(self._in_flight)

    # -- waiting ------------------------------------------------------------------------------

    async def wait(self) -> None:
        """Return once no call is in flight (after a batch: once every call has committed, or the rest were withdrawn).

        Cancellation: a cancellation request stops the scheduler at once (see
        the module docstring) and propagates; the calls in flight go on.
        """
        while self._in_flight:
            idle = self._idle
            if idle is None or idle.done():
                idle = self._idle = self._loop.create_future()
            await idle

    async def drain(self) -> bool:
        """Wait until every started call has committed; return whether a cancellation arrived meanwhile.

        Cancellation: absorbed and reported through the return value, so the
        drain always completes (bounded by how fast the calls, aborted by
        whoever stopped them, honour their signals).
        """
        cancelled = False
        while self._in_flight:
            try:
                await self.wait()
            except asyncio.CancelledError:
                cancelled = True
        return cancelled

    # -- admission ----------------------------------------------------------------------------

    def _pump(self) -> None:
        """Start queued calls while the order allows (synchronous).

        Not re-entrant: a call that commits during an eager start pumps again
        from inside :meth:`_start`; that inner pump returns at once and the
        outer loop, which re-reads the state each round, goes on (so a long
        run of calls that finish synchronously does not nest).
        """
        if self._pumping:
            return
        idle = self._idle
        if idle is not None and idle.cancelled():
            self.stop()  # the owner's wait() was cancelled: it is stopping
        self._pumping = True
        queue = self._queue
        try:
            while queue and not self._stopped:
                head = queue[0]
                if head._state is not QUEUED:
                    queue.popleft()
                    continue
                if self._unclassified is not None:
                    self._classify_unclassified()
                if self._exclusive_in_flight or len(self._in_flight) >= self._max_parallel:
                    return
                try:
                    parallel = head.classify()
                except Exception as exc:
                    head.failed(exc)
                    return
                if not parallel and self._in_flight:
                    return
                queue.popleft()
                self._start(head, bool(parallel))
        finally:
            self._pumping = False

    def _start(self, call: C, parallel: bool | None) -> None:
        """Start ``call`` (``parallel``: its class, or ``None`` for a call submitted to an idle scheduler)."""
        try:
            call.starting()
        except Exception as exc:
            call._state = WITHDRAWN
            call.failed(exc)
            return
        in_flight = self._in_flight
        call._state = IN_FLIGHT
        call._parallel = parallel
        call._alone = not in_flight and (
            parallel is False or self._max_parallel == 1 or (self._closed and not self._queue)
        )
        in_flight.add(call)
        if parallel is not True:
            self._exclusive_in_flight = True
        context = call._context
        assert context is not None  # set by _enqueue
        call._context = None  # held by the call's task from now on
        if parallel is None:
            self._unclassified = call
        task = _new_task(self._loop, self._run(call), context, eager=self._eager)
        if not task.done():
            task.set_name(call.task_name())
            call._task = task

    def _classify_unclassified(self) -> None:
        """Classify the call that started unclassified, now that another call could start beside it."""
        call = self._unclassified
        assert call is not None
        self._unclassified = None
        try:
            parallel = call.classify()
        except Exception as exc:
            call._parallel = False
            call.failed(exc)
            return
        call._parallel = bool(parallel)
        if parallel:
            self._exclusive_in_flight = False

    async def _run(self, call: C) -> None:
        """Run a started call, then commit it in submission order.

        Cancellation: the scheduler never cancels this task; a cancellation
        from elsewhere is the call's error (:meth:`ScheduledCall.failed`).
        """
        error: BaseException | None = None
        outcome: Any = None
        try:
            outcome = call.outcome = await call.run()
        except (Exception, asyncio.CancelledError) as exc:
            error = exc
        try:
            previous = call._previous
            if previous is not None and not previous._commit_passed:
                await call._acquire_commit_turn()
            if error is None:
                committing = call.commit(outcome)
                if committing is not None:
                    await committing
        except (Exception, asyncio.CancelledError) as exc:
            if error is None:
                error = exc
        finally:
            self._finished(call, error)

    def _finished(self, call: C, error: BaseException | None) -> None:
        """``call`` has committed (or failed): pass its turns, free its slot, start what may start now."""
        call._state = DONE
        call._policy_passed = call._commit_passed = True
        call._previous = None
        call._task = None
        if call._waiter is not None:
            call._wake()
        in_flight = self._in_flight
        in_flight.discard(call)
        if call._parallel is not True:
            self._exclusive_in_flight = False
            if self._unclassified is call:
                self._unclassified = None
        if error is not None:
            call.failed(error)
        if self._queue:
            self._pump()
        if not in_flight:
            idle = self._idle
            if idle is not None:
                self._idle = None
                if not idle.done():
                    idle.set_result(None)


def _new_task(
    loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, None], context: contextvars.Context, *, eager: bool
) -> asyncio.Task[None]:
    """A task running ``coroutine`` in ``context``; if ``eager``, started eagerly where asyncio can.

    An eager start (``asyncio.Task(..., eager_start=True)``, Python 3.12 and
    later) runs the first step now, inside the new task; on 3.11 the task
    starts on the next loop iteration.
    """
    if sys.version_info >= (3, 12) and eager:
        return asyncio.Task(coroutine, loop=loop, context=context, eager_start=True)
    return loop.create_task(coroutine, context=context)
