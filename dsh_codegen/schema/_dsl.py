"""The authoring DSL: typed spec literals that compile to the supported JSON-Schema subset.

``ValueSchemaSpec`` describes any JSON value; ``ParameterSchemaSpec`` is the
implicit open parameter object, a mapping of property name to property spec
(a value spec that may add ``required: True``). Both are ``TypedDict`` unions,
so ``mypy --strict`` checks a spec literal where it is written. The compilers
re-check everything at run time (a spec may come from untyped code) and raise
:class:`JsonSchemaError` with paths rooted at ``spec``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, NotRequired, TypeAlias, TypedDict

from dsh_codegen.json import format_path, quote_path
from dsh_codegen.schema._ecma import PatternError, compile_pattern
from dsh_codegen.schema._errors import JsonSchemaError
from dsh_codegen.schema._program import (
    BOOLEAN,
    INTEGER,
    NULL,
    NUMBER,
    STRING,
    ChainPath,
    ExactContainers,
    Violation,
    chain_segments,
    frozen_types,
    is_lossless_json,
    scalar_fits,
)

__all__ = [
    "ArraySpec",
    "BooleanSpec",
    "IntegerSpec",
    "JsonSchema",
    "JsonSchemaNode",
    "JsonSchemaObject",
    "JsonSpec",
    "JsonValue",
    "NullSpec",
    "NumberSpec",
    "ObjectSpec",
    "OneOfSpec",
    "ParameterSchemaSpec",
    "PropertySchemaSpec",
    "StringSpec",
    "ValueSchemaSpec",
    "parameter_schema_spec_to_json_schema",
    "value_schema_spec_to_json_schema",
]

#: A JSON value as Python holds it (docs/json.md, "What is JSON here").
JsonValue: TypeAlias = (
    None | bool | int | float | str | list["JsonValue"] | tuple["JsonValue", ...] | dict[str, "JsonValue"]
)
#: A raw JSON schema of the supported subset (a plain ``dict``; checked at run time).
JsonSchema: TypeAlias = dict[str, Any]

_TypeName: TypeAlias = Literal["object", "array", "string", "number", "integer", "boolean", "null"]

#: A JSON Schema object of the tool-schema dialect, as a static type: every keyword the dialect
#: knows, each with the type its value must have, so ``mypy`` rejects a misspelt keyword, an
#: unknown ``type`` or a value of the wrong kind in a schema literal. Keys such as ``$ref`` are not
#: identifiers, hence the functional form. ``x-*`` extension keys cannot be listed: a schema that
#: has them is typed ``Any`` (as ``json.load`` gives it) or cast. The run-time check
#: (``assert_supported_json_schema``) stays the authority.
JsonSchemaObject = TypedDict(
    "JsonSchemaObject",
    {
        "$schema": str,
        "$id": str,
        "$comment": str,
        "$anchor": str,
        "$ref": str,
        "$defs": Mapping[str, "JsonSchemaNode"],
        "definitions": Mapping[str, "JsonSchemaNode"],
        "title": str,
        "description": str,
        "default": "JsonValue",
        "examples": Sequence["JsonValue"],
        "deprecated": bool,
        "readOnly": bool,
        "writeOnly": bool,
        "format": str,
        "contentMediaType": str,
        "contentEncoding": str,
        "discriminator": Mapping[str, Any],
        "type": _TypeName | Sequence[_TypeName],
        "enum": Sequence["JsonValue"],
        "const": "JsonValue",
        "minimum": float,
        "maximum": float,
        "exclusiveMinimum": float,
        "exclusiveMaximum": float,
        "multipleOf": float,
        "minLength": int,
        "maxLength": int,
        "pattern": str,
        "items": "JsonSchemaNode",
        "prefixItems": Sequence["JsonSchemaNode"],
        "minItems": int,
        "maxItems": int,
        "uniqueItems": bool,
        "contains": "JsonSchemaNode",
        "minContains": int,
        "maxContains": int,
        "properties": Mapping[str, "JsonSchemaNode"],
        "required": Sequence[str],
        "additionalProperties": "JsonSchemaNode",
        "minProperties": int,
        "maxProperties": int,
        "propertyNames": "JsonSchemaNode",
        "dependentRequired": Mapping[str, Sequence[str]],
        "anyOf": Sequence["JsonSchemaNode"],
        "oneOf": Sequence["JsonSchemaNode"],
        "allOf": Sequence["JsonSchemaNode"],
    },
    total=False,
)
#: A subschema: an object, or a boolean schema (``true`` any value, ``false`` none).
JsonSchemaNode: TypeAlias = bool | JsonSchemaObject


class _Annotations(TypedDict, total=False):
    description: str
    title: str
    default: JsonValue
    examples: Sequence[JsonValue]


class StringSpec(_Annotations):
    """``{"type": "string"}`` with optional ``enum``/``const`` of strings and length/pattern/format constraints."""

    type: Literal["string"]
    enum: NotRequired[Sequence[str]]
    const: NotRequired[str]
    minLength: NotRequired[int]
    maxLength: NotRequired[int]
    pattern: NotRequired[str]
    format: NotRequired[str]


class NumberSpec(_Annotations):
    """``{"type": "number"}``: any finite number (never a ``bool``)."""

    type: Literal["number"]
    enum: NotRequired[Sequence[float]]
    const: NotRequired[float]
    minimum: NotRequired[float]
    maximum: NotRequired[float]
    exclusiveMinimum: NotRequired[float]
    exclusiveMaximum: NotRequired[float]
    multipleOf: NotRequired[float]


class IntegerSpec(_Annotations):
    """``{"type": "integer"}``: an ``int`` or an integral ``float`` (never a ``bool``)."""

    type: Literal["integer"]
    enum: NotRequired[Sequence[int]]
    const: NotRequired[int]
    minimum: NotRequired[float]
    maximum: NotRequired[float]
    exclusiveMinimum: NotRequired[float]
    exclusiveMaximum: NotRequired[float]
    multipleOf: NotRequired[float]


class BooleanSpec(_Annotations):
    """``{"type": "boolean"}``."""

    type: Literal["boolean"]
    enum: NotRequired[Sequence[bool]]
    const: NotRequired[bool]


class NullSpec(_Annotations):
    """``{"type": "null"}``."""

    type: Literal["null"]
    enum: NotRequired[Sequence[None]]
    const: NotRequired[None]


class ArraySpec(_Annotations):
    """``{"type": "array"}``; without ``items`` the elements are any JSON."""

    type: Literal["array"]
    items: NotRequired[ValueSchemaSpec]
    minItems: NotRequired[int]
    maxItems: NotRequired[int]
    uniqueItems: NotRequired[bool]


class ObjectSpec(_Annotations):
    """An explicit object: ``additionalProperties`` is mandatory (``True`` open, ``False`` closed)."""

    type: Literal["object"]
    additionalProperties: bool
    properties: NotRequired[Mapping[str, PropertySchemaSpec]]


class JsonSpec(_Annotations):
    """Author-only ``json``: any JSON value; compiles to an annotation-only ``{}``."""

    type: Literal["json"]


class OneOfSpec(_Annotations):
    """Exactly one of two or more branches (no ``type`` beside it)."""

    oneOf: Sequence[ValueSchemaSpec]


class StringPropertySpec(StringSpec):
    required: NotRequired[Literal[True]]


class NumberPropertySpec(NumberSpec):
    required: NotRequired[Literal[True]]


class IntegerPropertySpec(IntegerSpec):
    required: NotRequired[Literal[True]]


class BooleanPropertySpec(BooleanSpec):
    required: NotRequired[Literal[True]]


class NullPropertySpec(NullSpec):
    required: NotRequired[Literal[True]]


class ArrayPropertySpec(ArraySpec):
    required: NotRequired[Literal[True]]


class ObjectPropertySpec(ObjectSpec):
    required: NotRequired[Literal[True]]


class JsonPropertySpec(JsonSpec):
    required: NotRequired[Literal[True]]


class OneOfPropertySpec(OneOfSpec):
    required: NotRequired[Literal[True]]


#: Any JSON value's spec.
ValueSchemaSpec: TypeAlias = (
    StringSpec | NumberSpec | IntegerSpec | BooleanSpec | NullSpec | ArraySpec | ObjectSpec | JsonSpec | OneOfSpec
)
#: A property's spec: a value spec plus ``required: True`` when the property must be present.
PropertySchemaSpec: TypeAlias = (
    StringPropertySpec
    | NumberPropertySpec
    | IntegerPropertySpec
    | BooleanPropertySpec
    | NullPropertySpec
    | ArrayPropertySpec
    | ObjectPropertySpec
    | JsonPropertySpec
    | OneOfPropertySpec
)
#: The implicit open parameter object: property name -> property spec.
ParameterSchemaSpec: TypeAlias = Mapping[str, PropertySchemaSpec]

# --- run-time compilation -----------------------------------------------------------------

_DSL_TYPES: Final = ("string", "number", "integer", "boolean", "null", "array", "object", "json")
_ANNOTATION_KEYS: Final = ("description", "title", "default", "examples")
_SCALAR_KEYS: Final = ("type", "enum", "const") + _ANNOTATION_KEYS
#: The constraint keywords each DSL type takes (JSON Schema's names and meaning), and what each needs.
_CONSTRAINTS: Final[dict[str, dict[str, str]]] = {
    "string": {"minLength": "count", "maxLength": "count", "pattern": "pattern", "format": "string"},
    "number": {
        "minimum": "number",
        "maximum": "number",
        "exclusiveMinimum": "number",
        "exclusiveMaximum": "number",
        "multipleOf": "positive",
    },
    "array": {"minItems": "count", "maxItems": "count", "uniqueItems": "boolean"},
}
_CONSTRAINTS["integer"] = _CONSTRAINTS["number"]
_ALLOWED: Final[dict[str, tuple[str, ...]]] = {
    "string": _SCALAR_KEYS + tuple(_CONSTRAINTS["string"]),
    "number": _SCALAR_KEYS + tuple(_CONSTRAINTS["number"]),
    "integer": _SCALAR_KEYS + tuple(_CONSTRAINTS["integer"]),
    "boolean": _SCALAR_KEYS,
    "null": _SCALAR_KEYS,
    "array": ("type", "items") + _ANNOTATION_KEYS + tuple(_CONSTRAINTS["array"]),
    "object": ("type", "properties", "additionalProperties") + _ANNOTATION_KEYS,
    "json": ("type",) + _ANNOTATION_KEYS,
    "oneOf": ("oneOf",) + _ANNOTATION_KEYS,
}
_SCALAR_KIND: Final = {"string": STRING, "number": NUMBER, "integer": INTEGER, "boolean": BOOLEAN, "null": NULL}
_ARTICLE: Final = {"integer": "an integer"}


class _SpecCompiler(ExactContainers):
    """One explicit-stack walk over a spec, building the raw schema as it goes."""

    __slots__ = ("violations",)

    def __init__(self) -> None:
        super().__init__()
        self.violations: list[Violation] = []

    def report(self, path: ChainPath, key: str | None, text: str) -> None:
        segments = chain_segments(path) + ((key,) if key is not None else ())
        self.violations.append(Violation(segments, key or "spec", f"{format_path(segments, 'spec')} {text}"))

    def run(self, spec: object, as_parameters: bool) -> JsonSchema:
        root: JsonSchema = {}
        on_path: set[int] = set()
        # frames: (spec, output dict, path, is_property) or an exit marker (id,)
        stack: list[Any] = []
        if as_parameters:
            self._parameters(spec, root, stack)
        else:
            stack.append((spec, root, None, False))
        while stack:
            frame = stack.pop()
            if len(frame) == 1:
                on_path.discard(frame[0])
                continue
            node, out, path, is_property = frame
            try:
                children = self._node(node, out, path, is_property)
            except Exception:
                # a key that is not an exact str ran its own __hash__/__eq__ and raised
                self.report(path, None, "must be a schema spec object")
                continue
            if not children:
                continue
            on_path.add(id(node))
            stack.append((id(node),))
            for child, child_out, child_path, child_is_property in reversed(children):
                if id(child) in on_path:
                    self.report(child_path, None, "is circular")
                    continue
                stack.append((child, child_out, child_path, child_is_property))
        return root

    def _parameters(self, spec: object, root: JsonSchema, stack: list[Any]) -> None:
        root["type"] = "object"
        properties: JsonSchema = {}
        root["properties"] = properties
        if not self._is_object(spec) or any(type(key) is not str for key in spec):  # type: ignore[attr-defined]
            self.report(None, None, "must be a mapping of property name to property spec")
            return
        items = list(spec.items())  # type: ignore[attr-defined]
        required = [name for name, prop in items if self._is_object(prop) and prop.get("required") is True]
        if required:
            root["required"] = required
        for name, _ in items:
            properties[name] = {}
        for name, prop in reversed(items):
            stack.append((prop, properties[name], (None, name), True))

    def _node(
        self, spec: Any, out: JsonSchema, path: ChainPath, is_property: bool
    ) -> list[tuple[Any, JsonSchema, ChainPath, bool]]:
        report = self.report
        if not self._is_object(spec) or any(type(key) is not str for key in spec):
            report(path, None, "must be a schema spec object")
            return []
        if "oneOf" in spec:
            form = "oneOf"
            if "type" in spec:
                report(path, None, "cannot declare both type and oneOf")
        elif "type" not in spec:
            report(path, None, f"must declare a type ({'/'.join(_DSL_TYPES)}) or oneOf")
            return []
        else:
            form = spec["type"]
            if type(form) is not str or form not in _DSL_TYPES:
                report(path, "type", f"must be one of {'/'.join(_DSL_TYPES)}")
                return []
        allowed = _ALLOWED[form]
        for key in spec:
            if key == "required" and is_property:
                if spec[key] is not True:
                    report(path, "required", "must be true (omit it for an optional property)")
            elif key == "required":
                report(path, "required", "is only allowed on object properties")
            elif key not in allowed and not (key == "type" and form == "oneOf"):
                report(path, key, f"is not a supported DSL key for {_describe(form)} (allowed: {', '.join(allowed)})")
        children: list[tuple[Any, JsonSchema, ChainPath, bool]] = []
        if form != "json" and form != "oneOf":
            out["type"] = form
        for key in _ANNOTATION_KEYS:
            if key in spec:
                value = spec[key]
                if key in ("description", "title") and type(value) is not str:
                    report(path, key, "must be a string")
                elif key in ("default", "examples") and not is_lossless_json(value):
                    report(path, key, "annotation must be lossless JSON data")
                out[key] = value
        if form == "oneOf":
            branches = spec["oneOf"]
            if not self._is_array(branches) or len(branches) < 2:
                report(path, "oneOf", "must be an array of at least two schema specs")
                return []
            compiled: list[JsonSchema] = [{} for _ in branches]
            out["oneOf"] = compiled
            base = (path, "oneOf")
            children.extend((branch, compiled[i], (base, i), False) for i, branch in enumerate(branches))
        elif form == "array":
            if "items" in spec:
                items: JsonSchema = {}
                out["items"] = items
                children.append((spec["items"], items, (path, "items"), False))
        elif form == "object":
            self._object(spec, out, path, children)
        elif form in _SCALAR_KIND:
            self._scalar(spec, out, form, path)
        constraints = _CONSTRAINTS.get(form)
        if constraints is not None:
            for key in spec:
                need = constraints.get(key)
                if need is not None:
                    self._constraint(spec[key], key, need, out, path)
        return children

    def _constraint(self, value: Any, key: str, need: str, out: JsonSchema, path: ChainPath) -> None:
        """Check one constraint keyword's value and copy it to the schema."""
        t = type(value)
        number = (t is int or (t is float and math.isfinite(value))) and t is not bool
        if need == "count":
            ok = (t is int or (t is float and number and value.is_integer())) and value >= 0
            text = "must be a non-negative integer"
        elif need == "number":
            ok, text = number, "must be a finite number"
        elif need == "positive":
            ok, text = number and value > 0, "must be a number greater than 0"
        elif need == "boolean":
            ok, text = t is bool, "must be a boolean"
        else:
            ok, text = t is str, "must be a string"
            if ok and need == "pattern":
                try:
                    compile_pattern(value)
                except PatternError as exc:
                    ok, text = False, f"{quote_path(value)} {exc}"
        if ok:
            out[key] = value
        else:
            self.report(path, key, text)

    def _object(
        self, spec: Any, out: JsonSchema, path: ChainPath, children: list[tuple[Any, JsonSchema, ChainPath, bool]]
    ) -> None:
        report = self.report
        if "properties" in spec:
            props = spec["properties"]
            if not self._is_object(props) or any(type(key) is not str for key in props):
                report(path, "properties", "must be a mapping of property name to property spec")
            else:
                compiled: JsonSchema = {name: {} for name in props}
                out["properties"] = compiled
                required = [
                    name for name, prop in props.items() if self._is_object(prop) and prop.get("required") is True
                ]
                if required:
                    out["required"] = required
                base = (path, "properties")
                children.extend((prop, compiled[name], (base, name), True) for name, prop in props.items())
        if "additionalProperties" not in spec:
            report(path, None, "must declare additionalProperties: true or false (DSL objects are explicit)")
        elif type(spec["additionalProperties"]) is not bool:
            report(path, "additionalProperties", "must be a boolean")
        else:
            out["additionalProperties"] = spec["additionalProperties"]

    def _scalar(self, spec: Any, out: JsonSchema, form: str, path: ChainPath) -> None:
        report = self.report
        kind = _SCALAR_KIND[form]
        enum: list[Any] | None = None
        if "enum" in spec:
            values = spec["enum"]
            if not self._is_array(values) or not values or not all(scalar_fits(kind, v) for v in values):
                report(path, "enum", f"must be a non-empty array of {form} values")
            else:
                enum = list(values)
                out["enum"] = enum
        if "const" in spec:
            const = spec["const"]
            if not scalar_fits(kind, const):
                report(path, "const", f"must be {_ARTICLE.get(form, 'a ' + form)} value")
            elif enum is not None and const not in enum:
                report(
                    path,
                    "const",
                    f"must be one of {format_path(chain_segments(path) + ('enum',), 'spec')} when both are declared",
                )
            else:
                out["const"] = const


