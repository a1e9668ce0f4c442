"""JSON Schema -> TypeScript type text (CONTRACT.md §5 "Type mapping").

The walk uses an explicit stack (no recursion), so a 100,000-deep schema
renders under the default recursion limit; a node that is its own ancestor
(a cyclic ``dict``) renders ``unknown``. Object types nested deeper than
:data:`MAX_MULTILINE_DEPTH` render on one line (``{ a: T; b?: U }``) so that
indentation cannot make the text quadratic in the depth.
"""

from __future__ import annotations

from dsh_codegen.codegen._literals import ts_jsdoc, ts_literal
from dsh_codegen.codegen._naming import ts_key
from dsh_codegen.codegen._nodes import (
    ANY,
    ARRAY,
    LITERAL,
    OBJECT,
    UNION,
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
    """Stack marker: combine the last ``count`` results into one type."""

    __slots__ = ("count", "kind", "ident", "indent", "depth", "members")

    def __init__(
        self,
        kind: str,
        count: int,
        ident: int,
        indent: int,
        depth: int,
        members: list[tuple[str | None, str, bool]] | None = None,
        closed: bool = False,
    ) -> None:
        self.kind = kind if not closed else kind + "!"
        self.count = count
        self.ident = ident
        self.indent = indent
        self.depth = depth
        self.members = members


def json_schema_to_ts(schema: object, indent: int = 0) -> str:
    """TypeScript type text for ``schema``; never raises.

    ``indent`` counts levels (two spaces each): members of a multi-line object
    sit at ``indent + 1``, its closing brace at ``indent``. Unsupported or
    malformed parts render ``unknown``; ``{}`` renders ``JsonValue``.
    """
    try:
        level = indent if type(indent) is int and indent >= 0 else 0
        return _render(schema, level)
    except (MemoryError, RecursionError):
        raise
    except Exception:  # noqa: BLE001 - the contract is "never raises"; a bug here must not break prompts
        return "unknown"


def _render(schema: object, indent: int) -> str:
    # Results are (text, contains "|" or "&"); the flag is carried so that
    # deciding on "(T)[]" never rescans nested text.
    results: list[tuple[str, bool]] = []
    active: set[int] = set()
    stack: list[_Build | tuple[object, int, int]] = [(schema, indent, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, _Build):
            _combine(item, results)
            active.discard(item.ident)
            continue
        node_schema, level, depth = item
        ident = id(node_schema)
        if ident in active:
            results.append(("unknown", False))
            continue
        node = read_node(node_schema)
        kind = node.kind
        if kind in _SCALARS:
            results.append((_SCALARS[kind], False))
        elif kind == ANY:
            results.append(("JsonValue", False))
        elif kind == LITERAL:
            texts = [ts_literal(value) for value in node.literals]
            if any(text is None for text in texts):
                results.append(("unknown", False))
            else:
                joined = " | ".join(texts)  # type: ignore[arg-type]
                results.append((joined, _has_bar(joined)))
        elif kind == UNION:
            active.add(ident)
            stack.append(_Build(UNION, len(node.branches), ident, level, depth))
            for branch in reversed(node.branches):
                stack.append((branch, level, depth))
        elif kind == ARRAY:
            if not node.has_items:
                results.append(("JsonValue[]", False))
                continue
            active.add(ident)
            stack.append(_Build(ARRAY, 1, ident, level, depth))
            stack.append((node.items, level, depth))
        elif kind == OBJECT:
            if not node.properties:
                results.append(("Record<string, never>" if node.closed else "Record<string, JsonValue>", False))
                continue
            active.add(ident)
            members = [
                (ts_jsdoc(description_of(child)), ts_key(key), key in node.required)
                for key, child in node.properties
            ]
            stack.append(_Build(OBJECT, len(members), ident, level, depth + 1, members, node.closed))
            for _, child in reversed(node.properties):
                stack.append((child, level + 1, depth + 1))
        else:
            results.append(("unknown", False))
    return results[-1][0]


def _combine(build: _Build, results: list[tuple[str, bool]]) -> None:
    count = build.count
    children = results[len(results) - count :]
    del results[len(results) - count :]
    if build.kind == UNION:
        text = " | ".join(child for child, _ in children)
        results.append((text, count > 1 or any(bar for _, bar in children)))
        return
    if build.kind == ARRAY:
        child, bar = children[0]
        results.append((f"({child})[]" if bar else f"{child}[]", bar))
        return
    closed = build.kind.endswith("!")
    members = build.members or []
    bar = not closed or any(bar for _, bar in children)
    if build.depth > MAX_MULTILINE_DEPTH:
        # One line, without JSDoc: output stays linear in the schema size.
        parts = [
            f"{key}{'' if required else '?'}: {child}"
            for (_, key, required), (child, _) in zip(members, children, strict=True)
        ]
        text = "{ " + "; ".join(parts) + " }"
        bar = bar or any(_has_bar(key) for _, key, _ in members)
    else:
        pad = "  " * (build.indent + 1)
        lines = ["{"]
        for (doc, key, required), (child, _) in zip(members, children, strict=True):
            if doc is not None:
                lines.append(f"{pad}/** {doc} */")
                bar = bar or _has_bar(doc)
            lines.append(f"{pad}{key}{'' if required else '?'}: {child};")
            bar = bar or _has_bar(key)
        lines.append("  " * build.indent + "}")
        text = "\n".join(lines)
    if not closed:
        text += _OPEN_SUFFIX
    results.append((text, bar))
