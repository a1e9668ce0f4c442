"""Code Mode's dispatch bridge: runs a ``run_code`` program in the registry's runtime.

:class:`CodeModeBridge` is the :class:`~dsh_codegen.registry.CodeModeProvider`
the registry installs into its seam when a code runtime is mounted
(``ToolRegistry(code_runtime=...)``, ``set_code_runtime``); importing this
layer installs nothing. For each ``run_code`` call it builds a :class:`CodeRunRequest`
whose ``dispatch`` is a fresh :class:`~dsh_codegen.codemode._pool.SubCallPool`,
awaits the runtime, settles and drains the pool, and turns the runtime's
answer into the canonical ``{logs, result?}`` value (rendered by the
registry's ``run_code`` output declaration) or a :class:`CodeRunFailedError`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Coroutine
from typing import Any, Final

from dsh_codegen.codegen import ToolSchemaEntry
from dsh_codegen.codemode._pool import SubCallPool
from dsh_codegen.codemode._texts import INVALID_COMPLETION, completion_error_text
from dsh_codegen.json import LosslessJsonError, snapshot_json
from dsh_codegen.registry import (
    UNSET,
    CodeRunFailedError,
    ToolRegistry,
    ToolRunContext,
    ToolScope,
)
from dsh_codegen.registry.code_runtime import CodeRunFailure, CodeRunRequest, CodeRunSuccess, CodeRunSuspended

__all__ = ["FAILURE_KINDS", "CodeModeBridge"]

#: The failure kinds of docs/texts.md; a runtime reporting another kind is reported as ``invalid-output``.
FAILURE_KINDS: Final = frozenset({"exception", "timeout", "abort", "worker-exit", "invalid-output", "output-limit"})


class CodeModeBridge:
    """The Code Mode provider: one :class:`SubCallPool` and one runtime run per ``run_code`` call."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<CodeModeBridge>"

    async def run_code(self, registry: ToolRegistry, run: ToolRunContext, code: str, description: str) -> Any:
        """Run ``code`` in ``registry.code_runtime`` and return the canonical ``{logs, result?}`` value.

        Raised errors: :class:`CodeRunFailedError` for a failed run (the
        runtime's kind and message, and its captured logs); the caller's abort
        reason when the run was aborted because the caller aborted (so the
        result is ``ABORTED``); whatever the runtime raised (it should not);
        ``TypeError`` for a runtime answer that is not a ``CodeRunResult``.
        Every sub-call has committed (its ``tool/code-dispatch`` event logged)
        before this returns or raises. When a sub-call's approval was deferred
        (the outer call runs inside ``execute_tool_calls``), the run stops once
        no sub-call is in flight and this raises ``CallDeferred`` for the
        outer call, holding the run's journal; a resumed run replays its
        program against that journal (see ``_journal``).

        Cancellation: the runtime follows ``run.signal`` itself (through the
        pool) and reports an aborted run with its captured output, so it runs
        in a task of its own that the registry's cancellation of this body
        does not reach: the body waits for the runtime's answer (the signal
        aborted with the cancellation, so it comes promptly) and reports it;
        the registry still records the call's cancellation. If the runtime
        itself raises ``CancelledError`` (or the drain is cancelled), the run
        is settled, every sub-call drained (further cancellations absorbed),
        and the ``CancelledError`` re-raised.
        """
        runtime = registry.code_runtime
        pool = SubCallPool(registry, run)
        request = CodeRunRequest(
            code=code,
            tool_names=pool.tool_names(),
            dispatch=pool.dispatch,
            signal=pool.signal,
            call_id=run.call_id,
            catalog=_catalog(registry, pool.chain),
            resume=pool.runtime_state,
        )
        outcome: object = None
        error: Exception | None = None
        cancelled: asyncio.CancelledError | None = None
        try:
            outcome = await _answer_of(runtime.run(request))  # type: ignore[union-attr]
        except asyncio.CancelledError as exc:
            cancelled = exc
        except Exception as exc:
            error = exc
        pool.settle()
        if await pool.drain() and cancelled is None:
            cancelled = asyncio.CancelledError()
        if cancelled is not None:
            raise cancelled
        if pool.failure is not None:
            raise pool.failure
        if error is not None:
            raise error
        logs = _logs(getattr(outcome, "logs", None)) or []
        if pool.divergence is not None:
            raise CodeRunFailedError("exception", pool.divergence, logs, pool.report())
        suspended = pool.suspended(run, outcome)
        if suspended is not None:
            raise suspended  # no result: the outer call is suspended with the run's journal
        if isinstance(outcome, CodeRunSuspended):
            raise CodeRunFailedError(
                "invalid-output",
                "the code runtime suspended the run, but no tool call awaits approval",
                logs,
                pool.report(),
            )
        unreached = pool.journal.unreached()
        if unreached is not None and not run.execution.signal.aborted:
            raise CodeRunFailedError("exception", unreached, logs, pool.report())
        return _completion(outcome, run, pool)


