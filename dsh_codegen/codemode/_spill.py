"""The spill policy: oversized model-facing text is replaced by a preview and a file path.

:func:`spill_policy` registers two listeners on a registry (or a scope):

- a post-execute listener for top-level calls (``execution.parent is None``):
  when the text of the final decision's content (the result's own, an
  ``Accept(content=...)`` replacement, or a ``Block``'s feedback) is longer
  than ``max_bytes`` UTF-8 bytes, it is written whole to a file and the
  decision's text blocks are replaced by one text block: a preview and the
  file's path. Non-text blocks (images) are kept, after it.
- an ``on_code_dispatch_log`` listener doing the same to the ``content`` of
  ``tool/code-dispatch`` events (the durable copy of each sub-call's result),
  so the session log stays bounded while the program still received the value.

Files are written atomically (a temporary file in ``directory``, then
``os.replace``), named after the call id and the sha256 of the text, so
nothing is lost. When the file cannot be written, the content is left as it
was and a WARNING is logged on the ``dsh_codegen`` logger.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from dsh_codegen.registry import (
    CODE_DISPATCH_EVENT,
    UNSET,
    Accept,
    Block,
    Disposer,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolScope,
)

__all__ = ["spill_policy"]

_log = logging.getLogger("dsh_codegen")
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.-]")


def spill_policy(
    registry: ToolRegistry | ToolScope,
    directory: str | os.PathLike[str],
    max_bytes: int,
    *,
    preview_bytes: int | None = None,
) -> Disposer:
    """Spill model-facing text longer than ``max_bytes`` to files in ``directory``; return the disposer.

    ``preview_bytes`` (default ``max_bytes // 2``) is how much of the text the
    replacement keeps, cut at a character boundary. The directory is created
    when the first file is written.

    Raised errors (``ValueError``): ``max_bytes must be a positive integer``;
    ``preview_bytes must be a non-negative integer no larger than max_bytes``.
    """
    if type(max_bytes) is not int or max_bytes < 1:
        raise ValueError("max_bytes must be a positive integer")
    preview = max_bytes // 2 if preview_bytes is None else preview_bytes
    if type(preview) is not int or not 0 <= preview <= max_bytes:
        raise ValueError("preview_bytes must be a non-negative integer no larger than max_bytes")
    spiller = _Spiller(Path(directory), max_bytes, preview)
    disposers = [
        registry.on_post_execute(spiller.post_execute),
        registry.on_code_dispatch_log(spiller.dispatch_log),
    ]

    def dispose() -> None:
        for disposer in disposers:
            disposer()

    return Disposer(dispose)


class _Spiller:
    __slots__ = ("directory", "max_bytes", "preview_bytes")

    def __init__(self, directory: Path, max_bytes: int, preview_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.preview_bytes = preview_bytes

    async def post_execute(self, execution: ToolExecution, result: ToolExecutionResult, next: Any) -> Any:
        """Spill the final decision's content of a top-level call. Cancellation: propagates from ``next``."""
        decision = await next()
        if execution.parent is not None:
            return decision
        if isinstance(decision, Block):
            spilled = self.spill(execution.call_id, decision.feedback)
            return decision if spilled is None else Block(spilled, decision.additional_contexts)
        if isinstance(decision, Accept):
            if decision.value is not UNSET:
                return decision  # a replaced value is rendered later; its content is not known here
            content = result.content if decision.content is UNSET else decision.content
            spilled = self.spill(execution.call_id, content)
            return (
                decision
                if spilled is None
                else Accept(content=spilled, additional_contexts=decision.additional_contexts)
            )
        return decision

    def dispatch_log(self, event: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Spill the content of a ``tool/code-dispatch`` event (other events are kept)."""
        if event.get("type") != CODE_DISPATCH_EVENT:
            return None
        content = event.get("content")
        if not isinstance(content, Sequence):
            return None
        spilled = self.spill(str(event.get("subCallId", "sub-call")), content)
        if spilled is None:
            return None
        return {**event, "content": spilled}

    def spill(self, call_id: str, content: Sequence[Any]) -> list[Any] | None:
        """The replacement content, or ``None`` to keep ``content`` (small enough, or not writable)."""
        texts = [
            block["text"]
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text" and type(block.get("text")) is str
        ]
        text = "\n".join(texts)
        data = text.encode("utf-8", "surrogatepass")
        if len(data) <= self.max_bytes:
            return None
        digest = hashlib.sha256(data).hexdigest()[:16]
        name = f"{_UNSAFE.sub('_', call_id)[:96]}-{digest}.txt"
        try:
            path = self._write(name, data)
        except OSError:
            _log.warning("spill_policy: could not write %s in %s; content kept", name, self.directory, exc_info=True)
            return None
        head = data[: self.preview_bytes].decode("utf-8", "ignore")
        note = f"[output truncated: {len(data)} bytes in full at {path}]"
        replacement: list[Any] = [{"type": "text", "text": f"{head}\n{note}" if head else note}]
        replacement += [
            block
            for block in content
            if not (isinstance(block, Mapping) and block.get("type") == "text" and type(block.get("text")) is str)
        ]
        return replacement

    def _write(self, name: str, data: bytes) -> Path:
        """Write ``data`` to ``directory/name`` atomically; return the path. Raises ``OSError``."""
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / name
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".spill-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
        return target.resolve()
