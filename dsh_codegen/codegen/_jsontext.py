"""Stack-safe JSON text for codegen: compact (hashing) and pretty (Markdown).

``json.dumps`` recurses, so a 100,000-deep schema would raise
``RecursionError``; these encoders walk with an explicit stack. Strings are
escaped as ``json.dumps(ensure_ascii=False)`` does, with lone surrogates
escaped ``\\udXXX`` so the text always encodes to UTF-8 (docs/data-model.md, "Text").
Numbers use Python's ``json`` text (``2.0`` stays ``2.0``).
"""

from __future__ import annotations

import json
import json.encoder
import math
import re
from collections.abc import Mapping

from dsh_codegen.json import LosslessJsonError, dump_canonical_json, format_path, quote_path

__all__ = ["JsonTextError", "dumps_compact", "dumps_pretty", "escape_surrogates", "json_string"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_encode_string = json.encoder.encode_basestring


class JsonTextError(ValueError):
    """Raised when a value cannot be written as JSON; the message names the path."""


def escape_surrogates(text: str) -> str:
    """Replace each lone surrogate with the six characters ``\\udXXX``."""
    # isascii() reads a flag CPython keeps on every str: no scan for ASCII text.
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def json_string(text: str) -> str:
    """``text`` as a JSON string literal (non-ASCII raw, lone surrogates escaped)."""
    return escape_surrogates(_encode_string(text))


# A path is a linked list (segment, parent) so pushing a child is O(1).
_Path = tuple[str | int, "_Path"] | None


def _path_text(path: _Path) -> str:
    segments: list[str | int] = []
    while path is not None:
        segments.append(path[0])
        path = path[1]
    segments.reverse()
    return quote_path(format_path(segments, root="catalog"))


def _scalar(value: object, path: _Path) -> str | None:
    """JSON text of a scalar as ``json.dumps`` writes it, ``None`` for a container;
    raises for what ``json.dumps(allow_nan=False)`` rejects."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _encode_string(value)
    if isinstance(value, int):
        try:
            return int.__repr__(value)
        except ValueError:
            raise JsonTextError(f"{_path_text(path)} is an integer too long to write as JSON") from None
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise JsonTextError(f"{_path_text(path)} is {value!r}, which JSON cannot represent")
        return float.__repr__(value)
    if isinstance(value, (dict, list, tuple)):
        return None
    raise JsonTextError(f"{_path_text(path)} is a {type(value).__name__}, not a JSON value")


def _key(key: object, path: _Path) -> str:
    """An object key as ``json.dumps`` writes it (scalar keys become strings)."""
    if isinstance(key, str):
        return _encode_string(key)
    if key is None or isinstance(key, (bool, int, float)):
        return _encode_string(_scalar(key, path) or "")
    raise JsonTextError(f"{_path_text(path)} has a non-string key {key!r}")


class _Close:
    """Stack marker: leave a container (emit its closing text, forget its id)."""

    __slots__ = ("ident", "text")

    def __init__(self, ident: int, text: str) -> None:
        self.ident = ident
        self.text = text


def _dumps(value: object, indent: int, max_pretty_depth: int) -> str:
    out: list[str] = []
    active: set[int] = set()
    # Work items: (value, path, depth) to encode, a str to emit, or a _Close.
    stack: list[str | _Close | tuple[object, _Path, int]] = [(value, None, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        if isinstance(item, _Close):
            active.discard(item.ident)
            out.append(item.text)
            continue
        node, path, depth = item
        text = _scalar(node, path)
        if text is not None:
            out.append(text)
            continue
        ident = id(node)
        if ident in active:
            raise JsonTextError(f"{_path_text(path)} is circular")
        pretty = indent > 0 and depth < max_pretty_depth
        inner = "\n" + " " * (indent * (depth + 1)) if pretty else ""
        outer = "\n" + " " * (indent * depth) if pretty else ""
        colon = ": " if pretty else ":"
        if isinstance(node, Mapping):
            pairs = list(node.items())
            if not pairs:
                out.append("{}")
                continue
            active.add(ident)
            out.append("{")
            stack.append(_Close(ident, outer + "}"))
            for position in range(len(pairs) - 1, -1, -1):
                key, child = pairs[position]
                text = _key(key, path)
                stack.append((child, (key if isinstance(key, str) else text[1:-1], path), depth + 1))
                stack.append(("," if position else "") + inner + text + colon)
        else:
            elements = list(node)  # type: ignore[call-overload]  # a list or tuple here
            if not elements:
                out.append("[]")
                continue
            active.add(ident)
            out.append("[")
            stack.append(_Close(ident, outer + "]"))
            for position in range(len(elements) - 1, -1, -1):
                stack.append((elements[position], (position, path), depth + 1))
                stack.append(("," if position else "") + inner)
    return escape_surrogates("".join(out))


def dumps_compact(value: object) -> str:
    """Compact JSON (``,`` and ``:`` separators), key order kept: the text of
    ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``
    with lone surrogates escaped, for values of any depth.

    Raises :class:`JsonTextError` for NaN, infinities, cycles, unsupported key
    and value types, naming the path.
    """
    try:
        # The lossless-JSON writer (compiled twin) is the fastest path and writes
        # the same text for every value it accepts; what it rejects (NaN, -0.0,
        # subclasses, cycles ...) goes to the stdlib encoder and the walk, which
        # keep their behaviour and phrase the errors.
        return dump_canonical_json(value, sort_keys=False)
    except LosslessJsonError:
        pass
    try:
        # The C encoder is the next path; the walk below handles what it cannot
        # (deep values) and phrases every error with a path. Without its circular
        # check (a fifth of its time) a cycle ends in RecursionError, and the walk
        # then names the cycle's path.
        return escape_surrogates(_COMPACT.encode(value))
    except (RecursionError, TypeError, ValueError):
        return _dumps(value, 0, 0)


def _no_default(value: object) -> object:
    raise TypeError(type(value).__name__)


_COMPACT = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_no_default, check_circular=False
)


def dumps_pretty(value: object, *, indent: int = 2, max_pretty_depth: int = 8) -> str:
    """Indented JSON; containers deeper than ``max_pretty_depth`` stay compact.

    The cap keeps the text linear in the input size for deep values. Raises
    :class:`JsonTextError` like :func:`dumps_compact`.
    """
    return _dumps(value, indent, max_pretty_depth)
