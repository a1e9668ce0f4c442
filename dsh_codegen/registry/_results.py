"""Execution results and policy decisions (frozen value objects).

A result is either :class:`ToolSuccess` or :class:`ToolFailure`; both are
frozen dataclasses whose JSON parts (``value``, ``content``, ``meta``, each
additional context) are frozen JSON containers once the pipeline returns them.
``UNSET`` marks an absent field where JSON ``null`` is a real value.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, TypeAlias

from dsh_codegen.json import snapshot_json
from dsh_codegen.registry._errors import error_info_of, error_message

__all__ = [
    "UNSET",
    "Accept",
    "AdditionalContext",
    "Allow",
    "Ask",
    "Block",
    "ContentBlock",
    "Deny",
    "JsonValue",
    "PostToolDecision",
    "PreToolDecision",
    "ToolError",
    "ToolErrorInfo",
    "ToolExecutionResult",
    "ToolFailure",
    "ToolSuccess",
    "Unset",
    "error_content",
    "failure_from_exception",
]

#: A lossless JSON value (frozen containers once produced by the registry).
JsonValue: TypeAlias = Any
#: A content block: ``{"type": "text", "text": ...}``, an image block, or any lossless ``{"type": ...}`` object.
ContentBlock: TypeAlias = Mapping[str, Any]
#: ``{"role": "user", "content": [blocks], "source": str, "meta"?: {...}}``, frozen.
AdditionalContext: TypeAlias = Mapping[str, Any]


class Unset(enum.Enum):
    """Type of the :data:`UNSET` sentinel."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: "Absent" where ``None`` (JSON ``null``) is a real value.
UNSET: Final = Unset.UNSET


@dataclass(frozen=True, slots=True)
class ToolErrorInfo:
    """The ``{name, code}`` of a coded (``HarnessError``-like) failure: ``result.error.info``.

    ``code`` is the machine-readable kind (``UNKNOWN_TOOL``, ``INVALID_ARGS``,
    ``INVALID_TOOL_OUTPUT``, ``ABORTED``, ``ABORTED_BEFORE_DISPATCH``,
    ``TOOL_TIMEOUT``, ``CODE_RUN_FAILED``, or your exception's own ``code``);
    ``name`` the exception's name (``ToolNotFoundError``, ...). The codes and
    their messages are listed in docs/texts.md.
    """

    name: str
    code: str

    def to_json(self) -> dict[str, str]:
        """The wire shape ``{"name": ..., "code": ...}``."""
        return {"name": self.name, "code": self.code}


@dataclass(frozen=True, slots=True)
class ToolError:
    """A failure's error: the ``message``, and ``info`` only for coded errors (else ``None``).

    Read a failure's code as ``result.error.info.code`` once ``result.is_error``
    and ``result.error.info is not None``.
    """

    message: str
    info: ToolErrorInfo | None = None


@dataclass(frozen=True, slots=True)
class ToolSuccess:
    """A successful outcome: the canonical ``value`` and its model-facing ``content``.

    ``meta`` is ``UNSET`` unless the tool declares ``presentation_meta`` (and the
    call is top-level); ``concludes_turn`` is set only by ``run.conclude_turn()``.
    """

    value: JsonValue
    content: Sequence[ContentBlock]
    meta: JsonValue | Unset = UNSET
    additional_contexts: Sequence[AdditionalContext] = ()
    concludes_turn: bool = False

    is_error: ClassVar[Literal[False]] = False


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """A failed outcome: never has a ``value``; ``content`` is what the model sees.

    ``error`` is a :class:`ToolError` (``error.message``; ``error.info.code`` for
    coded failures); ``content`` is usually one text block ``Error: <message>``
    (docs/texts.md, "Error content").
    """

    error: ToolError
    content: Sequence[ContentBlock]
    meta: JsonValue | Unset = UNSET
    additional_contexts: Sequence[AdditionalContext] = ()

    is_error: ClassVar[Literal[True]] = True


ToolExecutionResult: TypeAlias = ToolSuccess | ToolFailure


# Decisions -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Allow:
    """Pre-execute decision: let the call proceed (the waterfall's default).

    An ``on_pre_execute`` listener ``fn(execution, next)`` returns ``Allow()`` to
    decide alone, or ``await next()`` to defer to the listeners after it.
    """

    kind: ClassVar[Literal["allow"]] = "allow"


@dataclass(frozen=True, slots=True)
class Deny:
    """Pre-execute decision: fail the call with ``Error: <reason>``; the body does not run.

    ``return Deny("the repository is read-only")`` from an ``on_pre_execute``
    listener. Post-execute still runs (guarantee 25).
    """

    reason: str
    kind: ClassVar[Literal["deny"]] = "deny"


@dataclass(frozen=True, slots=True)
class Ask:
    """Pre-execute decision: ask the approval service (denied when there is none).

    ``Ask("this deletes files")``: the registry's ``ApprovalService`` is asked
    with the reason; without a service, or for a call with no agent, the call
    is denied with the texts of docs/texts.md.
    """

    reason: str | None = None
    kind: ClassVar[Literal["ask"]] = "ask"


@dataclass(frozen=True, slots=True)
class Accept:
    """Post-execute decision: keep the result, optionally replacing ``content`` XOR ``value``.

    ``Accept()`` keeps it as it is; ``Accept(content=[...])`` replaces what the
    model reads; ``Accept(value=...)`` replaces the value (validated and rendered
    again). ``additional_contexts`` are appended after the tool-deferred and
    wrapper contexts. Returned by an ``on_post_execute`` listener
    ``fn(execution, result, next)``.
    """

    content: Sequence[ContentBlock] | Unset = UNSET
    value: JsonValue | Unset = UNSET
    additional_contexts: Sequence[AdditionalContext] = ()
    kind: ClassVar[Literal["accept"]] = "accept"


@dataclass(frozen=True, slots=True)
class Block:
    """Post-execute decision: turn the result into a valueless failure whose content is ``feedback``.

    ``Block([{"type": "text", "text": "that output is private"}])``: the model
    reads the feedback blocks as given (no ``Error:`` prefix). Tool-deferred
    contexts are dropped; only this decision's contexts remain.
    """

    feedback: Sequence[ContentBlock]
    additional_contexts: Sequence[AdditionalContext] = ()
    kind: ClassVar[Literal["block"]] = "block"


PreToolDecision: TypeAlias = Allow | Deny | Ask
PostToolDecision: TypeAlias = Accept | Block


# Failure construction ----------------------------------------------------------


def error_content(message: str) -> Sequence[ContentBlock]:
    """The frozen content of a registry error: exactly ``[{"type": "text", "text": "Error: <message>"}]``."""
    content: Sequence[ContentBlock] = snapshot_json([{"type": "text", "text": "Error: " + message}])
    return content


def failure_from_exception(exc: BaseException, *, additional_contexts: Sequence[AdditionalContext] = ()) -> ToolFailure:
    """Normalize a raised exception into a :class:`ToolFailure`.

    The message follows :func:`error_message`; ``info`` is set only for coded
    exceptions; content is exactly ``Error: <message>``. Never raises.
    """
    message = error_message(exc)
    coded = error_info_of(exc)
    info = None if coded is None else ToolErrorInfo(coded[0], coded[1])
    return ToolFailure(ToolError(message, info), error_content(message), UNSET, tuple(additional_contexts))
