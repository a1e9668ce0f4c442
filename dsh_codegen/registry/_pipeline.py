"""The execution pipeline: one plain async function over a call and a listener snapshot.

:func:`run_pipeline` runs the stages below, declared here once, in call order
(``PIPELINE_STAGES`` lists them by name). The registry holds state; this
module holds order. Each stage returns a normalized, frozen result or
``None`` ("continue"); every result is normalized exactly once, where it is
made.

1. :func:`create_execution`   read the input once, mint the token, snapshot ``finalize_content`` and the arguments
2. :func:`entry_outcome`      argument failure, pre-aborted entry, Code Mode collapse (all skip post-execute)
3. :func:`run_policy`         pre-execute waterfall, approval, guards, cancellation recheck (inside ``gate.policy()``)
4. :func:`run_dispatch`       around-dispatch wrappers around the body and the output normalization
5. :func:`run_post_execute`   post-execute waterfall (accept / block)          -- the rest inside ``gate.commit()``
6. :func:`settle_cancellation` caller cancellation replaces a success (``ABORTED`` / ``ABORTED_BEFORE_DISPATCH``)
7. :func:`run_finalize`       ``finalize_content`` exactly once, then re-materialize the content
8. :func:`notify_result`      ``on_result`` observers (failures logged), then return the same object

This module is the specification and the pure-Python twin. When the compiled
twin is selected, ``dsh_codegen._pipeline_c`` (``_ext/_pipeline_c.pyx``)
replaces the per-call functions at the end of this module and calls back
into the helpers here for every uncommon outcome (see docs/registry.md,
"The compiled twin of the pipeline").
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import types
from collections.abc import Awaitable, Coroutine, Generator, Hashable
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final, NoReturn

from dsh_codegen._backend import load_compiled
from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, LosslessJsonError, snapshot_json
from dsh_codegen.registry._approval import ApprovalRequest
from dsh_codegen.registry._errors import (
    RUN_CODE_NAME,
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    ToolNotFoundError,
    ToolOutputError,
    error_message,
)
from dsh_codegen.registry._execution import (
    ToolDispatchExecution,
    ToolExecutionInput,
    ToolExecution,
    ToolExecutionToken,
    ToolRunContext,
)
from dsh_codegen.registry._materialize import (
    ARGUMENTS_NOT_LOSSLESS,
    RESULT_NOT_LOSSLESS,
    ContentShapeError,
    check_content,
    snapshot_contexts,
)
from dsh_codegen.registry._results import (
    UNSET,
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
    ToolError,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    error_content,
    failure_from_exception,
    new_success,
)
from dsh_codegen.registry._shield import Yielded, classify_yield, one_iteration, wait_shielded
from dsh_codegen.registry.cancel import AbortError, AbortSignal
from dsh_codegen.schema import ToolArgsError

if TYPE_CHECKING:
    from dsh_codegen.registry._definitions import CompiledTool
    from dsh_codegen.registry._gate import PipelineGate
    from dsh_codegen.registry._registry import (
        ListenerSnapshot,
        ToolRegistry,
        ToolScope,
        _Listener,
    )

__all__ = ["PIPELINE_STAGES", "run_pipeline"]

_log = logging.getLogger("dsh_codegen")

PIPELINE_STAGES: Final = (
    "create_execution",
    "entry_outcome",
    "run_policy",
    "run_dispatch",
    "run_post_execute",
    "settle_cancellation",
    "run_finalize",
    "notify_result",
)

_tuple_new: Final = tuple.__new__
ALLOW: Final = Allow()
_PLAIN_RESULTS: Final = frozenset(
    {
        type(None),
        str,
        int,
        float,
        bool,
        dict,
        list,
        tuple,
        Allow,
        Deny,
        Ask,
        Accept,
        Block,
        ToolSuccess,
        ToolFailure,
    }
)
#: What snapshotting a call's arguments may raise for lossy arguments.
ARGUMENT_SNAPSHOT_ERRORS: Final = (LosslessJsonError, RecursionError, TypeError, ValueError)
_ABORTED_BEFORE_DISPATCH_MESSAGE: Final = "tool call aborted before dispatch"
_ABORTED_MESSAGE: Final = "tool call aborted"
_BLOCK_DEFAULT: Final = "tool result blocked by post-execute policy"
_PRE_NEXT_TWICE: Final = "tools/pre-execute: next() was already called"
_POST_NEXT_TWICE: Final = "tools/post-execute: next() was already called"
_BOTH_REPLACED: Final = "tools/post-execute accept decision cannot replace both value and content"
_FAILED_VALUE: Final = "tools/post-execute cannot replace the value of a failed result"


class _Call:
    """The mutable state of one call while the pipeline runs it."""

    value: Any  # the body's return value (set by _body_steps, read right after)

    __slots__ = (
        "cancel_exc",
        "chain",
        "compiled",
        "execution",
        "finalize",
        "listeners",
        "produced",
        "registry",
        "run",
        "settled",
        "value",
        "version",
    )

    def __init__(
        self,
        registry: ToolRegistry,
        execution: ToolExecution,
        chain: tuple[ToolScope, ...],
        compiled: CompiledTool | None,
    ) -> None:
        self.registry = registry
        self.execution = execution
        self.chain = chain
        # The tool resolved at entry, reused while the registry is unchanged.
        self.compiled = compiled
        self.version = registry._version
        self.finalize = None if compiled is None else compiled.finalize_content
        # ``listeners`` is set by run_pipeline before any stage reads it.
        self.listeners: ListenerSnapshot | None
        # The run context of the latest body invocation (its deferred contexts survive
        # cancellation); ``None`` until a body starts, so it also says whether one started.
        # Its ``signal`` is the body's fused signal (aborted if the awaiting task is cancelled).
        self.run: ToolRunContext | None = None
        # Results produced by ``next()`` for wrappers: returning one of them is not "authoring".
        self.produced: list[ToolExecutionResult] | None = None
        # The CancelledError that reached a suspended body's trampoline (the awaiting task was
        # cancelled), and the outcome that body settled to afterwards.
        self.cancel_exc: asyncio.CancelledError | None = None
        self.settled: ToolExecutionResult | None = None
        # ``value`` (the body's return value) is written by _body_steps before it is read.


def _is_awaitable(value: object) -> bool:
    # Fast path for the two common cases before the general protocol check.
    kind = type(value)
    if kind is CoroutineType:
        return True
    if kind in _PLAIN_RESULTS:
        return False
    return inspect.isawaitable(value)


async def _maybe_await(value: Any) -> Any:
    # Listeners may be sync or async; only an awaitable result is awaited.
    if _is_awaitable(value):
        return await value
    return value


def _coded_failure(message: str, name: str, code: str, contexts: Any = ()) -> ToolFailure:
    return ToolFailure(
        ToolError(message, ToolErrorInfo(name, code)),
        error_content(message),
        UNSET,
        tuple(contexts),
    )


def _plain_failure(message: str, contexts: Any = ()) -> ToolFailure:
    return ToolFailure(ToolError(message), error_content(message), UNSET, tuple(contexts))


def aborted_before_dispatch(contexts: Any = ()) -> ToolFailure:
    """The exact ``ABORTED_BEFORE_DISPATCH`` result (CONTRACT.md §3.3)."""
    return _coded_failure(
        _ABORTED_BEFORE_DISPATCH_MESSAGE, "AbortError", TOOL_ABORTED_BEFORE_DISPATCH, contexts
    )


def aborted(contexts: Any = ()) -> ToolFailure:
    """The exact ``ABORTED`` result (CONTRACT.md §3.3)."""
    return _coded_failure(_ABORTED_MESSAGE, "AbortError", TOOL_ABORTED, contexts)


def _not_found(exc: ToolNotFoundError, contexts: Any = ()) -> ToolFailure:
    return failure_from_exception(exc, additional_contexts=contexts)


# --- 1. create_execution -------------------------------------------------------------


def create_execution(
    registry: ToolRegistry, input: ToolExecutionInput
) -> tuple[_Call, BaseException | None]:
    """Read every input field exactly once, mint the token and snapshot the arguments.

    Returns the call and the argument snapshot error (or ``None``). ``finalize_content`` is taken from the tool the calling scope
    resolves now, so it still applies if the tool is disposed mid-pipeline.
    Raises ``TypeError`` only for a malformed input (not a call description).
    Cancellation: synchronous; nothing to cancel.
    """
    agent: Hashable | None
    if type(input) is ToolExecutionInput:
        # One unpack instead of seven attribute reads (the common case).
        call_id, name, raw_arguments, signal, agent, parent, root_call_id = input
    else:  # any object with these attributes, each read exactly once
        call_id = input.call_id
        name = input.name
        raw_arguments = input.arguments
        signal = input.signal
        agent = input.agent
        parent = input.parent
        root_call_id = input.root_call_id
    if (
        type(call_id) is not str
        or type(name) is not str
        or type(signal) is not AbortSignal
        or (parent is not None and type(parent) is not ToolExecutionToken)
        or (root_call_id is not None and type(root_call_id) is not str)
    ):
        raise input_type_error(call_id, name, signal, parent, root_call_id)
    # (Inlined fast paths: this runs once per call.)
    chain = () if agent is None else registry.chain_for(agent)
    error: BaseException | None = None
    try:
        arguments = snapshot_json(raw_arguments)
    except ARGUMENT_SNAPSHOT_ERRORS as exc:
        arguments, error = None, exc
    # tuple.__new__ skips the named tuple's Python-level __new__ (same object).
    execution: ToolExecution = _tuple_new(
        ToolExecution,
        (ToolExecutionToken(), call_id, name, arguments, signal, agent, parent, root_call_id),
    )
    if name == RUN_CODE_NAME:
        compiled = None
    elif chain:
        compiled = registry.resolve(name, chain)
    else:
        compiled = registry._global.tools.get(name)
    return _Call(registry, execution, chain, compiled), error


def input_type_error(
    call_id: object, name: object, signal: object, parent: object, root_call_id: object
) -> TypeError:
    """The ``TypeError`` for the first malformed field of a call description (both twins raise it)."""
    if type(call_id) is not str:
        return TypeError(f"ToolExecutionInput.call_id must be a str, got {type(call_id).__name__}")
    if type(name) is not str:
        return TypeError(f"ToolExecutionInput.name must be a str, got {type(name).__name__}")
    if type(signal) is not AbortSignal:
        return TypeError(
            f"ToolExecutionInput.signal must be an AbortSignal, got {type(signal).__name__}"
        )
    if parent is not None and type(parent) is not ToolExecutionToken:
        return TypeError("ToolExecutionInput.parent must be a ToolExecutionToken or None")
    return TypeError("ToolExecutionInput.root_call_id must be a str or None")


# --- 2. entry_outcome -----------------------------------------------------------------


def entry_outcome(call: _Call, argument_error: BaseException | None) -> ToolFailure | None:
    """The final outcome decided at entry, or ``None`` to run the policy stages.

    In this order: lossy arguments (``tool execution arguments must be
    losslessly JSON-serializable``, no info) win over a pre-aborted caller
    signal (``ABORTED_BEFORE_DISPATCH``), which wins over the Code Mode
    collapse (a model-direct call to a visible native tool under ``code``:
    ``UNKNOWN_TOOL`` with the route-back message). Each skips pre-execute,
    dispatch and post-execute. Cancellation: synchronous.
    """
    if argument_error is not None:
        return _plain_failure(ARGUMENTS_NOT_LOSSLESS)
    execution = call.execution
    signal = execution.signal
    if signal._aborted or (signal._sources is not None and signal._poll()):
        return aborted_before_dispatch()
    name = execution.name
    registry = call.registry
    if (
        execution.parent is None
        and (registry.mode == "code" or call.chain)
        and name != RUN_CODE_NAME
        and registry.presentation(call.chain) == "code"
        and name in registry.view(call.chain)
    ):
        return _not_found(ToolNotFoundError.code_only(name))
    return None


def bad_pre_decision(decision: object) -> TypeError:
    """The error for a pre-execute listener that returned something other than a decision."""
    return TypeError(
        f"tools/pre-execute listener returned {type(decision).__name__};"
        " expected Allow(), Deny(reason) or Ask(reason)"
    )


def bad_post_decision(decision: object) -> TypeError:
    """The error for a post-execute listener that returned something other than a decision."""
    return TypeError(
        f"tools/post-execute listener returned {type(decision).__name__};"
        " expected Accept(...) or Block(feedback)"
    )


def bad_next_signal(signal: object) -> TypeError:
    """The error for a wrapper passing something other than an ``AbortSignal`` to ``next(signal=...)``."""
    return TypeError(f"next(signal=...) expects an AbortSignal, got {type(signal).__name__}")


# --- 3. run_policy ---------------------------------------------------------------------


class _PreNext:
    """``next()`` of one pre-execute listener: runs the rest of the waterfall once."""

    __slots__ = ("called", "entries", "execution", "index")

    def __init__(
        self, entries: tuple[_Listener, ...], index: int, execution: ToolExecution
    ) -> None:
        self.entries = entries
        self.index = index
        self.execution = execution
        self.called = False

    async def __call__(self) -> Any:
        if self.called:
            raise RuntimeError(_PRE_NEXT_TWICE)
        self.called = True
        if self.index == len(self.entries):
            return ALLOW  # the chain's end, without another coroutine
        return await _pre_waterfall(self.entries, self.index, self.execution)


async def _pre_waterfall(
    entries: tuple[_Listener, ...], index: int, execution: ToolExecution
) -> Any:
    while index < len(entries):
        entry = entries[index]
        if entry.alive:
            decision = entry.fn(execution, _PreNext(entries, index + 1, execution))
            if type(decision) is CoroutineType or (
                type(decision) not in _PLAIN_RESULTS and inspect.isawaitable(decision)
            ):
                decision = await decision
            if (
                type(decision) is not Allow
                and type(decision) is not Deny
                and type(decision) is not Ask
            ):
                raise bad_pre_decision(decision)
            return decision
        index += 1
    return ALLOW


def _run_guards(call: _Call) -> str | None:
    """The first guard reason: the global layer (live: guards added meanwhile run too), then the chain."""
    execution = call.execution
    layer = call.registry._global
    snapshot = layer.guards
    done: set[int] | None = None
    while True:
        for entry in snapshot:
            if done is not None:
                if id(entry) in done:
                    continue
                done.add(id(entry))
            if entry.alive:
                reason = _guard_reason(entry.fn(execution))
                if reason is not None:
                    return reason
        current = layer.guards
        if current is snapshot:
            break
        # A guard registered (or disposed) during this pass: run the ones not yet run.
        if done is None:
            done = {id(entry) for entry in snapshot}
        snapshot = current
    for scope in reversed(call.chain):
        for entry in scope.layer.guards:
            if entry.alive:
                reason = _guard_reason(entry.fn(execution))
                if reason is not None:
                    return reason
    return None


def _guard_reason(value: object) -> str | None:
    if value is None:
        return None
    if type(value) is str:
        return value
    raise TypeError(f"guard returned {type(value).__name__}; expected a reason string or None")


async def _approve(call: _Call, reason: str | None) -> ToolFailure | None:
    """Service an ``Ask``: ``None`` when approved, else the denial (or cancellation) result."""
    execution = call.execution
    name = execution.name
    approval = call.registry.approval
    if approval is None:
        return _plain_failure(
            reason if reason is not None else f'tool "{name}" requires approval (not yet supported)'
        )
    if execution.agent is None:
        return _plain_failure(
            f'tool "{name}" requires approval, but the call has no agent to route it through'
        )
    answer = await _maybe_await(
        approval.request(
            ApprovalRequest(execution.agent, name, execution.call_id, reason, execution.signal)
        )
    )
    if execution.signal.aborted and answer != "rejected":
        return aborted_before_dispatch()
    if answer == "allowed-once":
        return None
    if answer == "rejected":
        return _plain_failure(f'the user rejected tool "{name}"')
    if answer == "cancelled":
        return _plain_failure(f'approval for tool "{name}" was cancelled')
    if answer == "unavailable":
        return _plain_failure(
            f'tool "{name}" requires approval, but no approval channel is available'
        )
    return _plain_failure(
        f'approval for tool "{name}" returned an unsupported answer: {_safe_repr(answer)}'
    )


def _reason_text(reason: object) -> str:
    if type(reason) is str:
        return reason
    try:
        return str(reason)
    except Exception:
        return "<unprintable denial reason>"


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


async def run_policy(call: _Call) -> tuple[ToolExecutionResult | None, bool]:
    """Pre-execute waterfall, then approval (for ``Ask``), then guards, then a cancellation recheck.

    Returns ``(None, False)`` when the call may dispatch, else ``(failure,
    skip_post)``: a denial, an approval denial or a caller abort is a failure
    that still reaches post-execute (``skip_post=False``); a raising listener,
    guard or approval service gives ``Error: <message>`` and skips
    post-execute. A denial or error that settles after the caller aborted is
    kept (more specific); an ``Allow`` after the caller aborted becomes
    ``ABORTED_BEFORE_DISPATCH``. The registry waits for every listener to settle.
    Cancellation: a ``CancelledError`` propagates to :func:`run_pipeline`.
    """
    execution = call.execution
    listeners = call.listeners
    assert listeners is not None
    try:
        decision = await _pre_waterfall(listeners.pre, 0, execution) if listeners.pre else ALLOW
        if type(decision) is Deny:
            return _plain_failure(_reason_text(decision.reason)), False
        if type(decision) is Ask:
            denied = await _approve(call, decision.reason)
            if denied is not None:
                return denied, False
        registry = call.registry
        reason = _run_guards(call) if registry._global.guards or call.chain else None
    except Exception as exc:
        return failure_from_exception(exc), True
    if reason is not None:
        return _plain_failure(reason), False
    caller = execution.signal
    if caller._aborted or (caller._sources is not None and caller._poll()):
        return aborted_before_dispatch(), False
    return None, False


# --- 4. run_dispatch ------------------------------------------------------------------------


def normalize_value(
    call: _Call,
    compiled: CompiledTool,
    value: object,
    contexts: tuple[Any, ...],
    concludes_turn: bool,
) -> ToolExecutionResult:
    """Snapshot, validate, freeze and render a canonical value into a success.

    Violations (any of them makes an ``INVALID_TOOL_OUTPUT`` failure with no
    value): ``value is not lossless JSON``, ``value snapshot failed: <msg>``,
    the output schema's violations rooted at ``value``, ``output.render
    failed: <msg>``, ``output.render returned non-lossless JSON``,
    ``output.render must return a list of content blocks``,
    ``output.presentation_meta failed: <msg>``,
    ``output.presentation_meta returned non-lossless JSON``. ``meta`` is
    computed only for top-level calls of tools declaring ``presentation_meta``.
    """
    try:
        frozen = snapshot_json(value)
    except LosslessJsonError:
        return _output_failure(compiled, ["value is not lossless JSON"], contexts)
    except Exception as exc:
        return _output_failure(compiled, [f"value snapshot failed: {error_message(exc)}"], contexts)
    validator = compiled.output_validator
    if not validator.is_valid(frozen):
        return _invalid_output(compiled, frozen, contexts)
    return render_value(call, compiled, frozen, contexts, concludes_turn)


def _invalid_output(
    compiled: CompiledTool, frozen: object, contexts: tuple[Any, ...]
) -> ToolFailure:
    violations = [str(v) for v in compiled.output_validator.violations(frozen, "value")]
    return _output_failure(compiled, violations, contexts)


def _rendered_content(rendered: object) -> tuple[Any, str | None]:
    """``(content, None)`` for a valid rendering, else ``(None, problem)``."""
    try:
        return check_content(snapshot_json(rendered)), None
    except LosslessJsonError:
        return None, "output.render returned non-lossless JSON"
    except ContentShapeError:
        return None, "output.render must return a list of content blocks"
    except Exception as exc:
        return None, f"output.render failed: {error_message(exc)}"


def _render_failure(
    compiled: CompiledTool, exc: Exception, contexts: tuple[Any, ...]
) -> ToolFailure:
    return _output_failure(compiled, [f"output.render failed: {error_message(exc)}"], contexts)


def _content_failure(
    compiled: CompiledTool, rendered: object, contexts: tuple[Any, ...]
) -> ToolFailure:
    problem = _rendered_content(rendered)[1]
    assert problem is not None, "the compiled content check disagrees with check_content"
    return _output_failure(compiled, [problem], contexts)


def render_value(
    call: _Call,
    compiled: CompiledTool,
    frozen: object,
    contexts: tuple[Any, ...],
    concludes_turn: bool,
) -> ToolExecutionResult:
    """Render a frozen, valid value and compute its ``meta``: the success, or the output failure.

    The compiled twin renders the common case itself (no ``presentation_meta``
    to compute) and calls :func:`_render_failure` / :func:`_content_failure`
    for the failures, so every message is made here.
    """
    args = call.execution.arguments
    problem: str | None = None
    content: Any = None
    try:
        rendered = compiled.render(args, frozen)
    except Exception as exc:
        problem = f"output.render failed: {error_message(exc)}"
    else:
        content, problem = _rendered_content(rendered)
    project = compiled.presentation_meta
    if project is None or call.execution.parent is not None:
        if problem is None:
            return new_success(frozen, content, UNSET, contexts, concludes_turn)
        return _output_failure(compiled, [problem], contexts)
    problems = [] if problem is None else [problem]
    meta: Any = UNSET
    try:
        projected = project(args, frozen)
    except Exception as exc:
        problems.append(f"output.presentation_meta failed: {error_message(exc)}")
    else:
        try:
            meta = snapshot_json(projected)
        except LosslessJsonError:
            problems.append("output.presentation_meta returned non-lossless JSON")
        except Exception as exc:
            problems.append(f"output.presentation_meta failed: {error_message(exc)}")
    if problems:
        return _output_failure(compiled, problems, contexts)
    return new_success(frozen, content, meta, contexts, concludes_turn)


def _output_failure(
    compiled: CompiledTool, violations: list[str], contexts: tuple[Any, ...]
) -> ToolFailure:
    return failure_from_exception(
        ToolOutputError(compiled.name, violations), additional_contexts=contexts
    )


def _run_contexts(run: ToolRunContext) -> tuple[Any, ...]:
    deferred = run._deferred
    return () if deferred is None else tuple(deferred)


# --- the body trampoline ----------------------------------------------------------------
#
# The body runs inline in the awaiting task (no task per call), but it must not
# receive the task's cancellation: a CancelledError thrown into the body would
# tear it off a future it does not own (``run_in_executor``, another task's
# future) while that work carries on. So the registry steps the body itself:
# the first step happens synchronously (a body that never suspends returns
# there, with no driver, proxy or future); a body that suspends is driven by
# ``_BodyDriver``, which waits for each future the body yields through a proxy
# future of its own, so cancelling the task cancels only the proxy.

_DONE: Final = object()


def _body_steps(call: _Call, body: Any) -> Generator[Any, None, None]:
    # ``yield from`` passes the body's yields out and its return value in
    # without a StopIteration object (made a "coroutine generator" below so it
    # may delegate to a native coroutine). Stepped with next(steps, _DONE).
    call.value = yield from body


types.coroutine(_body_steps)  # sets CO_ITERABLE_COROUTINE on the function in place


async def _await_any(awaitable: Awaitable[Any]) -> Any:
    # A body returning an awaitable that is not a native coroutine (a Future, a
    # custom __await__): adapt it once so the trampoline steps a coroutine.
    return await awaitable


class _BodyDriver:
    """Awaitable that drives a suspended body to completion, shielding it from task cancellation.

    It reproduces what an ``asyncio.Task`` does with what a coroutine yields
    (a bare ``yield`` gives up one loop iteration; a blocking future is waited
    for; anything else is thrown back as the Task's ``RuntimeError``), except
    that a future is waited for through a fresh proxy future: cancelling the
    task cancels the proxy, never the body's future.

    Cancellation: the first ``CancelledError`` arriving at one of its yields
    is recorded on the call (``call.cancel_exc``) and aborts the body's fused
    signal (reason ``AbortError("tool call aborted")``); the driver keeps
    driving the body, absorbing further cancellations, until the body
    settles. It then returns (or raises the body's exception) normally;
    :func:`dispatch_core` turns the settled outcome into the call's result and
    re-raises the recorded ``CancelledError``.
    """

    __slots__ = ("call", "run", "steps", "yielded")

    def __init__(
        self,
        call: _Call,
        steps: Generator[Any, None, None],
        yielded: object,
        run: ToolRunContext,
    ) -> None:
        self.call = call
        self.steps = steps
        self.yielded = yielded
        # This body's own run (and fused signal): a wrapper may run bodies concurrently
        # (each in its own task), and each driver aborts the body it drives.
        self.run = run

    def _cancelled(self, exc: asyncio.CancelledError) -> None:
        self.run.signal._abort(AbortError(_ABORTED_MESSAGE))
        call = self.call
        if call.cancel_exc is None:
            call.cancel_exc = exc

    def __await__(self) -> Generator[Any, None, None]:
        steps = self.steps
        yielded = self.yielded
        self.yielded = None
        loop = asyncio.get_running_loop()
        on_cancel = self._cancelled
        while True:
            error: BaseException | None = None
            if yielded is None:
                yield from one_iteration(on_cancel)  # a bare yield (asyncio.sleep(0))
            else:
                kind = classify_yield(yielded, loop)
                if kind is Yielded.FUTURE:
                    future: asyncio.Future[Any] = yielded  # type: ignore[assignment]
                    yield from wait_shielded(future, loop, on_cancel)
                else:
                    error = _bad_yield(kind, yielded)
                    # Delivered after one loop iteration, as a Task delivers it.
                    yield from one_iteration(on_cancel)
            try:
                yielded = next(steps, _DONE) if error is None else steps.throw(error)
            except StopIteration:
                return
            if yielded is _DONE:
                return


def _bad_yield(kind: Yielded, yielded: object) -> RuntimeError:
    """The ``RuntimeError`` an ``asyncio.Task`` would throw into a coroutine for ``yielded``, worded for a tool body."""
    if kind is Yielded.OTHER_LOOP:
        return RuntimeError(f"tool body awaited Future {yielded!r} attached to a different loop")
    if kind is Yielded.NOT_BLOCKING:
        return RuntimeError(f"yield was used instead of yield from in a tool body with {yielded!r}")
    if kind is Yielded.CURRENT_TASK:
        return RuntimeError("a tool body cannot await the task that runs it")
    if kind is Yielded.GENERATOR:
        return RuntimeError(
            f"yield was used instead of yield from for generator in a tool body with {yielded!r}"
        )
    return RuntimeError(f"tool body got bad yield: {yielded!r}")


def _raise_cancelled(call: _Call, settled: ToolExecutionResult) -> NoReturn:
    """The body settled after its task was cancelled: keep its outcome and re-raise the cancellation."""
    call.settled = settled
    cancel_exc = call.cancel_exc
    assert cancel_exc is not None
    raise cancel_exc


async def dispatch_core(call: _Call, signal: AbortSignal) -> ToolExecutionResult:
    """The innermost dispatch: resolve the tool now, validate arguments, run the body, normalize.

    ``signal`` is the current dispatch signal (the caller's, or a wrapper's
    replacement). Returns: ``UNKNOWN_TOOL`` for a tool the scope cannot see
    now; ``ABORTED_BEFORE_DISPATCH`` when the caller's or the current signal
    already aborted; ``INVALID_ARGS`` for invalid ``define_tool`` arguments;
    the body's exception as ``Error: <message>`` (its deferred contexts kept;
    ``ABORTED`` when it re-raises the abort reason of a caller cancellation);
    else the normalized success. The body gets a fused signal of the caller's
    and the current one and runs inline (no task): its first step runs here;
    a body that suspends is driven by :class:`_BodyDriver`.

    Cancellation: a cancellation of the awaiting task never reaches the body.
    The driver aborts the fused signal and keeps driving the body until it
    settles; the settled outcome is then normalized as usual (a success, its
    own failure, ``ABORTED`` if it re-raised the abort reason), kept on the
    call (``call.settled``) and the task's ``CancelledError`` is re-raised. A
    ``CancelledError`` the body raises itself aborts its fused signal and
    propagates.
    """
    execution = call.execution
    compiled = call.compiled
    if compiled is None or call.version != call.registry._version:
        resolved = _resolve_for_dispatch(call)
        if isinstance(resolved, ToolFailure):
            return resolved
        compiled = resolved
    caller = execution.signal
    # Inlined ``caller.aborted or signal.aborted`` (a property call per check).
    if (caller._aborted or (caller._sources is not None and caller._poll())) or (
        signal is not caller and signal.aborted
    ):
        return aborted_before_dispatch()
    args = execution.arguments
    validator = compiled.args_validator
    if validator is not None and not validator.is_valid(args):
        return _invalid_arguments(validator, args)
    run = ToolRunContext._following(execution, caller if signal is caller else (caller, signal))
    call.run = run
    steps = None
    try:
        value = compiled.execute(args, run)
        kind = type(value)
        if kind is CoroutineType or (kind not in _PLAIN_RESULTS and inspect.isawaitable(value)):
            steps = _body_steps(call, value if kind is CoroutineType else _await_any(value))
            # The first step, inline: a body that never suspends ends here.
            yielded = next(steps, _DONE)
            if yielded is _DONE:
                steps = None
                value = call.value
    except asyncio.CancelledError:
        # The body itself raised CancelledError (e.g. a future it awaited was cancelled).
        run.signal._abort(AbortError(_ABORTED_MESSAGE))
        run._release()
        raise
    except Exception as exc:
        run._release()
        return body_failure(call, run, exc, False)
    except BaseException:
        run._release()
        raise
    if steps is not None:
        return await drive_body(call, compiled, run, steps, yielded)
    run._release()
    return normalize_run(call, compiled, value, run)


def _resolve_for_dispatch(call: _Call) -> CompiledTool | ToolFailure:
    """The tool the calling scope resolves now (the registry changed since entry), or the failure."""
    name = call.execution.name
    try:
        compiled = call.registry.resolve(name, call.chain)
    except Exception as exc:  # e.g. run_code for an unknown runtime language
        return failure_from_exception(exc)
    if compiled is None:
        return _not_found(ToolNotFoundError.unknown(name))
    return compiled


def _invalid_arguments(validator: Any, args: object) -> ToolFailure:
    return failure_from_exception(ToolArgsError(validator.validate_args(args)))


def normalize_run(
    call: _Call, compiled: CompiledTool, value: object, run: ToolRunContext
) -> ToolExecutionResult:
    """Normalize a settled body's return value with the run's deferred contexts and turn mark."""
    deferred = run._deferred
    return normalize_value(
        call, compiled, value, () if deferred is None else tuple(deferred), run._concluded
    )


def body_failure(call: _Call, run: ToolRunContext, exc: Exception, driven: bool) -> ToolFailure:
    """The outcome of a body that raised ``exc`` (its deferred contexts kept).

    ``ABORTED`` when it re-raised the caller's abort reason, or (``driven``)
    the abort reason of the awaiting task's cancellation; else ``Error:
    <message>``. A driven body whose task was cancelled keeps this outcome on
    the call and re-raises the cancellation.
    """
    contexts = _run_contexts(run)
    caller = call.execution.signal
    cancelled = driven and call.cancel_exc is not None
    if caller.aborted and exc is caller.reason:
        outcome = aborted(contexts)
    elif cancelled and run._signal is not None and exc is run._signal._reason:
        outcome = aborted(contexts)  # the body re-raised the cancellation's abort reason
    else:
        outcome = failure_from_exception(exc, additional_contexts=contexts)
    if cancelled:
        _raise_cancelled(call, outcome)
    return outcome


async def drive_body(
    call: _Call,
    compiled: CompiledTool,
    run: ToolRunContext,
    steps: Generator[Any, None, None],
    yielded: object,
) -> ToolExecutionResult:
    """Drive a body that suspended at its first step (``yielded``) to completion and normalize it.

    Owns the fused signal from here: aborts it if the body raises
    ``CancelledError`` itself, and releases it once the body settled.
    """
    try:
        await _BodyDriver(call, steps, yielded, run)
    except asyncio.CancelledError:
        # The body itself raised CancelledError (e.g. a future it awaited was cancelled).
        run.signal._abort(AbortError(_ABORTED_MESSAGE))
        raise
    except Exception as exc:
        return body_failure(call, run, exc, True)
    finally:
        run._release()
    result = normalize_run(call, compiled, call.value, run)
    if call.cancel_exc is not None:
        _raise_cancelled(call, result)
    return result


class Resumed:
    """An already started coroutine, replayed from its first yield (the compiled twin's hand-off).

    The compiled ``dispatch_core`` takes a body's first step itself; when the
    body suspends, ``_body_steps(call, Resumed(body, yielded))`` gives
    :func:`drive_body` the same steps generator the Python twin would have.
    """

    __slots__ = ("body", "first")

    def __init__(self, body: Any, first: object) -> None:
        self.body = body
        self.first = first

    def __iter__(self) -> Resumed:
        return self

    def __next__(self) -> Any:
        return self.send(None)

    def send(self, value: object) -> Any:
        first = self.first
        if first is not _DONE:
            self.first = _DONE
            return first
        return self.body.send(value)

    def throw(self, *exc: Any) -> Any:
        self.first = _DONE
        return self.body.throw(*exc)

    def close(self) -> None:
        self.body.close()


class _WrapNext:
    """``next(signal=None)`` of one wrapper: runs the inner layers with the (optionally) replaced signal."""

    __slots__ = ("call", "dispatch", "index")

    def __init__(self, call: _Call, index: int, dispatch: ToolDispatchExecution) -> None:
        self.call = call
        self.index = index
        self.dispatch = dispatch

    async def __call__(self, signal: AbortSignal | None = None) -> ToolExecutionResult:
        dispatch = self.dispatch
        if signal is not None and type(signal) is not AbortSignal:
            raise bad_next_signal(signal)
        call = self.call
        if call.cancel_exc is not None:
            # The awaiting task was cancelled under an earlier next(): no new body starts.
            raise call.cancel_exc
        previous = dispatch.signal
        if signal is not None:
            dispatch.signal = signal
        try:
            if self.index == len(call.listeners.wrappers):  # type: ignore[union-attr]
                result = await dispatch_core(call, dispatch.signal)
            else:
                result = await _wrap_chain(call, self.index, dispatch)
        finally:
            # Restore: outer wrappers (and the registry) see their own signal again.
            dispatch.signal = previous
        produced = self.call.produced
        if produced is None:
            self.call.produced = [result]
        else:
            produced.append(result)
        return result


async def _wrap_chain(
    call: _Call, index: int, dispatch: ToolDispatchExecution
) -> ToolExecutionResult:
    wrappers = call.listeners.wrappers  # type: ignore[union-attr]
    while index < len(wrappers):
        entry = wrappers[index]
        if entry.alive:
            caller = call.execution.signal
            if caller._aborted or (caller._sources is not None and caller._poll()):
                # The caller cancelled while an outer wrapper was still deciding.
                return aborted_before_dispatch()
            returned = entry.fn(dispatch, _WrapNext(call, index + 1, dispatch))
            if type(returned) is CoroutineType or (
                type(returned) not in _PLAIN_RESULTS and inspect.isawaitable(returned)
            ):
                returned = await returned
            return normalize_authored(call, returned)
        index += 1
    return await dispatch_core(call, dispatch.signal)


def normalize_authored(call: _Call, returned: object) -> ToolExecutionResult:
    """Normalize what a wrapper returned.

    A result some ``next()`` produced is kept as is. A wrapper-authored
    success is re-validated and re-rendered from its value under the tool the
    scope resolves now (``unknown tool`` if it is gone); its contexts and
    ``concludes_turn`` are kept. A wrapper-authored failure keeps its message,
    info, content, meta and contexts (``tool result must be losslessly
    JSON-serializable`` if they are lossy). Anything else raises ``TypeError``
    (treated as a raising wrapper).
    """
    produced = call.produced
    if produced is not None:
        for item in produced:
            if item is returned:
                return item
    if type(returned) is ToolSuccess:
        try:
            contexts = snapshot_contexts(returned.additional_contexts, "tools/execute")
        except (ValueError, TypeError, RecursionError):
            return _plain_failure(RESULT_NOT_LOSSLESS)
        name = call.execution.name
        compiled = call.registry.resolve(name, call.chain)
        if compiled is None:
            return _not_found(ToolNotFoundError.unknown(name), contexts)
        return normalize_value(
            call, compiled, returned.value, contexts, returned.concludes_turn is True
        )
    if type(returned) is ToolFailure:
        return _materialize_failure(returned)
    raise TypeError(
        f"tools/execute wrapper returned {type(returned).__name__}; expected a ToolSuccess or ToolFailure"
    )


def _materialize_failure(failure: ToolFailure) -> ToolFailure:
    error = failure.error
    if type(error) is not ToolError or type(error.message) is not str:
        return _plain_failure(RESULT_NOT_LOSSLESS)
    try:
        content = check_content(snapshot_json(failure.content))
        meta = failure.meta if failure.meta is UNSET else snapshot_json(failure.meta)
        contexts = snapshot_contexts(failure.additional_contexts, "tools/execute")
    except (ValueError, TypeError, RecursionError):
        return _plain_failure(RESULT_NOT_LOSSLESS)
    info = error.info
    if info is not None and (
        type(info) is not ToolErrorInfo or type(info.name) is not str or type(info.code) is not str
    ):
        return _plain_failure(RESULT_NOT_LOSSLESS)
    if (
        content is failure.content
        and meta is failure.meta
        and contexts is failure.additional_contexts
    ):
        return failure
    return ToolFailure(error, content, meta, contexts)


async def run_dispatch(call: _Call) -> tuple[ToolExecutionResult, bool]:
    """Run the wrappers (first registered outermost) around :func:`dispatch_core`.

    Returns ``(result, skip_post)``: a raising wrapper (or one returning a
    non-result) gives ``Error: <message>`` with ``skip_post=True``; every other
    outcome continues to post-execute. A wrapper may replace only the signal
    (via ``next(signal=...)``); the caller's signal is re-fused before the body.
    Cancellation: a ``CancelledError`` propagates to :func:`run_pipeline`. A
    wrapper that swallows the task's cancellation cannot start another body
    (``next()`` re-raises it) nor end the call uncancelled (it is re-raised
    here once the wrappers return).
    """
    listeners = call.listeners
    assert listeners is not None
    if not listeners.wrappers:
        return await dispatch_core(call, call.execution.signal), False
    execution = call.execution
    resolved = call.compiled
    if resolved is None or call.version != call.registry._version:
        try:
            resolved = call.registry.resolve(execution.name, call.chain)
        except Exception:
            resolved = None  # dispatch_core reports the error as the result
    dispatch = ToolDispatchExecution(
        execution, execution.signal, None if resolved is None else resolved.definition
    )
    try:
        result = await _wrap_chain(call, 0, dispatch)
    except Exception as exc:
        if call.cancel_exc is not None:
            raise call.cancel_exc from None  # a wrapper swallowed the task's cancellation
        contexts = () if call.run is None else _run_contexts(call.run)
        return failure_from_exception(exc, additional_contexts=contexts), True
    if call.cancel_exc is not None:
        raise call.cancel_exc  # a wrapper swallowed the task's cancellation
    return result, False


# --- 5. run_post_execute ------------------------------------------------------------------


class _PostNext:
    """``next()`` of one post-execute listener."""

    __slots__ = ("called", "entries", "execution", "index", "result")

    def __init__(
        self,
        entries: tuple[_Listener, ...],
        index: int,
        execution: ToolExecution,
        result: ToolExecutionResult,
    ) -> None:
        self.entries = entries
        self.index = index
        self.execution = execution
        self.result = result
        self.called = False

    async def __call__(self) -> Any:
        if self.called:
            raise RuntimeError(_POST_NEXT_TWICE)
        self.called = True
        if self.index == len(self.entries):
            return _ACCEPT  # the chain's end, without another coroutine
        return await _post_waterfall(self.entries, self.index, self.execution, self.result)


_ACCEPT: Final = Accept()


async def _post_waterfall(
    entries: tuple[_Listener, ...],
    index: int,
    execution: ToolExecution,
    result: ToolExecutionResult,
) -> Any:
    while index < len(entries):
        entry = entries[index]
        if entry.alive:
            decision = entry.fn(execution, result, _PostNext(entries, index + 1, execution, result))
            if type(decision) is CoroutineType or (
                type(decision) not in _PLAIN_RESULTS and inspect.isawaitable(decision)
            ):
                decision = await decision
            if type(decision) is not Accept and type(decision) is not Block:
                raise bad_post_decision(decision)
            return decision
        index += 1
    return _ACCEPT


def _feedback_message(content: Any) -> str:
    parts = [
        (
            block["text"]
            if block["type"] == "text" and type(block.get("text")) is str
            else f"[{block['type']} content]"
        )
        for block in content
    ]
    return "\n".join(parts) if parts else _BLOCK_DEFAULT


def apply_post_decision(
    call: _Call, result: ToolExecutionResult, decision: Accept | Block
) -> ToolExecutionResult:
    """Apply an ``Accept``/``Block`` decision to ``result`` (see CONTRACT.md behaviours 49-56)."""
    if type(decision) is Block:
        try:
            feedback = check_content(snapshot_json(decision.feedback))
            block_contexts = snapshot_contexts(decision.additional_contexts, "Block")
        except (ValueError, TypeError, RecursionError):
            return _plain_failure(RESULT_NOT_LOSSLESS, result.additional_contexts)
        return ToolFailure(ToolError(_feedback_message(feedback)), feedback, UNSET, block_contexts)
    assert type(decision) is Accept
    kept: tuple[Any, ...] = tuple(result.additional_contexts)
    try:
        added = snapshot_contexts(decision.additional_contexts, "Accept")
    except (ValueError, TypeError, RecursionError):
        return _plain_failure(RESULT_NOT_LOSSLESS, kept)
    contexts: tuple[Any, ...] = kept + added if added else kept
    content, value = decision.content, decision.value
    if content is not UNSET and value is not UNSET:
        return _plain_failure(_BOTH_REPLACED, kept)
    if value is not UNSET:
        if not isinstance(result, ToolSuccess):
            return _plain_failure(_FAILED_VALUE, kept)
        name = call.execution.name
        compiled = call.registry.resolve(name, call.chain)
        if compiled is None:
            return _not_found(ToolNotFoundError.unknown(name), contexts)
        return normalize_value(call, compiled, value, contexts, result.concludes_turn)
    if content is not UNSET:
        try:
            new_content = check_content(snapshot_json(content))
        except (ValueError, TypeError, RecursionError):
            return _plain_failure(RESULT_NOT_LOSSLESS, kept)
        if isinstance(result, ToolSuccess):
            return ToolSuccess(
                result.value, new_content, result.meta, contexts, result.concludes_turn
            )
        return ToolFailure(result.error, new_content, result.meta, contexts)
    if not added:
        return result
    if isinstance(result, ToolSuccess):
        return ToolSuccess(
            result.value, result.content, result.meta, contexts, result.concludes_turn
        )
    return ToolFailure(result.error, result.content, result.meta, contexts)


async def run_post_execute(call: _Call, result: ToolExecutionResult) -> ToolExecutionResult:
    """The post-execute waterfall (chain end ``Accept()``) over the frozen ``result``.

    Returns the decided result: accept keeps, replaces content (value and meta
    kept) or replaces the value (re-validated, re-rendered, meta recomputed),
    never both, and appends its contexts after the existing ones; block makes a
    valueless failure whose content is the feedback and whose contexts are only
    the block's. A raising listener gives ``Error: <message>`` keeping the
    existing contexts. Listeners see the caller's signal on the execution.
    Cancellation: a ``CancelledError`` propagates to :func:`run_pipeline`.
    """
    entries = call.listeners.post  # type: ignore[union-attr]
    try:
        decision = await _post_waterfall(entries, 0, call.execution, result)
    except Exception as exc:
        return failure_from_exception(exc, additional_contexts=result.additional_contexts)
    if decision is _ACCEPT:
        return result  # the chain's own end: nothing to apply
    return apply_post_decision(call, result, decision)


# --- 6. settle_cancellation ---------------------------------------------------------------


def settle_cancellation(
    call: _Call, result: ToolExecutionResult, task_cancelled: bool
) -> ToolExecutionResult:
    """Replace a success with ``ABORTED`` (body started) or ``ABORTED_BEFORE_DISPATCH`` if the caller cancelled.

    The caller cancelled when its signal aborted or its awaiting task was
    cancelled. Failures are kept (more specific). The replacement keeps the
    success's additional contexts. Cancellation: synchronous.
    """
    if not isinstance(result, ToolSuccess):
        return result
    caller = call.execution.signal
    if not (task_cancelled or caller._aborted or (caller._sources is not None and caller._poll())):
        return result
    if call.run is not None:  # the body started
        return aborted(result.additional_contexts)
    return aborted_before_dispatch(result.additional_contexts)


# --- 7. run_finalize ------------------------------------------------------------------------


def run_finalize(call: _Call, result: ToolExecutionResult) -> ToolExecutionResult:
    """Call the snapshotted ``finalize_content(execution, result)`` exactly once.

    ``None`` keeps the content; returned content replaces only ``content``
    (re-materialized; lossy content gives ``tool result must be losslessly
    JSON-serializable``); a raising finalizer gives ``Error: <message>``. The
    finalizer is never called again. Contexts are kept. Cancellation: synchronous.
    """
    finalize = call.finalize
    if finalize is None:
        return result
    try:
        replaced = finalize(call.execution, result)
    except Exception as exc:
        return failure_from_exception(exc, additional_contexts=result.additional_contexts)
    if replaced is None:
        return result
    try:
        content = check_content(snapshot_json(replaced))
    except (ValueError, TypeError, RecursionError):
        return _plain_failure(RESULT_NOT_LOSSLESS, result.additional_contexts)
    if isinstance(result, ToolSuccess):
        return ToolSuccess(
            result.value, content, result.meta, result.additional_contexts, result.concludes_turn
        )
    return ToolFailure(result.error, content, result.meta, result.additional_contexts)


# --- 8. notify_result -----------------------------------------------------------------------


def notify_result(call: _Call, result: ToolExecutionResult) -> Coroutine[Any, Any, bool] | bool:
    """Call every ``on_result`` observer with the execution and the final result (emit: no transform).

    Observer failures (raising, rejecting, unprintable) are logged at WARNING
    on ``dsh_codegen`` and never stop the other observers. Synchronous
    observers run right here; at the first observer returning an awaitable,
    the rest of the work is returned as a coroutine the caller awaits (so a
    call whose observers are all synchronous costs no coroutine). A ``bool``
    means every observer has run. The ``bool`` (or the coroutine's result)
    says whether a ``CancelledError`` arrived from an observer (the remaining
    observers still run; the caller re-raises).
    Cancellation: contained as described, then reported to the caller.
    """
    entries = call.listeners.observers if call.listeners is not None else ()
    execution = call.execution
    cancelled = False
    for index, entry in enumerate(entries):
        if not entry.alive:
            continue
        try:
            outcome = entry.fn(execution, result)
        except asyncio.CancelledError:
            cancelled = True
            continue
        except Exception as exc:
            _log_observer_failure(entry, exc)
            continue
        if type(outcome) is CoroutineType or (
            type(outcome) not in _PLAIN_RESULTS and inspect.isawaitable(outcome)
        ):
            return _notify_rest(call, result, entries, index, outcome, cancelled)
    return cancelled


def _log_observer_failure(entry: _Listener, exc: BaseException) -> None:
    _log.warning(
        "tools/result observer %s raised: %s",
        _safe_repr(entry.fn),
        error_message(exc),
        exc_info=True,
    )


async def _notify_rest(
    call: _Call,
    result: ToolExecutionResult,
    entries: tuple[_Listener, ...],
    index: int,
    pending: Awaitable[Any],
    cancelled: bool,
) -> bool:
    """Await ``pending`` (observer ``index``'s outcome), then run the observers after it."""
    execution = call.execution
    entry = entries[index]
    while True:
        try:
            await pending
        except asyncio.CancelledError:
            cancelled = True
        except Exception as exc:
            _log_observer_failure(entry, exc)
        index += 1
        pending = None  # type: ignore[assignment]
        while index < len(entries):
            entry = entries[index]
            if entry.alive:
                try:
                    outcome = entry.fn(execution, result)
                except asyncio.CancelledError:
                    cancelled = True
                except Exception as exc:
                    _log_observer_failure(entry, exc)
                else:
                    if type(outcome) is CoroutineType or (
                        type(outcome) not in _PLAIN_RESULTS and inspect.isawaitable(outcome)
                    ):
                        pending = outcome
                        break
            index += 1
        if pending is None:
            return cancelled


# --- the pipeline ---------------------------------------------------------------------------


async def _commit(
    call: _Call, result: ToolExecutionResult, skip_post: bool, cancelled: bool
) -> tuple[ToolExecutionResult, bool]:
    """Stages 5-8; returns the final result and whether the awaiting task was cancelled."""
    listeners = call.listeners
    assert listeners is not None
    if not skip_post and not cancelled and listeners.post:
        try:
            result = await run_post_execute(call, result)
        except asyncio.CancelledError:
            cancelled = True
            call_cancelled(call)
    if type(result) is ToolSuccess:  # settle_cancellation only ever replaces a success
        result = settle_cancellation(call, result, cancelled)
    if call.finalize is not None:
        result = run_finalize(call, result)
    if listeners.observers:
        notified = notify_result(call, result)
        if notified is True or (notified is not False and await notified):
            cancelled = True
    return result, cancelled


def call_cancelled(call: _Call) -> None:
    """The awaiting task was cancelled: abort the running body's signal (its handed-off work stops)."""
    run = call.run
    if run is not None:
        run.signal._abort(AbortError(_ABORTED_MESSAGE))


def _cancelled_outcome(call: _Call) -> ToolExecutionResult:
    # A body that settled after the cancellation reached it keeps its own outcome
    # (settle_cancellation then replaces only a success); else the stage that
    # was awaiting when the cancellation arrived never produced one.
    settled = call.settled
    if settled is not None:
        return settled
    contexts = () if call.run is None else _run_contexts(call.run)
    return aborted(contexts) if call.run is not None else aborted_before_dispatch(contexts)


async def run_pipeline(
    registry: ToolRegistry, input: ToolExecutionInput, gate: PipelineGate | None
) -> ToolExecutionResult:
    """Run every stage in order and return the one frozen result that observers saw.

    Cancellation: see ``ToolRegistry.execute``. A ``CancelledError`` from any
    awaiting stage ends the policy/dispatch stages; a body has settled by
    then (the trampoline waits for it). The call then records the settled
    body's outcome (a success becomes ``ABORTED``) or ``ABORTED`` /
    ``ABORTED_BEFORE_DISPATCH``, skips post-execute, runs finalize and
    observers once (inside ``gate.commit()`` unless entering it is cancelled
    too), and the original ``CancelledError`` is re-raised.
    """
    call, argument_error = create_execution(registry, input)
    signal = call.execution.signal
    chain = call.chain
    result: ToolExecutionResult | None
    if (
        argument_error is None
        and not chain
        and registry.mode != "code"
        and not signal._aborted
        and signal._sources is None
    ):
        result = None  # entry_outcome() has nothing to say (its checks, inlined)
    else:
        result = entry_outcome(call, argument_error)
    listeners = registry._global_listeners
    if (
        chain
        or listeners is None
        or registry._global_listeners_version != registry._listener_version
    ):
        listeners = registry.listeners_for(chain)
    call.listeners = listeners
    skip_post = True
    cancel_exc: asyncio.CancelledError | None = None
    if result is None:
        try:
            if gate is not None:
                async with gate.policy():
                    result, skip_post = await run_policy(call)
            elif listeners.pre or call.chain or registry._global.guards:
                result, skip_post = await run_policy(call)
            # else: no policy at all; the caller's signal was checked at entry
            # and nothing has been awaited since.
            if result is None:
                if listeners.wrappers:
                    result, skip_post = await run_dispatch(call)
                else:
                    result, skip_post = await dispatch_core(call, call.execution.signal), False
        except asyncio.CancelledError as exc:
            cancel_exc = exc
            call_cancelled(call)
            result, skip_post = _cancelled_outcome(call), True
    cancelled = cancel_exc is not None
    if gate is None:
        if listeners.post or listeners.observers:
            result, cancelled = await _commit(call, result, skip_post, cancelled)
        else:
            # Stages 6-7 without their calls when they have nothing to do.
            caller = call.execution.signal
            if cancelled or caller._aborted or (caller._sources is not None and caller._poll()):
                result = settle_cancellation(call, result, cancelled)
            if call.finalize is not None:
                result = run_finalize(call, result)
    else:
        committed = False
        try:
            async with gate.commit():
                committed = True
                result, cancelled = await _commit(call, result, skip_post, cancelled)
        except asyncio.CancelledError as exc:
            if committed:
                raise
            # Entering the gate was cancelled: still finalize and observe, without ordering.
            cancel_exc = cancel_exc or exc
            call_cancelled(call)
            result, cancelled = await _commit(call, result, True, True)
    if cancelled:
        raise cancel_exc if cancel_exc is not None else asyncio.CancelledError()
    return result


# --- the compiled twin -----------------------------------------------------------------------
#
# ``dsh_codegen._pipeline_c`` replaces the per-call stages below with compiled
# ones and runs calls that meet no listener, guard, gate or scope itself; it
# hands every uncommon outcome back to the functions above.

#: ``ToolRegistry.execute``'s compiled twin (installed by the registry), ``None`` for the pure twin.
compiled_execute: Any = None

_c = load_compiled("_pipeline_c")
if _c is not None and not TYPE_CHECKING:
    _c.bind(globals())
    _Call = _c.Call
    create_execution = _c.create_execution
    dispatch_core = _c.dispatch_core
    normalize_value = _c.normalize_value
    run_policy = _c.run_policy
    run_dispatch = _c.run_dispatch
    notify_result = _c.notify_result
    _commit = _c.commit
    run_pipeline = _c.run_pipeline
    compiled_execute = _c.execute
