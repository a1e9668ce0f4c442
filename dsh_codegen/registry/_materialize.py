"""Lossless snapshots of the JSON parts of a call: arguments, content, contexts.

Every function here returns frozen JSON (``FrozenJsonObject``/``FrozenJsonArray``)
and reuses already frozen input as is, so re-materializing a registry-made
result costs one type check per container.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, LosslessJsonError, snapshot_json

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

_CONTEXT_SHAPE: Final = '{"role": "user", "content": [blocks], "source": str, "meta"?: {...}}'
_BLOCK_SHAPE: Final = 'must be an object with a string "type"'


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
        raise ContentShapeError(f"content block [{_first_bad_block(frozen)}] {_BLOCK_SHAPE}")
    raise ContentShapeError("content must be a list of content blocks")


def _first_bad_block(blocks: FrozenJsonArray) -> int:
    """The index of the first element of ``blocks`` that is not a content block, or -1."""
    for index, block in enumerate(blocks):
        if type(block) is not FrozenJsonObject or type(block.get("type")) is not str:
            return index
    return -1


def _json_kind(frozen: object) -> str:
    """What JSON value ``frozen`` (lossless JSON, already frozen) is, with its article."""
    if type(frozen) is FrozenJsonArray:
        return "an array"
    if type(frozen) is str:
        return "a string"
    if type(frozen) is bool:
        return "a boolean"
    if frozen is None:
        return "null"
    return "a number"


def _member_problem(frozen: FrozenJsonObject) -> str | None:
    """Which member keeps the object ``frozen`` from being an additional context, or ``None``."""
    if frozen.get("role") != "user":
        return '"role" is not "user"'
    if type(frozen.get("content")) is not FrozenJsonArray:
        return '"content" is not an array'
    if type(frozen.get("source")) is not str:
        return '"source" is not a string'
    if "meta" in frozen and type(frozen["meta"]) is not FrozenJsonObject:
        return '"meta" is not an object'
    return None


def _context_name(index: int | None) -> str:
    """How an error names the context: alone, or at ``index`` of a sequence."""
    return "an additional context" if index is None else f"additional context [{index}]"


def _shape_error(where: str, index: int | None, problem: str) -> ValueError:
    """The error for a context of the wrong shape, naming ``where``, ``index`` and ``problem``."""
    return ValueError(f"{where}: {_context_name(index)} must be {_CONTEXT_SHAPE} ({problem})")


def snapshot_context(context: object, where: str, *, index: int | None = None) -> FrozenJsonObject:
    """Snapshot one additional context and check its shape.

    Shape: ``{"role": "user", "content": [blocks], "source": str, "meta"?: {...}}``.
    ``where`` names the caller (``defer_context()``, ``Accept``, ...); ``index``,
    when given, is the context's position in the caller's sequence. Every
    error names ``where`` (and ``index``) and the wrong part.

    Raised errors:

    - ``LosslessJsonError`` for lossy input, keeping the type, ``path`` and
      path text of :func:`snapshot_json`'s error (rooted at the context) with
      ``(<where>: in an additional context)`` (or ``in additional context
      [<index>]``) added to its reason;
    - ``ValueError`` for a wrong shape:
      ``<where>: an additional context must be {...} (<what is wrong>)``
      (``additional context [<index>] must be ...`` with an ``index``);
    - :class:`ContentShapeError` (a ``ValueError``) for a bad block in its
      ``content``: ``<where>: content block [<i>] must be an object with a
      string "type"`` (``<where>: additional context [<index>], content block
      [<i>] ...`` with an ``index``).
    """
    try:
        frozen = snapshot_json(context)
    except LosslessJsonError as exc:
        # Same type and path (callers catch ValueError or the exact type); the reason gains the place.
        raise LosslessJsonError(f"{exc.reason} ({where}: in {_context_name(index)})", exc.path) from None
    if type(frozen) is not FrozenJsonObject:
        raise _shape_error(where, index, f"got {_json_kind(frozen)}")
    problem = _member_problem(frozen)
    if problem is not None:
        raise _shape_error(where, index, problem)
    bad = _first_bad_block(frozen["content"])
    if bad >= 0:
        place = "" if index is None else f"additional context [{index}], "
        raise ContentShapeError(f"{where}: {place}content block [{bad}] {_BLOCK_SHAPE}")
    return frozen


def snapshot_contexts(contexts: Sequence[object], where: str) -> tuple[FrozenJsonObject, ...]:
    """Snapshot a sequence of additional contexts (see :func:`snapshot_context`).

    Raised errors: ``TypeError`` when ``contexts`` is not a list or tuple, and
    those of :func:`snapshot_context`, naming the bad context's index.
    """
    if not contexts and type(contexts) is tuple:
        return contexts
    if type(contexts) is not tuple and type(contexts) is not list:
        raise TypeError(f"{where}: additional_contexts must be a list or tuple")
    return tuple(snapshot_context(item, where, index=index) for index, item in enumerate(contexts))
