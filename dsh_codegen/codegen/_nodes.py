"""Reads one JSON-Schema node into a small record the type mappers share.

Reading never raises: anything malformed or outside the supported subset
becomes ``UNKNOWN`` (``unknown`` in TypeScript, ``Any`` in Python). The
mappers walk children themselves, with explicit stacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh_codegen.codegen._literals import is_scalar

__all__ = [
    "ANNOTATIONS",
    "KEYWORDS",
    "SCALAR_NODE_KEYS",
    "Node",
    "ObjectParts",
    "description_of",
    "read_node",
    "read_node_or_raise",
    "read_plain_object",
]

#: Keywords that carry meaning in the subset (CONTRACT.md §7 items 102-108).
KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "const", "oneOf"}
)
#: Keywords that do not change the type and are ignored when rendering.
ANNOTATIONS = frozenset({"description", "title", "default", "examples"})

_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_OBJECT_ONLY = frozenset({"properties", "required", "additionalProperties"})
_ALLOWED = KEYWORDS | ANNOTATIONS
_STRUCTURAL = _OBJECT_ONLY | {"items"}
#: Keys of a plain scalar node (``{"type": "string", "description": ...}``), the fast path.
SCALAR_NODE_KEYS = ANNOTATIONS | {"type"}

# Node kinds.
UNKNOWN = "unknown"  # unsupported or malformed
ANY = "any"  # {} or annotations only
LITERAL = "literal"
UNION = "union"
ARRAY = "array"
OBJECT = "object"


@dataclass(slots=True)
class Node:
    """One schema node, read. ``kind`` is one of the constants above or a scalar type name."""

    kind: str
    literals: Sequence[object] = ()
    branches: Sequence[object] = ()
    items: object = None
    has_items: bool = False
    properties: Sequence[tuple[str, object]] = ()
    required: frozenset[str] = frozenset()
    closed: bool = False


_UNKNOWN_NODE = Node(UNKNOWN)
_ARRAY_NODE = Node(ARRAY)
_STR_ONLY = frozenset({str})
#: Keys that send an ``object``/``array`` node off the fast path of :func:`_read`.
_NOT_PLAIN_OBJECT = frozenset({"items", "const", "enum", "oneOf"})
_NOT_PLAIN_ARRAY = _OBJECT_ONLY | {"const", "enum", "oneOf"}


def _literal_fits(value: object, declared: object) -> bool:
    if not is_scalar(value):
        return False
    if declared is None:
        return True
    kind = type(value)
    if declared == "string":
        return kind is str
    if declared == "number":
        return kind is int or kind is float
    if declared == "integer":
        return kind is int or (isinstance(value, float) and value.is_integer())
    if declared == "boolean":
        return kind is bool
    if declared == "null":
        return value is None
    return False


def read_node(schema: object) -> Node:
    """Classify ``schema``; never raises (hostile keys or mappings give ``UNKNOWN``)."""
    try:
        # The common shapes first, inline (this runs once per node of every render).
        if type(schema) is dict and _ALLOWED.issuperset(schema):
            declared = schema.get("type")
            if type(declared) is not str:
                pass
            elif declared == "object":
                if _NOT_PLAIN_OBJECT.isdisjoint(schema):
                    return _read_object(schema)
            elif declared == "array":
                if _NOT_PLAIN_ARRAY.isdisjoint(schema):
                    if "items" in schema:
                        return Node(ARRAY, (), (), schema.get("items"), True)
                    return _ARRAY_NODE
        return _read(schema)
    except Exception:  # noqa: BLE001 - a hostile mapping must degrade, not escape
        return _UNKNOWN_NODE


def read_node_or_raise(schema: object) -> Node:
    """:func:`read_node` without its safety net: a hostile mapping's exception (or a
    ``RecursionError`` near the recursion limit) propagates, so a caller that can
    retry elsewhere is never handed an ``UNKNOWN`` that only the call depth caused."""
    return _read(schema)


def _read(schema: object) -> Node:
    if not isinstance(schema, dict):
        return _UNKNOWN_NODE
    # C-level set checks: every key known; str subclasses compare as their text.
    if not _ALLOWED.issuperset(schema):
        return _UNKNOWN_NODE
    get = dict.get
    declared = get(schema, "type")
    if declared is not None:
        if type(declared) is not str or declared not in _TYPES:
            return _UNKNOWN_NODE
        if declared != "object" and not _OBJECT_ONLY.isdisjoint(schema):
            return _UNKNOWN_NODE
        if declared != "array" and "items" in schema:
            return _UNKNOWN_NODE
    if "const" in schema:
        value = get(schema, "const")
        return Node(LITERAL, literals=[value]) if _literal_fits(value, declared) else _UNKNOWN_NODE
    if "enum" in schema:
        values = get(schema, "enum")
        if type(values) is not list or not values:
            return _UNKNOWN_NODE
        if declared in (None, "string") and _STR_ONLY.issuperset(map(type, values)):
            return Node(LITERAL, literals=list(values))  # strings always fit
        if not all(_literal_fits(v, declared) for v in values):
            return _UNKNOWN_NODE
        return Node(LITERAL, literals=list(values))
    if "oneOf" in schema:
        branches = get(schema, "oneOf")
        if declared is not None or not _STRUCTURAL.isdisjoint(schema):
            return _UNKNOWN_NODE
        if type(branches) is not list or not branches:
            return _UNKNOWN_NODE
        return Node(UNION, branches=list(branches))
    if declared is None:
        return Node(ANY) if _STRUCTURAL.isdisjoint(schema) else _UNKNOWN_NODE
    if declared == "array":
        if "items" in schema:
            return Node(ARRAY, items=get(schema, "items"), has_items=True)
        return Node(ARRAY)
    if declared == "object":
        return _read_object(schema)
    return Node(declared)


_MISSING = object()


#: An object node's parts: its (key, schema) pairs in declared order, required names, closed or not.
ObjectParts = tuple[Sequence[tuple[str, object]], frozenset[str], bool]


def read_plain_object(schema: dict[object, object]) -> ObjectParts | None:
    """The parts of an exact-``dict`` ``{"type": "object", ...}`` node that ``read_node``
    reads as ``OBJECT`` on its fast path; ``None`` for anything else (ask ``read_node``).

    The same checks as ``read_node``, without building a :class:`Node`. May raise on
    hostile keys: the caller then asks ``read_node``, which degrades the node.
    """
    if not (_ALLOWED.issuperset(schema) and _NOT_PLAIN_OBJECT.isdisjoint(schema)):
        return None
    declared = schema.get("type")
    if type(declared) is not str or declared != "object":
        return None
    return _object_parts(schema)


def _read_object(schema: dict[object, object]) -> Node:
    parts = _object_parts(schema)
    if parts is None:
        return _UNKNOWN_NODE
    return Node(OBJECT, (), (), None, False, parts[0], parts[1], parts[2])


def _object_parts(schema: dict[object, object]) -> ObjectParts | None:
    properties = dict.get(schema, "properties", _MISSING)
    if properties is _MISSING:
        pairs: list[tuple[str, object]] = []
    elif type(properties) is dict:
        # An exact dict: its keys are the keys of its items.
        if not _STR_ONLY.issuperset(map(type, properties)):
            return None
        pairs = list(properties.items())
    elif isinstance(properties, dict):
        pairs = list(properties.items())
        if not all(type(key) is str for key, _ in pairs):
            return None
    else:
        return None
    required = dict.get(schema, "required", _MISSING)
    if required is _MISSING:
        names: frozenset[str] = frozenset()
    elif type(required) is list and _STR_ONLY.issuperset(map(type, required)):
        names = frozenset(required)
    else:
        return None
    additional = dict.get(schema, "additionalProperties", True)
    if type(additional) is not bool:
        return None
    return pairs, names, not additional


def description_of(schema: object) -> object:
    """The node's ``description`` if it is a ``str`` (anything else: ``None``)."""
    try:
        if isinstance(schema, dict):
            text = dict.get(schema, "description")
            return text if type(text) is str else None
    except Exception:  # noqa: BLE001 - hostile keys degrade
        return None
    return None
