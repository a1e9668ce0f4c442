"""Test helpers for the codegen tests: case loading, sample values, type oracles.

The oracles say whether ``tsc --strict`` / ``mypy --strict`` should accept a
JSON value for the type the generator writes for a schema. They mirror the
generator's own rules (open/closed objects, TypedDict degradation, Literal
rules) independently of its code, so the type-check tests compare two
readings of the contract.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


CASES = Path(__file__).resolve().parent / "cases"
REPO = Path(__file__).resolve().parents[2]
VERSION_MARK = "<version>"


def case_names() -> list[str]:
    return sorted(path.name for path in CASES.iterdir() if (path / "catalog.json").is_file())


_KNOWN = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "oneOf",
    "description",
    "title",
    "default",
    "examples",
    # constraints and annotations of the dialect: documented, they do not change the type
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
}
_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def supported(schema: Any) -> bool:
    """The node is one the generator types (anything else renders unknown / Any)."""
    if not isinstance(schema, dict) or not set(schema) <= _KNOWN:
        return False
    if isinstance(schema.get("type"), list):
        return bool(schema["type"]) and all(kind in _TYPES for kind in schema["type"]) and "oneOf" not in schema
    return (
        "type" not in schema or schema["type"] in _TYPES
        if isinstance(schema.get("type"), str) or "type" not in schema
        else False
    )


OBJECT_MEMBERS = {
    "constructor",
    "toString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
}


def is_number(value: object) -> bool:
    return type(value) in (int, float)


def _literal_match_ts(value: object, literal: object) -> bool:
    if is_number(value) and is_number(literal):
        return value == literal
    return type(value) is type(literal) and value == literal


def ts_accepts(schema: Any, value: Any) -> bool:
    """Would ``tsc --strict`` accept ``value`` (a fresh literal) for ``json_schema_to_ts(schema)``?"""
    if not supported(schema):
        return True
    if isinstance(schema.get("type"), list):
        return any(ts_accepts({**schema, "type": kind}, value) for kind in schema["type"])
    if "const" in schema:
        return _literal_match_ts(value, schema["const"])
    if "enum" in schema:
        return any(_literal_match_ts(value, literal) for literal in schema["enum"])
    if "oneOf" in schema:
        return any(ts_accepts(branch, value) for branch in schema["oneOf"])
    kind = schema.get("type")
    if kind is None:
        return True
    if kind == "string":
        return type(value) is str
    if kind in ("number", "integer"):
        return is_number(value)
    if kind == "boolean":
        return type(value) is bool
    if kind == "null":
        return value is None
    if kind == "array":
        return type(value) is list and all(ts_accepts(schema.get("items"), item) for item in value)
    if kind == "object":
        if type(value) is not dict:
            return False
        props = schema.get("properties", {})
        closed = schema.get("additionalProperties") is False
        if any(name not in value for name in schema.get("required", [])):
            return False
        # A TypeScript quirk, not a generator choice: an omitted optional member
        # named like an Object.prototype member is read from Object (a Function).
        for key, sub in props.items():
            if key in OBJECT_MEMBERS and key not in value and supported(sub) and sub != {}:
                return False
        for key, item in value.items():
            if key in props:
                if not ts_accepts(props[key], item):
                    return False
            elif closed:
                return False
        return True
    return True


def _py_literals(values: list[Any]) -> list[Any] | None:
    out = []
    for literal in values:
        if type(literal) is float:
            if not literal.is_integer():
                return None
            literal = int(literal)
        out.append(literal)
    return out


def py_accepts(schema: Any, value: Any) -> bool:
    """Would ``mypy --strict`` accept ``value`` (a literal) for the SDK's annotation of ``schema``?"""
    if not supported(schema):
        return True
    if isinstance(schema.get("type"), list):
        return any(py_accepts({**schema, "type": kind}, value) for kind in schema["type"])
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        literals = _py_literals(values)
        if literals is None:
            return type(value) in (int, float, bool) if all(is_number(v) for v in values) else True
        return any(type(value) is type(literal) and value == literal for literal in literals)
    if "oneOf" in schema:
        return any(py_accepts(branch, value) for branch in schema["oneOf"])
    kind = schema.get("type")
    if kind is None:
        return True
    if kind == "string":
        return type(value) is str
    if kind == "number":
        return type(value) in (int, float, bool)
    if kind == "integer":
        return type(value) in (int, bool)
    if kind == "boolean":
        return type(value) is bool
    if kind == "null":
        return value is None
    if kind == "array":
        return type(value) is list and all(py_accepts(schema.get("items"), item) for item in value)
    if kind == "object":
        if type(value) is not dict:
            return False
        props = schema.get("properties", {})
        closed = schema.get("additionalProperties") is False
        # Keys that are not identifiers are typed too (the functional TypedDict form).
        is_class = bool(props or closed)
        if not is_class:
            return True
        if any(name not in value for name in schema.get("required", [])):
            return False
        for key, item in value.items():
            if key not in props or not py_accepts(props[key], item):
                return False
        return True
    return True


def sample(schema: Any, full: bool) -> Any:
    """A value valid for ``schema`` (required properties only unless ``full``)."""
    if not supported(schema):
        return {"any": 1}
    if isinstance(schema.get("type"), list):
        return sample({**schema, "type": schema["type"][-1 if full else 0]}, full)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][-1 if full else 0]
    if "oneOf" in schema:
        return sample(schema["oneOf"][-1 if full else 0], full)
    kind = schema.get("type")
    simple = {"string": "s", "number": 1.5, "integer": 3, "boolean": True, "null": None}
    if kind in simple:
        return simple[kind]
    if kind == "array":
        return [sample(schema["items"], full)] if "items" in schema else [1, "x"]
    if kind == "object":
        props = schema.get("properties", {})
        required = schema.get("required", [])
        return {key: sample(sub, full) for key, sub in props.items() if full or key in required}
    return {"any": [1, None]}


def variants(schema: Any) -> list[Any]:
    """Valid and invalid candidate values for ``schema`` (classified later by the oracles)."""
    out = [sample(schema, False), sample(schema, True), "not an object", [1], None, 2.5]
    if isinstance(schema, dict) and schema.get("type") == "object":
        full = sample(schema, True)
        if isinstance(full, dict):
            out.append({**full, "undeclared_key": 1})
            for key in list(full)[:3]:
                out.append({k: v for k, v in full.items() if k != key})
                out.append({**full, key: {"wrong": [True]}})
                out.append({**full, key: 7})
    return out


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
