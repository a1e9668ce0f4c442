"""Stages 1-2: read the call description once, and the outcomes decided at entry."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Final

from dsh_codegen.json import (
    FrozenJsonObject,
    JsonBudgetError,
    LosslessJsonError,
    format_path,
    is_json_value,
    quote_path,
    snapshot_json,
)
from dsh_codegen.schema import relax_strict_arguments
from dsh_codegen.registry._errors import RUN_CODE_NAME, ToolNotFoundError, error_message
from dsh_codegen.registry._execution import ToolExecution, ToolExecutionInput, ToolExecutionToken
from dsh_codegen.registry._materialize import ARGUMENTS_NOT_LOSSLESS
from dsh_codegen.registry._results import ToolFailure
from dsh_codegen.registry.cancel import AbortSignal
from dsh_codegen.registry.pipeline._call import (
    CallEntry,
    CallSettlement,
    aborted_before_dispatch,
    invalid_arguments,
    not_found,
    plain_failure,
)

if TYPE_CHECKING:
    from dsh_codegen.registry._definitions import CompiledTool
    from dsh_codegen.registry._gate import PipelineGate
    from dsh_codegen.registry.pipeline._reads import RegistryReads

__all__ = ["create_execution", "entry_outcome", "input_type_error"]

#: What snapshotting a call's arguments may raise for lossy arguments.
ARGUMENT_SNAPSHOT_ERRORS: Final = (LosslessJsonError, RecursionError, TypeError, ValueError)
_FIELDS: Final = ("call_id", "name", "arguments", "signal", "agent", "parent", "root_call_id")


def _read_fields(input: object) -> tuple[list[Any], str | None]:
    """Each field of a duck-typed call description, read once; and the failure of the first that raised.

    A field that raises on read is ``None`` (``""`` for the two names, a
    fresh signal for ``signal``), so the execution observers see is still
    well formed. The failure names the field and carries the getter's own
    message, for ``arguments`` too (a throwing getter has no arguments to
    call with, and its message says why better than "not lossless").
    """
    values: list[Any] = []
    failure: str | None = None
    for field in _FIELDS:
        try:
            values.append(getattr(input, field))
        except Exception as exc:
            if failure is None:
                failure = f"ToolExecutionInput.{field} could not be read: {error_message(exc)}"
            values.append(AbortSignal() if field == "signal" else "" if field in ("call_id", "name") else None)
    return values, failure


def create_execution(registry: RegistryReads, input: ToolExecutionInput, gate: PipelineGate | None) -> CallEntry:
    """Read every input field exactly once, snapshot the arguments and the listeners.

    ``gate``: the scheduler's ordering hook, or ``None``. Returns the call's
    entry record with its ``ToolExecution`` (the one object every listener,
    hook and the body see) and a fresh settlement record; a failure
    found while reading (lossy arguments, or a field of a duck-typed
    description that raised on read) is kept on it for :func:`entry_outcome`.
    ``finalize_content`` is taken from the tool the calling scope resolves
    now, so it still applies if the tool is disposed mid-pipeline (a tool
    resolved only at dispatch, such as ``run_code``, gives its own then); the
    listeners are the ones registered now. Raises ``TypeError`` only for a
    field of the wrong type (not a call description).
    Cancellation: synchronous; nothing to cancel.
    """
    agent: Hashable | None
    failure: str | None = None
    if type(input) is ToolExecutionInput:
        call_id = input.call_id
        name = input.name
        raw_arguments = input.arguments
        signal = input.signal
        agent = input.agent
        parent = input.parent
        root_call_id = input.root_call_id
    else:  # any object with these attributes, each read exactly once
        values, failure = _read_fields(input)
        call_id, name, raw_arguments, signal, agent, parent, root_call_id = values
    if (
        type(call_id) is not str
        or type(name) is not str
        or type(signal) is not AbortSignal
        or (parent is not None and type(parent) is not ToolExecutionToken)
        or (root_call_id is not None and type(root_call_id) is not str)
    ):
        raise input_type_error(call_id, name, signal, parent, root_call_id)
    chain = () if agent is None else registry.chain_for(agent)
    arguments: Any = None
    if failure is None:
        arguments, failure = take_arguments(raw_arguments)
    compiled, listeners, _guarded, version = registry.entry_view(name, chain)
    checked = False
    if (
        failure is None
        and compiled is not None
        and compiled.args_validator is not None
        and (registry.relax_strict_nulls or compiled.relax_strict_nulls)
    ):
        arguments, checked = strict_arguments(compiled, arguments)
    execution = ToolExecution(ToolExecutionToken(), call_id, name, arguments, signal, agent, parent, root_call_id)
    finalize = None if compiled is None else compiled.finalize_content
    settlement = CallSettlement(finalize, compiled if checked else None)
    return CallEntry(registry, execution, chain, compiled, version, listeners, gate, failure, settlement)


def strict_arguments(compiled: CompiledTool, arguments: Any) -> tuple[Any, bool]:
    """``(arguments, valid)`` for a tool that accepts a strict-mode model's ``null``s.

    Valid arguments are kept as they are. Invalid ones become the same
    arguments without the ``null``s an OpenAI strict-mode model sends for the
    optional properties it leaves out (frozen): valid now, or still invalid,
    and then entry reports the violations that remain (the ``null``s were
    none). ``valid`` says the tool's schema accepted the arguments returned.
    """
    validator = compiled.args_validator
    assert validator is not None
    if validator.is_valid(arguments):
        return arguments, True
    relaxed = snapshot_json(relax_strict_arguments(compiled.parameters, arguments))
    return relaxed, validator.is_valid(relaxed)


def take_arguments(raw: object) -> tuple[Any, str | None]:
    """The call's arguments, frozen, and ``None``; or ``(None, the failure)`` when they cannot cross.

    Arguments go on to tools, which hand them to transports that encode text
    as UTF-8 (an MCP server's stdio, an HTTP client): so besides being
    lossless JSON, their strings and keys must hold no lone surrogate (which
    ``json.loads`` makes of valid JSON text such as ``"\\ud800"``, and which
    UTF-8 cannot carry). This is the one place that rule is enforced for a
    call, with a failure naming the path (``utf8_strings=True``).
    """
    try:
        if type(raw) is FrozenJsonObject:
            # Lossless already (parse_call_arguments made it, the common case): only the
            # strings are left to check, without copying anything.
            if is_json_value(raw, utf8_strings=True):
                return raw, None
        return snapshot_json(raw, utf8_strings=True), None
    except (LosslessJsonError, JsonBudgetError) as exc:
        where = quote_path(format_path(exc.path, "arguments"))
        reason = (
            exc.reason if isinstance(exc, LosslessJsonError) else f"more than {exc.limit} values to walk (max_nodes)"
        )
        return None, f"{ARGUMENTS_NOT_LOSSLESS}: at {where}, {reason}"
    except ARGUMENT_SNAPSHOT_ERRORS:
        return None, ARGUMENTS_NOT_LOSSLESS


def input_type_error(call_id: object, name: object, signal: object, parent: object, root_call_id: object) -> TypeError:
    """The ``TypeError`` for the first malformed field of a call description."""
    if type(call_id) is not str:
        return TypeError(f"ToolExecutionInput.call_id must be a str, got {type(call_id).__name__}")
    if type(name) is not str:
        return TypeError(f"ToolExecutionInput.name must be a str, got {type(name).__name__}")
    if type(signal) is not AbortSignal:
        return TypeError(f"ToolExecutionInput.signal must be an AbortSignal, got {type(signal).__name__}")
    if parent is not None and type(parent) is not ToolExecutionToken:
        return TypeError("ToolExecutionInput.parent must be a ToolExecutionToken or None")
    return TypeError("ToolExecutionInput.root_call_id must be a str or None")


def entry_outcome(call: CallEntry) -> ToolFailure | None:
    """The final outcome decided at entry (unreadable or lossy input, a pre-aborted signal,
    the Code Mode collapse, invalid arguments), or None to run the policy stages.

    In this order: the entry failure (an unreadable field; or lossy
    arguments: ``tool execution arguments must be losslessly
    JSON-serializable``, no info) wins over a pre-aborted caller signal
    (``ABORTED_BEFORE_DISPATCH``), which wins over the Code Mode collapse (a
    model-direct call to a visible native tool under ``code``:
    ``UNKNOWN_TOOL`` with the route-back message), which wins over invalid
    arguments of a tool the registry validates (``INVALID_ARGS``, see
    :func:`arguments_outcome`). Each skips pre-execute, approval, guards,
    dispatch and post-execute (those stages pass it on unchanged). Every call
    comes here, plain ones too. Cancellation: synchronous.
    """
    if call.failure is not None:
        return plain_failure(call.failure)
    if call.execution.signal.aborted:
        return aborted_before_dispatch()
    name = call.execution.name
    registry = call.registry
    chain = call.chain
    if (
        call.execution.parent is None
        and name != RUN_CODE_NAME
        and registry.presentation(chain) == "code"
        and name in registry.view(chain)
    ):
        return not_found(ToolNotFoundError.code_only(name))
    return arguments_outcome(call)


def arguments_outcome(call: CallEntry) -> ToolFailure | None:
    """``INVALID_ARGS`` when the tool resolved at entry validates arguments and refuses these, else ``None``.

    Validation comes before every policy: a pre-execute listener, a guard or
    an approval never sees a call that cannot run, and no human is asked to
    approve one. Raw tools (``ToolDefinition`` without
    ``validates_arguments``) own their validation, inside their body: for
    them this is ``None`` and their policies run first, as before. An
    unknown tool is left to dispatch (``UNKNOWN_TOOL``).
    Cancellation: synchronous.
    """
    compiled = call.compiled
    if compiled is None or compiled.args_validator is None or call.settlement.validated is compiled:
        return None
    invalid = invalid_arguments(compiled, call.execution.arguments)
    if invalid is None:
        call.settlement.validated = compiled
    return invalid
