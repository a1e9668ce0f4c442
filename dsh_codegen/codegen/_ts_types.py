"""JSON Schema -> TypeScript type text (docs/sdk-text.md, "TypeScript").

One walk writes every schema. It appends text, in order, to one list joined at the
end. A leaf (a plain scalar, an array of one, a string enum) is written where it is
met. A container (object, array, union, tuple, record, intersection, an expanded
reference) is a generator: it writes its own text and yields each child it needs
written, and the loop in :func:`_type_text` keeps the unfinished containers in a
list. So depth costs heap, not stack: a 100,000-deep schema renders under the
default recursion limit, in time and memory linear in its size.

A node that is its own ancestor (a cyclic ``dict``) renders ``unknown``. Object types
nested deeper than :data:`MAX_MULTILINE_DEPTH` render on one line (``{ a: T; b?: U }``)
so that indentation cannot make the text quadratic in the depth.

An array of a type whose text holds ``|`` or ``&`` is written ``(T)[]``. The walk
counts the pieces it writes that hold either character (``_Walk.bars``): an array
compares the count before and after its items to know.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from dsh_codegen.codegen._literals import code_string, ts_jsdoc, ts_literal
from dsh_codegen.codegen._naming import ts_key
from dsh_codegen.codegen._nodes import (
    ALL_OF,
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
    Node,
    ObjectParts,
    description_of,
    doc_of,
    merge_all_of,
    read_node,
    read_plain_object,
)
from dsh_codegen.codegen._refs import RefResolver

__all__ = ["MAX_MULTILINE_DEPTH", "clear_caches", "json_schema_to_ts", "member_head", "schema_to_ts"]

#: Object levels rendered multi-line; deeper object types render on one line.
MAX_MULTILINE_DEPTH = 16

_OPEN_SUFFIX = " & Record<string, JsonValue>"
# A record type is written as an index signature, not ``Record<string, T>``: tsc defers
# an object literal type, so a definition may contain itself (``type J = { [key: string]: J }``).
_RECORD_OPEN = "{ [key: string]: "
_RECORD_CLOSE = " }"
_SCALARS = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}
_ARRAY_LEAF_KEYS = SCALAR_NODE_KEYS | {"items"}
_ENUM_LEAF_KEYS = SCALAR_NODE_KEYS | {"enum"}
_STR_ONLY = frozenset({str})
_NO_ITEMS = object()

#: A child the walk is asked to write: (schema, level, object depth).
_Child = tuple[object, int, int]


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
    """The walk: write ``schema``, then resume the innermost unfinished container until
    none is left. May raise on hostile input (the public callers degrade it to ``unknown``)."""
    walk = _Walk(schema, refs)
    started = walk.write(schema, level, 0)
    if started is not None:
        unfinished = [started]
        while unfinished:
            child = next(unfinished[-1], None)
            if child is None:
                unfinished.pop()
                continue
            started = walk.write(*child)
            if started is not None:
                unfinished.append(started)
    return "".join(walk.out)


class _Walk:
    """The state of one schema's walk: the text so far, the containers being written
    (by ``id``, the cycle guard), the count of pieces holding ``|`` or ``&``, and the
    reference resolver (made on the first reference when the caller gave none)."""

    __slots__ = ("root", "refs", "out", "active", "bars")

    def __init__(self, root: object, refs: RefResolver | None) -> None:
        self.root = root
        self.refs = refs
        self.out: list[str] = []
        self.active: set[int] = set()
        self.bars = 0

    def write(self, schema: object, level: int, depth: int) -> Iterator[_Child] | None:
        """Write ``schema`` at ``level`` (``depth``: enclosing objects): a leaf now
        (``None``), a container by the generator returned."""
        out = self.out
        declared: object = None
        if type(schema) is dict:
            declared = schema.get("type")
            if type(declared) is str and declared in _SCALARS and SCALAR_NODE_KEYS.issuperset(schema):
                out.append(_SCALARS[declared])
                return None
        if id(schema) in self.active:
            out.append("unknown")
            return None
        if type(schema) is dict and declared == "array" and _ARRAY_LEAF_KEYS.issuperset(schema):
            # A plain array, read as read_node reads it, without a Node.
            items = schema.get("items", _NO_ITEMS)
            if items is _NO_ITEMS:
                out.append("JsonValue[]")
                return None
            scalar = _plain_scalar(items)
            if scalar is not None:
                out.append(scalar + "[]")
                return None
            return self._array(schema, items, level, depth)
        is_object = declared == "object"
        parts: ObjectParts | None = None
        if is_object:
            # Most containers are plain objects: read them without a Node.
            try:
                parts = read_plain_object(schema)  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - read_node below degrades it
                parts = None
        if parts is None:
            node = read_node(schema)
            if node.kind == OBJECT:
                parts = (node.properties, node.required, node.closed)
        if parts is not None:
            if not parts[0]:
                out.append("Record<string, never>" if parts[2] else "Record<string, JsonValue>")
                return None
            if depth >= MAX_MULTILINE_DEPTH:
                return self._one_line_object(schema, parts, level, depth + 1)
            return self._object(schema, parts, level, depth + 1)
        kind = node.kind
        if kind in _SCALARS:
            out.append(_SCALARS[kind])
        elif kind == ARRAY:
            if not node.has_items:
                out.append("JsonValue[]")
                return None
            scalar = _plain_scalar(node.items)
            if scalar is not None:
                out.append(scalar + "[]")
                return None
            return self._array(schema, node.items, level, depth)
        elif kind == LITERAL:
            self._add(_literal_text(node.literals))
        elif kind == UNION:
            return self._union(schema, node.branches, level, depth)
        elif kind == ANY:
            out.append("JsonValue")
        elif kind == NEVER:
            out.append("never")
        elif kind == REF:
            return self._reference(schema, node.ref, level, depth)
        elif kind == ALL_OF:
            return self._all_of(schema, node.branches, level, depth)
        elif kind == TUPLE:
            return self._tuple(schema, node, level, depth)
        elif kind == RECORD:
            return self._record(schema, node.items, level, depth)
        else:
            out.append("unknown")
        return None

    def _add(self, text_and_bar: tuple[str, bool]) -> None:
        """Append a piece whose "holds ``|`` or ``&``" is known (cached texts carry it)."""
        self.out.append(text_and_bar[0])
        if text_and_bar[1]:
            self.bars += 1

    def _object(self, schema: object, parts: ObjectParts, level: int, depth: int) -> Iterator[_Child]:
        """A multi-line object: a line per member (its JSDoc line first, when it has a
        doc), leaf members written in place."""
        properties, required, closed = parts
        out = self.out
        member_level = level + 1
        self.active.add(id(schema))
        out.append("{\n")
        for key, child in properties:
            description: str | None = None
            leaf: tuple[str, bool] | None = None
            if type(child) is dict:
                # description_of, inlined: hostile keys degrade to "no description".
                try:
                    text = child.get("description")
                except Exception:  # noqa: BLE001
                    text = None
                if type(text) is str:
                    description = text
                declared = child.get("type")
                if type(declared) is str and declared in _SCALARS and SCALAR_NODE_KEYS.issuperset(child):
                    # A plain scalar member is one finished line (the common case).
                    is_required = key in required
                    line, bar = _MEMBERS.get((key, is_required, description, member_level, declared)) or _member(
                        key, is_required, description, member_level, declared
                    )
                    out.append(line)
                    if bar:
                        self.bars += 1
                    continue
                description = doc_of(child)
                try:
                    leaf = _leaf_type(child, declared)
                except Exception:  # noqa: BLE001 - the walk reads it (and degrades) instead
                    leaf = None
            else:
                text = description_of(child)
                if type(text) is str:
                    description = text
            self._add(_member(key, key in required, description, member_level, None))
            if leaf is not None:
                # An array of scalars or a string enum: also finished in place.
                self._add(leaf)
            else:
                yield (child, member_level, depth)
            out.append(";\n")
        out.append("  " * level + ("}" if closed else "}" + _OPEN_SUFFIX))
        if not closed:
            self.bars += 1
        self.active.discard(id(schema))

    def _one_line_object(self, schema: object, parts: ObjectParts, level: int, depth: int) -> Iterator[_Child]:
        """An object past :data:`MAX_MULTILINE_DEPTH`: one line, without JSDoc, so the
        output stays linear in the schema size."""
        properties, required, closed = parts
        out = self.out
        self.active.add(id(schema))
        out.append("{ ")
        for position, (key, child) in enumerate(properties):
            name = ts_key(key) if key in required else ts_key(key) + "?"
            self._add((f"; {name}: " if position else f"{name}: ", _has_bar(name)))
            scalar = _plain_scalar(child)
            if scalar is not None:
                out.append(scalar)
            else:
                yield (child, level + 1, depth)
        out.append(" }" if closed else " }" + _OPEN_SUFFIX)
        if not closed:
            self.bars += 1
        self.active.discard(id(schema))

    def _array(self, schema: object, items: object, level: int, depth: int) -> Iterator[_Child]:
        """``T[]``, or ``(T)[]`` when ``T``'s text holds ``|`` or ``&``."""
        out = self.out
        self.active.add(id(schema))
        slot = len(out)
        out.append("")  # "(" goes here if the item text needs it
        bars = self.bars
        yield (items, level, depth)
        if self.bars == bars:
            out.append("[]")
        else:
            out[slot] = "("
            out.append(")[]")
        self.active.discard(id(schema))

    def _union(self, schema: object, branches: Sequence[object], level: int, depth: int) -> Iterator[_Child]:
        self.active.add(id(schema))
        for position, branch in enumerate(branches):
            if position:
                self._add((" | ", True))
            yield (branch, level, depth)
        self.active.discard(id(schema))

    def _through(self, schema: object, target: object, level: int, depth: int) -> Iterator[_Child]:
        """A node written as another schema (an expanded reference, a merged ``allOf``)."""
        self.active.add(id(schema))
        yield (target, level, depth)
        self.active.discard(id(schema))

    def _resolver(self) -> RefResolver:
        if self.refs is None:
            self.refs = RefResolver(self.root)
        return self.refs

    def _reference(self, schema: object, ref: str, level: int, depth: int) -> Iterator[_Child] | None:
        """A named definition's alias in an SDK; else the target expanded in place."""
        refs = self._resolver()
        target = refs.resolve(ref)
        if target is MISSING:
            self.out.append("unknown")
            return None
        named = refs.name(ref, target)
        if named is not None:
            self.out.append(named[0])
            return None
        # No SDK to declare it in: a recursive reference meets itself (unknown).
        return self._through(schema, target, level, depth)

    def _all_of(self, schema: object, branches: Sequence[object], level: int, depth: int) -> Iterator[_Child]:
        """Its one part as it is (pydantic's ``[{"$ref": ...}]`` keeps its name), one merged
        schema where that is exact, else the intersection ``(A) & (B)``."""
        merged = None if len(branches) == 1 else merge_all_of(branches, self._resolver().resolve)
        if merged is not None or len(branches) == 1:
            return self._through(schema, merged if merged is not None else branches[0], level, depth)
        return self._intersection(schema, branches, level, depth)

    def _intersection(self, schema: object, branches: Sequence[object], level: int, depth: int) -> Iterator[_Child]:
        out = self.out
        self.active.add(id(schema))
        for position, branch in enumerate(branches):
            if position:
                self._add((" & ", True))
            out.append("(")
            yield (branch, level, depth)
            out.append(")")
        self.active.discard(id(schema))

    def _tuple(self, schema: object, node: Node, level: int, depth: int) -> Iterator[_Child]:
        """``[A, B]``, ``B?`` past ``minItems``, then ``...T[]`` for the rest unless ``items: false``."""
        out = self.out
        self.active.add(id(schema))
        out.append("[")
        for position, element in enumerate(node.branches):
            if position:
                out.append(", ")
            yield (element, level, depth)
            if position >= node.min_items:
                out.append("?")
        if not node.has_items or node.items is not False:
            if node.branches:
                out.append(", ")
            if node.has_items:
                out.append("...")
                rest = {"type": "array", "items": node.items}  # alive here while its id may be in the guard
                yield (rest, level, depth)
            else:
                out.append("...JsonValue[]")
        out.append("]")
        self.active.discard(id(schema))

    def _record(self, schema: object, items: object, level: int, depth: int) -> Iterator[_Child]:
        out = self.out
        self.active.add(id(schema))
        out.append(_RECORD_OPEN)
        yield (items, level, depth)
        out.append(_RECORD_CLOSE)
        self.active.discard(id(schema))


