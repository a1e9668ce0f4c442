"""Where an SDK's types degrade: the nodes that render ``unknown`` (TypeScript) or
``Any`` / ``dict[str, Any]`` (Python) although the schema says more.

``dsh-codegen sdk`` prints them as warnings, and ``--strict`` refuses them. The
walk reads every node with the readers the renderers use (``read_node``,
``merge_all_of``, the reference resolver), with an explicit stack, each
referenced definition once. ``{}``/``true`` (any JSON) is not a degradation;
neither is an open object (``dict[str, Any]`` / ``Record<string, JsonValue>``
is what it says).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from dsh_codegen.codegen._catalog import ToolSchemaEntry, sorted_catalog
from dsh_codegen.codegen._literals import py_literal, ts_literal
from dsh_codegen.codegen._nodes import (
    ALL_OF,
    ARRAY,
    LITERAL,
    MISSING,
    OBJECT,
    RECORD,
    REF,
    TUPLE,
    UNION,
    UNKNOWN,
    merge_all_of,
    read_node,
)
from dsh_codegen.codegen._refs import TS_UNGUARDED, RefResolver, reaches_itself

__all__ = ["Degradation", "degraded_nodes"]

#: What a TypeScript alias or Python ``TypeAlias`` may refer to itself through (Python:
#: anything but a class, since an alias is evaluated at import).
_PY_ALIAS_THROUGH = frozenset({UNION, ALL_OF, ARRAY, TUPLE, RECORD})


@dataclass(frozen=True, slots=True)
class Degradation:
    """One degraded node: the tool, ``parameters`` or ``output_schema``, the node's JSON
    pointer in that document, and why. ``str()`` is the line the CLI prints."""

    tool: str
    document: str
    pointer: str
    reason: str

    def __str__(self) -> str:
        return f'tool "{self.tool}" {self.document}#{self.pointer}: {self.reason}'


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def degraded_nodes(catalog: Iterable[ToolSchemaEntry], language: Literal["typescript", "python"]) -> list[Degradation]:
    """Every node of ``catalog`` whose type degrades in ``language``'s SDK, in tool
    order then document order. Never raises (a hostile node is reported)."""
    found: list[Degradation] = []
    python = language == "python"
    for entry in sorted_catalog(catalog):
        documents: list[tuple[str, object]] = [("parameters", entry.parameters)]
        if entry.output_schema is not None:
            documents.append(("output_schema", entry.output_schema))
        for document, schema in documents:
            for pointer, reason in _walk(schema, python):
                found.append(Degradation(entry.name, document, pointer, reason))
    return found


def _walk(root: object, python: bool) -> list[tuple[str, str]]:
    unknown = "Any" if python else "unknown"
    out: list[tuple[str, str]] = []
    refs = RefResolver(root)
    alive: list[object] = []  # synthesized branches stay alive, so ids are not reused
    ancestors: set[int] = set()
    done: set[int] = set()
    stack: list[tuple[object, str] | int] = [(root, "")]
    while stack:
        item = stack.pop()
        if type(item) is int:
            ancestors.discard(item)
            done.add(item)
            continue
        assert isinstance(item, tuple)
        schema, pointer = item
        ident = id(schema)
        if ident in ancestors:
            out.append((pointer or "/", f"the schema contains itself: {unknown}"))
            continue
        if ident in done and isinstance(schema, dict):
            continue
        node = read_node(schema)
        kind = node.kind
        children: list[tuple[object, str]] = []
        if kind == UNKNOWN:
            out.append((pointer or "/", f"unsupported or malformed schema: {unknown}"))
        elif kind == LITERAL:
            writer = py_literal if python else ts_literal
            texts = [writer(value) for value in node.literals]
            numeric = all(type(value) in (int, float) for value in node.literals)
            if None in texts and not (python and numeric):
                out.append((pointer or "/", f"a value that cannot be a literal type: {unknown}"))
        elif kind == REF:
            target = refs.resolve(node.ref)
            if target is MISSING:
                out.append((pointer or "/", f"unresolvable $ref {node.ref!r}: {unknown}"))
            elif id(target) not in done and id(target) not in ancestors:
                through = _PY_ALIAS_THROUGH if python else TS_UNGUARDED
                target_kind = read_node(target).kind
                where = node.ref[1:] or "/"  # the target's own pointer (or anchor)
                if (not python or target_kind not in (OBJECT, ALL_OF)) and reaches_itself(
                    target, refs, through=through
                ):
                    out.append((where, f"a definition that refers to itself outside an object: {unknown}"))
                else:
                    children.append((target, where if where != "/" else ""))
        elif kind == UNION:
            keyword = "oneOf" if _has(schema, "oneOf") else "anyOf" if _has(schema, "anyOf") else "type"
            children = [(branch, f"{pointer}/{keyword}/{index}") for index, branch in enumerate(node.branches)]
        elif kind == ALL_OF:
            merged = None if len(node.branches) == 1 else merge_all_of(node.branches, refs.resolve)
            if merged is not None:
                alive.append(merged)
                children = [(merged, pointer)]
            else:
                if python and len(node.branches) > 1:
                    out.append((pointer or "/", "an allOf that is not one object schema: Any"))
                children = [(branch, f"{pointer}/allOf/{index}") for index, branch in enumerate(node.branches)]
        elif kind == OBJECT:
            # (Keys that are not Python identifiers are typed too: the functional TypedDict form.)
            children = [(child, f"{pointer}/properties/{_escape(key)}") for key, child in node.properties]
        elif kind == ARRAY and node.has_items:
            children = [(node.items, f"{pointer}/items")]
        elif kind == TUPLE:
            children = [(element, f"{pointer}/prefixItems/{index}") for index, element in enumerate(node.branches)]
            if node.has_items:
                children.append((node.items, f"{pointer}/items"))
        elif kind == RECORD:
            children = [(node.items, f"{pointer}/additionalProperties")]
        alive.append(node)
        ancestors.add(ident)
        stack.append(ident)
        stack.extend(reversed(children))
    return out


def _has(schema: object, key: str) -> bool:
    try:
        return isinstance(schema, dict) and key in schema
    except Exception:  # noqa: BLE001 - hostile keys
        return False
