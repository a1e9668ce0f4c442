"""The approval seam: how a pre-execute ``Ask`` reaches a user."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from dsh_codegen.registry.cancel import AbortSignal

__all__ = ["ApprovalAnswer", "ApprovalRequest", "ApprovalService"]

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