def _has_bar(text: str) -> bool:
    return "|" in text or "&" in text


# Caches by value, for texts that repeat across members, tools and renders:
# every key is built from exact ``str``/``bool``/``int`` values (or ``None``), so
# equal keys always mean equal text. Cleared when full, so memory stays bounded.
_CACHE_LIMIT = 16384
#: (key, required, description, level, scalar type or None) -> (member text, has "|"/"&").
#: With a scalar type the text is the whole member line; without, the part before the type.
_MEMBERS: dict[tuple[str, bool, str | None, int, str | None], tuple[str, bool]] = {}
#: Tuple of exact-``str`` enum values -> (literal union text, has "|"/"&").
_STRING_LITERALS: dict[tuple[str, ...], tuple[str, bool]] = {}


def clear_caches() -> None:
    """Forget every cached member and literal text (benchmarks use it to time a
    first render; output never depends on the caches)."""
    _MEMBERS.clear()
    _STRING_LITERALS.clear()


def _member(key: str, required: bool, description: str | None, level: int, scalar: str | None) -> tuple[str, bool]:
    """A multi-line member's text: its JSDoc line, indent, key, ``?``, ``: `` and, for
    a plain scalar type, the type and ``;\\n``; plus whether it contains "|" or "&"."""
    cache_key = (key, required, description, level, scalar)
    found = _MEMBERS.get(cache_key)
    if found is not None:
        return found
    pad = "  " * level
    name = ts_key(key) if required else ts_key(key) + "?"
    doc = None if description is None else ts_jsdoc(description)
    text = f"{pad}{name}: " if doc is None else f"{pad}/** {doc} */\n{pad}{name}: "
    if scalar is not None:
        text += _SCALARS[scalar] + ";\n"
    # Only the key and the JSDoc text can hold "|" or "&" (pads, "/** */", ": " and
    # scalar type names cannot), so the whole text tells.
    found = (text, _has_bar(text))
    if len(_MEMBERS) >= _CACHE_LIMIT:
        _MEMBERS.clear()
    _MEMBERS[cache_key] = found
    return found


