"""Where the sub-schemas of a schema node are, shared by the adapters' stack-based walks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

__all__ = ["Path", "PathCell", "admits_null", "path_of", "subschema_slots"]

Path = tuple[str | int, ...]
#: A path as a linked list (parent cell, segment), so that a deep walk does not copy
#: a growing tuple at every level; made into a ``Path`` only for a message.
PathCell = tuple[Any, str | int] | None


def path_of(cell: PathCell) -> Path:
    """The segments of a linked path, root first."""
    segments: list[str | int] = []
    while cell is not None:
        cell, segment = cell
        segments.append(segment)
    segments.reverse()
    return tuple(segments)

#: Keywords whose value is an object of sub-schemas.
SCHEMA_MAPS: Final = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
#: Keywords whose value is one sub-schema.
SCHEMA_ONE: Final = (
    "additionalProperties",
    "items",
    "additionalItems",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
)
#: Keywords whose value is an array of sub-schemas.
SCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf", "prefixItems")


def subschema_slots(node: dict[str, Any], path: PathCell) -> Iterator[tuple[Any, str | int, PathCell]]:
    """``(container, key, path)`` of every sub-schema position of ``node``, in document order.

    ``container[key]`` is the sub-schema (a dict, a boolean, or something
    malformed the caller skips); the yielded path continues ``path``.
    """
    for keyword, value in node.items():
        if keyword in SCHEMA_MAPS and isinstance(value, dict):
            for name in value:
                yield value, name, ((path, keyword), name)
        elif keyword in SCHEMA_ONE:
            yield node, keyword, (path, keyword)
        elif keyword in SCHEMA_LISTS and isinstance(value, list):
            for index in range(len(value)):
                yield value, index, ((path, keyword), index)


def resolve_local_ref(root: Any, ref: object) -> Any:
    """The node a local JSON-pointer ``$ref`` (``#``, ``#/$defs/x``) names in ``root``, or ``None``."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node = root
    pointer = ref[1:]
    if not pointer:
        return node
    if not pointer.startswith("/"):
        return None
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


#: How deep ``admits_null`` follows ``allOf`` and ``$ref`` siblings before answering "maybe" (``True``).
_NULL_CHECK_DEPTH: Final = 32


def admits_null(schema: object, root: object, _depth: int = 0) -> bool:
    """Whether ``null`` can be valid for ``schema`` (structurally; local ``$ref`` followed, ``allOf`` all must).

    Errs towards ``True`` (the caller then keeps the ``null`` and validation
    decides): beyond a bounded depth of nested ``allOf``/``$ref`` siblings.
    """
    if _depth > _NULL_CHECK_DEPTH:
        return True
    depth = _depth + 1
    stack: list[object] = [schema]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node is True:
            return True
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        if not _own_keywords_admit_null(node):
            continue
        branches = [b for key in ("anyOf", "oneOf") if isinstance(node.get(key), list) for b in node[key]]
        if "$ref" in node:
            target = resolve_local_ref(root, node["$ref"])
            if target is None or not admits_null(_without(node, "$ref"), root, depth):
                continue
            stack.append(target)
            continue
        if isinstance(node.get("allOf"), list):
            if all(admits_null(branch, root, depth) for branch in node["allOf"]) and (
                not branches or any(admits_null(branch, root, depth) for branch in branches)
            ):
                return True
            continue
        if branches:
            stack.extend(branches)
            continue
        return True
    return False


def _without(node: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k != key}


def _own_keywords_admit_null(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if isinstance(kind, str) and kind != "null":
        return False
    if isinstance(kind, list) and "null" not in kind:
        return False
    if "const" in node and node["const"] is not None:
        return False
    enum = node.get("enum")
    if isinstance(enum, list) and None not in enum:
        return False
    return node.get("not") is not True and node.get("not") != {}
