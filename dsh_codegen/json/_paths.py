"""Path text for violations and errors, shared by every layer (docs/data-model.md, "Paths in messages").

A key matching ``^[A-Za-z_$][A-Za-z0-9_$]*$`` renders ``.key`` (no dot at the
very start of an unrooted path), any other key ``[<json.dumps(key)>]``, an
index ``[i]``. Callers quote the whole text with :func:`quote_path` where
the messages quote it (docs/texts.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

__all__ = ["format_path", "quote_path"]

_BARE_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def format_path(segments: Iterable[str | int], root: str = "") -> str:
    """Render ``segments`` after ``root`` (``""`` for an unrooted path)."""
    parts = [root]
    for segment in segments:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif _BARE_KEY.match(segment):
            parts.append(f".{segment}" if len(parts) > 1 or root else segment)
        else:
            parts.append(f"[{_dump_key(segment)}]")
    return "".join(parts)


def quote_path(path: str) -> str:
    """Quote a whole path text as JSON (``"value.a[0]"``)."""
    return _dump_key(path)


def _dump_key(text: str) -> str:
    # ensure_ascii=False keeps non-ASCII raw; lone surrogates are escaped so the
    # text always encodes to UTF-8 (docs/data-model.md, "Text").
    dumped = json.dumps(text, ensure_ascii=False)
    if any("\ud800" <= ch <= "\udfff" for ch in dumped):
        dumped = "".join(f"\\u{ord(ch):04x}" if "\ud800" <= ch <= "\udfff" else ch for ch in dumped)
    return dumped
