"""The tool-schema dialect's tables and message texts, shared by both twins of the dialect check.

``dsh_codegen/schema/_dialect_check.py`` (the pure twin) and ``_ext/_dialect_check_c.pyx`` (its
compiled mirror) import every constant and every message from here, so the twins cannot disagree
on what the dialect admits or on how a violation reads; they hold only the walk.
"""

from __future__ import annotations

from typing import Final

from dsh_codegen.schema._program import (
    ARRAY,
    BOOLEAN,
    INTEGER,
    KIND_OF_TYPE,
    NULL,
    NUMBER,
    OBJECT,
    STRING,
    USES_ARRAY,
    USES_BRANCHES,
    USES_ENUM,
    USES_NUMBER,
    USES_OBJECT,
    USES_STRING,
)

__all__ = [
    "ANCHOR_NAME",
    "ANNOTATION_KEYWORDS",
    "APPLIES",
    "ARRAY_BIT",
    "ARTICLE",
    "DISCRIMINATOR_KEYS",
    "INTEGER_BIT",
    "LEAF_KEYS",
    "LOWEST_KIND",
    "MISSING",
    "NUMBERS",
    "NUMBER_BIT",
    "OBJECT_BIT",
    "REJECTED",
    "SAME_VALUE_FIELDS",
    "SCALARS",
    "SCALAR_KIND",
    "SCHEMA_URIS",
    "SLOT_ADDITIONAL",
    "SLOT_CONTAINS",
    "SLOT_ITEMS",
    "SLOT_NAMES",
    "SLOT_NOWHERE",
    "SMALL_INT",
    "STRING_BIT",
    "SUBSET",
    "SUBSET_OR_ANNOTATION",
    "TYPE_BITS",
    "TYPE_LIST_TEXT",
    "UNCHECKED",
    "USES",
    "Text",
]

MISSING: Final = object()
SCALARS: Final = frozenset({NULL, BOOLEAN, INTEGER, NUMBER, STRING})
SCALAR_KIND: Final = {name: kind for name, kind in KIND_OF_TYPE.items() if kind in SCALARS}
LEAF_KEYS: Final = frozenset({"type", "description", "title"})
TYPE_LIST_TEXT: Final = "/".join(KIND_OF_TYPE)
ARTICLE: Final = {"integer": "an integer", "object": "an object", "array": "an array"}
NUMBERS: Final = 1 << INTEGER | 1 << NUMBER
INTEGER_BIT: Final = 1 << INTEGER
NUMBER_BIT: Final = 1 << NUMBER
OBJECT_BIT: Final = 1 << OBJECT
ARRAY_BIT: Final = 1 << ARRAY
STRING_BIT: Final = 1 << STRING
SMALL_INT: Final = 1 << 62  # an int inside +-this is lossless JSON (far below the digit limit)
# Computed once, not per node:
#: a type name -> (its type mask, the value kinds it admits: integer under number).
TYPE_BITS: Final[dict[str, tuple[int, int]]] = {
    name: (1 << kind, 1 << kind | (INTEGER_BIT if kind == NUMBER else 0)) for name, kind in KIND_OF_TYPE.items()
}
#: a type mask -> the kind of its lowest type (masks of kinds 1..7 are below 256).
LOWEST_KIND: Final[tuple[int, ...]] = tuple((mask & -mask).bit_length() - 1 for mask in range(256))

#: The meta-schema URIs a ``$schema`` may name (with or without the trailing ``#``).
SCHEMA_URIS: Final = frozenset(
    uri + tail
    for uri in (
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema",
    )
    for tail in ("", "#")
)

#: Constructs outside the dialect, each with the reason given in its violation.
REJECTED: Final[dict[str, str]] = {
    "not": "negation is outside the tool-schema dialect",
    "if": "conditional schemas are outside the tool-schema dialect",
    "then": "conditional schemas are outside the tool-schema dialect",
    "else": "conditional schemas are outside the tool-schema dialect",
    "dependentSchemas": "dependentSchemas is outside the tool-schema dialect (dependentRequired is supported)",
    "unevaluatedProperties": "unevaluated keywords are outside the tool-schema dialect (use additionalProperties)",
    "unevaluatedItems": "unevaluated keywords are outside the tool-schema dialect (use items)",
    "$dynamicRef": "dynamic references are not supported",
    "$dynamicAnchor": "dynamic references are not supported",
    "$recursiveRef": "dynamic references are not supported",
    "$recursiveAnchor": "dynamic references are not supported",
    "patternProperties": "patternProperties is outside the tool-schema dialect (use propertyNames)",
    "dependencies": "draft-07 dependencies is not supported (use dependentRequired)",
    "additionalItems": "draft-07 additionalItems is not supported (use prefixItems and items)",
    "$vocabulary": "$vocabulary belongs to meta-schemas",
}

DISCRIMINATOR_KEYS: Final = frozenset(("propertyName", "mapping"))

#: Keywords of the seed's subset: a node using only these (rightly) keeps the subset's node kinds.
SUBSET: Final = frozenset(("type", "oneOf", "properties", "required", "additionalProperties", "items", "enum", "const"))
ANNOTATION_KEYWORDS: Final[frozenset[str]] = frozenset(
    (
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "$anchor",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
        "contentMediaType",
        "discriminator",
        "contentEncoding",
    )
)
"""The dialect's annotation keywords: they never constrain a value (a node may carry them and still be a
node of the seed's subset)."""
SUBSET_OR_ANNOTATION: Final = SUBSET | ANNOTATION_KEYWORDS

