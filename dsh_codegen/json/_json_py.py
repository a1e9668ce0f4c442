"""Lossless JSON, the pure-Python twin (mirrors ``_ext/_json_c.pyx`` name for name).

Every walk here uses an explicit work stack (a list of frames), so values
nested 100,000 deep are processed under the default recursion limit in memory
linear in their size. Traversal order is fixed and shared with the compiled
twin, so both report the same first error: depth first, object members in
insertion order (a member's key is checked before its value), array items in
index order; ``dump_canonical_json`` with ``sort_keys`` checks all keys of an
object before visiting its values. ``parse_json`` lives in ``_parse_py``
(re-exported here) and also keeps its own explicit stack.
"""

from __future__ import annotations

import math
import re
import sys
from json.encoder import encode_basestring
from typing import Any

from dsh_codegen.json._parse_py import parse_json
from dsh_codegen.json._shared import (
    MAX_SAFE_INTEGER,
    FrozenJsonArray,
    FrozenJsonObject,
    LosslessJsonError,
    cycle_error,
    float_error,
    int_too_long,
    int_too_long_error,
    key_error,
    option_error,
    type_error,
    unsafe_int_error,
)

__all__ = [
    "FrozenJsonArray",
    "FrozenJsonObject",
    "LosslessJsonError",
    "dump_canonical_json",
    "is_json_value",
    "parse_json",
    "render_json_pretty",
    "snapshot_json",
]

# Kinds of a value met during a walk.
_SCALAR = 0  # checked; reused as is
_REUSE = 1  # an already frozen container, reused as is
_OBJECT = 2
_ARRAY = 3

_Path = list[str | int]


class _Frame:
    """One open container of a walk: its remaining members and the copy being built."""

    __slots__ = ("items", "dest", "is_obj", "key", "src_id")

    def __init__(self, src: Any, is_obj: bool) -> None:
        self.items = iter(src.items()) if is_obj else enumerate(src)
        self.dest: Any = {} if is_obj else []
        self.is_obj = is_obj
        self.key: str | int = 0
        self.src_id = id(src)


def _path(stack: list[Any], drop: int) -> _Path:
    # The key each open frame is working on is the path to the current value.
    return [frame.key for frame in stack[: len(stack) - drop]]


def _kind(value: Any, safe: bool, reuse_frozen: bool, stack: list[_Frame]) -> int:
    """Classify ``value``; raise :class:`LosslessJsonError` when it is not lossless."""
    t = type(value)
    if t is str or t is bool or value is None:
        return _SCALAR
    if t is int:
        if safe and not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise unsafe_int_error(_path(stack, 0))
        if int_too_long(value):
            raise int_too_long_error(_path(stack, 0))
        return _SCALAR
    if t is float:
        if not math.isfinite(value) or (value == 0.0 and math.copysign(1.0, value) < 0.0):
            raise float_error(value, _path(stack, 0))
        return _SCALAR
    if t is dict:
        return _OBJECT
    if t is list or t is tuple:
        return _ARRAY
    if t is FrozenJsonObject:
        return _REUSE if reuse_frozen else _OBJECT
    if t is FrozenJsonArray:
        return _REUSE if reuse_frozen else _ARRAY
    raise type_error(value, _path(stack, 0))


def _seal(dest: Any, freeze: bool) -> Any:
    if not freeze:
        return dest
    if type(dest) is dict:
        obj = dict.__new__(FrozenJsonObject)
        dict.update(obj, dest)
        return obj
    arr = list.__new__(FrozenJsonArray)
    list.extend(arr, dest)
    return arr


