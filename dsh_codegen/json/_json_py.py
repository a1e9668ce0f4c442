"""Lossless JSON, the pure-Python twin (mirrors ``_ext/_json_c.pyx`` name for name).

Every walk here uses an explicit work stack (a list of frames), so values
nested 100,000 deep are processed under the default recursion limit in memory
linear in their size. Traversal order is fixed and shared with the compiled
twin, so both report the same first error: depth first, object members in
insertion order (a member's key is checked before its value), array items in
index order; ``dump_canonical_json`` with ``sort_keys`` checks all keys of an
object before visiting its values. ``parse_json`` is the Python parser of
``_parser`` (re-exported here), which keeps its own explicit stack.

No user code runs in a walk, but a finalizer or a weakref callback (run by
the collector, which any allocation may trigger) can change the value while
it is walked. The rule, shared with the compiled twin: a list whose length
differs from its length when the walk opened it (checked before each item is
read and when it closes), or an object whose size changes or that yields more
members than it had when opened (the rule of ``dict``'s own iterator),
raises :class:`LosslessJsonError` naming that container, never a
``RuntimeError`` and never a partly built copy.
"""

from __future__ import annotations

import math
import re
import sys
from json.encoder import encode_basestring
from typing import Any

from dsh_codegen.json._errors import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_NODES,
    LONE_SURROGATE,
    MAX_SAFE_INTEGER,
    JsonBudgetError,
    LosslessJsonError,
    budget_option,
    changed_error,
    chars_budget_error,
    cycle_error,
    float_error,
    int_too_long,
    int_too_long_error,
    key_error,
    lone_surrogate,
    nodes_budget_error,
    option_error,
    surrogate_error,
    type_error,
    unsafe_int_error,
)
from dsh_codegen.json._frozen import FrozenJsonArray, FrozenJsonObject
from dsh_codegen.json._parser import parse_json

