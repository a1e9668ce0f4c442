"""The JSON-Schema subset check and its compilation to a flat node table (cold code, both twins).

One walk with an explicit stack checks every node and, when the schema is
supported, builds the :class:`~dsh_codegen.schema._shared.Program` the
validator twins run. A schema object reused in several places (sibling reuse)
is checked and compiled once, at its first path; a schema object that contains
itself is reported as ``<path> is circular``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from dsh_codegen._backend import load_compiled
from dsh_codegen.json._paths import format_path, quote_path
from dsh_codegen.schema._errors import JsonSchemaError
from dsh_codegen.schema._shared import (
    ANNOTATIONS,
    ARRAY,
    BOOLEAN,
    INTEGER,
    JSON_ANY,
    KEYWORDS,
    KIND_OF_TYPE,
    NULL,
    NUMBER,
    OBJECT,
    ONE_OF,
    STRING,
    SUBSET_TEXT,
    ChainPath,
    ExactContainers,
    Node,
    Program,
    Violation,
    chain_segments,
    frozen_types,
    is_lossless_json,
    scalar_fits,
)

__all__ = ["assert_object_json_schema", "assert_supported_json_schema", "compile_program", "schema_violations"]

_KEYWORD_SET: Final = frozenset(KEYWORDS)
_ANNOTATION_SET: Final = frozenset(ANNOTATIONS)
_MISSING: Final = object()
_STRUCTURAL: Final = ("properties", "required", "additionalProperties", "items", "enum", "const")
_STRUCTURAL_SET: Final = frozenset(_STRUCTURAL)
_ARRAY_KEYS: Final = _KEYWORD_SET - _STRUCTURAL_SET | {"items"}
_SCALAR_KEYS: Final = _KEYWORD_SET - _STRUCTURAL_SET | {"enum", "const"}
_OBJECT_KEYS: Final = _KEYWORD_SET - {"items", "enum", "const", "oneOf"}
_SCALARS: Final = frozenset({NULL, BOOLEAN, INTEGER, NUMBER, STRING})
_SCALAR_KIND: Final = {name: kind for name, kind in KIND_OF_TYPE.items() if kind in _SCALARS}
_LEAF_KEYS: Final = frozenset({"type", "description", "title"})
_TYPE_LIST_TEXT: Final = "/".join(KIND_OF_TYPE)
_ARTICLE: Final = {"integer": "an integer", "object": "an object", "array": "an array"}

# The compiled twin's copy of the property loop (``None`` when the pure twin runs): the
# loop is most of compiling a typical tool schema, which is mostly plain leaves.
_c = load_compiled("_schema_c")
_fill_props: Callable[..., bool] | None = None if _c is None else _c.fill_props

# A child to visit: (schema, path, slot) where slot is a property name, a oneOf
# position, or None for ``items``.
_Child = tuple[Any, ChainPath, str | int | None]


class _Checker(ExactContainers):
    """One subset-check walk; ``build`` also compiles the node table."""

    __slots__ = ("violations", "nodes", "branches", "leaves", "with_required")

    def __init__(self) -> None:
        super().__init__()
        self.violations: list[Violation] = []
        self.nodes: list[Node] = []
        self.branches: dict[int, list[int]] = {}
        self.leaves: dict[int, int] = {}  # scalar kind -> its shared plain-leaf node
        self.with_required: list[Node] = []

    def _report(self, path: ChainPath, keyword: str | None, text: str) -> None:
        segments = chain_segments(path)
        if keyword is not None:
            segments += (keyword,)
        where = format_path(segments, "schema")
        self.violations.append(Violation(segments, keyword or "schema", f"{where} {text}"))

    def run(self, schema: object) -> None:
        """Walk ``schema`` depth first, in document order."""
        nodes = self.nodes
        memo: dict[int, int] = {}
        on_path: set[int] = set()
        nodes.append(Node(JSON_ANY))
        memo[id(schema)] = 0
        # frames: (schema, node index, path); an exit marker has index ~id(schema) < 0
        stack: list[tuple[Any, int, ChainPath]] = [(schema, 0, None)]
        pop = stack.pop
        push = stack.append
        check_node = self._check_node
        while stack:
            node_schema, index, path = pop()
            if index < 0:  # exit marker: node_schema's subtree is done
                on_path.discard(~index)
                continue
            try:
                children = check_node(node_schema, nodes[index], index, path)
            except Exception:
                # A key that is not an exact str ran its own __hash__/__eq__ during a
                # keyword lookup and raised: the node is not a plain schema object.
                self._report(path, None, "must be a schema object")
                continue
            if not children:
                continue
            ident = id(node_schema)
            on_path.add(ident)
            push((None, ~ident, None))  # ids are non-negative, so ~id < 0 marks an exit
            node = nodes[index]
            for child, child_path, slot in reversed(children):
                child_id = id(child)
                if child_id in on_path:
                    self._report(child_path, None, "is circular")
                    continue
                child_index = memo.get(child_id)
                if child_index is None:
                    child_index = len(nodes)
                    nodes.append(Node(JSON_ANY))
                    memo[child_id] = child_index
                    push((child, child_index, child_path))
                # point the parent's slot (property name, branch position, None for items) at the child
                if slot is None:
                    node.items = child_index
                elif type(slot) is str:
                    node.props[slot] = child_index << 1  # type: ignore[index]
                else:
                    self.branches[index][slot] = child_index  # type: ignore[index]

    def _plain_leaf(self, child: Any) -> int:
        """The node index of a plain scalar leaf (``{"type": "string", "description": ...}``), else -1.

        The commonest child by far: it can report nothing and has nothing to walk,
        so it is compiled in place, and every plain leaf of one kind shares one node.
        """
        if type(child) is not dict:
            return -1
        for key in child:  # exact str keys first: the lookups below then run no user code
            if type(key) is not str or key not in _LEAF_KEYS:
                return -1
        declared = child.get("type")
        if type(declared) is not str:
            return -1
        kind = _SCALAR_KIND.get(declared)
        if kind is None:
            return -1
        if len(child) > 1 and (
            type(child.get("description", "")) is not str or type(child.get("title", "")) is not str
        ):
            return -1
        index = self.leaves.get(kind)
        if index is None:
            index = self.leaves[kind] = len(self.nodes)
            leaf = Node(kind)
            leaf.inline = True
            self.nodes.append(leaf)
        return index

    def _check_node(self, schema: Any, node: Node, index: int, path: ChainPath) -> list[_Child] | None:
        """Check one node, fill ``node`` and return its children with their slots."""
        if not self._is_object(schema):
            self._report(path, None, "must be a schema object")
            return None
        if not _KEYWORD_SET.issuperset(schema):
            if any(type(key) is not str for key in schema):
                self._report(path, None, "must be a schema object")
                return None
            for key in schema:
                if key not in _KEYWORD_SET:
                    self._report(path, key, f"is not a supported keyword (subset: {SUBSET_TEXT})")
        children: list[_Child] | None = None
        declared = schema.get("type", _MISSING)
        kind = KIND_OF_TYPE.get(declared) if type(declared) is str else None
        if "oneOf" in schema:
            children = self._check_one_of(schema, node, index, path)
        elif kind is not None:
            node.kind = kind
            if kind == OBJECT:
                children = self._check_object(schema, node, path)
            elif kind == ARRAY:
                if not _ARRAY_KEYS.issuperset(schema):
                    self._misplaced(schema, path, "items", "array")
                if "items" in schema:
                    items = schema["items"]
                    leaf = self._plain_leaf(items)
                    if leaf >= 0:
                        node.items = leaf
                    else:
                        children = [(items, (path, "items"), None)]
            else:
                node.inline = True
                if not _SCALAR_KEYS.issuperset(schema):
                    self._misplaced(schema, path, "enum", declared)
                if "enum" in schema or "const" in schema:
                    self._check_scalar(schema, node, declared, path)
        elif declared is _MISSING:
            if not _STRUCTURAL_SET.isdisjoint(schema):
                for keyword in _STRUCTURAL:
                    if keyword in schema:
                        self._report(path, keyword, "requires type or oneOf")
        elif self._is_array(declared):
            self._report(path, "type", "must be a single type string (type arrays are not supported)")
        else:
            self._report(path, "type", f"must be one of {_TYPE_LIST_TEXT}")
        if not _ANNOTATION_SET.isdisjoint(schema):
            self._check_annotations(schema, path)
        return children

    def _misplaced(self, schema: Any, path: ChainPath, allowed: str, type_name: str) -> None:
        for keyword in _STRUCTURAL:
            if keyword in schema and keyword != allowed and not (allowed == "enum" and keyword == "const"):
                self._report(path, keyword, f'is not supported on type "{type_name}"')

    def _check_one_of(self, schema: Any, node: Node, index: int, path: ChainPath) -> list[_Child] | None:
        report = self._report
        if "type" in schema:
            report(path, None, "cannot declare both type and oneOf")
        if not _STRUCTURAL_SET.isdisjoint(schema):
            for keyword in _STRUCTURAL:
                if keyword in schema:
                    report(path, keyword, "is not supported beside oneOf")
        branches = schema["oneOf"]
        if not self._is_array(branches) or len(branches) < 2:
            report(path, "oneOf", "must be an array of at least two schemas")
            return None
        node.kind = ONE_OF
        self.branches[index] = [0] * len(branches)
        oneof_path = (path, "oneOf")
        return [(branch, (oneof_path, position), position) for position, branch in enumerate(branches)]

    def _check_object(self, schema: Any, node: Node, path: ChainPath) -> list[_Child] | None:
        report = self._report
        if not _OBJECT_KEYS.issuperset(schema):
            for keyword in ("items", "enum", "const"):
                if keyword in schema:
                    report(path, keyword, 'is not supported on type "object"')
        props: dict[str, int] = {}
        node.props = props
        children: list[_Child] | None = None
        props_ok = True
        if "properties" in schema:
            declared = schema["properties"]
            if type(declared) is dict and _fill_props is not None:
                # the compiled twin's copy of the loop below (same table, same order)
                children = []
                if _fill_props(declared, props, children, (path, "properties"), self.nodes, self.leaves):
                    declared = None
            elif (type(declared) is dict or type(declared) is self._fobj) and isinstance(declared, dict):
                props_path = (path, "properties")
                children = []
                plain_leaf = self._plain_leaf
                for name, child in declared.items():
                    if type(name) is not str:
                        break
                    leaf = plain_leaf(child)
                    if leaf >= 0:
                        props[name] = leaf << 1
                    else:
                        props[name] = 0
                        children.append((child, (props_path, name), name))
                else:
                    declared = None  # every key was a str
            if declared is not None:
                report(path, "properties", "must be an object of schemas")
                props.clear()
                children = None
                props_ok = False
        if "required" in schema:
            names = schema["required"]
            well_formed = self._is_array(names)
            if well_formed:
                for name in names:
                    if type(name) is not str:
                        well_formed = False
                        break
            if well_formed:
                self._required(names, props, props_ok, node, path)
            else:
                report(path, "required", "must be an array of strings")
        if "additionalProperties" in schema:
            closed = schema["additionalProperties"]
            if type(closed) is not bool:
                report(path, "additionalProperties", "must be a boolean")
            node.closed = closed is False
        return children

    def _required(self, names: Any, props: dict[str, int], props_ok: bool, node: Node, path: ChainPath) -> None:
        """Record an object's required names (once each, in order); report undeclared ones."""
        required: list[str] = []
        for name in names:
            if props_ok and name not in props:
                self._report(path, "required", f"names {quote_path(name)} which is not in properties")
            elif name not in required:
                required.append(name)
        node.required = tuple(required)
        if required and props_ok:
            self.with_required.append(node)

    def _check_scalar(self, schema: Any, node: Node, type_name: str, path: ChainPath) -> None:
        report = self._report
        kind = node.kind
        enum_ok = True
        if "enum" in schema:
            values = schema["enum"]
            if not self._is_array(values) or not values or not all(scalar_fits(kind, v) for v in values):
                report(path, "enum", f"must be a non-empty array of {type_name} values")
                enum_ok = False
            else:
                node.enum_values = tuple(values)
                node.enum = frozenset(values)
        if "const" in schema:
            const = schema["const"]
            if not scalar_fits(kind, const):
                report(path, "const", f"must be {_ARTICLE.get(type_name, 'a ' + type_name)} value")
            else:
                node.has_const = True
                node.const = const
                if enum_ok and node.enum is not None and const not in node.enum:
                    where = format_path(chain_segments(path) + ("enum",), "schema")
                    report(path, "const", f"must be one of {where} when both are declared")

    def _check_annotations(self, schema: Any, path: ChainPath) -> None:
        for keyword in ANNOTATIONS:
            if keyword not in schema:
                continue
            value = schema[keyword]
            if keyword in ("description", "title"):
                if type(value) is not str:
                    self._report(path, keyword, "must be a string")
            elif not is_lossless_json(value):
                self._report(path, keyword, "annotation must be lossless JSON data")


