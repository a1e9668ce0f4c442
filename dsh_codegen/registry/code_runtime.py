"""The contract between Code Mode's dispatch bridge and a code runtime.

The registry defines it (layer 4) so that ``ToolRegistry(code_runtime=...)``
can name its type; ``dsh_codegen.codemode`` (layer 5) implements both sides:
the bridge that builds a :class:`CodeRunRequest` for each ``run_code`` call,
and the runtimes (``PythonSubprocessRuntime``, ``MontyRuntime``) that run it.
A third party writes a runtime against this module alone.

One run, from the runtime's side:

1. ``run(request)`` starts the program ``request.code`` with one binding
   namespace ``tools`` whose members are exactly ``request.tool_names``, and
   the error class ``ToolCallError``.
2. Each ``await tools.x(args)`` in the program becomes one call of
   ``request.dispatch("x", args)``, made in the order the program submits the
   calls. ``dispatch`` submits at once (the call is numbered and its arguments
   snapshotted before it returns) and returns an ``asyncio.Future``; the
   future's result is the sub-call's final canonical value, or it raises
   :class:`ToolCallError` whose message the program sees. ``dispatch`` itself
   never raises.
3. The runtime returns a :class:`CodeRunSuccess` (the program's ``print``
   lines and its returned value, if any) or a :class:`CodeRunFailure` of one
   of the :data:`CodeRunFailureKind` kinds. It never raises for anything the
   program did.

What the model is told: the registry renders the SDK text (the ``tools:sdk``
prompt section) for the runtime it holds. A runtime whose programs can do more,
or less, than the common contract says so in an optional ``sdk_notes``
attribute (a tuple of ``str``, each rendered as one more bullet of the SDK
text's ``Inside the program:`` list; see :func:`runtime_sdk_notes`), so the
prompt promises exactly what that runtime runs.

Suspension (optional): a runtime that can dump its interpreter's state says
so with ``snapshots = True``. When a sub-call's approval is deferred (the
run is to be resumed later, maybe in another process), the futures of the
calls the run cannot get an answer for fail with :class:`SubCallSuspended`;
such a runtime then stops the program where it waits for one of them and
returns a :class:`CodeRunSuspended` holding its state (JSON) and the futures
it still holds. The run resumes in a new ``run(request)`` whose
``request.resume`` is that state: the runtime loads it and dispatches the
calls it held again, in the same order. A runtime without snapshots is simply
stopped (its signal aborts) and its program is replayed from the start.

Cancellation: ``request.signal`` aborts when the caller cancels the outer call
or the run settles; the runtime then stops the program and returns a failure of
kind ``"abort"`` once it has stopped (no process or task of the run may
outlive ``run``). If the task awaiting ``run`` is cancelled, the runtime stops
the program the same way and re-raises ``CancelledError``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from dsh_codegen.codegen import ToolSchemaEntry
from dsh_codegen.registry._results import UNSET, JsonValue, Unset
from dsh_codegen.registry.cancel import AbortSignal

__all__ = [
    "CodeDispatch",
    "CodeRunFailure",
    "CodeRunFailureKind",
    "CodeRunRequest",
    "CodeRunResult",
    "CodeRunSuccess",
    "CodeRunSuspended",
    "CodeRuntime",
    "SubCallSuspended",
    "ToolCallError",
    "runtime_sdk_notes",
]

#: How a run failed (docs/texts.md, "Code runtime failure kinds").
CodeRunFailureKind: TypeAlias = Literal[
    "exception", "timeout", "abort", "worker-exit", "invalid-output", "output-limit"
]

#: ``dispatch(tool_name, arguments) -> Future[canonical value]`` (see the module docstring).
CodeDispatch: TypeAlias = Callable[[str, JsonValue], "asyncio.Future[JsonValue]"]


class ToolCallError(Exception):
    """Raised when a binding call fails: all a program learns is the tool and the message.

    The program-side class of the same name carries ``toolName`` (the wire
    name the model reads, docs/texts.md) and ``message``; this host-side one is what
    ``dispatch`` futures raise and runtimes translate.
    """

    def __init__(self, tool_name: str, message: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.message = message


class SubCallSuspended(ToolCallError):
    """What a dispatch future fails with when its call waits for a deferred approval (runtimes with ``snapshots``)."""


@dataclass(frozen=True, slots=True)
class CodeRunRequest:
    """One program to run.

    ``tool_names`` are the visible tools the ``tools`` namespace binds, sorted,
    never ``run_code``. ``call_id`` is the outer ``run_code`` call's id (for a
    runtime's own logs; sub-call ids are the bridge's business). ``catalog``
    (optional, empty by default) holds the visible tools' catalog entries, the
    SDK's source, for a runtime's opt-in static pre-flight check; a runtime
    must not require it. ``resume`` is ``None``, or (a runtime with
    ``snapshots``) the state of a :class:`CodeRunSuspended` to go on from.
    """

    code: str
    tool_names: tuple[str, ...]
    dispatch: CodeDispatch
    signal: AbortSignal
    call_id: str
    catalog: tuple[ToolSchemaEntry, ...] = ()
    resume: JsonValue = None


@dataclass(frozen=True, slots=True)
class CodeRunSuccess:
    """The program finished: one ``logs`` entry per ``print``; ``result`` is ``UNSET`` when it returned ``None``."""

    logs: tuple[str, ...]
    result: JsonValue | Unset = UNSET


@dataclass(frozen=True, slots=True)
class CodeRunFailure:
    """The program did not finish normally; ``message`` is model-facing, ``logs`` what it printed first."""

    kind: CodeRunFailureKind
    message: str
    logs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CodeRunSuspended:
    """The program stopped at a call that waits for a deferred approval (see the module docstring).

    ``state`` is the runtime's own JSON (what ``request.resume`` gives back);
    ``waiting`` the dispatch futures the program still held, in the order the
    resumed run dispatches their calls again; ``logs`` what it printed so far.
    """

    state: JsonValue
    waiting: tuple[asyncio.Future[JsonValue], ...]
    logs: tuple[str, ...] = ()


CodeRunResult: TypeAlias = CodeRunSuccess | CodeRunFailure | CodeRunSuspended


@runtime_checkable
class CodeRuntime(Protocol):
    """A program runner: ``language`` selects the SDK flavor; ``run`` executes one program.

    Optional: ``sdk_notes: tuple[str, ...]``, what the SDK text says of this
    runtime (see the module docstring and :func:`runtime_sdk_notes`).

    Cancellation: see the module docstring.
    """

    language: str

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        """Run ``request.code`` to completion and describe how it ended."""
        ...


def runtime_sdk_notes(runtime: object) -> tuple[str, ...]:
    """The SDK-text notes ``runtime`` declares (its ``sdk_notes``), ``()`` when it declares none.

    Raised errors: ``TypeError`` ``code runtime sdk_notes must be a tuple of
    str, not ...`` for anything else (checked where the SDK text is rendered,
    so a wrong value fails the prompt's assembly, not a model's run).
    """
    notes = getattr(runtime, "sdk_notes", ())
    if type(notes) is not tuple or not all(type(note) is str for note in notes):
        raise TypeError(f"code runtime sdk_notes must be a tuple of str, not {notes!r:.80}")
    return notes