#: Per registry: each calling chain's catalog, as of the registry version it was read at.
_catalogs: weakref.WeakKeyDictionary[
    ToolRegistry, dict[tuple[ToolScope, ...], tuple[int, tuple[ToolSchemaEntry, ...]]]
] = weakref.WeakKeyDictionary()


def _catalog(registry: ToolRegistry, chain: tuple[ToolScope, ...]) -> tuple[ToolSchemaEntry, ...]:
    """The catalog of the tools ``chain`` sees (the SDK's source), for a runtime's pre-flight check.

    Read once per registry version and chain, so every run of an unchanged
    registry gets the same tuple (a pre-flight check compiles its schemas once
    per catalog). Empty when the registry cannot project a schema (a raw tool
    whose parameters are not lossless JSON): names are still checked.
    """
    version = registry.version
    cached = _catalogs.setdefault(registry, {})
    entry = cached.get(chain)
    if entry is not None and entry[0] == version:
        return entry[1]
    try:
        catalog = tuple(registry.catalog(chain[0] if chain else None))
    except ValueError:
        catalog = ()
    cached[chain] = (version, catalog)
    return catalog


async def _answer_of(runtime_run: Coroutine[Any, Any, Any]) -> Any:
    """The runtime's answer, awaited to its end even when this body is cancelled meanwhile.

    The runtime follows the run's signal, which aborts with any cancellation
    of the body: it then answers with an aborted run (and its output), which
    says more than the cancellation would.
    """
    task = asyncio.ensure_future(runtime_run)
    while not task.done():
        try:
            await asyncio.wait((task,))  # never cancels the task it waits for
        except asyncio.CancelledError:
            continue
    return task.result()


def _completion(outcome: object, run: ToolRunContext, pool: SubCallPool) -> Any:
    """The canonical value of a successful run, or the exception a failed one raises."""
    if isinstance(outcome, CodeRunSuccess):
        logs = _logs(outcome.logs)
        if logs is None:
            raise CodeRunFailedError("invalid-output", INVALID_COMPLETION, (), pool.report())
        value: dict[str, Any] = {"logs": logs}
        if outcome.result is not UNSET:
            try:
                value["result"] = snapshot_json(outcome.result)
            except LosslessJsonError as exc:
                raise CodeRunFailedError("invalid-output", completion_error_text(exc), logs, pool.report()) from None
            except (ValueError, TypeError):
                raise CodeRunFailedError("invalid-output", INVALID_COMPLETION, logs, pool.report()) from None
        return value
    if isinstance(outcome, CodeRunFailure):
        logs = _logs(outcome.logs) or []
        kind = outcome.kind if outcome.kind in FAILURE_KINDS else "invalid-output"
        message = outcome.message if type(outcome.message) is str else INVALID_COMPLETION
        caller = run.execution.signal
        if kind == "abort" and caller.aborted:
            # The run stopped because the caller aborted: the outer result is ABORTED, whatever
            # the reason. Re-raising an exception reason says so; for any other reason (a string,
            # say) the body ends without an error and the pipeline replaces that ending of an
            # aborted call with ABORTED, as it does for any tool.
            if isinstance(caller.reason, BaseException):
                raise caller.reason
            return {"logs": logs}
        raise CodeRunFailedError(kind, message, logs, pool.report())
    raise TypeError(f"code runtime returned {type(outcome).__name__}, not a CodeRunResult")


def _logs(logs: object) -> list[str] | None:
    if not isinstance(logs, (tuple, list)):
        return None
    out = list(logs)
    for line in out:
        if type(line) is not str:
            return None
    return out
