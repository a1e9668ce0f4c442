"""Call hooks (``on_execute``): one stretch of a call, from entry to settlement.

:func:`run_hooked` runs the pipeline of a registry that has an ``on_execute``
hook: :func:`~._run.run_pipeline` enters the hooks of the call's chain right
after the input is read (:meth:`CallHooks.enter`) and records the final
result; :func:`run_hooked` then settles every entered hook exactly once,
whether the pipeline returned or raised. A registry without a hook never
comes here (``ToolRegistry.execute`` checks), so plain calls pay one test.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from dsh_codegen.registry._errors import error_message
from dsh_codegen.registry._results import ToolExecutionResult
from dsh_codegen.registry.pipeline._call import CallEntry, safe_repr
from dsh_codegen.registry.pipeline._run import run_pipeline

if TYPE_CHECKING:
    from dsh_codegen.registry._execution import ToolExecutionInput
    from dsh_codegen.registry._gate import PipelineGate
    from dsh_codegen.registry.pipeline._reads import RegistryReads

__all__ = ["CallHooks", "CallSettle", "run_hooked"]

_log = logging.getLogger("dsh_codegen")

#: What an ``on_execute`` hook may return: called once with ``(result, error)`` when the call is over.
CallSettle: TypeAlias = Callable[[ToolExecutionResult | None, BaseException | None], object]


class CallHooks:
    """The settles of one call's ``on_execute`` hooks, and the call's final result."""

    __slots__ = ("result", "settles")

    def __init__(self) -> None:
        self.result: ToolExecutionResult | None = None
        self.settles: list[CallSettle] | None = None

    def enter(self, call: CallEntry) -> None:
        """Call the hooks of the call's chain with its execution, keeping what they return to settle.

        A hook that raises, or returns something other than a callable or
        ``None``, is logged at WARNING and not settled. Cancellation: synchronous.
        """
        entries = call.listeners.calls
        if not entries:
            return
        execution = call.execution
        settles: list[CallSettle] = []
        for entry in entries:
            if not entry.alive:
                continue
            try:
                settle = entry.fn(execution)
            except Exception as exc:
                _log.warning("on_execute hook %s raised: %s", safe_repr(entry.fn), error_message(exc), exc_info=True)
                continue
            if settle is None:
                continue
            if not callable(settle):
                _log.warning(
                    "on_execute hook %s returned %s, not a callable or None",
                    safe_repr(entry.fn),
                    type(settle).__name__,
                )
                continue
            settles.append(settle)
        self.settles = settles

    def settle(self, error: BaseException | None) -> None:
        """Call every kept settle once, the last entered first; failures are logged at WARNING."""
        settles = self.settles
        if not settles:
            return
        self.settles = None
        result = self.result
        for settle in reversed(settles):
            try:
                settle(result, error)
            except Exception as exc:
                _log.warning("on_execute settle %s raised: %s", safe_repr(settle), error_message(exc), exc_info=True)


async def run_hooked(
    registry: RegistryReads, input: ToolExecutionInput, gate: PipelineGate | None
) -> ToolExecutionResult:
    """:func:`~._run.run_pipeline` with the call's ``on_execute`` hooks entered and settled once.

    Cancellation: as :func:`~._run.run_pipeline`; the hooks are settled
    (with the ``CancelledError``) before it propagates.
    """
    hooks = CallHooks()
    try:
        result = await run_pipeline(registry, input, gate, hooks)
    except BaseException as exc:
        hooks.settle(exc)
        raise
    hooks.settle(None)
    return result