def _walk(root: Any, *, freeze: bool, safe: bool, build: bool) -> Any:
    """Check ``root`` and, when ``build``, return its detached (frozen) copy."""
    # A frozen container is lossless by construction; only safe_integers must look inside.
    reuse_frozen = not safe and (freeze or not build)
    stack: list[_Frame] = []
    kind = _kind(root, safe, reuse_frozen, stack)
    if kind == _SCALAR or kind == _REUSE:
        return root
    stack.append(_Frame(root, kind == _OBJECT))
    on_path = {id(root)}
    while True:
        frame = stack[-1]
        dest = frame.dest
        is_obj = frame.is_obj
        for key, child in frame.items:
            if is_obj and type(key) is not str:
                raise key_error(key, _path(stack, 1))
            frame.key = key
            kind = _kind(child, safe, reuse_frozen, stack)
            if kind == _SCALAR or kind == _REUSE:
                if build:
                    if is_obj:
                        dest[key] = child
                    else:
                        dest.append(child)
                continue
            if id(child) in on_path:
                raise cycle_error(_path(stack, 0))
            on_path.add(id(child))
            stack.append(_Frame(child, kind == _OBJECT))
            break
        else:
            stack.pop()
            on_path.discard(frame.src_id)
            done = _seal(dest, freeze) if build else None
            if not stack:
                return done
            if build:
                parent = stack[-1]
                if parent.is_obj:
                    parent.dest[parent.key] = done
                else:
                    parent.dest.append(done)


def snapshot_json(value: object, *, freeze: bool = True, safe_integers: bool = False) -> Any:
    """Return a detached deep copy of the lossless JSON ``value``.

    Guaranteed: the result shares no mutable container with ``value``; with
    ``freeze`` (the default) every container in it is a
    :class:`FrozenJsonObject` / :class:`FrozenJsonArray` (tuples become
    arrays), without it plain ``dict``/``list``. Shared, non-cyclic references
    are copied independently. Frozen containers in ``value`` are lossless by
    construction and are reused as they are when freezing (``value`` itself is
    returned when it is frozen), unless ``safe_integers`` asks to look inside.

    Raised errors: :class:`LosslessJsonError` naming the path of the first
    offending value (see the module docstring for the order) when ``value`` is
    not lossless JSON (DESIGN.md "lossless"), or when ``safe_integers`` is set
    and an int lies beyond ``±(2**53-1)``.
    """
    return _walk(value, freeze=bool(freeze), safe=bool(safe_integers), build=True)


def is_json_value(value: object, *, safe_integers: bool = False) -> bool:
    """Return whether ``snapshot_json(value, safe_integers=...)`` would succeed.

    Never raises, whatever ``value`` is: only exact types are inspected, so no
    user code (``__eq__``, ``__hash__``, ``__str__``, iteration) ever runs.
    """
    try:
        _walk(value, freeze=True, safe=bool(safe_integers), build=False)
    except LosslessJsonError:
        return False
    return True


# --- writers ---------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _quote(text: str) -> str:
    # json's own escaping with ensure_ascii=False, then lone surrogates escaped so
    # the text always encodes to UTF-8 (DESIGN.md "strings in text").
    quoted: str = encode_basestring(text)
    if not text.isascii() and _SURROGATE.search(quoted) is not None:
        quoted = _SURROGATE.sub(_escape_surrogate, quoted)
    return quoted


def _number_text(value: Any, stack: list[Any]) -> str | None:
    t = type(value)
    if t is int:
        try:
            return int.__repr__(value)
        except ValueError:
            raise int_too_long_error(_path(stack, 0)) from None
    if t is float:
        if not math.isfinite(value) or (value == 0.0 and math.copysign(1.0, value) < 0.0):
            raise float_error(value, _path(stack, 0))
        return float.__repr__(value)
    return None


def _scalar_text(value: Any, stack: list[Any]) -> str | None:
    """The JSON text of a scalar, ``None`` for a container; raises for anything else."""
    t = type(value)
    if t is str:
        return _quote(value)
    if value is None:
        return "null"
    if t is bool:
        return "true" if value else "false"
    text = _number_text(value, stack)
    if text is not None:
        return text
    if t is dict or t is list or t is tuple or t is FrozenJsonObject or t is FrozenJsonArray:
        return None
    raise type_error(value, _path(stack, 0))


def _members(value: Any, sort_keys: bool, stack: list[Any]) -> Any:
    if type(value) is not dict and type(value) is not FrozenJsonObject:
        return enumerate(value)
    if not sort_keys:
        return iter(value.items())
    for key in value:
        if type(key) is not str:
            raise key_error(key, _path(stack, 0))
    return iter(sorted(value.items(), key=_first))


def _first(item: tuple[str, Any]) -> str:
    return item[0]


