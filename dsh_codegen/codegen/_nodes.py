"""Reads one JSON-Schema node into a small record the type mappers share.

Reading never raises: anything malformed or outside the supported subset
becomes ``UNKNOWN`` (``unknown`` in TypeScript, ``Any`` in Python). The
mappers walk children themselves, with explicit stacks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from dsh_codegen.codegen._jsontext import dumps_compact
from dsh_codegen.codegen._literals import is_scalar

__all__ = [
    "ALL_OF",
    "ANNOTATIONS",
    "DOC_KEYWORDS",
    "KEYWORDS",
    "MISSING",
    "NEVER",
    "RECORD",
    "REF",
    "TUPLE",
    "SCALAR_NODE_KEYS",
    "Node",
    "ObjectParts",
    "description_of",
    "doc_of",
    "merge_all_of",
    "read_node",
    "read_plain_object",
]

#: Keywords that carry meaning in the subset (guarantees 102-108, docs/guarantees.md).
KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum", "const", "oneOf"})
#: Keywords that change neither the type nor a member's doc comment (the dialect's quiet annotations).
ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "examples",
        "$comment",
        "$schema",
        "$id",
        "$anchor",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
        "discriminator",  # pydantic's discriminated-union hint: the oneOf branches carry the types
        "$defs",
        "definitions",
    }
)
#: Keywords a member's doc comment reports (after its description), in this order.
DOC_KEYWORDS = (
    "default",
    "format",
    "deprecated",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
)
#: Keywords that shape the type (the rest of the dialect only annotates or constrains).
_TYPING = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "prefixItems", "enum", "const"}
    | {"oneOf", "anyOf", "allOf", "$ref"}
)
#: Every keyword of the tool-schema dialect (docs/schema.md); ``x-*`` keys are allowed besides.
_DIALECT = _TYPING | ANNOTATIONS | frozenset(DOC_KEYWORDS) | {"contains", "propertyNames", "dependentRequired"}

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
REF = "ref"  # a local $ref (``Node.ref``)
ALL_OF = "allOf"  # branches to intersect (merged where exact)
TUPLE = "tuple"  # prefixItems (``branches``), then ``items`` unless ``has_items`` is False
RECORD = "record"  # an object without properties whose other values follow ``items``
NEVER = "never"  # the false schema: no value


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
    ref: str = ""
    min_items: int = 0


_UNKNOWN_NODE = Node(UNKNOWN)
_ANY_NODE = Node(ANY)
_NEVER_NODE = Node(NEVER)
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


def _known_key(key: object) -> bool:
    return key in _DIALECT or (type(key) is str and key.startswith("x-"))


def _typing_rest(schema: dict[object, object], drop: str) -> dict[object, object] | None:
    """The keys of ``schema`` other than ``drop`` that shape a type, or ``None`` when there are none."""
    rest: dict[object, object] = {key: value for key, value in dict.items(schema) if key in _TYPING and key != drop}
    return rest or None


def _read(schema: object) -> Node:
    if schema is True:
        return _ANY_NODE
    if schema is False:
        return _NEVER_NODE
    if not isinstance(schema, dict):
        return _UNKNOWN_NODE
    # C-level set checks first: every key known; str subclasses compare as their text.
    if not _DIALECT.issuperset(schema) and not all(map(_known_key, schema)):
        return _UNKNOWN_NODE
    get = dict.get
    if "$ref" in schema:
        ref = get(schema, "$ref")
        if type(ref) is not str:
            return _UNKNOWN_NODE
        rest = _typing_rest(schema, "$ref")
        if rest is None:
            return Node(REF, ref=ref)
        return Node(ALL_OF, branches=[{"$ref": ref}, rest])
    if "allOf" in schema:
        parts = get(schema, "allOf")
        if type(parts) is not list or not parts:
            return _UNKNOWN_NODE
        rest = _typing_rest(schema, "allOf")
        return Node(ALL_OF, branches=list(parts) if rest is None else [rest, *parts])
    declared = get(schema, "type")
    types: list[str] | None = None
    if type(declared) is list:
        types = []
        for name in declared:
            if type(name) is not str or name not in _TYPES:
                return _UNKNOWN_NODE
            if name not in types:
                types.append(name)
        if not types:
            return _UNKNOWN_NODE
        declared = types[0] if len(types) == 1 else None
        if declared is not None:
            types = None
    elif declared is not None and (type(declared) is not str or declared not in _TYPES):
        return _UNKNOWN_NODE
    if "const" in schema or "enum" in schema:
        return _read_literals(schema, declared, types)
    if types is not None:
        if "oneOf" not in schema and "anyOf" not in schema:
            base = {key: value for key, value in dict.items(schema) if key != "type"}
            return Node(UNION, branches=[{**base, "type": name} for name in types])
    one = "oneOf" in schema
    if one or "anyOf" in schema:
        if one and "anyOf" in schema:
            both = {key: value for key, value in dict.items(schema) if key != "anyOf"}
            return Node(ALL_OF, branches=[both, {"anyOf": get(schema, "anyOf")}])
        keyword = "oneOf" if one else "anyOf"
        branches = get(schema, keyword)
        if type(branches) is not list or not branches:
            return _UNKNOWN_NODE
        rest = _typing_rest(schema, keyword)
        if rest is None:
            return Node(UNION, branches=list(branches))
        # ``type`` (or object keywords) beside the union apply to every branch.
        return Node(UNION, branches=[{"allOf": [rest, branch]} for branch in branches])
    if declared is None:
        # Typeless: read as the one type its keywords describe (what tool authors mean).
        objectish = not _OBJECT_ONLY.isdisjoint(schema)
        arrayish = "items" in schema or "prefixItems" in schema
        if objectish == arrayish:
            return _ANY_NODE
        declared = "object" if objectish else "array"
    if declared == "array":
        if "prefixItems" in schema:
            prefix = get(schema, "prefixItems")
            if type(prefix) is not list:
                return _UNKNOWN_NODE
            count = get(schema, "minItems", 0)
            least = int(count) if type(count) in (int, float) and count == count and count >= 0 else 0
            if "items" in schema:
                return Node(TUPLE, branches=list(prefix), items=get(schema, "items"), has_items=True, min_items=least)
            return Node(TUPLE, branches=list(prefix), min_items=least)
        if "items" in schema:
            return Node(ARRAY, items=get(schema, "items"), has_items=True)
        return Node(ARRAY)
    if declared == "object":
        return _read_object(schema)
    return Node(declared)


def _read_literals(schema: dict[object, object], declared: object, types: list[str] | None) -> Node:
    get = dict.get
    values = [get(schema, "const")] if "const" in schema else get(schema, "enum")
    if type(values) is not list or not values:
        return _UNKNOWN_NODE
    if types is not None:
        # A type array keeps the values of its types (2020-12: the others never validate).
        kept = [value for value in values if any(_literal_fits(value, name) for name in types)]
        if not kept:
            return _UNKNOWN_NODE if not all(map(is_scalar, values)) else _NEVER_NODE
        return Node(LITERAL, literals=kept)
    if declared in (None, "string") and _STR_ONLY.issuperset(map(type, values)):
        return Node(LITERAL, literals=list(values))  # strings always fit
    if not all(_literal_fits(v, declared) for v in values):
        return _UNKNOWN_NODE
    return Node(LITERAL, literals=list(values))


_MISSING = object()
#: What a reference resolver returns for a reference it cannot follow.
MISSING = _MISSING


#: An object node's parts: its (key, schema) pairs in declared order, required names, closed or not.
ObjectParts = tuple[Collection[tuple[str, object]], Collection[str], bool]

#: ``required`` lists longer than this are read into a frozenset (shorter ones are searched).
_SHORT_REQUIRED = 8


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
        additional = dict.get(schema, "additionalProperties")
        if not isinstance(additional, dict):
            return _UNKNOWN_NODE  # the parts themselves are malformed
        # additionalProperties as a schema: read the rest as if it were open.
        without = {key: value for key, value in dict.items(schema) if key != "additionalProperties"}
        parts = _object_parts(without)
        if parts is None:
            return _UNKNOWN_NODE
        if not parts[0]:
            return Node(RECORD, items=additional, has_items=True)
    return Node(OBJECT, (), (), None, False, tuple(parts[0]), frozenset(parts[1]), parts[2])


def _object_parts(schema: dict[object, object]) -> ObjectParts | None:
    properties = dict.get(schema, "properties", _MISSING)
    if properties is _MISSING:
        pairs: Collection[tuple[str, object]] = ()
    elif type(properties) is dict:
        # An exact dict: its keys are the keys of its items.
        if not _STR_ONLY.issuperset(map(type, properties)):
            return None
        pairs = properties.items()
    elif isinstance(properties, dict):
        pairs = list(properties.items())
        if not all(type(key) is str for key, _ in pairs):
            return None
    else:
        return None
    required = dict.get(schema, "required", _MISSING)
    if required is _MISSING:
        names: Collection[str] = ()
    elif type(required) is list and _STR_ONLY.issuperset(map(type, required)):
        # ``in`` on a short list is quicker than building a set for it.
        names = required if len(required) <= _SHORT_REQUIRED else frozenset(required)
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


#: Keys that never add a note to a doc.
_NO_NOTES = ANNOTATIONS | _TYPING
#: Longest value text a doc note quotes (a long ``default`` is cut, with an ellipsis).
_NOTE_CAP = 120


def _note(key: str, value: object) -> str | None:
    if key == "deprecated":
        return "deprecated" if value is True else None
    try:
        text = dumps_compact(value)
    except Exception:  # noqa: BLE001 - a value that is not JSON is left out of the doc
        return None
    if len(text) > _NOTE_CAP:
        text = text[:_NOTE_CAP] + "..."
    return f"{key}: {text}"


def doc_of(schema: object) -> str | None:
    """A member's doc text: its ``description``, then its constraints, ``default`` and
    ``format`` as ``(minimum: 1, default: 10)``; ``None`` when there is neither. Raw
    text: the caller escapes it for its comment syntax. Never raises."""
    try:
        if not isinstance(schema, dict):
            return None
        text = dict.get(schema, "description")
        description = text if type(text) is str else None
        if len(schema) == 1 or _NO_NOTES.issuperset(schema):
            return description
        notes = []
        for key in DOC_KEYWORDS:
            if key in schema:
                note = _note(key, dict.get(schema, key))
                if note is not None:
                    notes.append(note)
        if not notes:
            return description
        joined = ", ".join(notes)
        if description is None or not description.strip():
            return joined
        return f"{description} ({joined})"
    except Exception:  # noqa: BLE001 - hostile keys degrade to no doc
        return None


_COMPOSITION = frozenset({"anyOf", "oneOf"})
_SINGLE = frozenset({"enum", "const", "items", "prefixItems", "anyOf", "oneOf"})
#: Most parts one ``allOf`` may flatten into (nested ``allOf`` and ``$ref`` included).
_MERGE_BUDGET = 64


def _merge_types(current: object, value: object) -> object:
    """The intersection of two ``type`` values, as a list (``integer`` within ``number``)."""

    def names(item: object) -> list[str] | None:
        if type(item) is str:
            return [item]
        if type(item) is list and all(type(name) is str for name in item):
            return list(item)
        return None

    left, right = names(current), names(value)
    if left is None or right is None:
        return None
    kept = []
    for name in left:
        if name in right or (name == "integer" and "number" in right):
            kept.append(name)
        elif name == "number" and "integer" in right:
            kept.append("integer")
    return kept


def merge_all_of(branches: Sequence[object], resolve: Callable[[str], object]) -> object:
    """One schema meaning exactly ``allOf: branches``, or ``None`` when no single object
    or scalar schema says it (conflicting ``enum``s, a closed part beside another part's
    properties, a ``$ref`` to a union...). ``$ref`` parts are read through ``resolve``
    (which returns ``MISSING`` for an unresolvable reference). Never raises; bounded work."""
    try:
        return _merge(branches, resolve)
    except Exception:  # noqa: BLE001 - hostile parts mean "not exact"
        return None


def _merge(branches: Sequence[object], resolve: Callable[[str], object]) -> object:
    parts: list[dict[object, object]] = []
    stack = list(reversed(branches))
    seen: set[int] = set()
    while stack:
        if len(seen) + len(parts) > _MERGE_BUDGET:
            return None
        part = stack.pop()
        if part is True:
            continue
        if part is False:
            return False
        if not isinstance(part, dict) or not all(map(_known_key, part)):
            return None
        if "$ref" not in part and "allOf" not in part:
            parts.append(part)
            continue
        if id(part) in seen:
            return None  # a cycle of allOf / $ref
        seen.add(id(part))
        inner: list[object] = []
        if "$ref" in part:
            ref = dict.get(part, "$ref")
            target = resolve(ref) if type(ref) is str else MISSING
            if target is MISSING or (isinstance(target, dict) and not _COMPOSITION.isdisjoint(target)):
                return None
            inner.append(target)
        if "allOf" in part:
            listed = dict.get(part, "allOf")
            if type(listed) is not list:
                return None
            inner.extend(listed)
        rest = {key: value for key, value in dict.items(part) if key not in ("$ref", "allOf")}
        stack.extend(reversed([rest, *inner]))
    merged: dict[object, object] = {}
    properties: dict[str, object] = {}
    required: list[str] = []
    restricted: list[dict[object, object]] = []  # parts whose additionalProperties is not true
    for part in parts:
        for key, value in dict.items(part):
            if key in ANNOTATIONS or key in DOC_KEYWORDS or key not in _TYPING:
                continue
            if key == "type":
                merged[key] = value if key not in merged else _merge_types(merged[key], value)
                if merged[key] is None:
                    return None
                if merged[key] == []:
                    return False
            elif key == "properties":
                if not isinstance(value, dict):
                    return None
                for name, child in dict.items(value):
                    if type(name) is not str:
                        return None
                    properties[name] = child if name not in properties else {"allOf": [properties[name], child]}
            elif key == "required":
                if type(value) is not list or not all(type(name) is str for name in value):
                    return None
                required.extend(name for name in value if name not in required)
            elif key == "additionalProperties":
                if value is not True:
                    restricted.append(part)
            elif key in merged and merged[key] is not value:
                return None  # two enums, two item schemas, two unions: not one schema
            else:
                merged[key] = value
    if restricted:
        if len(restricted) > 1:
            return None
        own = dict.get(restricted[0], "properties", {})
        if not isinstance(own, dict) or any(name not in own for name in properties):
            return None
        merged["additionalProperties"] = dict.get(restricted[0], "additionalProperties")
    if properties:
        merged["properties"] = properties
    if required:
        merged["required"] = required
    return merged