def member_head(key: str, description: str | None, level: int) -> str:
    """The text of a required member up to its type (JSDoc line, indent, key, ``: ``),
    laid out as the members of an object type at ``level`` are."""
    return _member(key, True, description, level, None)[0]


def _literal_text(values: Sequence[object]) -> tuple[str, bool]:
    """The union of literal types of an enum/const, or ``unknown``; and whether it has "|"/"&"."""
    if not _STR_ONLY.issuperset(map(type, values)):
        texts = [ts_literal(value) for value in values]
        if None in texts:
            return "unknown", False
        joined = " | ".join(texts)  # type: ignore[arg-type]
        return joined, _has_bar(joined)
    key: tuple[str, ...] = tuple(values)  # type: ignore[arg-type]  # exact strs: equal tuples, equal text
    found = _STRING_LITERALS.get(key)
    if found is None:
        # ts_literal of a str is its code string.
        joined = " | ".join(map(code_string, key))
        found = (joined, _has_bar(joined))
        if len(_STRING_LITERALS) >= _CACHE_LIMIT:
            _STRING_LITERALS.clear()
        _STRING_LITERALS[key] = found
    return found


def _plain_scalar(schema: object) -> str | None:
    """The type text of a plain scalar node (``{"type": "string", ...annotations}``), else ``None``."""
    if type(schema) is dict:
        declared = schema.get("type")
        if type(declared) is str and declared in _SCALARS and SCALAR_NODE_KEYS.issuperset(schema):
            return _SCALARS[declared]
    return None


def _leaf_type(schema: dict[object, object], declared: object) -> tuple[str, bool] | None:
    """Type text and "|"/"&" flag of a member that needs no walk: an array of plain
    scalars (or without ``items``) or a string enum; ``None`` for anything else.

    The text ``read_node`` and the walk give these shapes. ``declared`` is the node's
    ``type``. May raise on hostile keys: the caller then lets the walk read the node.
    """
    if type(declared) is not str and declared is not None:
        return None
    if declared == "array":
        if not _ARRAY_LEAF_KEYS.issuperset(schema):
            return None
        items = schema.get("items", _NO_ITEMS)
        if items is _NO_ITEMS:
            return "JsonValue[]", False
        scalar = _plain_scalar(items)
        return None if scalar is None else (scalar + "[]", False)
    if (declared is None or declared == "string") and "enum" in schema and _ENUM_LEAF_KEYS.issuperset(schema):
        values = schema.get("enum")
        if type(values) is list and values and _STR_ONLY.issuperset(map(type, values)):
            return _literal_text(values)
    return None
