"""What an OpenAI strict-mode model sends for an optional property it leaves out (``null``), dropped.

Strict mode makes every property required; a model then sends ``null`` for each
optional property it would have left out. :func:`relax_strict_arguments` drops
exactly those ``null``s: the ``null`` of an optional property whose schema does
not admit ``null`` (a property that is optional *and* nullable keeps it: there
the two readings cannot be told apart, and the schema allows ``null``). The
registry applies it before validation when asked to
(``ToolRegistry(relax_strict_nulls=True)``, or a tool from
``tool_from_schema(..., relax_strict_nulls=True)``); the adapters convert schemas
to and from strict mode. Structural walks over the schema only, with explicit
stacks and bounded ``$ref`` chains.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["relax_strict_arguments"]


def resolve_local_ref(root: Any, ref: object) -> Any:
    """The node a local JSON-pointer ``$ref`` (``#``, ``#/$defs/x``) names in ``root``, or ``None``."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node = root
    pointer = ref[1:]
    if not pointer:
        return node
    if not pointer.startswith("/"):
        return None
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


#: How deep ``admits_null`` follows ``allOf`` and ``$ref`` siblings before answering "maybe" (``True``).
_NULL_CHECK_DEPTH: Final = 32


def admits_null(schema: object, root: object, _depth: int = 0) -> bool:
    """Whether ``null`` can be valid for ``schema`` (structurally; local ``$ref`` followed, ``allOf`` all must).

    Errs towards ``True`` (the caller then keeps the ``null`` and validation
    decides): beyond a bounded depth of nested ``allOf``/``$ref`` siblings.
    """
    if _depth > _NULL_CHECK_DEPTH:
        return True
    depth = _depth + 1
    stack: list[object] = [schema]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node is True:
            return True
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        if not _own_keywords_admit_null(node):
            continue
        branches = [b for key in ("anyOf", "oneOf") if isinstance(node.get(key), list) for b in node[key]]
        if "$ref" in node:
            target = resolve_local_ref(root, node["$ref"])
            if target is None or not admits_null(_without(node, "$ref"), root, depth):
                continue
            stack.append(target)
            continue
        if isinstance(node.get("allOf"), list):
            if all(admits_null(branch, root, depth) for branch in node["allOf"]) and (
                not branches or any(admits_null(branch, root, depth) for branch in branches)
            ):
                return True
            continue
        if branches:
            stack.extend(branches)
            continue
        return True
    return False


def _without(node: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k != key}


def _own_keywords_admit_null(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if isinstance(kind, str) and kind != "null":
        return False
    if isinstance(kind, list) and "null" not in kind:
        return False
    if "const" in node and node["const"] is not None:
        return False
    enum = node.get("enum")
    if isinstance(enum, list) and None not in enum:
        return False
    return node.get("not") is not True and node.get("not") != {}


def relax_strict_arguments(parameters: object, arguments: object) -> Any:
    """``arguments`` without the ``null`` of each optional property whose schema does not admit ``null``.

    What a model in strict mode sends for an optional property it leaves out is
    ``null``; dropping it lets the body see its default. Followed through
    ``properties``, array ``items``, local ``$ref`` and the object branch of a
    nullable ``anyOf``. ``arguments`` is not modified (a copy is returned when
    anything is dropped); anything that is not an object passes through.
    """
    if not isinstance(arguments, dict):
        return arguments
    result: Any = dict(arguments)
    holder = [result]
    stack: list[tuple[Any, int | str, Any]] = [(holder, 0, parameters)]
    while stack:
        container, key, schema = stack.pop()
        value = container[key]
        schema = _object_schema(schema, parameters)
        if schema is None:
            continue
        if isinstance(value, dict):
            properties = schema.get("properties")
            if not isinstance(properties, dict):
                continue
            listed = schema.get("required")
            required: list[Any] = listed if isinstance(listed, list) else []
            copy = dict(value)
            container[key] = copy
            for name in list(copy):
                sub = properties.get(name)
                if sub is None:
                    continue
                if copy[name] is None and name not in required and not admits_null(sub, parameters):
                    del copy[name]
                elif isinstance(copy[name], dict | list):
                    stack.append((copy, name, sub))
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            copy_list = list(value)
            container[key] = copy_list
            for index, item in enumerate(copy_list):
                if isinstance(item, dict | list):
                    stack.append((copy_list, index, schema["items"]))
    return holder[0]


def _object_schema(schema: Any, root: Any) -> dict[str, Any] | None:
    """``schema`` with local ``$ref``s followed and a nullable ``anyOf`` wrapper opened (bounded)."""
    for _ in range(64):
        if not isinstance(schema, dict):
            return None
        if "$ref" in schema:
            schema = resolve_local_ref(root, schema["$ref"])
            continue
        branches = schema.get("anyOf")
        if isinstance(branches, list) and "properties" not in schema and "items" not in schema:
            candidates = [b for b in branches if isinstance(b, dict) and b != {"type": "null"}]
            if len(candidates) != 1:
                return None
            schema = candidates[0]
            continue
        return schema
    return None
