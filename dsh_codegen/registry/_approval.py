"""The approval seam: how a pre-execute ``Ask`` reaches a user."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from dsh_codegen.registry.cancel import AbortSignal

__all__ = ["ApprovalAnswer", "ApprovalRequest", "ApprovalService", "approval_channel", "channel_approval"]

ApprovalAnswer: TypeAlias = Literal["allowed-once", "rejected", "cancelled", "unavailable"]


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

    Any answer other than the four :data:`ApprovalAnswer` strings becomes an
    error result; a raising service fails the call like a raising policy.
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
