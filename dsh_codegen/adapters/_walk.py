"""Where the sub-schemas of a schema node are, shared by the adapters' stack-based walks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

__all__ = ["Path", "PathCell", "path_of", "subschema_slots"]

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
