"""Suspended tool calls: what a ``"deferred"`` approval leaves behind, as JSON text any store can keep.

When an :class:`~dsh_codegen.registry.ApprovalService` answers
``"deferred"``, :func:`~dsh_codegen.registry.execute_tool_calls` raises
:class:`ToolCallsSuspended`. Its :class:`Suspension` says, in model order,
which calls finished (with their results), which wait for a decision
(:class:`PendingApproval`, listed in :attr:`Suspension.pending`) and which
never started. :meth:`Suspension.to_json` writes it as JSON text (no pickles,
no functions, no secrets) and :meth:`Suspension.from_json` reads it back in
any process; :func:`~dsh_codegen.registry.resume_tool_calls` finishes the
batch once the decisions are known.

The text carries a SHA-256 digest of its content: an edited or truncated
text is refused. (The digest detects damage, not a forger: whoever can
write your store can also recompute it. Keep suspensions where only your
service writes.) It also records a fingerprint of the schemas of the tools
still to run, so a resume against a registry where one was removed or
changed is refused before anything runs.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from dsh_codegen.json import (
    LosslessJsonError,
    dump_canonical_json,
    parse_json,
    snapshot_json,
)
from dsh_codegen.registry._results import JsonValue, ToolExecutionResult, ToolSuccess
from dsh_codegen.registry._session_log import (
    TOOL_RESULT_EVENT,
    replay_result,
    result_fields,
)

if TYPE_CHECKING:
    from dsh_codegen.registry._registry import ToolRegistry

__all__ = [
    "SUSPENSION_FORMAT",
    "PendingApproval",
    "SuspendedCall",
    "SuspendedCallState",
    "Suspension",
    "ToolCallsSuspended",
]

#: The ``format`` of the JSON text this version writes and reads.
SUSPENSION_FORMAT: Final = "dsh_codegen.suspension/1"

#: Where a call of a suspended batch is: it has its result, it waits for a decision, or it never started.
SuspendedCallState: TypeAlias = Literal["finished", "pending", "not-started"]
_STATES: Final = ("finished", "pending", "not-started")
#: The decisions a resume accepts.
DECISIONS: Final = ("allowed-once", "rejected")


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """One deferred approval: answer it by ``approval_id`` when you resume.

    ``call_id``, ``tool_name`` and ``arguments`` are the suspended call's
    (for a Code Mode sub-call: the sub-call's tool and arguments, and
    ``sub_call_id`` is ``<call>:code:<n>``, while ``call_id`` is the
    ``run_code`` call's); ``reason`` is the ``Ask`` decision's.
    """

    approval_id: str
    call_id: str
    tool_name: str
    arguments: JsonValue
    reason: str | None
    sub_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class SuspendedCall:
    """One call of a suspended batch, in model order.

    ``arguments`` are as the model emitted them (raw text or a JSON value);
    ``result`` is set only for a ``"finished"`` call; ``announced`` says
    whether its ``tool/call`` event is logged already (a resume does not log
    it again); ``code`` is what a suspended Code Mode run needs to go on (JSON,
    its runtime's own; ``None`` for any other call).
    """

    call_id: str
    name: str
    arguments: str | JsonValue
    state: SuspendedCallState
    result: ToolExecutionResult | None = None
    announced: bool = False
    code: JsonValue = None


class Suspension:
    """A batch of tool calls stopped at one or more deferred approvals (see the module docstring).

    Made by the loop helper; read it, store ``to_json()``, and hand it (or
    what ``from_json`` read back) to ``resume_tool_calls``.
    """

    __slots__ = ("agent", "batch_id", "calls", "max_parallel", "pending", "suspension_id", "tools")

    def __init__(
        self,
        *,
        suspension_id: str,
        batch_id: str,
        agent: str | None,
        max_parallel: int,
        calls: Sequence[SuspendedCall],
        pending: Sequence[PendingApproval],
        tools: Mapping[str, str],
    ) -> None:
        #: A fresh id per suspension (a resume that suspends again makes a new one).
        self.suspension_id = suspension_id
        #: The ``batchId`` of the batch's session events (a resume logs under the same one).
        self.batch_id = batch_id
        #: The agent the calls ran as, when it was a ``str`` (else ``None``: pass it to the resume).
        self.agent = agent
        self.max_parallel = max_parallel
        self.calls: tuple[SuspendedCall, ...] = tuple(calls)
        #: One entry per deferred call, in model order.
        self.pending: tuple[PendingApproval, ...] = tuple(pending)
        #: Tool name -> fingerprint of its schemas, for the tools still to run.
        self.tools: Mapping[str, str] = dict(tools)

    def __repr__(self) -> str:
        return (
            f"<Suspension {self.suspension_id} calls={len(self.calls)} pending={[p.approval_id for p in self.pending]}>"
        )

    @property
    def results(self) -> dict[str, ToolExecutionResult]:
        """The results of the calls that finished, by call id."""
        return {call.call_id: call.result for call in self.calls if call.result is not None}

    @property
    def not_started(self) -> tuple[SuspendedCall, ...]:
        """The calls that never started (they run when the batch resumes)."""
        return tuple(call for call in self.calls if call.state == "not-started")

    # -- JSON ------------------------------------------------------------------------

    def to_json(self) -> str:
        """The suspension as compact JSON text (see :meth:`from_json`).

        Raised errors: ``ValueError`` naming the call when a call's arguments
        are not lossless JSON (a caller's pre-parsed value holding ``NaN``,
        say), so nothing half-written is returned.
        """
        body = {
            "format": SUSPENSION_FORMAT,
            "suspensionId": self.suspension_id,
            "batchId": self.batch_id,
            "agent": self.agent,
            "maxParallel": self.max_parallel,
            "calls": [_call_json(call) for call in self.calls],
            "pending": [_pending_json(item) for item in self.pending],
            "tools": dict(self.tools),
        }
        try:
            text = _canonical(body)
        except LosslessJsonError as exc:
            raise ValueError(f"suspension cannot be written as JSON: {exc}") from None
        # The canonical text of {"digest": ..., "suspension": body} (keys sorted), without writing body twice.
        return f'{{"digest":{json.dumps(_digest(text))},"suspension":{text}}}'

    @classmethod
    def from_json(cls, text: str) -> Suspension:
        """Read a suspension written by :meth:`to_json`.

        Raised errors: ``TypeError`` when ``text`` is not a ``str``;
        ``ValueError`` saying what is wrong: ``suspension JSON is not valid
        JSON (truncated?): ...``, ``suspension JSON was altered: its digest
        does not match its content``, an unknown ``format``, or a field of
        the wrong shape (named by its path, ``suspension.calls[1].state``).
        """
        if not isinstance(text, str):
            raise TypeError(f"Suspension.from_json() needs a str, got {type(text).__name__}")
        try:
            document = parse_json(text)
        except ValueError as exc:
            raise ValueError(f"suspension JSON is not valid JSON (truncated?): {exc}") from None
        top = _object(document, "suspension JSON")
        body = _object(top.get("suspension"), "suspension JSON: suspension")
        digest = top.get("digest")
        if not isinstance(digest, str) or set(top) != {"digest", "suspension"}:
            raise ValueError("suspension JSON must be an object with exactly 'digest' and 'suspension'")
        if body.get("format") != SUSPENSION_FORMAT:
            raise ValueError(
                f"suspension JSON has format {body.get('format')!r}; this version reads {SUSPENSION_FORMAT!r}"
            )
        if _digest(_canonical(body)) != digest:
            raise ValueError("suspension JSON was altered: its digest does not match its content")
        return _read_body(body)

    # -- checks before a resume ------------------------------------------------------

    def decisions_by_call(self, decisions: object) -> dict[str, str]:
        """Check ``decisions`` (``{approval_id: "allowed-once" | "rejected"}``) and return them by call id.

        Raised errors (nothing has run): ``TypeError`` when ``decisions`` is
        not a mapping; ``ValueError`` for a decision for an approval id this
        suspension does not hold (another batch's), a missing decision, or an
        answer other than the two.
        """
        if not isinstance(decisions, Mapping):
            raise TypeError(f"decisions must be a mapping of approval ids to answers, got {type(decisions).__name__}")
        known = {item.approval_id: item for item in self.pending}
        unknown = [key for key in decisions if key not in known]
        if unknown:
            raise ValueError(
                f"decision for an approval this suspension does not hold: {', '.join(map(repr, unknown))}"
                f" (its pending approvals: {', '.join(map(repr, known))})"
            )
        by_call: dict[str, str] = {}
        for approval_id, item in known.items():
            if approval_id not in decisions:
                raise ValueError(
                    f'no decision for approval {approval_id!r} (tool "{item.tool_name}", call {item.call_id})'
                )
            answer = decisions[approval_id]
            if answer not in DECISIONS or type(answer) is not str:
                raise ValueError(
                    f'decision for approval {approval_id!r} must be "allowed-once" or "rejected", got {answer!r}'
                )
            key = item.call_id if item.sub_call_id is None else item.sub_call_id
            by_call[key] = answer
        return by_call

    def check_registry(self, registry: ToolRegistry, agent: Hashable | None) -> None:
        """Refuse a registry where a tool still to run was removed or changed its schemas since the suspension.

        Raised errors: ``ValueError`` naming the tool (nothing has run).
        """
        chain = registry.chain_for(agent)
        for name, fingerprint in self.tools.items():
            compiled = registry.resolve(name, chain)
            if compiled is None:
                raise ValueError(
                    f'cannot resume: tool "{name}" is not in this registry any more (the suspension needs it)'
                )
            if tool_fingerprint(compiled) != fingerprint:
                raise ValueError(f'cannot resume: tool "{name}" changed its schema since the calls were suspended')


class ToolCallsSuspended(Exception):
    """``execute_tool_calls`` stopped at deferred approvals; ``.suspension`` says where (and resumes it)."""

    def __init__(self, suspension: Suspension) -> None:
        pending = ", ".join(f'"{item.tool_name}" ({item.approval_id})' for item in suspension.pending)
        super().__init__(f"tool calls suspended awaiting approval: {pending}")
        self.suspension = suspension


# -- building -------------------------------------------------------------------------


def new_id() -> str:
    """A fresh id for a suspension or an approval."""
    return uuid.uuid4().hex


def tool_fingerprint(compiled: Any) -> str:
    """A digest of a compiled tool's parameter and output schemas (``"opaque"`` when they are not JSON)."""
    try:
        text = _canonical({"parameters": compiled.parameters, "output": compiled.output_schema})
    except (LosslessJsonError, TypeError, ValueError, RecursionError):
        return "opaque"
    return _digest(text)


def tools_to_check(registry: ToolRegistry, agent: Hashable | None, names: Sequence[str]) -> dict[str, str]:
    """The fingerprints of the tools among ``names`` that resolve now (unknown names are not checked)."""
    chain = registry.chain_for(agent)
    tools: dict[str, str] = {}
    for name in names:
        compiled = registry.resolve(name, chain)
        if compiled is not None:
            tools[name] = tool_fingerprint(compiled)
    return tools


# -- JSON helpers -----------------------------------------------------------------------


def _canonical(value: object) -> str:
    return dump_canonical_json(value, max_nodes=None, max_chars=None)


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _call_json(call: SuspendedCall) -> dict[str, Any]:
    arguments = call.arguments
    if not isinstance(arguments, str):
        try:
            arguments = snapshot_json(arguments)
        except LosslessJsonError as exc:
            raise ValueError(f"call {call.call_id}: arguments are not lossless JSON ({exc})") from None
    out: dict[str, Any] = {
        "callId": call.call_id,
        "name": call.name,
        "argumentsText" if isinstance(call.arguments, str) else "arguments": arguments,
        "state": call.state,
        "announced": call.announced,
    }
    result = call.result
    if result is not None:
        record = result_fields(result)
        if isinstance(result, ToolSuccess):
            record["value"] = result.value
        out["result"] = record
    if call.code is not None:
        out["code"] = call.code
    return out


def _pending_json(item: PendingApproval) -> dict[str, Any]:
    return {
        "approvalId": item.approval_id,
        "callId": item.call_id,
        "toolName": item.tool_name,
        "arguments": item.arguments,
        "reason": item.reason,
        "subCallId": item.sub_call_id,
    }


def _object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object")
    return value


def _field(container: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], where: str) -> Any:
    if key not in container:
        raise ValueError(f"{where}.{key} is missing")
    value = container[key]
    if not isinstance(value, kinds) or (type(value) is bool and kinds is int):
        raise ValueError(f"{where}.{key} has the wrong type ({type(value).__name__})")
    return value


def _read_body(body: Mapping[str, Any]) -> Suspension:
    where = "suspension"
    agent = body.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise ValueError(f"{where}.agent must be a string or null")
    max_parallel = _field(body, "maxParallel", int, where)
    if max_parallel < 1:
        raise ValueError(f"{where}.maxParallel must be positive")
    calls = [
        _read_call(item, f"{where}.calls[{index}]") for index, item in enumerate(_field(body, "calls", list, where))
    ]
    pending = [
        _read_pending(item, f"{where}.pending[{index}]")
        for index, item in enumerate(_field(body, "pending", list, where))
    ]
    tools = _object(_field(body, "tools", dict, where), f"{where}.tools")
    for name, fingerprint in tools.items():
        if not isinstance(fingerprint, str):
            raise ValueError(f"{where}.tools[{name!r}] must be a string")
    ids = [call.call_id for call in calls]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{where}.calls has duplicate call ids")
    states = {call.call_id: call.state for call in calls}
    for index, item in enumerate(pending):
        if states.get(item.call_id) != "pending":
            raise ValueError(f"{where}.pending[{index}] names call {item.call_id!r}, which is not a pending call")
    if not pending:
        raise ValueError(f"{where}.pending is empty: nothing awaits a decision")
    return Suspension(
        suspension_id=_field(body, "suspensionId", str, where),
        batch_id=_field(body, "batchId", str, where),
        agent=agent,
        max_parallel=max_parallel,
        calls=calls,
        pending=pending,
        tools=tools,
    )


def _read_call(item: object, where: str) -> SuspendedCall:
    call = _object(item, where)
    state = _field(call, "state", str, where)
    if state not in _STATES:
        raise ValueError(f"{where}.state must be one of {', '.join(_STATES)}, got {state!r}")
    call_id = _field(call, "callId", str, where)
    if "argumentsText" in call:
        arguments: Any = _field(call, "argumentsText", str, where)
    else:
        if "arguments" not in call:
            raise ValueError(f"{where}.arguments is missing")
        arguments = call["arguments"]
    result = None
    if state == "finished":
        record = _object(_field(call, "result", dict, where), f"{where}.result")
        try:
            result = replay_result({**record, "type": TOOL_RESULT_EVENT, "callId": call_id})
        except ValueError as exc:
            raise ValueError(f"{where}.result: {exc}") from None
        if isinstance(result, ToolSuccess):
            if "value" not in record:
                raise ValueError(f"{where}.result.value is missing")
            result = ToolSuccess(
                record["value"], result.content, result.meta, result.additional_contexts, result.concludes_turn
            )
    elif "result" in call:
        raise ValueError(f"{where}.result is set on a {state} call")
    return SuspendedCall(
        call_id=call_id,
        name=_field(call, "name", str, where),
        arguments=arguments,
        state=state,
        result=result,
        announced=_field(call, "announced", bool, where),
        code=call.get("code"),
    )


def _read_pending(item: object, where: str) -> PendingApproval:
    pending = _object(item, where)
    reason = pending.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ValueError(f"{where}.reason must be a string or null")
    sub_call_id = pending.get("subCallId")
    if sub_call_id is not None and not isinstance(sub_call_id, str):
        raise ValueError(f"{where}.subCallId must be a string or null")
    if "arguments" not in pending:
        raise ValueError(f"{where}.arguments is missing")
    return PendingApproval(
        approval_id=_field(pending, "approvalId", str, where),
        call_id=_field(pending, "callId", str, where),
        tool_name=_field(pending, "toolName", str, where),
        arguments=pending["arguments"],
        reason=reason,
        sub_call_id=sub_call_id,
    )