def _finish(checker: _Checker) -> Program:
    """Mark required properties and inline oneOf nodes once every index is known."""
    nodes = checker.nodes
    for index, branches in checker.branches.items():
        nodes[index].branches = tuple(branches)
    for node in checker.with_required:
        props = node.props
        assert props is not None
        for name in node.required:
            props[name] |= 1
    return Program(nodes)


def schema_violations(schema: object) -> list[Violation]:
    """Every reason ``schema`` is outside the supported subset, in walk order (``[]`` when supported)."""
    checker = _Checker()
    checker.run(schema)
    return checker.violations


def compile_program(schema: object) -> Program:
    """Check ``schema`` and compile it to a flat node table.

    Raised errors: :class:`JsonSchemaError` listing every violation when the
    schema is outside the supported subset.
    """
    checker = _Checker()
    checker.run(schema)
    if checker.violations:
        raise JsonSchemaError(checker.violations)
    return _finish(checker)


def assert_supported_json_schema(schema: object) -> None:
    """Return when ``schema`` is inside the supported JSON-Schema subset.

    Raised errors: :class:`JsonSchemaError` (``UNSUPPORTED_SCHEMA``) listing every
    violation in walk order, rooted at ``schema``.
    """
    violations = schema_violations(schema)
    if violations:
        raise JsonSchemaError(violations)


def assert_object_json_schema(schema: object) -> None:
    """Like :func:`assert_supported_json_schema`, and the root must declare ``type: "object"``.

    Raised errors: :class:`JsonSchemaError`; the object-root violation
    (``schema.type must be "object" (structured output is object-rooted)``)
    comes first.
    """
    violations = schema_violations(schema)
    fobj, _ = frozen_types()
    if (type(schema) is dict or (fobj is not None and type(schema) is fobj)) and schema.get("type") != "object":  # type: ignore[attr-defined]
        violations.insert(
            0, Violation(("type",), "type", 'schema.type must be "object" (structured output is object-rooted)')
        )
    if violations:
        raise JsonSchemaError(violations)