class _WriteFrame:
    """One open container of a writer: its remaining members and its separators."""

    __slots__ = ("items", "is_obj", "key", "src_id", "lead", "close", "colon", "started")

    def __init__(self, items: Any, is_obj: bool, src_id: int, lead: str, close: str, colon: str) -> None:
        self.items = items
        self.is_obj = is_obj
        self.key: str | int = 0
        self.src_id = src_id
        self.lead = lead  # written before each member ("\n" + indent, or "")
        self.close = close  # written before the closing bracket
        self.colon = colon
        self.started = False


def _write(root: Any, pretty_levels: int, indent: int, sort_keys: bool) -> str:
    """Write ``root`` as JSON; containers at depth < ``pretty_levels`` are indented."""
    stack: list[Any] = []
    text = _scalar_text(root, stack)
    if text is not None:
        return text
    parts: list[str] = []
    write = parts.append
    on_path: set[int] = set()
    # newlines[d] = "\n" + the indentation of depth d, built on demand.
    newlines: list[str] = []

    def open_container(value: Any) -> None:
        if id(value) in on_path:
            raise cycle_error(_path(stack, 0))
        is_obj = type(value) is dict or type(value) is FrozenJsonObject
        if not value:
            write("{}" if is_obj else "[]")
            return
        items = _members(value, sort_keys, stack)
        depth = len(stack)
        if depth < pretty_levels:
            while len(newlines) <= depth + 1:
                newlines.append("\n" + " " * (indent * len(newlines)))
            frame = _WriteFrame(items, is_obj, id(value), newlines[depth + 1], newlines[depth], ": ")
        else:
            frame = _WriteFrame(items, is_obj, id(value), "", "", ":")
        write("{" if is_obj else "[")
        on_path.add(id(value))
        stack.append(frame)

    open_container(root)
    while stack:
        frame = stack[-1]
        lead = frame.lead
        colon = frame.colon
        is_obj = frame.is_obj
        for key, child in frame.items:
            if is_obj and type(key) is not str:
                raise key_error(key, _path(stack, 1))
            if frame.started:
                write(",")
            frame.started = True
            write(lead)
            frame.key = key
            if is_obj:
                write(_quote(key))
                write(colon)
            text = _scalar_text(child, stack)
            if text is not None:
                write(text)
                continue
            open_container(child)
            break
        else:
            stack.pop()
            on_path.discard(frame.src_id)
            write(frame.close)
            write("}" if is_obj else "]")
    return "".join(parts)


def _check_option(name: str, value: object) -> int:
    if type(value) is not int or value < 0:
        raise option_error(name, value)
    return value


def render_json_pretty(value: object, *, indent: int = 2, max_indent: int = 10) -> str:
    """Render the lossless JSON ``value`` as CONTRACT.md section 3.2 pretty JSON.

    Guaranteed: ``indent`` spaces per level; a container whose children would
    need more than ``max_indent`` spaces renders fully compact (``,`` and
    ``:``, no spaces); ``{}``/``[]`` for empty containers; strings quoted and
    escaped as ``json.dumps(ensure_ascii=False)`` with lone surrogates escaped
    (``\\udXXX``), so the text always encodes to UTF-8; numbers as Python's
    ``json`` writes them. Every root renders as JSON (a string root is quoted).

    Raised errors: :class:`LosslessJsonError` (with the path) when ``value`` is
    not lossless JSON; ``TypeError``/``ValueError`` when ``indent`` or
    ``max_indent`` is not an int >= 0.
    """
    indent = _check_option("indent", indent)
    max_indent = _check_option("max_indent", max_indent)
    # A container at depth d is indented when its children's (d + 1) * indent fits.
    pretty_levels = sys.maxsize if indent == 0 else max_indent // indent
    return _write(value, pretty_levels, indent, False)


def dump_canonical_json(value: object, *, sort_keys: bool = True) -> str:
    """Write the lossless JSON ``value`` compactly: no spaces, ``,`` and ``:``.

    Guaranteed: equal to ``json.dumps(value, sort_keys=sort_keys,
    separators=(",", ":"), ensure_ascii=False)`` except that lone surrogates
    are escaped (``\\udXXX``); keys sort by code point. With ``sort_keys``
    (the default) equal values give equal text, for hashing; without it key
    order is kept.

    Raised errors: :class:`LosslessJsonError` (with the path) when ``value`` is
    not lossless JSON.
    """
    return _write(value, 0, 0, bool(sort_keys))
