"""Foreign forms of JSON Schema, converted to the tool-schema dialect (docs/schema.md) on the way in.

Tools published by other systems carry forms the dialect does not accept and
the schema core never will (docs/adapters.md: "Foreign forms ... are converted by the
adapters, not accepted by the core"):

- OpenAPI 3.0 ``nullable: true`` (null added to ``type``, to ``enum``/``const``,
  or the node wrapped as ``anyOf: [<node>, {"type": "null"}]``);
- draft-04 boolean ``exclusiveMinimum``/``exclusiveMaximum`` (the bound moves
  from ``minimum``/``maximum`` into the 2020-12 number form);
- draft-07 ``dependencies`` (arrays become ``dependentRequired``);
- draft-04/07 array-form ``items`` and ``additionalItems`` (``prefixItems`` and
  ``items``), and a draft-04 ``$schema`` URI (dropped: the result is 2020-12).

Every change is reported as a :class:`SchemaNote`. A form whose meaning the
dialect cannot keep (a schema-valued ``dependencies`` entry, ``exclusiveMinimum:
true`` without ``minimum``) raises ``JsonSchemaError`` naming the construct and
its path. Everything else is left for the schema core to accept or reject.

The walk uses an explicit work stack (no recursion): a schema nested 100,000
deep is lowered under the default recursion limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from dsh_codegen.json import LosslessJsonError, format_path, snapshot_json
from dsh_codegen.adapters._walk import Path, PathCell, path_of, subschema_slots
from dsh_codegen.schema import ANNOTATION_KEYWORDS, JsonSchemaError, Violation

__all__ = ["LoweredSchema", "SchemaNote", "lower_json_schema"]

#: Keywords that apply to every instance whatever its type: beside them, adding
#: "null" to ``type`` would not admit null, so a nullable node is wrapped instead.
_ALL_INSTANCE_KEYWORDS: Final = ("anyOf", "oneOf", "allOf", "$ref", "not", "if", "then", "else")
#: Keywords that stay on the outside when a nullable node is wrapped: the dialect's own annotations
#: (``ANNOTATION_KEYWORDS``: they never constrain a value, and ``$defs``, ``$id`` and ``$schema`` keep
#: their place), except ``discriminator``, which annotates the ``oneOf``/``anyOf`` beside it.
_ANNOTATIONS: Final = ANNOTATION_KEYWORDS - {"discriminator"}
_DRAFT_04_URIS: Final = frozenset({"http://json-schema.org/draft-04/schema", "http://json-schema.org/draft-04/schema#"})


@dataclass(frozen=True, slots=True)
class SchemaNote:
    """One change made while lowering: where (``path``, after ``schema``), which construct, and what became of it."""

    path: Path
    keyword: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class LoweredSchema:
    """The dialect form of a schema (a fresh, mutable copy) and the notes of every change, in walk order."""

    schema: Any
    notes: tuple[SchemaNote, ...]


def _where(path: Path) -> str:
    return format_path(path, "schema")


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def lower_json_schema(schema: object) -> LoweredSchema:
    """Convert the foreign forms in ``schema`` (see the module docstring) and report each change.

    ``schema`` is not modified; the result holds a detached copy. Keys keep
    their order, except that a wrapped nullable node becomes ``{"anyOf": ...}``
    followed by its annotations.

    Raised errors: ``JsonSchemaError`` (code ``UNSUPPORTED_SCHEMA``) listing
    every construct that cannot be kept, each naming its path (``schema.x``);
    also when ``schema`` is not lossless JSON.
    """
    try:
        root = snapshot_json(schema, freeze=False)
    except LosslessJsonError as error:
        path = tuple(error.path)
        raise JsonSchemaError(
            [Violation(path, "schema", f"{_where(path)} is not lossless JSON: {error.reason}")]
        ) from None
    notes: list[SchemaNote] = []
    problems: list[Violation] = []
    # Each entry: (the container holding the node, the key or index of the node, its path).
    holder: list[Any] = [root]
    stack: list[tuple[Any, str | int, PathCell]] = [(holder, 0, None)]
    while stack:
        parent, key, cell = stack.pop()
        node = parent[key]
        if not isinstance(node, dict):
            continue
        lowered = _lower_node(node, cell, notes, problems) if _has_foreign_form(node, cell) else node
        parent[key] = lowered
        # A wrapped nullable node's first branch is the original node: its children keep their paths.
        target = node if lowered is node else lowered["anyOf"][0]
        children = list(subschema_slots(target, cell))
        # Pushed in reverse so that nodes are visited (and notes made) in document order.
        stack.extend(reversed(children))
    if problems:
        raise JsonSchemaError(problems)
    return LoweredSchema(holder[0], tuple(notes))


def _has_foreign_form(node: dict[str, Any], cell: PathCell) -> bool:
    return (
        "nullable" in node
        or "dependencies" in node
        or "additionalItems" in node
        or isinstance(node.get("items"), list)
        or type(node.get("exclusiveMinimum")) is bool
        or type(node.get("exclusiveMaximum")) is bool
        or (cell is None and node.get("$schema") in _DRAFT_04_URIS)
    )


def _lower_node(
    node: dict[str, Any], cell: PathCell, notes: list[SchemaNote], problems: list[Violation]
) -> dict[str, Any]:
    """Lower one node's own keywords (children are the caller's); may return a new (wrapping) node."""
    path = path_of(cell)
    where = _where(path)
    if not path and node.get("$schema") in _DRAFT_04_URIS:
        del node["$schema"]
        notes.append(
            SchemaNote(path, "$schema", f"{where}.$schema: the draft-04 URI was dropped (the result is 2020-12)")
        )
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        flag = node.get(exclusive)
        if type(flag) is not bool:
            continue
        if flag and bound not in node:
            problems.append(
                Violation(
                    (*path, exclusive),
                    exclusive,
                    f"{where}.{exclusive} is the draft-04 boolean form (true) without {bound}, which has no bound to keep",
                )
            )
            continue
        if flag:
            _replace_key(node, bound, exclusive, node[bound])
            notes.append(
                SchemaNote(
                    path,
                    exclusive,
                    f"{where}.{exclusive}: draft-04 {exclusive}: true with {bound} became {exclusive}: {_dump(node[exclusive])}",
                )
            )
        else:
            del node[exclusive]
            notes.append(SchemaNote(path, exclusive, f"{where}.{exclusive}: draft-04 {exclusive}: false was dropped"))
    if "dependencies" in node:
        _lower_dependencies(node, path, notes, problems)
    items = node.get("items")
    if isinstance(items, list):
        _lower_array_items(node, path, notes)
    elif "additionalItems" in node and "prefixItems" not in node and not isinstance(items, list):
        # Without an array-form items, draft-07 additionalItems has no effect.
        del node["additionalItems"]
        notes.append(
            SchemaNote(
                path, "additionalItems", f"{where}.additionalItems: dropped (it has no effect without array-form items)"
            )
        )
    if "nullable" in node:
        return _lower_nullable(node, path, notes, problems)
    return node


def _replace_key(node: dict[str, Any], old: str, new: str, value: Any) -> None:
    """Rename ``old`` to ``new`` in place, keeping its position among the keys."""
    items = list(node.items())
    node.clear()
    for key, current in items:
        if key == old:
            node[new] = value
        elif key != new:
            node[key] = current


def _lower_dependencies(node: dict[str, Any], path: Path, notes: list[SchemaNote], problems: list[Violation]) -> None:
    where = _where(path)
    dependencies = node["dependencies"]
    if not isinstance(dependencies, dict):
        problems.append(
            Violation(
                (*path, "dependencies"),
                "dependencies",
                f"{where}.dependencies must be an object (draft-07 dependencies)",
            )
        )
        return
    required: dict[str, list[Any]] = {}
    failed = False
    for name, value in dependencies.items():
        entry = format_path((*path, "dependencies", name), "schema")
        if isinstance(value, list):
            required[name] = value
        elif value is True or value == {}:
            continue  # always satisfied
        elif (
            isinstance(value, dict)
            and set(value) - set(_ANNOTATIONS) == {"required"}
            and isinstance(value["required"], list)
        ):
            # {"required": [...]} as a dependency means exactly dependentRequired.
            required[name] = value["required"]
        else:
            failed = True
            problems.append(
                Violation(
                    (*path, "dependencies", name),
                    "dependencies",
                    f"{entry} is a schema dependency, which the dialect cannot express "
                    '(dependentSchemas is not supported); only an array of names or {"required": [...]} converts',
                )
            )
    if failed:
        return
    existing = node.get("dependentRequired")
    if existing is not None:
        if not isinstance(existing, dict):
            problems.append(
                Violation(
                    (*path, "dependentRequired"), "dependentRequired", f"{where}.dependentRequired must be an object"
                )
            )
            return
        for name, names in required.items():
            merged = list(existing.get(name, []))
            merged.extend(n for n in names if n not in merged)
            existing[name] = merged
        del node["dependencies"]
    elif required:
        _replace_key(node, "dependencies", "dependentRequired", required)
    else:
        del node["dependencies"]
    notes.append(
        SchemaNote(
            path,
            "dependencies",
            f"{where}.dependencies: draft-07 dependencies became dependentRequired {_dump(required)}",
        )
    )


def _lower_array_items(node: dict[str, Any], path: Path, notes: list[SchemaNote]) -> None:
    where = _where(path)
    tuple_items = node["items"]
    rest = node.pop("additionalItems", None)
    _replace_key(node, "items", "prefixItems", tuple_items)
    if rest is not None:
        node["items"] = rest
    notes.append(
        SchemaNote(
            path,
            "items",
            f"{where}.items: the array form became prefixItems"
            + ("" if rest is None else " and additionalItems became items"),
        )
    )


def _lower_nullable(
    node: dict[str, Any], path: Path, notes: list[SchemaNote], problems: list[Violation]
) -> dict[str, Any]:
    where = _where(path)
    flag = node["nullable"]
    if type(flag) is not bool:
        problems.append(
            Violation((*path, "nullable"), "nullable", f"{where}.nullable must be a boolean (OpenAPI 3.0 nullable)")
        )
        return node
    del node["nullable"]
    if not flag:
        notes.append(SchemaNote(path, "nullable", f"{where}.nullable: OpenAPI nullable: false was dropped"))
        return node
    if any(keyword in node for keyword in _ALL_INSTANCE_KEYWORDS):
        inner = {key: value for key, value in node.items() if key not in _ANNOTATIONS}
        outer: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
        outer.update((key, value) for key, value in node.items() if key in _ANNOTATIONS)
        notes.append(
            SchemaNote(
                path,
                "nullable",
                f'{where}.nullable: OpenAPI nullable: true became anyOf [<schema>, {{"type": "null"}}]',
            )
        )
        return outer
    changes: list[str] = []
    if "const" in node:
        if node["const"] is not None:
            constant = node.pop("const")
            enum = node.get("enum")
            node["enum"] = [constant, None] if enum is None else enum
            changes.append("const became enum with null")
    if isinstance(node.get("enum"), list) and None not in node["enum"]:
        node["enum"] = [*node["enum"], None]
        changes.append("null was added to enum")
    kind = node.get("type")
    if isinstance(kind, str) and kind != "null":
        node["type"] = [kind, "null"]
        changes.append(f"type became {_dump(node['type'])}")
    elif isinstance(kind, list) and "null" not in kind:
        node["type"] = [*kind, "null"]
        changes.append(f"type became {_dump(node['type'])}")
    if not changes:
        changes.append("dropped (the schema already admits null)")
    notes.append(SchemaNote(path, "nullable", f"{where}.nullable: OpenAPI nullable: true: {'; '.join(changes)}"))
    return node
