"""The ordering hook a scheduler passes to ``registry.execute(..., gate=...)``.

A scheduler (the loop helper, the Code Mode bridge) lets bodies overlap while
keeping policy and commits in model order. It does so by handing each call a
gate whose two async context managers the pipeline enters at fixed points:

- ``gate.policy()`` wraps the pre-execute waterfall, approval and guards. It is
  entered only when the call reaches pre-execute (not for a pre-aborted entry
  or an argument failure), at most once.
- ``gate.commit()`` wraps post-execute, ``finalize_content`` and ``on_result``.
  It is entered exactly once per ``execute``, also for failures that skip
  post-execute.

The registry never holds a gate while the body runs.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

__all__ = ["PipelineGate"]


@runtime_checkable
class PipelineGate(Protocol):
    """Ordering hook for one call (see the module docstring for when each part is entered)."""

    def policy(self) -> AbstractAsyncContextManager[object]:
        """Context entered around pre-execute + approval + guards.

        Cancellation: if entering raises ``CancelledError`` the call ends as if
        its awaiting task was cancelled before dispatch.
        """
        ...

    def commit(self) -> AbstractAsyncContextManager[object]:
        """Context entered around post-execute + ``finalize_content`` + ``on_result``.

        Cancellation: if entering raises ``CancelledError`` the call's result is
        still finalized and observed (without the gate), then the cancellation
        propagates.
        """
        ...
