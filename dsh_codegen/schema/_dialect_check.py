# cython: annotation_typing=False, infer_types=False, wraparound=True, boundscheck=True
"""The tool-schema dialect check and its compilation to a flat node table (cold code): the pure twin.

Mirrored by ``_ext/_dialect_check_c.pyx`` (the compiled twin, ``dsh_codegen._dialect_check_c``) line
for line: a change here is made there too. Both import every table and message from
``_dialect_rules``; only ``schema/_validator.py`` chooses which of them runs.

One walk with an explicit stack checks every node and, when the schema is
supported, builds the :class:`~dsh_codegen.schema._program.Program` the
validator twins run. A schema object reused in several places (sibling reuse)
is checked and compiled once, at its first path; a schema object that contains
itself is reported as ``<path> is circular``. ``$ref`` targets are resolved
after the walk (anchors are known only then) and compiled where they are.

Every keyword has one small checker in :data:`_ORDER`, one ordered table;
a node whose keywords all belong to the seed's subset keeps that subset's node
kinds (the twins' fast walks run such programs), any other node is a
``DIALECT`` node and makes the whole program run on the dialect walk.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final
from urllib.parse import unquote

from dsh_codegen.json import format_path, quote_path
from dsh_codegen.schema._dialect_rules import (
    ANCHOR_NAME,
    ANNOTATION_KEYWORDS,
    APPLIES,
    ARRAY_BIT,
    ARTICLE,
    DISCRIMINATOR_KEYS,
    INTEGER_BIT,
    LEAF_KEYS,
    LOWEST_KIND,
    MISSING,
    NUMBER_BIT,
    OBJECT_BIT,
    REJECTED,
    SAME_VALUE_FIELDS,
    SCALARS,
    SCALAR_KIND,
    SCHEMA_URIS,
    SLOT_ADDITIONAL,
    SLOT_CONTAINS,
    SLOT_ITEMS,
    SLOT_NAMES,
    SLOT_NOWHERE,
    SMALL_INT,
    STRING_BIT,
    SUBSET,
    SUBSET_OR_ANNOTATION,
    TYPE_BITS,
    TYPE_LIST_TEXT,
    UNCHECKED,
    USES,
    Text,
)
from dsh_codegen.schema._ecma import PatternError, compile_pattern
from dsh_codegen.schema._errors import JsonSchemaError
from dsh_codegen.schema._formats import FORMAT_CHECKERS
from dsh_codegen.schema._program import (
    ALL_KINDS,
    DIALECT,
    INTEGER,
    KIND_OF_TYPE,
    NUMBER,
    ONE_OF,
    USES_ARRAY,
    USES_BRANCHES,
    USES_LINK,
    USES_OBJECT,
    USES_STRING,
    V_EXCLUSIVE_MAXIMUM,
    V_EXCLUSIVE_MINIMUM,
    V_FORMAT,
    V_MAX_ITEMS,
    V_MAX_LENGTH,
    V_MAX_PROPERTIES,
    V_MAXIMUM,
    V_MIN_ITEMS,
    V_MIN_LENGTH,
    V_MIN_PROPERTIES,
    V_MINIMUM,
    V_MULTIPLE_OF,
    V_PATTERN,
    V_UNIQUE,
    ChainPath,
    Node,
    Program,
    Violation,
    chain_segments,
    frozen_types,
    is_lossless_json,
    json_key,
    kind_of_value,
    type_names_text,
)

__all__ = [
    "ANNOTATION_KEYWORDS",
    "assert_object_json_schema",
    "assert_supported_json_schema",
    "compile_program",
    "schema_violations",
]


# A child to visit: (schema, path, slot); the slot says where its node index goes:
# a property name, ("field", None) for a single-child field, ("field", i) for a list field.
_Child = tuple[Any, ChainPath, Any]


class _Checker:
    """One dialect-check walk; ``build`` also compiles the node table."""

    __slots__ = (
        "_fobj",
        "_farr",
        "violations",
        "nodes",
        "lists",
        "leaves",
        "with_required",
        "root",
        "formats",
        "memo",
        "on_path",
        "stack",
        "refs",
        "anchors",
        "root_id",
        "dialect",
        "ref_paths",
        "linked",
    )

    def __init__(self, root: object, formats: bool) -> None:
        self._fobj, self._farr = frozen_types()
        self.violations: list[Violation] = []
        self.nodes: list[Node] = []
        self.lists: dict[tuple[int, str], list[int]] = {}
        self.leaves: dict[int, int] = {}  # scalar kind -> its shared plain-leaf node
        self.with_required: list[Node] = []
        self.root = root
        self.formats = formats
        self.memo: dict[int, int] = {}
        self.on_path: set[int] = set()
        # (schema, node index, path) to visit, or the exit marker (None, -1, id of a schema on the path)
        self.stack: list[tuple[Any, int, Any]] = []
        self.refs: list[tuple[int, str, ChainPath]] = []  # (node index, $ref text, path of the node)
        self.anchors: dict[str, int] = {}
        self.root_id: str | None = None
        self.dialect = False
        self.ref_paths: dict[int, ChainPath] = {}
        self.linked: list[int] | None = None  # _linked(), once

    # ExactContainers' two tests, as methods: the compiled mirror's _Checker is an extension type,
    # which cannot extend a Python class, and its own copies are C calls.
    def _is_object(self, value: object) -> bool:
        t = type(value)
        return t is dict or (self._fobj is not None and t is self._fobj)

    def _is_array(self, value: object) -> bool:
        t = type(value)
        return t is list or t is tuple or (self._farr is not None and t is self._farr)

    def _report(self, path: ChainPath, keyword: str | None, text: str) -> None:
        segments = chain_segments(path)
        if keyword is not None:
            segments += (keyword,)
        where = format_path(segments, "schema")
        self.violations.append(Violation(segments, keyword or "schema", f"{where} {text}"))

    # --- the walk ------------------------------------------------------------------------

    def run(self) -> None:
        """Walk the schema depth first, in document order, then resolve every ``$ref``."""
        self.nodes.append(Node())
        self.memo[id(self.root)] = 0
        self.stack.append((self.root, 0, None))
        self._walk()
        self._resolve_refs()

    def _walk(self) -> None:
        nodes = self.nodes
        memo = self.memo
        on_path = self.on_path
        stack = self.stack
        while stack:
            node_schema, index, path = stack.pop()
            if index < 0:  # exit marker (None, -1, id of the schema whose subtree is done)
                on_path.discard(path)
                continue
            try:
                children = self._check_node(node_schema, nodes[index], index, path)
            except Exception:
                # A key that is not an exact str ran its own __hash__/__eq__ during a
                # keyword lookup and raised: the node is not a plain schema object.
                self._report(path, None, Text.NOT_A_SCHEMA_OBJECT)
                continue
            if not children:
                continue
            ident = id(node_schema)
            on_path.add(ident)
            stack.append((None, -1, ident))
            node = nodes[index]
            for child, child_path, slot in reversed(children):
                child_id = id(child)
                if child_id in on_path and type(child) is not bool:
                    self._report(child_path, None, Text.CIRCULAR)
                    continue
                if child_id in memo:  # reused
                    child_index = memo[child_id]
                else:
                    child_index = len(nodes)
                    nodes.append(Node())
                    memo[child_id] = child_index
                    stack.append((child, child_index, child_path))
                if type(slot) is str:  # a declared property, the commonest child
                    node.props[slot] = child_index << 1  # type: ignore[index]
                else:
                    self._attach(node, index, slot, child_index)

    def _attach(self, node: Node, index: int, slot: Any, child_index: int) -> None:
        """Point the parent's field ``slot`` (not a property name: the walk sets those) at ``child_index``."""
        field, position = slot
        if position is None:
            if field == "items":
                node.items = child_index
            elif field:
                setattr(node, field, child_index)
        else:
            self.lists[(index, field)][position] = child_index

    def _plain_leaf(self, child: Any) -> int:
        """The node index of a plain scalar leaf (``{"type": "string", "description": ...}``), else -1.

        The commonest child by far: it can report nothing and has nothing to walk,
        so it is compiled in place, and every plain leaf of one kind shares one node.
        """
        if type(child) is not dict:
            return -1
        for key in child:  # exact str keys first: the lookups below then run no user code
            if type(key) is not str or key not in LEAF_KEYS:
                return -1
        declared = child.get("type")
        if type(declared) is not str:
            return -1
        kind = SCALAR_KIND.get(declared)
        if kind is None:
            return -1
        if len(child) > 1 and (
            type(child.get("description", "")) is not str or type(child.get("title", "")) is not str
        ):
            return -1
        index = self.leaves.get(kind)
        if index is None:
            index = self.leaves[kind] = len(self.nodes)
            self.nodes.append(_shared_leaf(kind))
        return index

    # --- one node ------------------------------------------------------------------------

    def _check_node(self, schema: Any, node: Node, index: int, path: ChainPath) -> list[_Child] | None:
        """Check one node, fill ``node`` and return its children with their slots."""
        if type(schema) is bool:
            node.uses = USES_LINK
            if schema:
                node.trivial = True
            else:
                node.kind = DIALECT
                node.false = True
                node.shape = 0
                self.dialect = True
            return None
        if type(schema) is not dict and not self._is_object(schema):
            self._report(path, None, Text.NOT_A_SCHEMA_OBJECT)
            return None
        for key in schema:
            if type(key) is not str:
                self._report(path, None, Text.NOT_A_SCHEMA_OBJECT)
                return None
        mask = 0
        if "type" in schema:
            declared = schema["type"]
            bits = TYPE_BITS.get(declared) if type(declared) is str else None
            if bits is not None:  # one known type name, the common form: set here, without a call
                mask, admit = bits
                node.types = mask
                node.admit = node.shape = admit
            else:
                mask = self._types(schema, node, path)
        subset = True
        uses = 0
        ranked: list[tuple[int, Any, Any]] = []  # (rank, checker, value)
        last_rank = -1  # sorted only when some key came before a lower-ranked one
        in_order = True
        for key, value in schema.items():
            entry = _KEYWORDS.get(key)
            if entry is not None:
                rank, checker, applies, plain, unchecked, family = entry
                uses |= family
                if unchecked and type(value) in unchecked:
                    continue  # a well-formed annotation: its checker would report nothing
                if not plain:
                    subset = False
                if mask and not applies & mask:
                    self._report(path, key, Text.NOT_ON_TYPE.format(types=type_names_text(mask)))
                if checker is not None:
                    if rank < last_rank:
                        in_order = False
                    last_rank = rank
                    ranked.append((rank, checker, value))
            elif key.startswith("x-"):
                if not is_lossless_json(value):
                    self._report(path, key, Text.ANNOTATION_NOT_JSON)
            elif key in REJECTED:
                self._report(path, key, Text.REJECTED.format(reason=REJECTED[key]))
            else:
                self._report(path, key, Text.UNKNOWN_KEYWORD)
        if not in_order:
            ranked.sort()  # by rank: the first items are distinct, so nothing else is compared
        node.uses = uses
        children: list[_Child] = []
        for _rank, checker, value in ranked:
            checker(self, value, schema, node, index, path, children)
        # str_checks: an asserted format (only the string family sets it)
        if subset and ((uses & USES_STRING and node.str_checks) or not self._subset_node(schema, node, mask)):
            subset = False
        if not subset:
            node.kind = DIALECT
            self.dialect = True
        elif "oneOf" in schema:
            node.kind = ONE_OF
        elif mask:
            kind = LOWEST_KIND[mask]
            node.kind = kind
            node.inline = kind in SCALARS
        else:
            node.trivial = True  # stays JSON_ANY: annotations only (a $ref resolved later undoes this)
            node.uses = uses | USES_LINK
        return children

    def _types(self, schema: Any, node: Node, path: ChainPath) -> int:
        """The type mask of ``schema["type"]`` (present, and not one known name: _check_node sets those), set on ``node``."""
        declared = schema["type"]
        if self._is_array(declared):
            mask = 0
            for name in declared:
                bits = TYPE_BITS.get(name) if type(name) is str else None
                if bits is None or mask & bits[0]:
                    mask = 0
                    break
                mask |= bits[0]
            if not mask:
                self._report(path, "type", Text.TYPE_ARRAY.format(names=TYPE_LIST_TEXT))
                return 0
            admit = mask | (INTEGER_BIT if mask & NUMBER_BIT else 0)
        else:
            self._report(path, "type", Text.TYPE_NAME.format(names=TYPE_LIST_TEXT))
            return 0
        node.types = mask
        node.admit = node.shape = admit
        return mask

    def _subset_node(self, schema: Any, node: Node, mask: int) -> bool:
        """Whether ``node`` is what the seed's subset would compile (the fast walks' node kinds)."""
        if "oneOf" in schema:
            branches = schema["oneOf"]
            if "type" in schema or not self._is_array(branches) or len(branches) < 2:
                return False
            for key in schema:  # a loop, not a generator: compiled, a generator makes the method a closure
                if key != "oneOf" and key in SUBSET:
                    return False
            return True
        if mask and mask & (mask - 1):
            return False  # a type array
        if not mask:
            return SUBSET.isdisjoint(schema)
        if mask == OBJECT_BIT:
            if "additionalProperties" in schema and type(schema["additionalProperties"]) is not bool:
                return False
            props = node.props or {}
            for name in node.required:
                if name not in props:
                    return False
            return True
        if mask == ARRAY_BIT:
            return True
        if "enum" in schema and node.enum is None:
            return False  # an enum holding values outside the declared type
        return "const" not in schema or node.has_const

    # --- references ----------------------------------------------------------------------

    def _resolve_refs(self) -> None:
        """Resolve every ``$ref`` (anchors first known now), compiling targets met for the first time."""
        done = 0
        while done < len(self.refs):
            index, ref, path = self.refs[done]
            done += 1
            target = self._ref_target(ref, path)
            if target is None:
                continue
            node = self.nodes[index]
            if isinstance(target, int):
                node.ref = target
            else:
                schema, target_path = target
                target_index = self.memo.get(id(schema))
                if target_index is None:
                    target_index = len(self.nodes)
                    self.nodes.append(Node())
                    self.memo[id(schema)] = target_index
                    self.stack.append((schema, target_index, target_path))
                    self._walk()  # may add refs; the loop picks them up
                node.ref = target_index
            node.kind = DIALECT
            node.trivial = False
            node.uses |= USES_LINK
            self.dialect = True
            self.ref_paths[index] = path

    def _ref_target(self, ref: str, path: ChainPath) -> int | tuple[Any, ChainPath] | None:
        """The node index (anchor) or (schema, path) a ``$ref`` names; None after reporting why not."""
        base, hash_, fragment = ref.partition("#")
        if base and base != self.root_id:
            self._report(path, "$ref", Text.REF_REMOTE.format(ref=quote_path(ref)))
            return None
        if not hash_ and not base:
            self._report(path, "$ref", Text.REF_UNRESOLVED.format(ref=quote_path(ref)))
            return None
        if "%" in fragment:
            fragment = unquote(fragment)
        if fragment and not fragment.startswith("/"):
            found = self.anchors.get(fragment)
            if found is None:
                self._report(path, "$ref", Text.REF_NO_ANCHOR.format(ref=quote_path(ref)))
            return found
        here: Any = self.root
        target_path: ChainPath = None
        if fragment:
            for raw in fragment[1:].split("/"):
                segment = raw.replace("~1", "/").replace("~0", "~") if "~" in raw else raw
                if self._is_object(here) and segment in here:
                    here = here[segment]
                elif (
                    self._is_array(here)
                    and segment.isdigit()
                    and (segment == "0" or segment[0] != "0")
                    and int(segment) < len(here)
                ):
                    here = here[int(segment)]
                else:
                    self._report(path, "$ref", Text.REF_UNRESOLVED.format(ref=quote_path(ref)))
                    return None
                target_path = (target_path, segment)
        if type(here) is not bool and not self._is_object(here):
            self._report(path, "$ref", Text.REF_NOT_SCHEMA.format(ref=quote_path(ref)))
            return None
        return here, target_path

    # --- value helpers -------------------------------------------------------------------

    def _count(self, value: Any, path: ChainPath, keyword: str) -> int | None:
        if type(value) is int or (type(value) is float and value.is_integer()):
            if value >= 0:
                return int(value)
        self._report(path, keyword, Text.COUNT)
        return None

    def _number(self, value: Any, path: ChainPath, keyword: str) -> bool:
        if type(value) is int and -SMALL_INT < value < SMALL_INT:
            return True  # the common bound, without kind_of_value's call into bytecode
        kind = kind_of_value(value, None, None)
        if kind == INTEGER or kind == NUMBER:
            return True
        if type(value) is bool and keyword in ("exclusiveMinimum", "exclusiveMaximum"):
            self._report(path, keyword, Text.NUMBER_NOT_BOOL)
        else:
            self._report(path, keyword, Text.NUMBER)
        return False

    def _schemas(
        self, value: Any, path: ChainPath, keyword: str, field: str, index: int, children: list[_Child]
    ) -> int:
        """Queue a non-empty array of schemas as children of list ``field``; return their count."""
        if not self._is_array(value) or not value:
            self._report(path, keyword, Text.SCHEMAS)
            return 0
        self.lists[(index, field)] = [0] * len(value)
        base = (path, keyword)
        position = 0
        for branch in value:  # a loop, not a generator: compiled, a generator is an object per call
            children.append((branch, (base, position), (field, position)))
            position += 1
        return len(value)