__all__ = [
    "FrozenJsonArray",
    "FrozenJsonObject",
    "JsonBudgetError",
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

    __slots__ = ("items", "dest", "is_obj", "key", "src", "size")

    def __init__(self, src: Any, is_obj: bool) -> None:
        self.src = src
        # len() of an exact dict, list or tuple (or our frozen subclasses) runs no user code.
        self.size = len(src)
        # zip(range(size), ...) reads no item beyond the length at opening, like the compiled twin.
        self.items = iter(src.items()) if is_obj else zip(range(self.size), src)
        self.dest: Any = {} if is_obj else []
        self.is_obj = is_obj
        self.key: str | int = 0 if is_obj else -1


def _path(stack: list[Any], drop: int) -> _Path:
    # The key each open frame is working on is the path to the current value.
    return [frame.key for frame in stack[: len(stack) - drop]]


def _changed(frame: Any) -> bool:
    """Whether the finished frame's container changed while it was walked."""
    if len(frame.src) != frame.size:
        return True
    # A list yields no item beyond its current length: a shorter walk means it shrank meanwhile.
    return not frame.is_obj and frame.key != frame.size - 1


def _kind(value: Any, safe: bool, reuse_frozen: bool, stack: list[_Frame], utf8: bool = False) -> int:
    """Classify ``value``; raise :class:`LosslessJsonError` when it is not lossless."""
    t = type(value)
    if t is str:
        if utf8:
            code = lone_surrogate(value)
            if code >= 0:
                raise surrogate_error(code, _path(stack, 0))
        return _SCALAR
    if t is bool or value is None:
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


# A copy that reaches this many values first checks, without building anything, that the
# whole value fits its budget (building millions of containers is far slower than checking).
_PRECHECK_NODES = 100_000


def _walk(
    root: Any, *, freeze: bool, safe: bool, build: bool, max_nodes: int, for_build: bool = False, utf8: bool = False
) -> Any:
    """Check ``root`` and, when ``build``, return its detached (frozen) copy.

    ``for_build``: a check standing in for a copy (the budget's pre-check): it
    reuses frozen containers only where the copy would, so it counts alike.
    ``utf8``: strings and keys holding a lone surrogate are refused too.
    """
    # A frozen container is lossless by construction; safe_integers and utf8_strings must look inside.
    reuse_frozen = not safe and not utf8 and (freeze or not (build or for_build))
    precheck_at = _PRECHECK_NODES if build and max_nodes > _PRECHECK_NODES else -1
    stack: list[_Frame] = []
    if max_nodes < 1:
        raise nodes_budget_error(max_nodes, [])
    visited = 1
    kind = _kind(root, safe, reuse_frozen, stack, utf8)
    if kind == _SCALAR or kind == _REUSE:
        return root
    stack.append(_Frame(root, kind == _OBJECT))
    on_path = {id(root)}
    while True:
        frame = stack[-1]
        dest = frame.dest
        is_obj = frame.is_obj
        finished = False
        try:
            for key, child in frame.items:
                if is_obj:
                    if type(key) is not str:
                        raise key_error(key, _path(stack, 1))
                    if utf8:
                        code = lone_surrogate(key)
                        if code >= 0:
                            raise surrogate_error(code, _path(stack, 1), key=True)
                frame.key = key
                visited += 1
                if visited > max_nodes:
                    raise nodes_budget_error(max_nodes, _path(stack, 0))
                if visited == precheck_at:
                    _walk(root, freeze=freeze, safe=safe, build=False, max_nodes=max_nodes, for_build=True, utf8=utf8)
                kind = _kind(child, safe, reuse_frozen, stack, utf8)
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
                finished = True
        except RuntimeError:
            # dict's iterator saw the object change size or grow keys.
            raise changed_error(_path(stack, 1)) from None
        if not finished:
            continue
        if _changed(frame) or (build and len(dest) != frame.size):
            raise changed_error(_path(stack, 1))
        stack.pop()
        on_path.discard(id(frame.src))
        done = _seal(dest, freeze) if build else None
        if not stack:
            return done
        if build:
            parent = stack[-1]
            if parent.is_obj:
                parent.dest[parent.key] = done
            else:
                parent.dest.append(done)


def snapshot_json(
    value: object,
    *,
    freeze: bool = True,
    safe_integers: bool = False,
    max_nodes: int | None = DEFAULT_MAX_NODES,
    utf8_strings: bool = False,
) -> Any:
    """Return a detached deep copy of the lossless JSON ``value``.

    Guaranteed: the result shares no mutable container with ``value``; with
    ``freeze`` (the default) every container in it is a
    :class:`FrozenJsonObject` / :class:`FrozenJsonArray` (tuples become
    arrays), without it plain ``dict``/``list``. Shared, non-cyclic references
    are copied independently. Frozen containers in ``value`` are lossless by
    construction and are reused as they are when freezing (``value`` itself is
    returned when it is frozen), unless ``safe_integers`` or ``utf8_strings``
    asks to look inside. ``utf8_strings``: a string or object key holding a
    lone surrogate is refused too (for values bound for a consumer that
    encodes text as UTF-8, which cannot carry one; the writers here escape it).

    Raised errors: :class:`LosslessJsonError` naming the path of the first
    offending value (see the module docstring for the order) when ``value`` is
    not lossless JSON (docs/json.md, "What is JSON here"), when ``safe_integers`` is set
    and an int lies beyond ``±(2**53-1)``, when ``utf8_strings`` is set and a
    string or key holds a lone surrogate, or naming a container that changed
    while it was walked; :class:`JsonBudgetError` when the walk would visit
    more than ``max_nodes`` values (``None``: no limit); ``TypeError`` /
    ``ValueError`` for a ``max_nodes`` that is not ``None`` or an int >= 0.
    """
    limit = budget_option("max_nodes", max_nodes)
    return _walk(
        value, freeze=bool(freeze), safe=bool(safe_integers), build=True, max_nodes=limit, utf8=bool(utf8_strings)
    )


def is_json_value(
    value: object,
    *,
    safe_integers: bool = False,
    max_nodes: int | None = DEFAULT_MAX_NODES,
    utf8_strings: bool = False,
) -> bool:
    """Return whether ``snapshot_json(value, safe_integers=..., max_nodes=..., utf8_strings=...)`` would succeed.

    Never raises for any ``value``: only exact types are inspected, so no user
    code (``__eq__``, ``__hash__``, ``__str__``, iteration) ever runs; a value
    that changes while it is checked, or that exceeds ``max_nodes``, is
    ``False``. Only a bad ``max_nodes`` option raises (as in ``snapshot_json``).
    """
    limit = budget_option("max_nodes", max_nodes)
    try:
        _walk(value, freeze=True, safe=bool(safe_integers), build=False, max_nodes=limit, utf8=bool(utf8_strings))
    except (LosslessJsonError, JsonBudgetError):
        return False
    return True


# --- writers ---------------------------------------------------------------------------------


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _quote(text: str) -> str:
    # json's own escaping with ensure_ascii=False, then lone surrogates escaped so
    # the text always encodes to UTF-8 (docs/data-model.md, "Text").
    quoted: str = encode_basestring(text)
    if not text.isascii() and LONE_SURROGATE.search(quoted) is not None:
        quoted = LONE_SURROGATE.sub(_escape_surrogate, quoted)
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


def _members(value: Any, size: int, sort_keys: bool, stack: list[Any]) -> Any:
    if type(value) is not dict and type(value) is not FrozenJsonObject:
        return zip(range(size), value)
    if not sort_keys:
        return iter(value.items())
    try:
        for key in value:
            if type(key) is not str:
                raise key_error(key, _path(stack, 0))
        pairs = sorted(value.items(), key=_first)
    except RuntimeError:
        raise changed_error(_path(stack, 0)) from None
    return _sorted_members(value, size, pairs)


def _sorted_members(value: Any, size: int, pairs: list[tuple[str, Any]]) -> Any:
    # The pairs were taken when the object was opened; its size is still checked at
    # every step, as dict's own iterator checks it (RuntimeError: the caller words it).
    for pair in pairs:
        if len(value) != size:
            raise RuntimeError("changed")
        yield pair
    if len(value) != size:
        raise RuntimeError("changed")


def _first(item: tuple[str, Any]) -> str:
    return item[0]


class _WriteFrame:
    """One open container of a writer: its remaining members and its separators."""

    __slots__ = ("items", "is_obj", "key", "src", "size", "lead", "close", "colon", "started")

    def __init__(self, items: Any, is_obj: bool, src: Any, size: int, lead: str, close: str, colon: str) -> None:
        self.items = items
        self.is_obj = is_obj
        self.key: str | int = 0 if is_obj else -1
        self.src = src
        self.size = size
        self.lead = lead  # written before each member ("\n" + indent, or "")
        self.close = close  # written before the closing bracket
        self.colon = colon
        self.started = False


def _write(root: Any, pretty_levels: int, indent: int, sort_keys: bool, max_nodes: int, max_chars: int) -> str:
    """Write ``root`` as JSON; containers at depth < ``pretty_levels`` are indented.

    The budget, the same in both twins: a value is counted when it is reached
    (``max_nodes``), and the text's length is checked after each value's own
    text (a scalar, or a container's opening bracket) and once at the end
    (``max_chars``).
    """
    stack: list[Any] = []
    if max_nodes < 1:
        raise nodes_budget_error(max_nodes, [])
    text = _scalar_text(root, stack)
    if text is not None:
        if len(text) > max_chars:
            raise chars_budget_error(max_chars, [])
        return text
    parts: list[str] = []
    on_path: set[int] = set()
    # newlines[d] = "\n" + the indentation of depth d, built on demand.
    newlines: list[str] = []

    def open_container(value: Any) -> int:
        """Write the opening of ``value`` (pushing its frame unless empty); return its length."""
        if id(value) in on_path:
            raise cycle_error(_path(stack, 0))
        is_obj = type(value) is dict or type(value) is FrozenJsonObject
        # The size is read before anything is allocated (an allocation may run a finalizer).
        size = len(value)
        if not size:
            parts.append("{}" if is_obj else "[]")
            return 2
        items = _members(value, size, sort_keys, stack)
        depth = len(stack)
        if depth < pretty_levels:
            while len(newlines) <= depth + 1:
                newlines.append("\n" + " " * (indent * len(newlines)))
            frame = _WriteFrame(items, is_obj, value, size, newlines[depth + 1], newlines[depth], ": ")
        else:
            frame = _WriteFrame(items, is_obj, value, size, "", "", ":")
        parts.append("{" if is_obj else "[")
        on_path.add(id(value))
        stack.append(frame)
        return 1

    length = open_container(root)
    if length > max_chars:
        raise chars_budget_error(max_chars, [])
    visited = 1
    while stack:
        frame = stack[-1]
        lead = frame.lead
        colon = frame.colon
        is_obj = frame.is_obj
        finished = False
        try:
            for key, child in frame.items:
                if is_obj and type(key) is not str:
                    raise key_error(key, _path(stack, 1))
                frame.key = key
                visited += 1
                if visited > max_nodes:
                    raise nodes_budget_error(max_nodes, _path(stack, 0))
                if frame.started:
                    parts.append(",")
                    length += 1
                frame.started = True
                parts.append(lead)
                length += len(lead)
                if is_obj:
                    quoted = _quote(key)
                    parts.append(quoted)
                    parts.append(colon)
                    length += len(quoted) + len(colon)
                text = _scalar_text(child, stack)
                if text is not None:
                    parts.append(text)
                    length += len(text)
                    if length > max_chars:
                        raise chars_budget_error(max_chars, _path(stack, 0))
                    continue
                depth = len(stack)
                length += open_container(child)
                if length > max_chars:
                    raise chars_budget_error(max_chars, _path(stack, len(stack) - depth))
                if len(stack) > depth:
                    break
            else:
                finished = True
        except RuntimeError:
            # dict's iterator (or the sorted members' check) saw the object change.
            raise changed_error(_path(stack, 1)) from None
        if not finished:
            continue
        if len(frame.src) != frame.size or (not is_obj and frame.key != frame.size - 1):
            raise changed_error(_path(stack, 1))
        stack.pop()
        on_path.discard(id(frame.src))
        parts.append(frame.close)
        parts.append("}" if is_obj else "]")
        length += len(frame.close) + 1
    if length > max_chars:
        raise chars_budget_error(max_chars, [])
    return "".join(parts)


def _check_option(name: str, value: object) -> int:
    if type(value) is not int or value < 0:
        raise option_error(name, value)
    return value


def render_json_pretty(
    value: object,
    *,
    indent: int = 2,
    max_indent: int = 10,
    max_nodes: int | None = DEFAULT_MAX_NODES,
    max_chars: int | None = DEFAULT_MAX_CHARS,
) -> str:
    """Render the lossless JSON ``value`` as pretty JSON (docs/texts.md, "run_code output").

    Guaranteed: ``indent`` spaces per level; a container whose children would
    need more than ``max_indent`` spaces renders fully compact (``,`` and
    ``:``, no spaces); ``{}``/``[]`` for empty containers; strings quoted and
    escaped as ``json.dumps(ensure_ascii=False)`` with lone surrogates escaped
    (``\\udXXX``), so the text always encodes to UTF-8; numbers as Python's
    ``json`` writes them. Every root renders as JSON (a string root is quoted).

    Raised errors: :class:`LosslessJsonError` (with the path) when ``value`` is
    not lossless JSON or a container changed while it was written;
    :class:`JsonBudgetError` when the walk would visit more than ``max_nodes``
    values or the text would exceed ``max_chars`` characters (``None``: no
    limit); ``TypeError``/``ValueError`` when ``indent`` or ``max_indent`` is
    not an int >= 0, or a budget is not ``None`` or an int >= 0.
    """
    indent = _check_option("indent", indent)
    max_indent = _check_option("max_indent", max_indent)
    nodes = budget_option("max_nodes", max_nodes)
    chars = budget_option("max_chars", max_chars)
    # A container at depth d is indented when its children's (d + 1) * indent fits.
    pretty_levels = sys.maxsize if indent == 0 else max_indent // indent
    return _write(value, pretty_levels, indent, False, nodes, chars)


def dump_canonical_json(
    value: object,
    *,
    sort_keys: bool = True,
    max_nodes: int | None = DEFAULT_MAX_NODES,
    max_chars: int | None = DEFAULT_MAX_CHARS,
) -> str:
    """Write the lossless JSON ``value`` compactly: no spaces, ``,`` and ``:``.

    Guaranteed: equal to ``json.dumps(value, sort_keys=sort_keys,
    separators=(",", ":"), ensure_ascii=False)`` except that lone surrogates
    are escaped (``\\udXXX``); keys sort by code point. With ``sort_keys``
    (the default) equal values give equal text, for hashing; without it key
    order is kept.

    Raised errors: :class:`LosslessJsonError` (with the path) when ``value`` is
    not lossless JSON or a container changed while it was written;
    :class:`JsonBudgetError` and option errors as for ``render_json_pretty``.
    """
    nodes = budget_option("max_nodes", max_nodes)
    chars = budget_option("max_chars", max_chars)
    return _write(value, 0, 0, bool(sort_keys), nodes, chars)


# --- content blocks (the registry's rendering check) ----------------------------------------


def snapshot_content(value: object) -> FrozenJsonArray | None:
    """Return ``snapshot_json(value)`` if it is a list of content blocks, else ``None``.

    A content block is an object whose ``"type"`` is a string (a tool's
    rendered content, docs/texts.md). One call instead of a snapshot and a
    separate check: the registry runs it on every rendering. ``None`` means
    lossless JSON of another shape (the snapshot is dropped).

    Raised errors: those of ``snapshot_json(value)`` with its defaults
    (:class:`LosslessJsonError`, :class:`JsonBudgetError`).
    """
    frozen = snapshot_json(value)
    if type(frozen) is not FrozenJsonArray:
        return None
    for block in frozen:
        if type(block) is not FrozenJsonObject or type(dict.get(block, "type")) is not str:
            return None
    return frozen
