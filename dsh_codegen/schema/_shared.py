"""What both validator twins share: type tags, keyword tables, the compiled program, messages.

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

from dsh_codegen.json._paths import format_path, quote_path

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
    "STRING",
    "SUBSET_TEXT",
    "TYPE_SUFFIX",
    "TYPE_WORDS",
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
    "any_code",
    "chain_segments",
    "frozen_types",
    "int_is_lossless",
    "is_lossless_json",
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
    CONTRACT.md text.
    """

    path: tuple[str | int, ...]
    keyword: str
    message: str

    def __str__(self) -> str:
        return self.message


_object_new = object.__new__
_object_setattr = object.__setattr__


def new_violation(path: tuple[str | int, ...], keyword: str, message: str) -> Violation:
    """``Violation(path, keyword, message)`` without the frozen dataclass ``__init__`` (hot path)."""
    violation: Violation = _object_new(Violation)
    _object_setattr(violation, "path", path)
    _object_setattr(violation, "keyword", keyword)
    _object_setattr(violation, "message", message)
    return violation


# --- the compiled program: a flat node table shared by both twins ---------------------------


class Node:
    """One compiled schema node. Children are indices into :attr:`Program.nodes`.

    ``props`` maps a declared property name to ``child << 1 | required``;
    ``required`` lists the required names once each, in declaration order.
    ``items`` is ``-1`` for an array without ``items`` (its elements need only
    be lossless JSON). ``inline`` marks a scalar node (type check plus optional
    enum/const) that walkers check in place without pushing a frame.

    A plain class whose defaults live on the class: compiling makes one node per
    schema object, and setting only what differs keeps that cheap.
    """

    kind: int
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

    def __init__(self, kind: int) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"Node({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


@dataclass(slots=True)
class Program:
    """A compiled schema: ``nodes[0]`` is the root."""

    nodes: list[Node]


# --- frozen containers ------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _frozen_pair() -> tuple[type | None, type | None]:
    import dsh_codegen.json as json_layer

    obj = getattr(json_layer, "FrozenJsonObject", None)
    arr = getattr(json_layer, "FrozenJsonArray", None)
    return (obj if isinstance(obj, type) else None, arr if isinstance(arr, type) else None)


def frozen_types() -> tuple[type | None, type | None]:
    """``(FrozenJsonObject, FrozenJsonArray)`` from :mod:`dsh_codegen.json`, ``None`` while absent.

    Looked up through the layer's public API, lazily (the json layer is imported
    first by the package, but may not export the names in a partial checkout).
    A missing name is not cached, so the containers are accepted once they exist.
    """
    pair = _frozen_pair()
    if pair[0] is None or pair[1] is None:
        _frozen_pair.cache_clear()
    return pair


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


def is_lossless_json(value: object) -> bool:
    """Whether ``value`` is lossless JSON (DESIGN.md), walked with an explicit stack.

    Exact types only (plus our frozen containers); no user code runs: only
    ``type()`` checks on the value and its members. Shared references are fine,
    a container that contains itself is not.
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
        if t is str or item is None or t is bool:
            continue
        if t is int:
            if not int_is_lossless(item):
                return False
            continue
        if t is float:
            if not _finite_number(item):
                return False
            continue
        if t is dict or (t is fobj and fobj is not None):
            members = list(item.values())
            if any(type(key) is not str for key in item):
                return False
        elif t is list or t is tuple or (t is farr and farr is not None):
            members = list(item)
        else:
            return False
        ident = id(item)
        if ident in on_path:
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
_NEEDS_ESCAPE: Final = re.compile(r'[^\x20\x21\x23-\x5b\x5d-\x7e]')


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