def _describe(form: str) -> str:
    return "oneOf" if form == "oneOf" else f"type {quote_path(form)}"


def value_schema_spec_to_json_schema(spec: ValueSchemaSpec) -> JsonSchema:
    """Compile a :data:`ValueSchemaSpec` to a raw JSON schema of the supported subset.

    Explicit objects keep their ``additionalProperties``; properties marked
    ``required: True`` form the object's ``required`` list (omitted when empty);
    ``json`` compiles to ``{}`` with its annotations. Annotation values are
    shared with the spec, not copied.

    Raised errors: :class:`JsonSchemaError` listing every problem (unknown keys
    or types, a missing ``additionalProperties``, ``required`` other than
    ``True`` or outside an object's properties, ill-typed ``enum``/``const``,
    a ``oneOf`` with fewer than two branches or beside ``type``, cycles).
    """
    compiler = _SpecCompiler()
    schema = compiler.run(spec, as_parameters=False)
    if compiler.violations:
        raise JsonSchemaError(compiler.violations)
    return schema


def parameter_schema_spec_to_json_schema(spec: ParameterSchemaSpec) -> JsonSchema:
    """Compile a :data:`ParameterSchemaSpec` to ``{"type": "object", "properties": {...}, "required": [...]}``.

    The root stays open (no ``additionalProperties``); ``required`` is omitted
    when no property is required.

    Raised errors: :class:`JsonSchemaError`, as :func:`value_schema_spec_to_json_schema`.
    """
    compiler = _SpecCompiler()
    schema = compiler.run(spec, as_parameters=True)
    if compiler.violations:
        raise JsonSchemaError(compiler.violations)
    return schema


def looks_like_parameter_spec(spec_or_schema: object) -> bool:
    """Whether :func:`validate_args` reads its first argument as a parameter spec.

    A raw schema declares ``type`` (a string) or ``oneOf`` (an array) or holds a
    non-mapping keyword value; a parameter spec maps names to spec mappings.
    The empty mapping is the empty parameter spec (an open object).
    """
    fobj, _ = frozen_types()
    if type(spec_or_schema) is not dict and (fobj is None or type(spec_or_schema) is not fobj):
        return False
    values = spec_or_schema.values()  # type: ignore[attr-defined]
    return all(type(v) is dict or (fobj is not None and type(v) is fobj) for v in values)
