"""What the pipeline reads of the registry: its small public read interface.

The registry holds state, the pipeline holds order. Every stage reads the
registry through :class:`RegistryReads` (``ToolRegistry`` provides it), so a
reader sees in one place everything a call can depend on, and the type
checker refuses a stage that reaches for anything else.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from dsh_codegen.registry._approval import ApprovalService
    from dsh_codegen.registry._definitions import CompiledTool
    from dsh_codegen.registry._errors import ToolNotFoundError
    from dsh_codegen.registry._registry import ListenerEntry, ListenerSnapshot, PresentationMode, ToolScope

__all__ = ["RegistryReads"]


class RegistryReads(Protocol):
    """The registry as the pipeline sees it (each read is of the registry's state now)."""

    @property
    def approval(self) -> ApprovalService | None:
        """The service that answers an ``Ask`` (``None``: such calls are denied)."""

    @property
    def relax_strict_nulls(self) -> bool:
        """Whether a strict-mode model's ``null`` for an omitted optional property is dropped."""

    @property
    def version(self) -> int:
        """Bumped by every change of tools, masks, presentations and scopes."""

    def chain_for(self, agent: Hashable | None) -> tuple[ToolScope, ...]:
        """The scope chain (nearest first) of a call made as ``agent``."""

    def entry_view(
        self, name: str, chain: tuple[ToolScope, ...]
    ) -> tuple[CompiledTool | None, ListenerSnapshot, bool, int]:
        """What a call sees at entry, in one read: the tool, the listeners, whether a guard applies, the version."""

    def presentation(self, chain: tuple[ToolScope, ...]) -> PresentationMode:
        """The presentation the chain uses (``native``, ``code`` or ``both``)."""

    def view(self, chain: tuple[ToolScope, ...]) -> Mapping[str, CompiledTool]:
        """The tools the chain sees, by name."""

    def resolve(self, name: str, chain: tuple[ToolScope, ...]) -> CompiledTool | None:
        """The tool a call of ``name`` from the chain runs now, or ``None``."""

    def unknown_tool_error(self, name: str, chain: tuple[ToolScope, ...]) -> ToolNotFoundError:
        """The ``UNKNOWN_TOOL`` error for ``name``, which the chain does not resolve."""

    def guarded(self, chain: tuple[ToolScope, ...]) -> bool:
        """Whether any guard applies to a call from the chain now."""

    def guards_of(self, scope: ToolScope | None) -> tuple[ListenerEntry, ...]:
        """The guards of the global layer (``None``) or of ``scope``'s own layer, now."""
