"""JSON Schema -> TypeScript type text (CONTRACT.md §5 "Type mapping").

The walk uses an explicit stack (no recursion), so a 100,000-deep schema
renders under the default recursion limit; a node that is its own ancestor
(a cyclic ``dict``) renders ``unknown``. Object types nested deeper than
:data:`MAX_MULTILINE_DEPTH` render on one line (``{ a: T; b?: U }``) so that
indentation cannot make the text quadratic in the depth.
"""

from __future__ import annotations

import functools

from dsh_codegen.codegen._literals import ts_jsdoc, ts_literal
from dsh_codegen.codegen._naming import ts_key
from dsh_codegen.codegen._nodes import (
    ANY,
    ARRAY,
    LITERAL,
    OBJECT,
    SCALAR_NODE_KEYS,
    UNION,
    Node,
    description_of,
    read_node,
)

__all__ = ["MAX_MULTILINE_DEPTH", "json_schema_to_ts"]

#: Object levels rendered multi-line; deeper object types render on one line.
MAX_MULTILINE_DEPTH = 16

_OPEN_SUFFIX = " & Record<string, JsonValue>"
_SCALARS = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}


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
    try:
        level = indent if type(indent) is int and indent >= 0 else 0
        return _render(schema, level)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - the contract is "never raises"; a bug here must not break prompts
        return "unknown"


def _render(schema: object, indent: int) -> str:
    # Text is emitted in order into ``out`` and joined once, so deep nesting
    # stays linear; each finished node leaves one flag on ``flags``: whether its
    # text contains "|" or "&" (an array of it then needs "(T)[]"). An array
    # reserves a slot for "(" and fills it when its item is done.
    out: list[str] = []
    flags: list[bool] = []
    active: set[int] = set()
    stack: list[_Build | str | tuple[object, int, int]] = [(schema, indent, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        if isinstance(item, _Build):
            _finish(item, out, flags)
            active.discard(item.ident)
            continue
        node_schema, level, depth = item
        scalar = _plain_scalar(node_schema)
        if scalar is not None:
            out.append(scalar)
            flags.append(False)
            continue
        ident = id(node_schema)
        if ident in active:
            out.append("unknown")
            flags.append(False)
            continue
        node = read_node(node_schema)
        kind = node.kind
        if kind in _SCALARS:
            out.append(_SCALARS[kind])
            flags.append(False)
        elif kind == ANY:
            out.append("JsonValue")
            flags.append(False)
        elif kind == LITERAL:
            texts = [ts_literal(value) for value in node.literals]
            if any(text is None for text in texts):
                out.append("unknown")
                flags.append(False)
            else:
                joined = " | ".join(texts)  # type: ignore[arg-type]
                out.append(joined)
                flags.append(_has_bar(joined))
        elif kind == UNION:
            active.add(ident)
            stack.append(_Build(UNION, len(node.branches), ident))
            for position in range(len(node.branches) - 1, -1, -1):
                stack.append((node.branches[position], level, depth))
                if position:
                    stack.append(" | ")
        elif kind == ARRAY:
            if not node.has_items:
                out.append("JsonValue[]")
                flags.append(False)
                continue
            active.add(ident)
            stack.append(_Build(ARRAY, 1, ident, slot=len(out)))
            out.append("")
            stack.append((node.items, level, depth))
        elif kind == OBJECT:
            if not node.properties:
                out.append("Record<string, never>" if node.closed else "Record<string, JsonValue>")
                flags.append(False)
                continue
            active.add(ident)
            _push_object(node, ident, level, depth + 1, out, stack)
        else:
            out.append("unknown")
            flags.append(False)
    return "".join(out)


# Keys and descriptions repeat across tools (path, limit, ...); both are exact
# str (or None) here, so caching by value is safe.
_key_text = functools.lru_cache(maxsize=8192)(ts_key)
_doc_text = functools.lru_cache(maxsize=8192)(ts_jsdoc)


def _plain_scalar(schema: object) -> str | None:
    """The type text of a plain scalar node (``{"type": "string", ...annotations}``), else ``None``."""
    if type(schema) is dict:
        declared = schema.get("type")
        if type(declared) is str and declared in _SCALARS and SCALAR_NODE_KEYS.issuperset(schema):
            return _SCALARS[declared]
    return None


def _push_object(
    node: Node, ident: int, level: int, depth: int, out: list[str], stack: list[_Build | str | tuple[object, int, int]]
) -> None:
    suffix = "" if node.closed else _OPEN_SUFFIX
    bar = not node.closed
    one_line = depth > MAX_MULTILINE_DEPTH
    pad = "  " * (level + 1)
    tasks: list[str | tuple[object, int, int]] = []
    pending = 0  # children left on the stack, each leaving one flag
    for position, (key, child) in enumerate(node.properties):
        name = _key_text(key) + ("" if key in node.required else "?")
        bar = bar or _has_bar(name)
        if one_line:
            head = ("; " if position else "") + name + ": "
            tail = ""
        else:
            doc = _doc_text(description_of(child))
            head = f"{pad}{name}: " if doc is None else f"{pad}/** {doc} */\n{pad}{name}: "
            bar = bar or (doc is not None and _has_bar(doc))
            tail = ";\n"
        scalar = _plain_scalar(child)
        if scalar is not None:
            # Most members are plain scalars: one text, no stack round trip.
            tasks.append(head + scalar + tail)
            continue
        pending += 1
        tasks += [head, (child, level + 1, depth)]
        if tail:
            tasks.append(tail)
    if one_line:
        # One line, without JSDoc: output stays linear in the schema size.
        out.append("{ ")
        stack.append(_Build(OBJECT, pending, ident, closing=" }" + suffix, bar=bar))
    else:
        out.append("{\n")
        stack.append(_Build(OBJECT, pending, ident, closing="  " * level + "}" + suffix, bar=bar))
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
