"""OpenAI strict mode: converting parameter schemas to it where meaning is kept, and back.

Strict mode (structured outputs for function calling) wants every object
closed (``additionalProperties: false``) with every property required, and has
``anyOf`` but no ``oneOf``. The conversion keeps meaning in this sense: every
argument object a strict schema accepts becomes, after
:func:`relax_strict_arguments` drops the ``null`` of each formerly optional
property, an argument object the original schema accepts.

- an optional property becomes required and nullable (``type`` gains
  ``"null"``, or the property becomes ``anyOf: [<schema>, {"type": "null"}]``);
- an object that declares properties is closed (the model can send only them),
  and so is a root without declared properties (a tool without parameters);
- an exact-one ``oneOf`` whose branches are disjoint (distinct types, distinct
  constants, or a required discriminator property with distinct constants)
  becomes ``anyOf`` (with disjoint branches, "exactly one" is "at least one").

What cannot be strict raises :class:`StrictSchemaError` naming each reason: an
object without declared properties that is open or takes extra keys by schema
(a free-form map), a ``oneOf`` whose branches may overlap, a root that is not
an object, and the keywords strict mode has no form for (``allOf``, ``not``,
``if``/``then``/``else``, ``dependentRequired``, ``dependentSchemas``,
``patternProperties``, ``propertyNames``, ``minProperties``, ``maxProperties``,
``contains``, ``unevaluatedProperties``, ``unevaluatedItems``).

All walks use explicit stacks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from dsh_codegen.adapters._walk import Path, PathCell, path_of, subschema_slots
from dsh_codegen.schema import relax_strict_arguments
from dsh_codegen.json import format_path, snapshot_json

__all__ = ["StrictSchemaError", "relax_strict_arguments", "strict_parameters", "unstrict_parameters"]

_NOT_IN_STRICT: Final = (
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_ANNOTATIONS: Final = ("title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment")
_ALL_INSTANCE_KEYWORDS: Final = ("anyOf", "oneOf", "allOf", "$ref", "not", "enum", "const")


class StrictSchemaError(ValueError):
    """Raised when a tool's parameters cannot be converted to OpenAI strict mode with their meaning kept.

    ``tool`` names the tool; ``reasons`` lists every problem, each naming its
    path (``parameters.properties.tags.allOf is not supported ...``).
    """

    code: Final = "STRICT_SCHEMA_UNSUPPORTED"

    def __init__(self, tool: str, reasons: Iterable[str]) -> None:
        self.tool = tool
        self.reasons = tuple(reasons)
        self.message = f'tool "{tool}" cannot be strict: ' + "; ".join(self.reasons)
        super().__init__(self.message)


def _where(path: Path) -> str:
    return format_path(path, "parameters")


def _is_object_node(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _nullable(schema: Any) -> Any:
    """``schema`` made to admit ``null`` too, in the form :func:`unstrict_parameters` undoes."""
    if isinstance(schema, dict):
        kind = schema.get("type")
        if isinstance(kind, str) and not any(k in schema for k in _ALL_INSTANCE_KEYWORDS):
            return {**schema, "type": [kind, "null"]} if kind != "null" else schema
    inner = {k: v for k, v in schema.items() if k not in _ANNOTATIONS} if isinstance(schema, dict) else schema
    outer: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if isinstance(schema, dict):
        outer.update((k, v) for k, v in schema.items() if k in _ANNOTATIONS)
    return outer


def _constants(branch: dict[str, Any]) -> list[str] | None:
    if "const" in branch:
        return [json.dumps(branch["const"], sort_keys=True)]
    if isinstance(branch.get("enum"), list):
        return [json.dumps(value, sort_keys=True) for value in branch["enum"]]
    return None


def _types(branch: dict[str, Any]) -> set[str] | None:
    kind = branch.get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else None
    if kinds is not None and "integer" in kinds:
        kinds.add("number")  # integers are numbers: the two overlap
    if kinds is not None and "number" in kinds:
        kinds.add("integer")
    return kinds


def _discriminators(branch: dict[str, Any]) -> dict[str, list[str]]:
    """Required properties of ``branch`` holding constants: name -> their canonical texts."""
    out: dict[str, list[str]] = {}
    properties = branch.get("properties")
    required = branch.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return out
    for name in required:
        schema = properties.get(name)
        if isinstance(name, str) and isinstance(schema, dict):
            constants = _constants(schema)
            if constants is not None:
                out[name] = constants
    return out


def _pairwise_disjoint(groups: list[list[str]]) -> bool:
    seen: set[str] = set()
    for group in groups:
        if seen.intersection(group):
            return False
        seen.update(group)
    return True


def one_of_is_disjoint(branches: list[Any]) -> bool:
    """Whether no value can match two ``oneOf`` branches (judged by types, constants or a discriminator)."""
    if not all(isinstance(branch, dict) for branch in branches):
        return False
    types = [_types(branch) for branch in branches]
    if all(kinds is not None for kinds in types) and _pairwise_disjoint([sorted(k or ()) for k in types]):
        return True
    constants = [_constants(branch) for branch in branches]
    if all(group is not None for group in constants) and _pairwise_disjoint([g or [] for g in constants]):
        return True
    keyed = [_discriminators(branch) for branch in branches]
    common = set(keyed[0]).intersection(*keyed[1:]) if keyed else set()
    return any(_pairwise_disjoint([k[name] for k in keyed]) for name in sorted(common))


def strict_parameters(tool: str, parameters: object) -> Any:
    """The strict-mode form of a tool's ``parameters`` (a fresh copy); see the module docstring.

    Raised errors: :class:`StrictSchemaError` listing every reason the schema
    cannot be strict.
    """
    root = snapshot_json(parameters, freeze=False)
    reasons: list[str] = []
    if not isinstance(root, dict) or not _is_object_node(root) or "anyOf" in root or "oneOf" in root:
        raise StrictSchemaError(tool, ["parameters must be an object schema (strict mode has no other root)"])
    holder: list[Any] = [root]
    stack: list[tuple[Any, str | int, PathCell]] = [(holder, 0, None)]
    # Optional properties are made nullable after the walk, so that paths stay the input's.
    optional: list[tuple[dict[str, Any], str]] = []
    while stack:
        parent, key, cell = stack.pop()
        node = parent[key]
        if node is False or node is True:
            continue
        if not isinstance(node, dict):
            continue
        for keyword in _NOT_IN_STRICT:
            if keyword in node:
                reasons.append(f"{_where(path_of(cell))}.{keyword} is not supported in strict mode")
        if "oneOf" in node:
            branches = node["oneOf"]
            if isinstance(branches, list) and one_of_is_disjoint(branches):
                parent[key] = node = {("anyOf" if k == "oneOf" else k): v for k, v in node.items()}
            else:
                reasons.append(
                    f"{_where(path_of(cell))}.oneOf has branches that may overlap (strict mode has only anyOf)"
                )
        if _is_object_node(node):
            _close_object(node, cell, reasons, optional)
        stack.extend(reversed(list(subschema_slots(node, cell))))
    if reasons:
        raise StrictSchemaError(tool, reasons)
    for properties, name in optional:
        properties[name] = _nullable(properties[name])
    return holder[0]


def _close_object(
    node: dict[str, Any], cell: PathCell, reasons: list[str], optional: list[tuple[dict[str, Any], str]]
) -> None:
    root = cell is None
    properties = node.get("properties")
    extra = node.get("additionalProperties", True)
    if not isinstance(properties, dict) or not properties:
        if root and extra in (True, False):
            # A tool without declared parameters (define_tool roots are open by convention).
            node["properties"] = {}
            node["additionalProperties"] = False
            node["required"] = []
        elif extra is not False:
            reasons.append(
                f"{_where(path_of(cell))} is an object without declared properties that takes other keys (a free-form map)"
            )
        return
    node["additionalProperties"] = False
    required = node.get("required")
    names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    optional.extend((properties, name) for name in properties if name not in names)
    node["required"] = [*names, *(n for n in properties if n not in names)]


def unstrict_parameters(parameters: object) -> Any:
    """Undo the strict form of :func:`strict_parameters` in a copy of ``parameters``.

    In every closed object whose properties are all required, a property whose
    schema is ``type: [T, "null"]`` or ``anyOf: [S, {"type": "null"}]`` becomes
    optional without the ``null``: in strict mode that is how an optional
    property is written. Closed objects stay closed.
    """
    root = snapshot_json(parameters, freeze=False)
    holder: list[Any] = [root]
    stack: list[tuple[Any, str | int, PathCell]] = [(holder, 0, None)]
    while stack:
        parent, key, cell = stack.pop()
        node = parent[key]
        if not isinstance(node, dict):
            continue
        properties = node.get("properties")
        required = node.get("required")
        if (
            node.get("additionalProperties") is False
            and isinstance(properties, dict)
            and isinstance(required, list)
            and set(required) == set(properties)
        ):
            optional = []
            for name, schema in properties.items():
                relaxed = _without_null(schema)
                if relaxed is not None:
                    properties[name] = relaxed
                    optional.append(name)
            kept = [name for name in required if name not in optional]
            if kept:
                node["required"] = kept
            else:
                del node["required"]
        stack.extend(reversed(list(subschema_slots(node, cell))))
    return holder[0]


def _without_null(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, list) and len(kind) == 2 and kind[1] == "null" and kind[0] != "null":
        if any(k in schema for k in _ALL_INSTANCE_KEYWORDS):
            return None
        return {**schema, "type": kind[0]}
    branches = schema.get("anyOf")
    if (
        isinstance(branches, list)
        and len(branches) == 2
        and branches[1] == {"type": "null"}
        and set(schema) - set(_ANNOTATIONS) == {"anyOf"}
    ):
        inner = branches[0]
        if isinstance(inner, dict):
            return {**inner, **{k: v for k, v in schema.items() if k in _ANNOTATIONS}}
        return inner
    return None