def _leaf_node(kind: int) -> Node:
    leaf = Node()
    leaf.kind = kind
    leaf.uses = 0
    leaf.inline = True
    leaf.types = 1 << kind
    leaf.admit = leaf.shape = leaf.types | (INTEGER_BIT if kind == NUMBER else 0)
    return leaf


#: One plain leaf node per scalar kind, shared by every program: nothing changes a leaf once
#: made (``_finish`` and ``$ref`` resolution touch only nodes with required names, combinators
#: or references), so a compile appends the shared node instead of making its own.
SHARED_LEAVES: Final[dict[int, Node]] = {kind: _leaf_node(kind) for kind in sorted(SCALARS)}


def _shared_leaf(kind: int) -> Node:
    """The shared plain-leaf node of the scalar ``kind``."""
    return SHARED_LEAVES[kind]


# --- one checker per keyword, in the order they are visited -------------------------------
# Each checker is (checker, keyword value, schema, node, node index, path, children) -> None.


def _all_str(values: Any) -> bool:
    """Whether every item (every key of an object) is an exact ``str``."""
    for value in values:
        if type(value) is not str:
            return False
    return True


def _ignore(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    return None


def _string_annotation(keyword: str) -> Callable[..., None]:
    def check(
        c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
    ) -> None:
        if type(value) is not str:
            c._report(path, keyword, Text.STRING)

    return check


def _bool_annotation(keyword: str) -> Callable[..., None]:
    def check(
        c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
    ) -> None:
        if type(value) is not bool:
            c._report(path, keyword, Text.BOOLEAN)

    return check


def _data_annotation(keyword: str) -> Callable[..., None]:
    def check(
        c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
    ) -> None:
        t = type(value)
        if t is str or t is bool or value is None or (t is int and -SMALL_INT < value < SMALL_INT):
            return  # lossless JSON, without the general walk
        if not is_lossless_json(value):
            c._report(path, keyword, Text.ANNOTATION_NOT_JSON)

    return check


def _check_schema_uri(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if path is not None:
        c._report(path, "$schema", Text.SCHEMA_URI_NOT_ROOT)
    elif type(value) is not str or value not in SCHEMA_URIS:
        c._report(path, "$schema", Text.SCHEMA_URI)


def _check_id(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if path is not None or schema is not c.root:
        c._report(path, "$id", Text.NESTED_ID)
    elif type(value) is not str:
        c._report(path, "$id", Text.STRING)
    else:
        c.root_id = value.split("#", 1)[0]


def _check_defs(keyword: str) -> Callable[..., None]:
    def check(
        c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
    ) -> None:
        if not c._is_object(value) or not _all_str(value):
            c._report(path, keyword, Text.DEFS)
            return
        base = (path, keyword)
        for name, member in value.items():
            children.append((member, (base, name), SLOT_NOWHERE))

    return check


def _check_anchor(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if (
        type(value) is not str
        or not value
        or not (value[0].isascii() and (value[0].isalpha() or value[0] == "_"))
        or not ANCHOR_NAME.issuperset(value)
    ):
        c._report(path, "$anchor", Text.ANCHOR_NAME)
    elif value in c.anchors:
        c._report(path, "$anchor", Text.ANCHOR_TWICE.format(name=quote_path(value)))
    else:
        c.anchors[value] = index


def _check_format(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if type(value) is not str:
        c._report(path, "format", Text.STRING)
        return
    checker = FORMAT_CHECKERS.get(value) if c.formats else None
    if checker is not None:
        node.str_checks += ((V_FORMAT, (checker, value)),)


def _check_discriminator(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    """pydantic's (OpenAPI's) hint for a discriminated union: an annotation, so only its shape is checked."""
    if "oneOf" not in schema and "anyOf" not in schema:
        c._report(path, "discriminator", Text.DISCRIMINATOR_PLACE)
        return
    shaped = c._is_object(value) and all(type(key) is str and key in DISCRIMINATOR_KEYS for key in value)
    if not shaped or type(value.get("propertyName")) is not str:
        c._report(path, "discriminator", Text.DISCRIMINATOR_SHAPE)
        return
    mapping = value.get("mapping", MISSING)
    if mapping is not MISSING and (
        not c._is_object(mapping)
        or any(type(key) is not str or type(target) is not str for key, target in mapping.items())
    ):
        c._report(path, "discriminator", Text.DISCRIMINATOR_MAPPING)


def _check_ref(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if type(value) is not str:
        c._report(path, "$ref", Text.STRING)
        return
    c.refs.append((index, value, path))


def _check_type(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    return None  # read first, by _Checker._types


def _check_enum(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if not c._is_array(value) or not value:
        c._report(path, "enum", Text.ENUM_EMPTY)
        return
    # An enum of strings (the common case) is lossless JSON, of one kind, its own keys.
    strings = True
    for member in value:
        if type(member) is not str:
            strings = False
            break
    if not strings and not is_lossless_json(value):
        c._report(path, "enum", Text.ENUM_NOT_JSON)
        return
    mask = node.admit
    if mask and not (mask & STRING_BIT if strings else _all_fit(mask, value)):
        c._report(path, "enum", Text.ENUM_TYPE.format(types=_types_word(node.types)))
        return
    node.enum_keys = frozenset(value) if strings else frozenset([json_key(member) for member in value])
    kind = LOWEST_KIND[node.types]
    if node.types and not node.types & (node.types - 1) and kind in SCALARS:
        node.enum_values = tuple(value)
        node.enum = node.enum_keys if strings else frozenset(value)  # a string is its own key
    else:
        node.enum_values = tuple(value)


def _check_const(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if type(value) is not str and not is_lossless_json(value):
        c._report(path, "const", Text.CONST_NOT_JSON)
        return
    if node.admit and not _fits(node.admit, value):
        c._report(
            path,
            "const",
            Text.CONST_TYPE.format(type=ARTICLE.get(_types_word(node.types), "a " + _types_word(node.types))),
        )
        return
    key = json_key(value)
    node.has_const_key = True
    node.const_key = key
    node.const = value
    kind = LOWEST_KIND[node.types]
    node.has_const = bool(node.types) and not node.types & (node.types - 1) and kind in SCALARS
    if node.enum_keys is not None and key not in node.enum_keys:
        where = format_path(chain_segments(path) + ("enum",), "schema")
        c._report(path, "const", Text.CONST_NOT_IN_ENUM.format(enum=where))


def _all_fit(mask: int, values: Any) -> bool:
    for value in values:  # a loop, not a generator: compiled, a generator makes the caller a closure
        if not _fits(mask, value):
            return False
    return True


def _fits(mask: int, value: Any) -> bool:
    kind = kind_of_value(value, None, None)
    return kind >= 0 and bool(mask & (1 << kind))


def _types_word(types: int) -> str:
    return "/".join(name for name, kind in KIND_OF_TYPE.items() if types & (1 << kind))


def _bound(code: int, keyword: str) -> Callable[..., None]:
    def check(
        c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
    ) -> None:
        if c._number(value, path, keyword):
            node.num_checks += ((code, value),)

    return check


def _check_multiple_of(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if not c._number(value, path, "multipleOf"):
        return
    if value <= 0:
        c._report(path, "multipleOf", Text.MULTIPLE_OF)
        return
    node.num_checks += ((V_MULTIPLE_OF, (value, Fraction(repr(value)) if type(value) is float else Fraction(value))),)


def _length(code: int, keyword: str, field: str) -> Callable[..., None]:
    def check(
        c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
    ) -> None:
        count = c._count(value, path, keyword)
        if count is not None:
            setattr(node, field, getattr(node, field) + ((code, count),))

    return check


def _check_pattern(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if type(value) is not str:
        c._report(path, "pattern", Text.STRING)
        return
    try:
        compiled = compile_pattern(value)
    except PatternError as exc:
        c._report(path, "pattern", Text.PATTERN.format(pattern=quote_path(value), error=exc))
        return
    node.str_checks += ((V_PATTERN, (compiled.search, value)),)


def _check_items(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if c._is_array(value):
        c._report(path, "items", Text.ITEMS_ARRAY)
        return
    leaf = c._plain_leaf(value)
    if leaf >= 0:
        node.items = leaf
    else:
        children.append((value, (path, "items"), SLOT_ITEMS))


def _check_prefix_items(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    c._schemas(value, path, "prefixItems", "prefix", index, children)


def _check_unique(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if type(value) is not bool:
        c._report(path, "uniqueItems", Text.BOOLEAN)
    elif value:
        node.arr_checks += ((V_UNIQUE, True),)


def _check_contains(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    children.append((value, (path, "contains"), SLOT_CONTAINS))


def _check_contains_count(keyword: str) -> Callable[..., None]:
    def check(
        c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
    ) -> None:
        count = c._count(value, path, keyword)
        if count is None:
            return
        if "contains" not in schema:
            return  # without contains, minContains/maxContains mean nothing (2020-12)
        if keyword == "minContains":
            node.min_contains = count
        else:
            node.max_contains = count

    return check


def _check_properties(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    props: dict[str, int] = {}
    node.props = props
    declared = value
    if c._is_object(declared):
        props_path = (path, "properties")
        for name, child in declared.items():
            if type(name) is not str:
                break
            leaf = c._plain_leaf(child)
            if leaf >= 0:
                props[name] = leaf << 1
            else:
                props[name] = 0
                children.append((child, (props_path, name), name))
        else:
            declared = None  # every key was a str
    if declared is not None:
        c._report(path, "properties", Text.PROPERTIES)
        props.clear()
        node.props = None


def _check_required(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if not c._is_array(value) or not _all_str(value):
        c._report(path, "required", Text.REQUIRED)
        return
    props = node.props
    required = tuple(value)
    if len(required) > 1 and len(set(required)) < len(required):
        required = tuple(dict.fromkeys(required))  # each name once, in order
    if schema.get("additionalProperties") is False and ("properties" not in schema or props is not None):
        # a closed object: every required name must be declared
        undeclared = [name for name in required if props is None or name not in props]
        if undeclared:
            for name in undeclared:
                c._report(path, "required", Text.REQUIRED_UNDECLARED.format(name=quote_path(name)))
            required = tuple([name for name in required if name not in undeclared])
    node.required = required
    if required and props:
        c.with_required.append(node)


def _check_additional(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if type(value) is bool:
        node.closed = value is False
        return
    if not c._is_object(value):
        c._report(path, "additionalProperties", Text.ADDITIONAL)
        return
    children.append((value, (path, "additionalProperties"), SLOT_ADDITIONAL))


def _check_property_names(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    children.append((value, (path, "propertyNames"), SLOT_NAMES))


def _check_dependent_required(
    c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
) -> None:
    if c._is_object(value) and _all_str(value):
        entries: list[tuple[str, tuple[str, ...]]] = []
        for name, names in value.items():
            if not c._is_array(names) or not _all_str(names):
                break
            unique = tuple(dict.fromkeys(names))
            if len(unique) < len(names):
                # JSON Schema 2020-12 requires each array's names to be unique.
                seen: set[str] = set()
                twice = ""
                for listed in names:
                    if listed in seen:
                        twice = listed
                        break
                    seen.add(listed)
                segments = (*chain_segments(path), "dependentRequired", name)
                where = format_path(segments, "schema")
                c.violations.append(
                    Violation(
                        segments, "dependentRequired", Text.DEPENDENT_TWICE.format(where=where, name=quote_path(twice))
                    )
                )
            entries.append((name, unique))
        else:
            node.dependent = tuple(entries)
            return
    c._report(path, "dependentRequired", Text.DEPENDENT_REQUIRED)


def _combinator(keyword: str, field: str) -> Callable[..., None]:
    def check(
        c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
    ) -> None:
        c._schemas(value, path, keyword, field, index, children)

    return check


def _only_schema(keyword: str) -> Callable[..., None]:
    def check(
        c: _Checker, value: Any, schema: Any, node: Node, index: int, path: ChainPath, children: list[_Child]
    ) -> None:
        return None

    return check


#: Every keyword of the dialect with its checker, in visiting order (children follow this order).
_ORDER: Final[tuple[tuple[str, Callable[..., None]], ...]] = (
    ("$schema", _check_schema_uri),
    ("$id", _check_id),
    ("$anchor", _check_anchor),
    ("$ref", _check_ref),
    ("type", _check_type),
    ("enum", _check_enum),
    ("const", _check_const),
    ("minimum", _bound(V_MINIMUM, "minimum")),
    ("maximum", _bound(V_MAXIMUM, "maximum")),
    ("exclusiveMinimum", _bound(V_EXCLUSIVE_MINIMUM, "exclusiveMinimum")),
    ("exclusiveMaximum", _bound(V_EXCLUSIVE_MAXIMUM, "exclusiveMaximum")),
    ("multipleOf", _check_multiple_of),
    ("minLength", _length(V_MIN_LENGTH, "minLength", "str_checks")),
    ("maxLength", _length(V_MAX_LENGTH, "maxLength", "str_checks")),
    ("pattern", _check_pattern),
    ("format", _check_format),
    ("properties", _check_properties),
    ("required", _check_required),
    ("dependentRequired", _check_dependent_required),
    ("additionalProperties", _check_additional),
    ("propertyNames", _check_property_names),
    ("minProperties", _length(V_MIN_PROPERTIES, "minProperties", "obj_checks")),
    ("maxProperties", _length(V_MAX_PROPERTIES, "maxProperties", "obj_checks")),
    ("prefixItems", _check_prefix_items),
    ("items", _check_items),
    ("minItems", _length(V_MIN_ITEMS, "minItems", "arr_checks")),
    ("maxItems", _length(V_MAX_ITEMS, "maxItems", "arr_checks")),
    ("uniqueItems", _check_unique),
    ("contains", _check_contains),
    ("minContains", _check_contains_count("minContains")),
    ("maxContains", _check_contains_count("maxContains")),
    ("allOf", _combinator("allOf", "all_of")),
    ("anyOf", _combinator("anyOf", "any_of")),
    ("oneOf", _combinator("oneOf", "one_of")),
    ("discriminator", _check_discriminator),
    ("$defs", _check_defs("$defs")),
    ("definitions", _check_defs("definitions")),
    ("$comment", _string_annotation("$comment")),
    ("title", _string_annotation("title")),
    ("description", _string_annotation("description")),
    ("default", _data_annotation("default")),
    ("examples", _data_annotation("examples")),
    ("deprecated", _bool_annotation("deprecated")),
    ("readOnly", _bool_annotation("readOnly")),
    ("writeOnly", _bool_annotation("writeOnly")),
    ("contentMediaType", _string_annotation("contentMediaType")),
    ("contentEncoding", _string_annotation("contentEncoding")),
)
#: (rank, checker or None, the types it applies to, subset or annotation, value types needing no
#: check, keyword family): everything the node loop asks about a key, in one lookup.
#: ``type`` has no checker to call (``_Checker._types`` reads it first).
_Keyword = tuple[int, Any, int, bool, tuple[type, ...], int]
_KEYWORDS: Final[dict[str, _Keyword]] = {
    keyword: (
        rank,
        None if checker is _check_type else checker,
        APPLIES.get(keyword, ALL_KINDS),
        keyword in SUBSET_OR_ANNOTATION,
        UNCHECKED.get(keyword, ()),
        USES.get(keyword, 0),
    )
    for rank, (keyword, checker) in enumerate(_ORDER)
}


# --- finishing ---------------------------------------------------------------------------------


def _same_value_edges(node: Node) -> list[int]:
    edges = [*node.all_of, *node.any_of, *node.one_of] if node.uses & USES_BRANCHES else []
    if node.ref >= 0:
        edges.append(node.ref)
    return edges


def _all_edges(node: Node) -> list[int]:
    edges = _same_value_edges(node)
    uses = node.uses
    if uses & USES_OBJECT:
        props = node.props
        if props:
            for code in props.values():
                edges.append(code >> 1)
        for child in (node.additional, node.property_names):
            if child >= 0:
                edges.append(child)
    if uses & USES_ARRAY:
        for child in (node.items, node.contains):
            if child >= 0:
                edges.append(child)
        edges.extend(node.prefix)
    return edges


def _linked(checker: _Checker) -> list[int]:
    """The nodes that hand their value on (combinators, ``$ref``), in index order (found once per compile)."""
    if checker.linked is None and not checker.lists and not checker.refs:
        checker.linked = []  # no combinator, no $ref: nothing hands its value on
    elif checker.linked is None:
        linked = {index for index, field in checker.lists if field in SAME_VALUE_FIELDS}
        for index, _ref, _path in checker.refs:
            linked.add(index)
        checker.linked = sorted(linked)
    return checker.linked


def _find_cycle(
    nodes: list[Node], edges_of: Callable[[Node], list[int]], starts: list[int] | None = None
) -> list[int] | None:
    """A cycle of the node graph as a list of node indices, or None (iterative colouring DFS).

    ``starts``: the nodes to search from (default: every node, in index order); any
    cycle through one of them, or reachable from one, is found.
    """
    colour = [0] * len(nodes)  # 0 new, 1 on the current path, 2 done
    for start in range(len(nodes)) if starts is None else starts:
        if colour[start]:
            continue
        path: list[int] = [start]
        iters = [iter(edges_of(nodes[start]))]
        colour[start] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                iters.pop()
                continue
            if colour[nxt] == 1:
                return path[path.index(nxt) :]
            if colour[nxt] == 0:
                colour[nxt] = 1
                path.append(nxt)
                iters.append(iter(edges_of(nodes[nxt])))
    return None


def _fill_lists(checker: _Checker) -> None:
    """Set the list fields (prefixItems and the combinators), once the walk knows every index."""
    nodes = checker.nodes
    for (index, field), members in checker.lists.items():
        setattr(nodes[index], field, tuple(members))
        if field == "one_of":
            nodes[index].branches = tuple(members)


def _finish(checker: _Checker) -> Program:
    """Mark required properties, find recursion, once every index is known."""
    nodes = checker.nodes
    for node in checker.with_required:
        props = node.props
        assert props is not None
        for name in node.required:
            if name in props:
                props[name] |= 1
    # Only nodes that hand their value on (combinators, $ref) have members to leave to others.
    for index in _linked(checker):
        node = nodes[index]
        uses = node.uses  # a family the node does not use keeps its defaults: nothing to walk
        node.obj_members = bool(uses & USES_OBJECT) and (
            bool(node.props) or node.additional >= 0 or node.closed or node.property_names >= 0
        )
        node.arr_members = bool(uses & USES_ARRAY) and (bool(node.prefix) or node.items >= 0)
    program = Program(nodes, checker.dialect)
    if checker.dialect and checker.refs:
        # Without $ref the walk's edges form no cycle (a schema that contains itself is
        # rejected), so every cycle passes through a $ref target: search from those alone.
        targets = [nodes[index].ref for index, _ref, _path in checker.refs]
        program.recursive = _find_cycle(nodes, _all_edges, targets) is not None
        for index in sorted([index for index, _ref, _path in checker.refs]):  # a $ref matches what its target matches
            node = nodes[index]
            target, hops = node.ref, 0
            while target >= 0 and hops < 64:
                node.shape &= nodes[target].shape
                target, hops = nodes[target].ref, hops + 1
    return program


def _check(schema: object, formats: bool) -> _Checker:
    checker = _Checker(schema, formats)
    checker.run()
    _fill_lists(checker)  # before the loop search: a combinator's branches are same-value edges
    if not checker.violations and checker.refs:
        # only a node that hands its value on has a same-value edge, so only those can start a cycle
        cycle = _find_cycle(checker.nodes, _same_value_edges, _linked(checker))
        if cycle is not None:
            _report_loop(checker, cycle)
    return checker


def _report_loop(checker: _Checker, cycle: list[int]) -> None:
    """Report a same-value cycle at its first ``$ref`` (out of ``_check``: a generator would make it a closure)."""
    at = next((index for index in cycle if index in checker.ref_paths), cycle[0])
    checker._report(checker.ref_paths.get(at), "$ref", Text.REF_LOOP)


def schema_violations(schema: object) -> list[Violation]:
    """Every reason ``schema`` is outside the tool-schema dialect, in walk order (``[]`` when supported)."""
    return _check(schema, False).violations


def compile_program(schema: object, formats: bool = False) -> Program:
    """Check ``schema`` and compile it to a flat node table (``formats``: assert ``format``).

    Raised errors: :class:`JsonSchemaError` listing every violation when the
    schema is outside the tool-schema dialect.
    """
    checker = _check(schema, formats)
    if checker.violations:
        raise JsonSchemaError(checker.violations)
    return _finish(checker)


def assert_supported_json_schema(schema: object) -> None:
    """Return when ``schema`` is inside the tool-schema dialect (docs/schema.md).

    Raised errors: :class:`JsonSchemaError` (``UNSUPPORTED_SCHEMA``) listing every
    violation in walk order, rooted at ``schema``.
    """
    violations = schema_violations(schema)
    if violations:
        raise JsonSchemaError(violations)


def _object_rooted(checker: _Checker) -> bool:
    """Whether the checked schema's root declares ``type: "object"``, itself or through a root ``$ref`` chain.

    Read from the node table, so a ``$ref`` counts however it names its
    target (a JSON pointer or an ``$anchor``), exactly as validation resolves
    it. A boolean root declares no type: it is not an object schema.
    """
    nodes = checker.nodes
    index = 0
    for _ in range(len(nodes)):  # a ref chain visits each node at most once
        node = nodes[index]
        if node.types:
            return bool(node.types == OBJECT_BIT)
        if node.ref < 0:
            return False
        index = node.ref
    return False


def assert_object_json_schema(schema: object) -> None:
    """Like :func:`assert_supported_json_schema`, and the root must declare ``type: "object"``.

    A root ``$ref`` (``{"$ref": "#/$defs/Model", "$defs": ...}``, or an
    ``$anchor`` name) counts when its target declares ``type: "object"``; a
    boolean root (``true``, ``false``) is not an object schema.

    Raised errors: :class:`JsonSchemaError`; the object-root violation
    (``schema.type must be "object" (structured output is object-rooted)``)
    comes first.
    """
    checker = _check(schema, False)
    violations = checker.violations
    if (type(schema) is bool or checker._is_object(schema)) and not _object_rooted(checker):
        violations.insert(0, Violation(("type",), "type", Text.OBJECT_ROOT))
    if violations:
        raise JsonSchemaError(violations)