#: The JSON types each type-specific keyword applies to.
APPLIES: Final[dict[str, int]] = {
    **{kw: NUMBERS for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")},
    **{kw: 1 << STRING for kw in ("minLength", "maxLength", "pattern")},
    **{
        kw: 1 << ARRAY
        for kw in (
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
        )
    },
    **{
        kw: 1 << OBJECT
        for kw in (
            "properties",
            "required",
            "additionalProperties",
            "minProperties",
            "maxProperties",
            "propertyNames",
            "dependentRequired",
        )
    },
}
#: The keyword family (``Node.uses``) whose node fields each keyword's checker may set.
USES: Final[dict[str, int]] = {
    **{kw: USES_NUMBER for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")},
    **{kw: USES_STRING for kw in ("minLength", "maxLength", "pattern", "format")},
    **{kw: USES_ARRAY for kw, applies in APPLIES.items() if applies == 1 << ARRAY},
    **{kw: USES_OBJECT for kw, applies in APPLIES.items() if applies == 1 << OBJECT},
    "enum": USES_ENUM,
    "const": USES_ENUM,
    "allOf": USES_BRANCHES,
    "anyOf": USES_BRANCHES,
    "oneOf": USES_BRANCHES,
}
ANCHOR_NAME: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._")
#: Annotations whose checker reports nothing for a value of one of these exact types: the node
#: loop skips such keys (the commonest ones) without calling the checker.
UNCHECKED: Final[dict[str, tuple[type, ...]]] = {
    **{kw: (str,) for kw in ("title", "description", "$comment", "contentMediaType", "contentEncoding")},
    **{kw: (bool,) for kw in ("deprecated", "readOnly", "writeOnly")},
    **{kw: (str, bool, type(None)) for kw in ("default", "examples")},
}
#: The list fields of a node whose members take the node's own value (combinators).
SAME_VALUE_FIELDS: Final = frozenset(("all_of", "any_of", "one_of"))

# A child to visit is (schema, path, slot); the slot says where its node index goes:
# a property name, ("field", None) for a single-child field, ("field", i) for a list field.
SLOT_ITEMS: Final = ("items", None)
SLOT_ADDITIONAL: Final = ("additional", None)
SLOT_CONTAINS: Final = ("contains", None)
SLOT_NAMES: Final = ("property_names", None)
SLOT_NOWHERE: Final = ("", None)  # $defs members: checked and compiled, referenced only by $ref


class Text:
    """Every message of the dialect check, after the offending path (``{...}``: filled by ``str.format``)."""

    NOT_A_SCHEMA_OBJECT: Final = "must be a schema object"
    CIRCULAR: Final = "is circular"
    NOT_ON_TYPE: Final = "is not supported on type {types}"
    ANNOTATION_NOT_JSON: Final = "annotation must be lossless JSON data"
    REJECTED: Final = "is not supported: {reason}"
    UNKNOWN_KEYWORD: Final = "is not a supported keyword"
    TYPE_ARRAY: Final = "must be a non-empty array of distinct type names ({names})"
    TYPE_NAME: Final = "must be one of {names}"
    REF_REMOTE: Final = "{ref} is a remote reference (only local references are supported)"
    REF_UNRESOLVED: Final = "{ref} does not resolve"
    REF_NO_ANCHOR: Final = "{ref} does not resolve (no such $anchor)"
    REF_NOT_SCHEMA: Final = "{ref} does not point to a schema"
    REF_LOOP: Final = "loops back to itself without descending into the value"
    COUNT: Final = "must be a non-negative integer"
    NUMBER_NOT_BOOL: Final = "must be a number (draft-04's boolean form is not supported)"
    NUMBER: Final = "must be a number"
    SCHEMAS: Final = "must be a non-empty array of schemas"
    STRING: Final = "must be a string"
    BOOLEAN: Final = "must be a boolean"
    SCHEMA_URI_NOT_ROOT: Final = "is only allowed at the root"
    SCHEMA_URI: Final = "must be the 2020-12, 2019-09 or draft-07 meta-schema URI"
    NESTED_ID: Final = "is not supported: a nested $id starts another schema resource (only the root may declare one)"
    DEFS: Final = "must be an object of schemas"
    ANCHOR_NAME: Final = "must be a name (a letter or _, then letters, digits, -, _ or .)"
    ANCHOR_TWICE: Final = "{name} is declared twice"
    DISCRIMINATOR_PLACE: Final = "is only allowed beside oneOf or anyOf (it annotates a discriminated union)"
    DISCRIMINATOR_SHAPE: Final = "must be an object with a string propertyName and an optional mapping"
    DISCRIMINATOR_MAPPING: Final = "mapping must be an object of strings"
    ENUM_EMPTY: Final = "must be a non-empty array"
    ENUM_NOT_JSON: Final = "must hold lossless JSON values"
    ENUM_TYPE: Final = "must be a non-empty array of {types} values"
    CONST_NOT_JSON: Final = "must be lossless JSON"
    CONST_TYPE: Final = "must be {type} value"
    CONST_NOT_IN_ENUM: Final = "must be one of {enum} when both are declared"
    MULTIPLE_OF: Final = "must be a number greater than 0"
    PATTERN: Final = "{pattern} {error}"
    ITEMS_ARRAY: Final = "must be a schema (the array form is draft-07's; use prefixItems)"
    PROPERTIES: Final = "must be an object of schemas"
    REQUIRED: Final = "must be an array of strings"
    REQUIRED_UNDECLARED: Final = "names {name} which is not in properties"
    ADDITIONAL: Final = "must be a boolean or a schema"
    DEPENDENT_REQUIRED: Final = "must be an object of arrays of strings"
    DEPENDENT_TWICE: Final = "{where} must be an array of unique strings ({name} is listed twice)"
    OBJECT_ROOT: Final = 'schema.type must be "object" (structured output is object-rooted)'
