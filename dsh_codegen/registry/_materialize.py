"""Lossless snapshots of the JSON parts of a call: arguments, content, contexts.

Every function here returns frozen JSON (``FrozenJsonObject``/``FrozenJsonArray``)
and reuses already frozen input as is, so re-materializing a registry-made
result costs one type check per container.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, snapshot_json

__all__ = [
    "ARGUMENTS_NOT_LOSSLESS",
    "RESULT_NOT_LOSSLESS",
    "ContentShapeError",
    "check_content",
    "snapshot_context",
    "snapshot_contexts",
]

ARGUMENTS_NOT_LOSSLESS: Final = "tool execution arguments must be losslessly JSON-serializable"
RESULT_NOT_LOSSLESS: Final = "tool result must be losslessly JSON-serializable"


class ContentShapeError(ValueError):
    """Raised when lossless JSON is not a list of ``{"type": str, ...}`` content blocks."""


def check_content(frozen: Any) -> FrozenJsonArray:
    """Return ``frozen`` (already snapshotted) if it is a list of content blocks.

    Raised errors: :class:`ContentShapeError` naming the first bad block.
    """
    if type(frozen) is FrozenJsonArray:
        for block in frozen:
            if type(block) is not FrozenJsonObject or type(block.get("type")) is not str:
                break
        else:
            return frozen
        for index, block in enumerate(frozen):
            if type(block) is not FrozenJsonObject or type(block.get("type")) is not str:
                raise ContentShapeError(
                    f'content block [{index}] must be an object with a string "type"'
                )
    raise ContentShapeError("content must be a list of content blocks")


def snapshot_context(context: object, where: str) -> FrozenJsonObject:
    """Snapshot one additional context and check its shape.

    Shape: ``{"role": "user", "content": [blocks], "source": str, "meta"?: {...}}``.
    Raised errors: ``LosslessJsonError`` for lossy input, ``ValueError`` naming
    ``where`` for a wrong shape.
    """
    frozen = snapshot_json(context)
    if (
        type(frozen) is not FrozenJsonObject
        or frozen.get("role") != "user"
        or type(frozen.get("source")) is not str
        or type(frozen.get("content")) is not FrozenJsonArray
        or ("meta" in frozen and type(frozen["meta"]) is not FrozenJsonObject)
    ):
        raise ValueError(
            f"{where}: an additional context must be "
            '{"role": "user", "content": [blocks], "source": str, "meta"?: {...}}'
        )
    check_content(frozen["content"])
    return frozen


def snapshot_contexts(contexts: Sequence[object], where: str) -> tuple[FrozenJsonObject, ...]:
    """Snapshot a sequence of additional contexts (see :func:`snapshot_context`).

    Raised errors: ``TypeError`` when ``contexts`` is not a list or tuple, and
    those of :func:`snapshot_context`.
    """
    if not contexts and type(contexts) is tuple:
        return contexts
    if type(contexts) is not tuple and type(contexts) is not list:
        raise TypeError(f"{where}: additional_contexts must be a list or tuple")
    return tuple(snapshot_context(item, where) for item in contexts)
