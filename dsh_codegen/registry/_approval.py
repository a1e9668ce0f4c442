"""The approval seam: how a pre-execute ``Ask`` reaches a user."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from dsh_codegen.registry.cancel import AbortSignal

__all__ = [
    "ApprovalAnswer",
    "ApprovalRequest",
    "ApprovalService",
    "CallDeferred",
    "SuspensionScope",
    "approval_channel",
    "channel_approval",
    "current_suspension_scope",
    "suspension_scope",
]

#: ``"deferred"``: the decision comes later, maybe to another process (see :class:`CallDeferred`).
ApprovalAnswer: TypeAlias = Literal["allowed-once", "rejected", "cancelled", "unavailable", "deferred"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One approval question: who asks, for which call, why, and the caller's signal."""

    agent: Hashable
    tool_name: str
    call_id: str
    reason: str | None
    signal: AbortSignal


@runtime_checkable
class ApprovalService(Protocol):
    """Answers approval requests.

    Any answer other than the :data:`ApprovalAnswer` strings becomes an
    error result; a raising service fails the call like a raising policy.
    ``"deferred"`` suspends the call when its caller can suspend
    (``execute_tool_calls`` raises ``ToolCallsSuspended``); elsewhere it is
    an error result saying so.
    """

    async def request(self, request: ApprovalRequest) -> str:
        """Ask the user about ``request``.

        Cancellation: the service should watch ``request.signal`` and answer
        ``"cancelled"`` once it aborts; the call then ends
        ``ABORTED_BEFORE_DISPATCH``.
        """
        ...


_channel: ContextVar[ApprovalService | None] = ContextVar("dsh_codegen_approval_channel", default=None)


@contextmanager
def approval_channel(service: ApprovalService) -> Iterator[None]:
    """Route the ``Ask`` decisions of calls started inside this block (and their tasks) to ``service``.

    For a caller that has its own way to the user of a call: ``serve_mcp``
    asks the MCP client's user through elicitation. Inside the block
    ``service`` answers instead of the registry's ``approval``, and a call
    needs no agent to route the question (the channel is the route). Blocks
    nest; the innermost wins.
    """
    token = _channel.set(service)
    try:
        yield
    finally:
        _channel.reset(token)


def channel_approval() -> ApprovalService | None:
    """The approval service of the innermost :func:`approval_channel` around this call, if any."""
    return _channel.get()


class CallDeferred(Exception):
    """How a call inside a :class:`SuspensionScope` ends without a result: it is suspended.

    Raised out of ``registry.execute`` (never made into a result, never
    committed) when the call's approval service answered ``"deferred"``
    (``held`` is ``False``), or when the scope was already suspending as the
    call reached its pre-execute phase (``held`` is ``True``: nothing of its
    policy ran, it counts as not started). The scheduler that ran the call
    sees it as the call's error; its owner records the call as suspended.

    A ``run_code`` body raises it for its own call when a sub-call of its
    program was deferred: ``sub_calls`` then lists the deferred sub-calls
    (``(sub_call_id, tool_name, arguments, reason)``) and ``state`` is the
    JSON the run needs to go on (the journal of its finished sub-calls, or
    its runtime's snapshot).
    """

    def __init__(
        self,
        tool_name: str,
        call_id: str,
        reason: str | None,
        *,
        held: bool = False,
        sub_calls: tuple[tuple[str, str, Any, str | None], ...] = (),
        state: Any = None,
    ) -> None:
        super().__init__(f'tool call {call_id} ("{tool_name}") was suspended')
        self.tool_name = tool_name
        self.call_id = call_id
        self.reason = reason
        self.held = held
        self.sub_calls = sub_calls
        self.state = state


class SuspensionScope(Protocol):
    """Whoever can suspend the calls started inside :func:`suspension_scope` (the loop helper, a Code Mode run)."""

    def decision(self, call_id: str) -> str | None:
        """The recorded answer to this call's approval (a resumed call), or ``None`` to ask the service."""
        ...

    def suspending(self) -> bool:
        """Whether an earlier call was deferred: a call reaching pre-execute now is held (not started)."""
        ...

    def deferring(self, call_id: str) -> None:
        """The approval of ``call_id`` was just deferred (called before its policy turn passes)."""
        ...

    def resumed_state(self, call_id: str) -> Any:
        """What a suspended call of this scope left to go on with (a Code Mode run's state), or ``None``."""
        ...


_suspension: ContextVar[SuspensionScope | None] = ContextVar("dsh_codegen_suspension_scope", default=None)


@contextmanager
def suspension_scope(scope: SuspensionScope | None) -> Iterator[None]:
    """Calls started inside this block (and their tasks) may be suspended by ``scope`` (``None``: they may not)."""
    token = _suspension.set(scope)
    try:
        yield
    finally:
        _suspension.reset(token)


def current_suspension_scope() -> SuspensionScope | None:
    """The scope of the innermost :func:`suspension_scope` around this call, if any."""
    return _suspension.get()
