"""JSON Schema -> TypeScript type text (docs/sdk-text.md, "TypeScript").

The general walk uses an explicit stack (no recursion), so a 100,000-deep
schema renders under the default recursion limit (the recursive fast pass
below is bounded and hands such schemas over); a node that is its own ancestor
(a cyclic ``dict``) renders ``unknown``. Object types nested deeper than
:data:`MAX_MULTILINE_DEPTH` render on one line (``{ a: T; b?: U }``) so that
indentation cannot make the text quadratic in the depth.

Speed (render_ts_sdk's hot path): a schema is first written by a bounded
recursive pass (:func:`_fast`), which needs no task tuples, stack markers or
flag lists. It bails out, and the stack walk renders the whole schema instead,
on anything it does not handle plainly: cycles, more than ``_FAST_FRAMES``
nested nodes, objects past :data:`MAX_MULTILINE_DEPTH`, dict subclasses, a
hostile key that raises. In both walks leaf members (plain
scalars, arrays of them, string enums) are written inline, plain objects are
read without a ``Node``, and member and enum texts are cached by value in
bounded process-wide dicts. None of it changes a byte: tests compare the
recursive pass and each fast path with the stack walk, and cold, warm and
overflowing caches with each other.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TypeVar

from dsh_codegen.codegen._literals import code_string, ts_jsdoc, ts_literal
from dsh_codegen.codegen._naming import ts_key
from dsh_codegen.codegen._nodes import (
    ALL_OF,
    Node,
    ANY,
    ARRAY,
    LITERAL,
    MISSING,
    NEVER,
    OBJECT,
    RECORD,
    REF,
    SCALAR_NODE_KEYS,
    TUPLE,
    UNION,
    ObjectParts,
    description_of,
    doc_of,
    merge_all_of,
    read_node,
    read_node_or_raise,
    read_plain_object,
)
from dsh_codegen.codegen._refs import RefResolver

__all__ = ["MAX_MULTILINE_DEPTH", "clear_caches", "interface_body", "json_schema_to_ts", "schema_to_ts"]

#: Object levels rendered multi-line; deeper object types render on one line.
MAX_MULTILINE_DEPTH = 16

_OPEN_SUFFIX = " & Record<string, JsonValue>"
# A record type is written as an index signature, not ``Record<string, T>``: tsc defers
# an object literal type, so a definition may contain itself (``type J = { [key: string]: J }``).
_RECORD_OPEN = "{ [key: string]: "
_RECORD_CLOSE = " }"
_SCALARS = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}


_K = TypeVar("_K")
_V = TypeVar("_V")


def _has_bar(text: str) -> bool:
    return "|" in text or "&" in text


class _Build:
    """Stack marker: the children of a union, array or object are done."""

    __slots__ = ("kind", "count", "ident", "slot", "closing", "bar")

    def __init__(self, kind: str, count: int, ident: int, slot: int = 0, closing: str = "", bar: bool = False) -> None:
        self.kind = kind
        self.count = count
        self.ident = ident
        self.slot = slot  # index in the output of the "(" placeholder (arrays)
        self.closing = closing  # text after the last child (objects)
        self.bar = bar  # own text (keys, docs, suffix) contains "|" or "&"


def json_schema_to_ts(schema: object, indent: int = 0) -> str:
    """TypeScript type text for ``schema``; never raises.

    ``indent`` counts levels (two spaces each): members of a multi-line object
    sit at ``indent + 1``, its closing brace at ``indent``. Unsupported or
    malformed parts render ``unknown``; ``{}`` renders ``JsonValue``.
    """
    level = indent if type(indent) is int and indent >= 0 else 0
    return schema_to_ts(schema, level, None)


def schema_to_ts(schema: object, level: int, refs: RefResolver | None) -> str:
    """:func:`json_schema_to_ts` with a reference resolver: in an SDK render, ``refs``
    names every referenced definition (the caller declares them); without one,
    references are expanded in place and a recursive one renders ``unknown``."""
    try:
        return _type_text(schema, level, refs)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - the contract is "never raises"; a bug here must not break prompts
        return "unknown"


def _type_text(schema: object, level: int, refs: RefResolver | None) -> str:
    """The type text of ``schema`` at ``level``: the recursive fast path, or the
    stack walk when the fast path bails out (same text either way). May raise
    (the public callers degrade that to ``unknown``)."""
    out: list[str] = []
    try:
        _fast(schema, level, 0, 0, out, refs)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - a _Bail, a RecursionError near the limit or a hostile key
        return _render(schema, level, refs)
    return "".join(out)


class _Bail(Exception):
    """The fast path gives up on a schema; the stack walk renders it instead.

    Raised as a fresh instance each time: a shared one would keep its last traceback,
    and through it the abandoned partial output, alive."""


#: Nodes nested deeper than this (objects, arrays, unions alike) send the fast path to
#: the stack walk: a cycle or a very deep schema costs at most this many frames.
_FAST_FRAMES = 48
_PLAIN_OBJECT_KEYS = SCALAR_NODE_KEYS | {"properties", "required", "additionalProperties"}
#: ``required`` lists longer than this are read into a frozenset (else ``in`` on the list).
_SHORT_REQUIRED = 8


def _fast(
    schema: object, level: int, depth: int, frames: int, out: list[str], refs: RefResolver | None = None
) -> bool:
    """Append the type text of ``schema`` to ``out``; return whether it contains "|" or "&".

    Recursive, so only for what recursion handles well: it raises :class:`_Bail` for
    a dict subclass, an object past :data:`MAX_MULTILINE_DEPTH` or a node more than
    :data:`_FAST_FRAMES` deep (so a cycle too: the stack walk renders its repeat
    ``unknown``).
    Every text it writes is the stack walk's text for the same node (tests compare
    them); ``depth`` counts enclosing objects as the stack walk's does.
    """
    if type(schema) is not dict:
        if isinstance(schema, dict):
            raise _Bail
        # read_node: the boolean schemas, and anything else but a mapping is unknown
        out.append("JsonValue" if schema is True else "never" if schema is False else "unknown")
        return False
    declared = schema.get("type")
    if type(declared) is str:
        if declared in _SCALARS and SCALAR_NODE_KEYS.issuperset(schema):
            out.append(_SCALARS[declared])
            return False
        if declared == "object" and _PLAIN_OBJECT_KEYS.issuperset(schema):
            return _fast_object(schema, level, depth, frames, out, refs)
        if declared == "array" and _ARRAY_LEAF_KEYS.issuperset(schema):
            # read_node's plain array, read in place.
            items = schema.get("items", _MISSING)
            if items is _MISSING:
                out.append("JsonValue[]")
                return False
            if type(items) is dict:
                item_type = items.get("type")
                if type(item_type) is str and item_type in _SCALARS and SCALAR_NODE_KEYS.issuperset(items):
                    out.append(_SCALARS[item_type] + "[]")
                    return False
            if frames >= _FAST_FRAMES:
                raise _Bail
            slot = len(out)
            out.append("")
            if _fast(items, level, depth, frames + 1, out, refs):
                out[slot] = "("
                out.append(")[]")
                return True
            out.append("[]")
            return False
    if (declared is None or declared == "string") and "enum" in schema and _ENUM_LEAF_KEYS.issuperset(schema):
        # A string enum, as _leaf_type reads it.
        values = schema.get("enum")
        if type(values) is list and values and _STR_ONLY.issuperset(map(type, values)):
            joined, bar = _literal_text(values)
            out.append(joined)
            return bar
    if frames >= _FAST_FRAMES:
        raise _Bail
    # Not read_node: its net would turn a RecursionError into "unknown" instead of a bail.
    node = read_node_or_raise(schema)
    kind = node.kind
    if kind in _SCALARS:
        out.append(_SCALARS[kind])
        return False
    if kind == ARRAY:
        if not node.has_items:
            out.append("JsonValue[]")
            return False
        slot = len(out)
        out.append("")
        if _fast(node.items, level, depth, frames + 1, out, refs):
            out[slot] = "("
            out.append(")[]")
            return True
        out.append("[]")
        return False
    if kind == LITERAL:
        joined, bar = _literal_text(node.literals)
        out.append(joined)
        return bar
    if kind == UNION:
        branches = node.branches
        bar = len(branches) > 1
        for position, branch in enumerate(branches):
            if position:
                out.append(" | ")
            if _fast(branch, level, depth, frames + 1, out, refs):
                bar = True
        return bar
    if kind == REF and refs is not None:
        target = refs.resolve(node.ref)
        named = None if target is MISSING else refs.name(node.ref, target)
        if named is not None:
            out.append(named[0])
            return False
    if kind in _WALK_ONLY:
        raise _Bail  # not a plain exact-dict object, a reference to expand, a tuple...: the stack walk
    out.append("JsonValue" if kind == ANY else "never" if kind == NEVER else "unknown")
    return False


#: Node kinds the recursive pass leaves to the stack walk.
_WALK_ONLY = frozenset({OBJECT, REF, ALL_OF, TUPLE, RECORD})


def _fast_object(
    schema: dict[object, object], level: int, depth: int, frames: int, out: list[str], refs: RefResolver | None
) -> bool:
    """:func:`_fast` for a plain object node (keys within :data:`_PLAIN_OBJECT_KEYS`):
    the parts checks of ``read_plain_object``, and the member lines of ``_push_object``."""
    # The checks of read_plain_object: an odd part makes the node "unknown", as the
    # stack walk renders it (read_plain_object and read_node both refuse it; an
    # object with odd parts has no children, so no cycle check is skipped), e.g. the
    # common ``"additionalProperties": {schema}``. Only a dict subclass of
    # ``properties``, which the stack walk reads, bails.
    properties = schema.get("properties", _MISSING)
    listed = schema.get("required", _MISSING)
    additional = schema.get("additionalProperties", True)
    record: object = None
    if type(additional) is not bool:
        if type(additional) is not dict:
            raise _Bail  # malformed (or a dict subclass): the stack walk reads it
        # A schema for the other values: a record type without properties, else open.
        record = additional
        additional = True
    required: Collection[str] = ()
    if listed is not _MISSING:
        if type(listed) is not list or not _STR_ONLY.issuperset(map(type, listed)):
            out.append("unknown")
            return False
        # ``in`` on a short list beats building a frozenset; both compare exact strs.
        required = listed if len(listed) <= _SHORT_REQUIRED else frozenset(listed)
    if properties is _MISSING or (type(properties) is dict and not properties):
        if record is not None:
            if frames >= _FAST_FRAMES:
                raise _Bail
            out.append(_RECORD_OPEN)
            bar = _fast(record, level, depth, frames + 1, out, refs)
            out.append(_RECORD_CLOSE)
            return bar
        out.append("Record<string, JsonValue>" if additional else "Record<string, never>")
        return False
    if type(properties) is not dict:
        if isinstance(properties, dict):
            raise _Bail
        out.append("unknown")
        return False
    if not _STR_ONLY.issuperset(map(type, properties)):
        out.append("unknown")
        return False
    if depth >= MAX_MULTILINE_DEPTH or frames >= _FAST_FRAMES:
        raise _Bail
    bar = additional  # an open object ends "& Record<...>"
    scalars = _SCALARS
    scalar_keys = SCALAR_NODE_KEYS
    members = _MEMBERS
    member_level = level + 1
    emit = out.append
    emit("{\n")
    for key, child in properties.items():
        description: str | None = None
        if type(child) is dict:
            text = child.get("description")
            if type(text) is str:
                description = text
            declared = child.get("type")
            if type(declared) is str and declared in scalars and scalar_keys.issuperset(child):
                # A plain scalar member is one finished line (the common case).
                is_required = key in required
                found = members.get((key, is_required, description, member_level, declared))
                if found is None:
                    found = _member(key, is_required, description, member_level, declared)
                emit(found[0])
                if found[1]:
                    bar = True
                continue
            description = doc_of(child)
        elif isinstance(child, dict):
            raise _Bail
        is_required = key in required
        found = members.get((key, is_required, description, member_level, None))
        if found is None:
            found = _member(key, is_required, description, member_level, None)
        emit(found[0])
        if found[1]:
            bar = True
        if _fast(child, member_level, depth + 1, frames + 1, out, refs):
            bar = True
        emit(";\n")
    emit("  " * level + ("}" if not additional else "}" + _OPEN_SUFFIX))
    return bar


def _render(schema: object, indent: int, refs: RefResolver | None = None) -> str:
    # Text is emitted in order into ``out`` and joined once, so deep nesting
    # stays linear; each finished node leaves one flag on ``flags``: whether its
    # text contains "|" or "&" (an array of it then needs "(T)[]"). An array
    # reserves a slot for "(" and fills it when its item is done. This loop is
    # the hot path of render_ts_sdk: lookups are bound to locals, and leaves
    # (plain scalars, arrays of them, objects of them) never touch the stack.
    out: list[str] = []
    flags: list[bool] = []
    active: set[int] = set()
    # Schemas the dialect's reading synthesizes (union branches, merged allOf parts)
    # stay alive for the walk, so their ids in ``active`` are never reused.
    alive: list[object] = []
    stack: list[_Build | str | tuple[object, int, int]] = [(schema, indent, 0)]
    emit = out.append
    flag = flags.append
    push = stack.append
    pop = stack.pop
    scalars = _SCALARS
    scalar_keys = SCALAR_NODE_KEYS
    while stack:
        item = pop()
        if type(item) is str:
            emit(item)
            continue
        if type(item) is _Build:
            _finish(item, out, flags)
            active.discard(item.ident)
            continue
        task: tuple[object, int, int] = item  # type: ignore[assignment]  # not str, not _Build: a node
        node_schema, level, depth = task
        is_object = False
        if type(node_schema) is dict:
            declared = node_schema.get("type")
            if type(declared) is str:
                if declared in scalars and scalar_keys.issuperset(node_schema):
                    emit(scalars[declared])
                    flag(False)
                    continue
                is_object = declared == "object"
        ident = id(node_schema)
        if ident in active:
            emit("unknown")
            flag(False)
            continue
        parts: ObjectParts | None = None
        if is_object:
            # Most non-leaf nodes are plain objects: read them without a Node.
            try:
                parts = read_plain_object(node_schema)  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - read_node below degrades it
                parts = None
        if parts is None:
            node = read_node(node_schema)
            if node.kind == OBJECT:
                parts = (node.properties, node.required, node.closed)
        if parts is not None:
            if not parts[0]:
                emit("Record<string, never>" if parts[2] else "Record<string, JsonValue>")
                flag(False)
            elif depth >= MAX_MULTILINE_DEPTH:
                _push_one_line(parts, ident, level, depth + 1, out, stack, active)
            else:
                _push_object(parts, ident, level, depth + 1, out, flags, stack, active)
            continue
        kind = node.kind
        if kind in scalars:
            emit(scalars[kind])
            flag(False)
        elif kind in _DIALECT_KINDS:
            if refs is None:
                refs = RefResolver(schema)
            alive.append(node)
            _push_dialect(node, ident, level, depth, out, flags, stack, active, refs, alive)
        elif kind == ARRAY:
            if not node.has_items:
                emit("JsonValue[]")
                flag(False)
                continue
            items = node.items
            if type(items) is dict:
                declared = items.get("type")
                if type(declared) is str and declared in scalars and scalar_keys.issuperset(items):
                    emit(scalars[declared] + "[]")
                    flag(False)
                    continue
            active.add(ident)
            push(_Build(ARRAY, 1, ident, slot=len(out)))
            emit("")
            push((items, level, depth))
        elif kind == LITERAL:
            joined, bar = _literal_text(node.literals)
            emit(joined)
            flag(bar)
        elif kind == UNION:
            alive.append(node)
            active.add(ident)
            push(_Build(UNION, len(node.branches), ident))
            for position in range(len(node.branches) - 1, -1, -1):
                push((node.branches[position], level, depth))
                if position:
                    push(" | ")
        elif kind == ANY:
            emit("JsonValue")
            flag(False)
        else:
            emit("unknown")
            flag(False)
    return "".join(out)


# Caches by value, for texts that repeat across members, tools and renders:
# every key is built from exact ``str``/``bool``/``int`` values (or ``None``), so
# equal keys always mean equal text. Cleared when full, so memory stays bounded.
_CACHE_LIMIT = 16384
#: (key, required, description, level, scalar type or None) -> (member text, has "|"/"&").
#: With a scalar type the text is the whole member line; without, the part before the type.
_MEMBERS: dict[tuple[str, bool, str | None, int, str | None], tuple[str, bool]] = {}
#: Tuple of exact-``str`` enum values -> (literal union text, has "|"/"&").
_STRING_LITERALS: dict[tuple[str, ...], tuple[str, bool]] = {}
_STR_ONLY = frozenset({str})


def clear_caches() -> None:
    """Forget every cached member and literal text (benchmarks use it to time a
    first render; output never depends on the caches)."""
    _MEMBERS.clear()
    _STRING_LITERALS.clear()


def _remember(cache: dict[_K, _V], key: _K, value: _V) -> _V:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value


def _literal_text(values: Sequence[object]) -> tuple[str, bool]:
    """The union of literal types of an enum/const, or ``unknown``; and whether it has "|"/"&"."""
    if not _STR_ONLY.issuperset(map(type, values)):
        return _literal_union(values)
    key: tuple[str, ...] = tuple(values)  # type: ignore[arg-type]  # exact strs: equal tuples, equal text
    found = _STRING_LITERALS.get(key)
    if found is None:
        # ts_literal of a str is its code string.
        joined = " | ".join(map(code_string, key))
        found = _remember(_STRING_LITERALS, key, (joined, _has_bar(joined)))
    return found


def _literal_union(values: Sequence[object]) -> tuple[str, bool]:
    texts = [ts_literal(value) for value in values]
    if None in texts:
        return "unknown", False
    joined = " | ".join(texts)  # type: ignore[arg-type]
    return joined, _has_bar(joined)


def _plain_scalar(schema: object) -> str | None:
    """The type text of a plain scalar node (``{"type": "string", ...annotations}``), else ``None``."""
    if type(schema) is dict:
        declared = schema.get("type")
        if type(declared) is str and declared in _SCALARS and SCALAR_NODE_KEYS.issuperset(schema):
            return _SCALARS[declared]
    return None


def _member(key: str, required: bool, description: str | None, level: int, scalar: str | None) -> tuple[str, bool]:
    """A multi-line member's text: its JSDoc line, indent, key, ``?``, ``: `` and, for
    a plain scalar type, the type and ``;\\n``; plus whether it contains "|" or "&"."""
    pad = "  " * level
    name = ts_key(key) if required else ts_key(key) + "?"
    doc = None if description is None else ts_jsdoc(description)
    text = f"{pad}{name}: " if doc is None else f"{pad}/** {doc} */\n{pad}{name}: "
    if scalar is not None:
        text += _SCALARS[scalar] + ";\n"
    # Only the key and the JSDoc text can hold "|" or "&" (pads, "/** */", ": " and
    # scalar type names cannot), so the whole text tells.
    result = (text, "|" in text or "&" in text)
    if len(_MEMBERS) >= _CACHE_LIMIT:
        _MEMBERS.clear()
    _MEMBERS[(key, required, description, level, scalar)] = result
    return result


def interface_body(rows: Iterable[tuple[str, str | None, str]]) -> str:
    """The braces of an interface whose members are ``rows`` of (key, description,
    type text at indent 1), in the given order: ``{}`` when there are none, else
    ``{``, per row an optional ``/** <JSDoc> */`` line and ``  <key>: <type>;``, then ``}``.

    The member layout of a closed object type whose members are all required (the
    same cached member heads), so ``ToolArgsMap`` lines read like nested members.
    """
    parts = ["{\n"]
    append = parts.append
    members = _MEMBERS
    for key, description, text in rows:
        found = members.get((key, True, description, 1, None))
        if found is None:
            found = _member(key, True, description, 1, None)
        append(found[0])
        append(text)
        append(";\n")
    if len(parts) == 1:
        return "{}"
    append("}")
    return "".join(parts)


_Stack = list[_Build | str | tuple[object, int, int]]
_ARRAY_LEAF_KEYS = SCALAR_NODE_KEYS | {"items"}
_ENUM_LEAF_KEYS = SCALAR_NODE_KEYS | {"enum"}
_MISSING = object()


def _leaf_type(schema: dict[object, object], declared: object) -> tuple[str, bool] | None:
    """Type text and "|"/"&" flag of a node that needs no stack: an array of plain
    scalars (or without ``items``) or a string enum; ``None`` for anything else.

    The same text and flag as the stack walk gives (the checks are those of
    ``read_node`` for these shapes). ``declared`` is the node's ``type``. May
    raise on hostile keys: the caller then lets the stack walk read the node.
    """
    if type(declared) is not str and declared is not None:
        return None
    if declared == "array":
        if not _ARRAY_LEAF_KEYS.issuperset(schema):
            return None
        items = schema.get("items", _MISSING)
        if items is _MISSING:
            return "JsonValue[]", False
        if type(items) is dict:
            item_type = items.get("type")
            if type(item_type) is str and item_type in _SCALARS and SCALAR_NODE_KEYS.issuperset(items):
                return _SCALARS[item_type] + "[]", False
        return None
    if (declared is None or declared == "string") and "enum" in schema and _ENUM_LEAF_KEYS.issuperset(schema):
        values = schema.get("enum")
        if type(values) is list and values and _STR_ONLY.issuperset(map(type, values)):
            return _literal_text(values)
    return None


def _push_object(
    parts: ObjectParts, ident: int, level: int, depth: int, out: list[str], flags: list[bool], stack: _Stack,
    active: set[int],
) -> None:
    """A multi-line object: text up to its first non-leaf member goes straight to
    ``out``; the rest is pushed (text between children joined into one item)."""
    properties, required, closed = parts
    bar = not closed
    scalars = _SCALARS
    scalar_keys = SCALAR_NODE_KEYS
    members = _MEMBERS
    member_level = level + 1
    emit = out.append
    out.append("{\n")
    tasks: list[str | tuple[object, int, int]] = []
    segment: list[str] | None = None  # text after the last non-leaf member (None: none yet)
    put = emit  # where finished member text goes: ``out``, then the current segment
    for key, child in properties:
        leaf: tuple[str, bool] | None = None
        description: str | None = None
        if type(child) is dict:
            # description_of, inlined: hostile keys degrade to "no description".
            try:
                text = child.get("description")
            except Exception:  # noqa: BLE001
                text = None
            if type(text) is str:
                description = text
            declared = child.get("type")
            if type(declared) is str and declared in scalars and scalar_keys.issuperset(child):
                # A plain scalar member is one finished line (the common case).
                is_required = key in required
                found = members.get((key, is_required, description, member_level, declared))
                if found is None:
                    found = _member(key, is_required, description, member_level, declared)
                put(found[0])
                if found[1]:
                    bar = True
                continue
            description = doc_of(child)
            try:
                leaf = _leaf_type(child, declared)
            except Exception:  # noqa: BLE001 - the stack walk reads it (and degrades) instead
                leaf = None
        else:
            text = description_of(child)
            if type(text) is str:
                description = text
        is_required = key in required
        found = members.get((key, is_required, description, member_level, None))
        if found is None:
            found = _member(key, is_required, description, member_level, None)
        head, head_bar = found
        if head_bar:
            bar = True
        if leaf is not None:
            # An array of scalars or a string enum: also one finished line.
            put(head + leaf[0] + ";\n")
            if leaf[1]:
                bar = True
            continue
        if segment is None:
            emit(head)
        else:
            segment.append(head)
            tasks.append("".join(segment))
        tasks.append((child, member_level, depth))
        segment = [";\n"]
        put = segment.append
    closing = "  " * level + ("}" if closed else "}" + _OPEN_SUFFIX)
    if segment is None:
        # Every member was a leaf: the object is done.
        emit(closing)
        flags.append(bar)
        return
    segment.append(closing)
    active.add(ident)
    stack.append(_Build(OBJECT, (len(tasks) + 1) // 2, ident, closing="".join(segment), bar=bar))
    stack.extend(reversed(tasks))


def _push_one_line(
    parts: ObjectParts, ident: int, level: int, depth: int, out: list[str], stack: _Stack, active: set[int]
) -> None:
    """An object past :data:`MAX_MULTILINE_DEPTH`: one line, without JSDoc, so the
    output stays linear in the schema size."""
    properties, required, closed = parts
    suffix = "" if closed else _OPEN_SUFFIX
    bar = not closed
    tasks: list[str | tuple[object, int, int]] = []
    pending = 0  # children left on the stack, each leaving one flag
    for position, (key, child) in enumerate(properties):
        name = ts_key(key) + ("" if key in required else "?")
        bar = bar or _has_bar(name)
        head = ("; " if position else "") + name + ": "
        scalar = _plain_scalar(child)
        if scalar is not None:
            tasks.append(head + scalar)
            continue
        pending += 1
        tasks += [head, (child, level + 1, depth)]
    active.add(ident)
    out.append("{ ")
    stack.append(_Build(OBJECT, pending, ident, closing=" }" + suffix, bar=bar))
    stack.extend(reversed(tasks))


def _finish(build: _Build, out: list[str], flags: list[bool]) -> None:
    count = build.count
    children = flags[len(flags) - count :]
    del flags[len(flags) - count :]
    if build.kind == UNION:
        flags.append(count > 1 or any(children))
    elif build.kind == ARRAY:
        if children[0]:
            out[build.slot] = "("
            out.append(")[]")
        else:
            out.append("[]")
        flags.append(children[0])
    else:
        out.append(build.closing)
        flags.append(build.bar or any(children))


_DIALECT_KINDS = frozenset({NEVER, REF, ALL_OF, TUPLE, RECORD})
_ARRAY_OF = "array"


def _push_dialect(
    node: object, ident: int, level: int, depth: int, out: list[str], flags: list[bool], stack: _Stack,
    active: set[int], refs: RefResolver, alive: list[object],
) -> None:
    """The stack walk's step for the dialect's node kinds (references, ``allOf``,
    tuples, records, ``false``): text goes to ``out`` or children onto ``stack``."""
    assert isinstance(node, Node)
    kind = node.kind
    if kind == NEVER:
        out.append("never")
        flags.append(False)
        return
    if kind == REF:
        target = refs.resolve(node.ref)
        if target is MISSING:
            out.append("unknown")
            flags.append(False)
            return
        named = refs.name(node.ref, target)
        if named is not None:
            out.append(named[0])
            flags.append(False)
            return
        # No SDK to declare it in: expand it here (a recursive one meets itself: unknown).
        active.add(ident)
        stack.append(_Build(REF, 1, ident))
        stack.append((target, level, depth))
        return
    if kind == RECORD:
        active.add(ident)
        out.append(_RECORD_OPEN)
        stack.append(_Build(RECORD, 1, ident, closing=_RECORD_CLOSE))
        stack.append((node.items, level, depth))
        return
    if kind == TUPLE:
        tasks: list[str | tuple[object, int, int]] = []
        for position, element in enumerate(node.branches):
            if position:
                tasks.append(", ")
            tasks.append((element, level, depth))
            if position >= node.min_items:
                tasks.append("?")
        if not node.has_items or node.items is not False:
            if tasks:
                tasks.append(", ")
            if node.has_items:
                rest = {"type": _ARRAY_OF, "items": node.items}
                alive.append(rest)
                tasks.append("...")
                tasks.append((rest, level, depth))
            else:
                tasks.append("...JsonValue[]")
        active.add(ident)
        out.append("[")
        count = sum(1 for task in tasks if type(task) is tuple)
        stack.append(_Build(TUPLE, count, ident, closing="]"))
        stack.extend(reversed(tasks))
        return
    # allOf: its one part as it is (pydantic's [{"$ref": ...}] keeps its name), one merged
    # schema where that is exact, else an intersection.
    merged = None if len(node.branches) == 1 else merge_all_of(node.branches, refs.resolve)
    active.add(ident)
    if merged is not None or len(node.branches) == 1:
        part = merged if merged is not None else node.branches[0]
        alive.append(part)
        stack.append(_Build(REF, 1, ident))
        stack.append((part, level, depth))
        return
    branches = node.branches
    stack.append(_Build(ALL_OF, len(branches), ident, bar=True))
    for position in range(len(branches) - 1, -1, -1):
        stack.append(")")
        stack.append((branches[position], level, depth))
        stack.append("(")
        if position:
            stack.append(" & ")
