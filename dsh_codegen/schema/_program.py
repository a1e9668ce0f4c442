"""The compiled program both twins run (``Node``, ``Program``) and what both say about it.

Type tags, keyword tables, violation codes, :class:`Violation` and every message text.

``dsh_codegen.schema._validator_py`` and the compiled ``dsh_codegen._schema_c``
both import this module, so every message text, every type tag and the
:class:`Violation` class exist exactly once and the twins cannot drift apart.
It imports only leaf modules (the standard library, the shared path renderer
and, lazily, the frozen container classes of :mod:`dsh_codegen.json`).
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from dsh_codegen.json import DEFAULT_MAX_NODES, format_path, quote_path

__all__ = [
    "ANNOTATIONS",
    "ARRAY",
    "BOOLEAN",
    "FIXED_SUFFIX",
    "INTEGER",
    "JSON_ANY",
    "KEYWORDS",
    "KEYWORD_OF_CODE",
    "KIND_OF_TYPE",
    "NULL",
    "NUMBER",
    "OBJECT",
    "ONE_OF",
    "DIALECT",
    "ALL_KINDS",
    "STRING",
    "SUBSET_TEXT",
    "TYPE_SUFFIX",
    "TYPE_WORDS",
    "USES_ALL",
    "USES_ARRAY",
    "USES_BRANCHES",
    "USES_ENUM",
    "USES_LINK",
    "USES_NUMBER",
    "USES_OBJECT",
    "USES_STRING",
    "V_ADDITIONAL",
    "V_CONST",
    "V_ENUM",
    "V_FINITE",
    "V_LOSSLESS_ARRAY",
    "V_LOSSLESS_OBJECT",
    "V_LOSSLESS_VALUE",
    "V_ONE_OF",
    "V_REQUIRED",
    "V_TYPE",
    "ChainPath",
    "ExactContainers",
    "Node",
    "Program",
    "Violation",
    "WalkBudget",
    "any_code",
    "chain_segments",
    "frozen_types",
    "int_is_lossless",
    "is_lossless_json",
    "budget_violation",
    "within_walk_budget",
    "json_text",
    "make_violation",
    "mismatch_code",
    "new_violation",
    "node_suffix",
    "root_text",
    "scalar_fits",
    "segment_text",
]

# --- type tags (node kinds) -----------------------------------------------------------------
# Small ints so the compiled twin can switch on them; ``ONE_OF`` and ``JSON_ANY`` are kinds
# of node, not JSON types.
JSON_ANY: Final = 0
NULL: Final = 1
BOOLEAN: Final = 2
INTEGER: Final = 3
NUMBER: Final = 4
STRING: Final = 5
ARRAY: Final = 6
OBJECT: Final = 7
ONE_OF: Final = 8
#: A node of the wider tool-schema dialect (docs/schema.md); a program holding one runs on the dialect walk.
DIALECT: Final = 9
#: Every JSON value kind as a mask bit (``1 << kind``, null .. object).
ALL_KINDS: Final = sum(1 << kind for kind in range(1, 8))

#: JSON-Schema type name -> node kind, in the order messages list them.
KIND_OF_TYPE: Final[dict[str, int]] = {
    "object": OBJECT,
    "array": ARRAY,
    "string": STRING,
    "number": NUMBER,
    "integer": INTEGER,
    "boolean": BOOLEAN,
    "null": NULL,
}

# --- keyword tables -------------------------------------------------------------------------
#: Annotation keywords: allowed on every node, never constrain a value.
ANNOTATIONS: Final[tuple[str, ...]] = ("description", "title", "default", "examples")
#: Every supported keyword, in the order the subset check visits them.
KEYWORDS: Final[tuple[str, ...]] = (
    "type",
    "oneOf",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
) + ANNOTATIONS
SUBSET_TEXT: Final = ", ".join(KEYWORDS)

# --- violation codes (the walkers report these; :func:`make_violation` renders them) --------
V_TYPE: Final = 1
V_FINITE: Final = 2
V_LOSSLESS_VALUE: Final = 3
V_LOSSLESS_OBJECT: Final = 4
V_LOSSLESS_ARRAY: Final = 5
V_ENUM: Final = 6
V_CONST: Final = 7
V_REQUIRED: Final = 8
V_ADDITIONAL: Final = 9
V_ONE_OF: Final = 10

KEYWORD_OF_CODE: Final[dict[int, str]] = {
    V_TYPE: "type",
    V_FINITE: "type",
    V_LOSSLESS_VALUE: "lossless",
    V_LOSSLESS_OBJECT: "lossless",
    V_LOSSLESS_ARRAY: "lossless",
    V_ENUM: "enum",
    V_CONST: "const",
    V_REQUIRED: "required",
    V_ADDITIONAL: "additionalProperties",
    V_ONE_OF: "oneOf",
}

TYPE_WORDS: Final[dict[int, str]] = {
    OBJECT: "an object",
    ARRAY: "an array",
    STRING: "a string",
    NUMBER: "a number",
    INTEGER: "an integer",
    BOOLEAN: "a boolean",
    NULL: "null",
}


@dataclass(frozen=True, slots=True)
class Violation:
    """One reason a value does not match a schema (or a schema is not supported).

    ``path`` holds the segments from the validated root to the offending value
    (keys as ``str``, array indices as ``int``; ``()`` for the root); for a
    missing required property it is the path of the missing property itself.
    ``keyword`` names the rule that failed (``type``, ``required``,
    ``additionalProperties``, ``enum``, ``const``, ``oneOf``, ``lossless``; for
    schema checks the offending keyword). ``str(v)`` is ``v.message``, the exact
    docs/schema.md text.
    """

    path: tuple[str | int, ...]
    keyword: str
    message: str

    def __str__(self) -> str:
        return self.message


def new_violation(path: tuple[str | int, ...], keyword: str, message: str) -> Violation:
    """``Violation(path, keyword, message)``: the fields set as the frozen dataclass's ``__init__`` sets them.

    Reports make many violations; this skips only the generated ``__init__``'s own frame.
    """
    violation: Violation = object.__new__(Violation)
    object.__setattr__(violation, "path", path)
    object.__setattr__(violation, "keyword", keyword)
    object.__setattr__(violation, "message", message)
    return violation


# --- the compiled program: a flat node table shared by both twins ---------------------------

#: Keyword families a compiled node may hold (:attr:`Node.uses`, a mask of these): a node
#: whose mask lacks a family keeps that family's fields at their class defaults, so the
#: compiler's walks over finished nodes (reference edges, member walking) read only the
#: families a node uses.
USES_NUMBER: Final = 1  # num_checks
USES_STRING: Final = 2  # str_checks
USES_ARRAY: Final = 4  # items, prefix, contains, min_contains, max_contains, arr_checks
USES_OBJECT: Final = 8  # props, required, closed, additional, property_names, dependent, obj_checks
USES_ENUM: Final = 16  # enum, enum_values, enum_keys, has_const, const, has_const_key, const_key
USES_BRANCHES: Final = 32  # all_of, any_of, one_of, branches
USES_LINK: Final = 64  # ref, trivial, false: a boolean schema, annotations only, or a $ref
USES_ALL: Final = 127


class Node:
    """One compiled schema node. Children are indices into :attr:`Program.nodes`.

    ``props`` maps a declared property name to ``child << 1 | required``;
    ``required`` lists the required names once each, in declaration order.
    ``items`` is ``-1`` for an array without ``items`` (its elements need only
    be lossless JSON). ``inline`` marks a scalar node (type check plus optional
    enum/const) that walkers check in place without pushing a frame.

    A plain class whose defaults live on the class, ``kind`` (``JSON_ANY``)
    included, made with no arguments: compiling makes one node per schema
    object, and setting only what differs keeps that cheap (no ``__init__``, so
    making one runs no Python code). The compiled twin's compiler makes
    ``_schema_c.CompiledNode`` instead: these fields with these defaults (copied
    from here by name), as C members its table builds read without an attribute
    lookup.
    """

    kind: int = JSON_ANY
    enum: frozenset[Any] | None = None
    enum_values: tuple[Any, ...] = ()
    has_const: bool = False
    const: Any = None
    props: dict[str, int] | None = None
    required: tuple[str, ...] = ()
    closed: bool = False
    items: int = -1
    branches: tuple[int, ...] = ()
    inline: bool = False
    texts: dict[int, str] | None = None  # enum/const message suffixes, rendered on first use
    # --- the dialect's view (every node has it; the dialect walk reads only these fields) ---
    types: int = 0  # declared type mask (``1 << kind`` per type name); 0 = any type
    admit: int = 0  # value kinds accepted: ``types`` plus integer under number; 0 = any
    shape: int = ALL_KINDS  # value kinds that can possibly match (``admit`` through refs); for anyOf/oneOf
    false: bool = False  # the boolean schema ``false``: nothing matches
    trivial: bool = False  # matches every lossless JSON value (``{}``, ``true``, annotations only)
    enum_keys: frozenset[Any] | None = None  # JSON-equality keys (:func:`json_key`) of ``enum``
    has_const_key: bool = False
    const_key: Any = None
    num_checks: tuple[tuple[int, Any], ...] = ()  # (violation code, argument), in keyword order
    str_checks: tuple[tuple[int, Any], ...] = ()
    arr_checks: tuple[tuple[int, Any], ...] = ()
    obj_checks: tuple[tuple[int, Any], ...] = ()
    prefix: tuple[int, ...] = ()  # prefixItems
    additional: int = -1  # schema of undeclared keys (-1: any JSON; ``closed`` means false)
    contains: int = -1
    min_contains: int = 1
    max_contains: int = -1  # -1: no bound
    property_names: int = -1
    dependent: tuple[tuple[str, tuple[str, ...]], ...] = ()  # dependentRequired
    all_of: tuple[int, ...] = ()
    any_of: tuple[int, ...] = ()
    one_of: tuple[int, ...] = ()
    ref: int = -1
    # Whether this node walks an object's members / an array's items. A node that constrains
    # no member but hands the same value on ($ref, allOf, anyOf, oneOf) leaves them to the
    # nodes it hands it to, so a recursive $ref chain walks each member once, not once per level.
    obj_members: bool = True
    arr_members: bool = True
    # The keyword families (``USES_*``) whose fields may differ from the defaults above; the
    # compiler narrows it per node, anything else that builds a node may leave it whole.
    uses: int = USES_ALL

    def __repr__(self) -> str:
        return f"Node({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


@dataclass(slots=True)
class Program:
    """A compiled schema: ``nodes[0]`` is the root.

    ``dialect`` is true when some node uses the wider tool-schema dialect (both
    twins then run the dialect walk, ``_dialect_walk``); ``recursive`` when the
    node graph has a cycle through a ``$ref`` (the walks then track the
    containers on the current path, so a cyclic value cannot loop forever).
    """

    nodes: list[Node]
    dialect: bool = False
    recursive: bool = False


# --- frozen containers ------------------------------------------------------------------------


_KEPT_FROZEN: list[tuple[type, type]] = []  # the pair, once both classes exist


def frozen_types() -> tuple[type | None, type | None]:
    """``(FrozenJsonObject, FrozenJsonArray)`` from :mod:`dsh_codegen.json`, ``None`` while absent.

    Looked up through the layer's public API, lazily (the json layer is imported
    first by the package, but may not export the names in a partial checkout).
    The pair is kept once both classes exist; a missing name is not kept, so the
    containers are accepted once they exist. Every compile and validator asks,
    so the kept path is one list test.
    """
    if _KEPT_FROZEN:
        return _KEPT_FROZEN[0]
    import dsh_codegen.json as json_layer

    obj = getattr(json_layer, "FrozenJsonObject", None)
    arr = getattr(json_layer, "FrozenJsonArray", None)
    if isinstance(obj, type) and isinstance(arr, type):
        _KEPT_FROZEN.append((obj, arr))
    return (obj if isinstance(obj, type) else None, arr if isinstance(arr, type) else None)


class ExactContainers:
    """The exact-type container checks of the cold walkers (subset check, DSL compiler).

    ``dict``/``list``/``tuple`` and our frozen containers by exact type; the
    frozen classes are looked up once, when the walker is made.
    """

    __slots__ = ("_fobj", "_farr")

    def __init__(self) -> None:
        self._fobj, self._farr = frozen_types()

    def _is_object(self, value: object) -> bool:
        t = type(value)
        return t is dict or (self._fobj is not None and t is self._fobj)

    def _is_array(self, value: object) -> bool:
        t = type(value)
        return t is list or t is tuple or (self._farr is not None and t is self._farr)


# A path under construction is a chain ``(parent, segment)`` so that pushing a child
# costs O(1) even 100,000 levels down; it is flattened only when a message needs it.
ChainPath = tuple[Any, str | int] | None


def chain_segments(path: ChainPath) -> tuple[str | int, ...]:
    """The segments of a chain path, root first."""
    out: list[str | int] = []
    while path is not None:
        path, segment = path
        out.append(segment)
    out.reverse()
    return tuple(out)


# --- JSON value predicates (cold paths; the walkers inline the hot ones) ---------------------

# An int with at most this many bits has fewer than 640 decimal digits, the smallest
# int-to-str limit an interpreter accepts, so it always has a JSON text.
_SMALL_INT_BITS: Final = 2000


_POWERS_OF_TEN: dict[int, int] = {}


def int_is_lossless(value: int) -> bool:
    """Whether an exact ``int`` can be written as JSON text under the interpreter's digit limit.

    Allocates no garbage-collected object (no exception, no container), so the
    compiled twin may call it in the middle of a walk over borrowed references:
    it cannot trigger a collection that would run a finalizer.
    """
    if value.bit_length() <= _SMALL_INT_BITS:
        return True
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        return True
    bound = _POWERS_OF_TEN.get(limit)
    if bound is None:
        bound = _POWERS_OF_TEN[limit] = 10**limit
    return -bound < value < bound  # fewer than ``limit + 1`` decimal digits


def _finite_number(value: float) -> bool:
    return math.isfinite(value) and not (value == 0.0 and math.copysign(1.0, value) < 0.0)


class WalkBudget:
    """The values one validation may still reach, across all of its walks over the caller's value.

    Shared references are legal, so a small value can describe a huge one (a
    list holding one list twice, 27 levels deep, reaches 2**28 values): as
    ``snapshot_json`` does, a validation counts the values it reaches (the
    root, and every member or item of each container it walks) and stops past
    ``limit`` (the JSON layer's default, 10,000,000), instead of running for
    minutes. Both twins count alike; ``exceeded`` says the budget ran out (the
    verdict is then "too large", never "valid").
    """

    __slots__ = ("left", "exceeded")

    def __init__(self, limit: int = DEFAULT_MAX_NODES) -> None:
        self.left = limit
        self.exceeded = False

    def spend(self, count: int) -> bool:
        """Count ``count`` more values; ``False`` (and ``exceeded``) once past the limit."""
        self.left -= count
        if self.left < 0:
            self.exceeded = True
            return False
        return True


def within_walk_budget(value: object, limit: int = DEFAULT_MAX_NODES) -> bool:
    """Whether walking ``value`` reaches at most ``limit`` values (the root, and each member of every container).

    The measure of the tree the value describes (a shared container counts at
    every place it appears), taken before a report walks the value: whatever
    the members are (JSON or not; a cycle is not followed into itself), so the
    walks that follow are bounded. Exact container types only; no user code runs.
    """
    budget = WalkBudget(limit)
    budget.spend(1)  # the root
    _tree_walk(value, budget, False)
    return not budget.exceeded


def budget_violation(root: str, alias: str) -> Violation:
    """The one violation of a value too large to validate within :class:`WalkBudget` (keyword ``budget``)."""
    where = _path_text((), root, alias)
    limit = DEFAULT_MAX_NODES
    return new_violation(
        (), "budget", f"{where} is too large to validate: more than {limit} values visited (max_nodes={limit})"
    )


def is_lossless_json(value: object, budget: WalkBudget | None = None) -> bool:
    """Whether ``value`` is lossless JSON (docs/json.md), walked with an explicit stack.

    Exact types only (plus our frozen containers); no user code runs: only
    ``type()`` checks on the value and its members. Shared references are fine,
    a container that contains itself is not. The members of every container
    walked count against ``budget`` (a fresh :class:`WalkBudget` when ``None``):
    past it the answer is ``False``.
    """
    return _tree_walk(value, WalkBudget() if budget is None else budget, True)


def _tree_walk(value: object, budget: WalkBudget, lossless: bool) -> bool:
    """The walk of :func:`is_lossless_json` (``lossless``) and :func:`within_walk_budget` (not).

    Counts the members of every container it opens. ``lossless``: ``False`` at
    the first value that is not lossless JSON (a cycle included); otherwise
    nothing but the budget stops it, a container met again on its own path is
    not followed, and what is not a container is not looked at.
    """
    fobj, farr = frozen_types()
    stack: list[Any] = [value]
    on_path: set[int] = set()
    exit_mark = _EXIT
    while stack:
        item = stack.pop()
        if item is exit_mark:
            on_path.discard(stack.pop())
            continue
        t = type(item)
        if t is dict or (t is fobj and fobj is not None):
            members = list(item.values())
            if lossless and any(type(key) is not str for key in item):
                return False
        elif t is list or t is tuple or (t is farr and farr is not None):
            members = list(item)
        elif not lossless or t is str or item is None or t is bool:
            continue
        elif t is int:
            if not int_is_lossless(item):
                return False
            continue
        elif t is float:
            if not _finite_number(item):
                return False
            continue
        else:
            return False
        ident = id(item)
        if ident in on_path:
            if lossless:
                return False
            continue  # measuring: a cycle is reported by the walks that follow, not counted forever
        if not budget.spend(len(members)):
            return False
        on_path.add(ident)
        stack.append(ident)
        stack.append(exit_mark)
        stack.extend(members)
    return True


class _ExitMark:
    __slots__ = ()


_EXIT: Final = _ExitMark()


def scalar_fits(kind: int, value: object) -> bool:
    """Whether a scalar of the right exact JSON type for ``kind`` is ``value`` (enum/const use)."""
    t = type(value)
    if kind == STRING:
        return t is str
    if kind == BOOLEAN:
        return t is bool
    if kind == NULL:
        return value is None
    if kind in (INTEGER, NUMBER):
        # exact type first: isinstance() on anything else would consult a hostile __class__
        if t is int and isinstance(value, int):
            return int_is_lossless(value)
        if t is float and isinstance(value, float):
            return _finite_number(value) and (kind == NUMBER or value.is_integer())
        return False
    return False


def mismatch_code(kind: int, value: object) -> int:
    """The violation code for ``value`` failing the type check of a typed node of ``kind``.

    Non-finite floats (and ``-0.0``) under a number type say "finite JSON number";
    anything that is not JSON at all (a ``dict``/``list`` subclass, an ``int``
    subclass, a ``dict`` with a non-``str`` key, an ``int`` too long for JSON text)
    says "lossless"; everything else is a plain type mismatch.
    """
    t = type(value)
    fobj, farr = frozen_types()
    if t is float and kind in (NUMBER, INTEGER) and not _finite_number(value):  # type: ignore[arg-type]
        return V_FINITE
    if t is int and not int_is_lossless(value):  # type: ignore[arg-type]
        return V_LOSSLESS_VALUE
    # issubclass(type(v), ...) and never isinstance(v, ...): the latter reads v.__class__,
    # which a hostile object may define to raise
    if issubclass(t, dict):
        exact = t is dict or (fobj is not None and t is fobj)
        return V_LOSSLESS_OBJECT if kind == OBJECT or not exact else V_TYPE
    if issubclass(t, (list, tuple)):
        exact = t is list or t is tuple or (farr is not None and t is farr)
        return V_TYPE if exact else V_LOSSLESS_ARRAY
    if t is not bool and t is not int and t is not float and t is not str and issubclass(t, (str, int, float)):
        return V_LOSSLESS_VALUE
    return V_TYPE


def any_code(value: object) -> int:
    """The violation code for a value that is not lossless JSON where any JSON is allowed."""
    fobj, farr = frozen_types()
    t = type(value)
    if issubclass(t, dict) and (t is not dict and t is not fobj or any(type(k) is not str for k in value)):  # type: ignore[attr-defined]
        return V_LOSSLESS_OBJECT
    if issubclass(t, (list, tuple)) and t is not list and t is not tuple and t is not farr:
        return V_LOSSLESS_ARRAY
    return V_LOSSLESS_VALUE


# --- message text -----------------------------------------------------------------------------


def json_text(value: object) -> str:
    """Compact JSON text (``["a",1]``) with non-ASCII kept and lone surrogates escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = "".join(f"\\u{ord(ch):04x}" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


# Characters that JSON quoting leaves alone: with only these, quoting a path is adding quotes.
_NEEDS_ESCAPE: Final = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")


@lru_cache(maxsize=8192)
def segment_text(segment: str | int) -> tuple[str, bool]:
    """``(".key" | "[i]" | '["a b"]', safe)``; ``safe`` means quoting is just adding quotes."""
    text = format_path([segment], "x")[1:]
    return text, _NEEDS_ESCAPE.search(text) is None


@lru_cache(maxsize=256)
def root_text(root: str, alias: str) -> tuple[str, bool, str]:
    """``(root, safe, quoted root-or-alias)`` for one ``violations(path=...)`` root."""
    return root, _NEEDS_ESCAPE.search(root) is None, quote_path(root or alias)


def _path_text(segments: tuple[str | int, ...], root: str, alias: str) -> str:
    """The quoted path text; ``alias`` names the root when it is unrooted (``root == ""``)."""
    root, all_safe, quoted_root = root_text(root, alias)
    if not segments:
        return quoted_root
    parts = [root]
    for segment in segments:
        text, safe = segment_text(segment)
        parts.append(text)
        all_safe = all_safe and safe
    if not root and parts[1][0] == ".":
        parts[1] = parts[1][1:]
    text = "".join(parts)
    return f'"{text}"' if all_safe else quote_path(text)


FIXED_SUFFIX: Final[dict[int, str]] = {
    V_FINITE: " must be a finite JSON number",
    V_LOSSLESS_VALUE: " must be a lossless JSON value",
    V_LOSSLESS_OBJECT: " must be a lossless JSON object",
    V_LOSSLESS_ARRAY: " must be a dense lossless JSON array",
    V_ADDITIONAL: " is not a declared property (additionalProperties: false)",
}
TYPE_SUFFIX: Final[dict[int, str]] = {kind: f" must be {words}" for kind, words in TYPE_WORDS.items()}


def node_suffix(code: int, node: Node) -> str:
    """`` must be one of [...]`` / `` must be <const>``, rendered once per node."""
    cached = node.texts.get(code) if node.texts is not None else None
    if cached is None:
        if code == V_ENUM:
            cached = f" must be one of {json_text(list(node.enum_values))}"
        else:
            cached = f" must be {json_text(node.const)}"
        if node.texts is None:
            node.texts = {}
        node.texts[code] = cached
    return cached


def make_violation(
    code: int,
    node: Node,
    segments: tuple[str | int, ...],
    root: str,
    alias: str,
    extra: Any = None,
) -> Violation:
    """Render the violation ``code`` found at ``segments`` under ``node``.

    ``extra`` is the missing property name (``V_REQUIRED``) or the match count
    (``V_ONE_OF``). ``segments`` is the offending value's path; for
    ``V_REQUIRED`` the path of the object missing the property.
    """
    if code == V_REQUIRED:
        path = segments + (extra,)
        return new_violation(path, "required", "missing required property " + _path_text(path, root, alias))
    where = _path_text(segments, root, alias)
    if code == V_TYPE:
        return new_violation(segments, "type", where + TYPE_SUFFIX[node.kind])
    suffix = FIXED_SUFFIX.get(code)
    if suffix is None:
        if code == V_ONE_OF:
            suffix = f" must match exactly one oneOf branch (matched {extra})"
        elif code == V_ENUM or code == V_CONST:
            suffix = node_suffix(code, node)
        else:  # pragma: no cover - every code is listed above
            raise AssertionError(code)
    return new_violation(segments, KEYWORD_OF_CODE[code], where + suffix)


# --- the tool-schema dialect: violation codes, value kinds, JSON-equality keys, messages -----

V_MINIMUM: Final = 11
V_MAXIMUM: Final = 12
V_EXCLUSIVE_MINIMUM: Final = 13
V_EXCLUSIVE_MAXIMUM: Final = 14
V_MULTIPLE_OF: Final = 15
V_MIN_LENGTH: Final = 16
V_MAX_LENGTH: Final = 17
V_PATTERN: Final = 18
V_FORMAT: Final = 19
V_MIN_ITEMS: Final = 20
V_MAX_ITEMS: Final = 21
V_UNIQUE: Final = 22
V_MIN_CONTAINS: Final = 23
V_MAX_CONTAINS: Final = 24
V_MIN_PROPERTIES: Final = 25
V_MAX_PROPERTIES: Final = 26
V_PROPERTY_NAME: Final = 27
V_DEPENDENT: Final = 28
V_ANY_OF: Final = 29
V_FALSE: Final = 30
V_TYPES: Final = 31  # a type mismatch against a type mask (``extra``)
V_ITEMS_FALSE: Final = 32

DIALECT_KEYWORD: Final[dict[int, str]] = {
    V_MINIMUM: "minimum",
    V_MAXIMUM: "maximum",
    V_EXCLUSIVE_MINIMUM: "exclusiveMinimum",
    V_EXCLUSIVE_MAXIMUM: "exclusiveMaximum",
    V_MULTIPLE_OF: "multipleOf",
    V_MIN_LENGTH: "minLength",
    V_MAX_LENGTH: "maxLength",
    V_PATTERN: "pattern",
    V_FORMAT: "format",
    V_MIN_ITEMS: "minItems",
    V_MAX_ITEMS: "maxItems",
    V_UNIQUE: "uniqueItems",
    V_MIN_CONTAINS: "minContains",
    V_MAX_CONTAINS: "maxContains",
    V_MIN_PROPERTIES: "minProperties",
    V_MAX_PROPERTIES: "maxProperties",
    V_PROPERTY_NAME: "propertyNames",
    V_DEPENDENT: "dependentRequired",
    V_ANY_OF: "anyOf",
    V_FALSE: "false",
    V_TYPES: "type",
    V_ITEMS_FALSE: "items",
}


def kind_of_value(value: object, fobj: Any, farr: Any) -> int:
    """The JSON kind of ``value`` by exact type (integral floats are ``INTEGER``), or -1 if not JSON.

    Containers are classified shallowly (their members are checked where they
    are walked); a ``dict`` with a non-``str`` key is -1.
    """
    t = type(value)
    if t is str:
        return STRING
    if t is bool:
        return BOOLEAN
    if value is None:
        return NULL
    if t is int:
        return INTEGER if value.bit_length() <= _SMALL_INT_BITS or int_is_lossless(value) else -1  # type: ignore[attr-defined, arg-type]
    if t is float:
        if not _finite_number(value):  # type: ignore[arg-type]
            return -1
        return INTEGER if value.is_integer() else NUMBER  # type: ignore[attr-defined]
    if t is dict or (fobj is not None and t is fobj):
        for key in value:  # type: ignore[attr-defined]
            if type(key) is not str:
                return -1
        return OBJECT
    if t is list or t is tuple or (farr is not None and t is farr):
        return ARRAY
    return -1


def type_mask_text(mask: int) -> str:
    """``a string``, ``a string or null``, ``an object, a string or null`` for a type mask."""
    words = [TYPE_WORDS[kind] for kind in KIND_OF_TYPE.values() if mask & (1 << kind)]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def type_names_text(mask: int) -> str:
    """``"string"`` or ``"string"/"null"`` for a type mask (schema-check messages)."""
    return "/".join(f'"{name}"' for name, kind in KIND_OF_TYPE.items() if mask & (1 << kind))


_OPEN_ARRAY: Final = ("[",)
_OPEN_OBJECT: Final = ("{",)
_CLOSE: Final = ("]",)


def json_key(value: object) -> Any:
    """A hashable key equal for JSON-equal values (``1`` and ``1.0``; not ``True`` and ``1``).

    ``value`` must be lossless JSON (checked by the caller). Strings, numbers
    and ``None`` are their own key; a boolean is ``("b", value)``; a container is
    ``("j", tokens)`` with object keys sorted. Walked with an explicit stack.
    """
    t = type(value)
    if t is str or t is int or t is float or value is None:
        return value
    if t is bool:
        return ("b", value)
    tokens: list[Any] = []
    # entries: (True, token) to emit as is, (False, value) to expand
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        literal, item = stack.pop()
        if literal:
            tokens.append(item)
            continue
        t = type(item)
        if t is bool:
            tokens.append(("b", item))
        elif t is str:
            tokens.append(("s", item))
        elif t is int or t is float or item is None:
            tokens.append(item)
        elif t is list or t is tuple or issubclass(t, list):
            tokens.append(_OPEN_ARRAY)
            stack.append((True, _CLOSE))
            stack.extend((False, member) for member in reversed(item))
        else:  # an object: keys sorted, each key then its value
            tokens.append(_OPEN_OBJECT)
            stack.append((True, _CLOSE))
            for key in sorted(item, reverse=True):
                stack.append((False, item[key]))
                stack.append((True, ("k", key)))
    return ("j", tuple(tokens))


def number_text(value: object) -> str:
    """A number as message text (Python's JSON text: ``1``, ``1.5``, ``1e-07``)."""
    return json.dumps(value)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def dialect_violation(
    code: int,
    node: Node,
    segments: tuple[str | int, ...],
    root: str,
    alias: str,
    extra: Any = None,
) -> Violation:
    """Render a violation of the dialect walk (the message is path text, then :func:`dialect_suffix`).

    ``extra`` is the failing check's argument (a bound, a pattern), the missing
    name, a ``(name, trigger)`` pair (``V_DEPENDENT``), a match count or a type
    mask, per code.
    """
    if code == V_REQUIRED:
        path = segments + (extra,)
        return new_violation(path, "required", "missing required property " + _path_text(path, root, alias))
    if code == V_DEPENDENT:
        name, trigger = extra
        path = segments + (name,)
        text = "missing required property " + _path_text(path, root, alias) + dependent_suffix(trigger)
        return new_violation(path, "dependentRequired", text)
    return new_violation(
        segments, dialect_keyword(code), _path_text(segments, root, alias) + dialect_suffix(code, node, extra)
    )


def dialect_keyword(code: int) -> str:
    """The ``Violation.keyword`` of a dialect-walk violation code."""
    return KEYWORD_OF_CODE[code] if code < V_MINIMUM else DIALECT_KEYWORD[code]


def dependent_suffix(trigger: str) -> str:
    """What follows the missing name's path in a ``dependentRequired`` message."""
    return f" (required when {quote_path(trigger)} is present)"


def dialect_suffix(code: int, node: Node, extra: Any = None) -> str:
    """The text after the path of a dialect-walk violation (``V_REQUIRED`` and ``V_DEPENDENT`` aside).

    Both twins render through it: the pure walk per violation, the compiled
    scan once per node and check where the text depends on nothing else.
    """
    if code < V_MINIMUM:
        if code == V_TYPE:
            if node.kind == DIALECT:
                return " must be " + type_mask_text(node.types)
            return TYPE_SUFFIX[node.kind]
        fixed = FIXED_SUFFIX.get(code)
        if fixed is not None:
            return fixed
        if code == V_ONE_OF:
            return f" must match exactly one oneOf branch (matched {extra})"
        if code == V_ENUM or code == V_CONST:
            return node_suffix(code, node)
        raise AssertionError(code)  # pragma: no cover - every code is listed above
    if code == V_TYPES:
        suffix = " must be " + type_mask_text(extra)
    elif code == V_MINIMUM:
        suffix = " must be >= " + number_text(extra)
    elif code == V_MAXIMUM:
        suffix = " must be <= " + number_text(extra)
    elif code == V_EXCLUSIVE_MINIMUM:
        suffix = " must be > " + number_text(extra)
    elif code == V_EXCLUSIVE_MAXIMUM:
        suffix = " must be < " + number_text(extra)
    elif code == V_MULTIPLE_OF:
        suffix = " must be a multiple of " + number_text(extra[0])
    elif code == V_MIN_LENGTH:
        suffix = " must be at least " + _plural(extra, "character")
    elif code == V_MAX_LENGTH:
        suffix = " must be at most " + _plural(extra, "character")
    elif code == V_PATTERN:
        suffix = " must match pattern " + json_text(extra[1])
    elif code == V_FORMAT:
        suffix = f' must match format "{extra[1]}"'
    elif code == V_MIN_ITEMS:
        suffix = " must have at least " + _plural(extra, "item")
    elif code == V_MAX_ITEMS:
        suffix = " must have at most " + _plural(extra, "item")
    elif code == V_UNIQUE:
        suffix = " must not contain duplicates"
    elif code == V_MIN_CONTAINS:
        suffix = f" must contain at least {_plural(node.min_contains, 'item')} matching contains (found {extra})"
    elif code == V_MAX_CONTAINS:
        suffix = f" must contain at most {_plural(node.max_contains, 'item')} matching contains (found {extra})"
    elif code == V_MIN_PROPERTIES:
        suffix = " must have at least " + _plural(extra, "property").replace("propertys", "properties")
    elif code == V_MAX_PROPERTIES:
        suffix = " must have at most " + _plural(extra, "property").replace("propertys", "properties")
    elif code == V_PROPERTY_NAME:
        suffix = " is not an allowed property name (propertyNames)"
    elif code == V_ANY_OF:
        suffix = " must match at least one anyOf branch"
    elif code == V_FALSE:
        suffix = " is not allowed (the schema is false)"
    elif code == V_ITEMS_FALSE:
        suffix = " is not allowed (no schema admits an item at this position)"
    else:  # pragma: no cover - every code is listed above
        raise AssertionError(code)
    return suffix
