"""Annotations -> JSON schemas (the tool-schema dialect) for ``@tool``, with value converters.

One :class:`SchemaBuilder` maps the annotations of one schema document (the
parameter root, or the output): every annotation becomes a JSON Schema node,
and, where the body is promised something other than the registry's frozen
JSON (a tuple, an enum member, a dataclass or pydantic-model instance), a
converter that turns the validated JSON into it. Mapping walks one explicit
work stack per annotation (no recursion). Classes that contain themselves
(directly or through others) are written once under ``$defs`` and referenced
with ``$ref``; every other class is inlined where it is used.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import math
import sys
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal, NoReturn, NotRequired, Required, Union

from dsh_codegen.json import format_path, is_json_value, snapshot_json
from dsh_codegen.schema import CompiledValidator, compile_validator

__all__ = ["Converter", "SchemaBuilder", "encode_output", "type_text"]

SUPPORTED: Final = (
    "supported: str, int, float, bool, None, list[T], tuple[T, ...], tuple[A, B], Sequence[T], dict[str, T], "
    "Mapping[str, T], Any, object, Literal[...], Enum, unions, TypedDict, dataclasses, pydantic BaseModel, "
    "Annotated[T, <description or constraints>]"
)
_NONE_TYPE: Final = type(None)
_SCALARS: Final[dict[object, str]] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARRAY_ORIGINS: Final = (list, tuple, collections.abc.Sequence)
_OBJECT_ORIGINS: Final = (dict, collections.abc.Mapping)
_BARE_ARRAYS: Final = (list, tuple, collections.abc.Sequence, typing.List, typing.Tuple, typing.Sequence)
_BARE_OBJECTS: Final = (dict, collections.abc.Mapping, typing.Dict, typing.Mapping)
_UNION_ORIGINS: Final = (Union, types.UnionType)
#: Constraint attributes read from ``Annotated`` metadata (``annotated_types`` and pydantic ``Field``).
_NUMERIC: Final = {
    "gt": "exclusiveMinimum",
    "ge": "minimum",
    "lt": "exclusiveMaximum",
    "le": "maximum",
    "multiple_of": "multipleOf",
}
_LENGTHS: Final = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}
_CONSTRAINTS: Final = (*_NUMERIC, "min_length", "max_length", "pattern")


def type_text(tp: object) -> str:
    """A readable name for an annotation (``int``, ``list[str]``, ``Point``)."""
    if tp is None or tp is _NONE_TYPE:
        return "None"
    if isinstance(tp, type) and typing.get_origin(tp) is None:
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _identical(tp: object, options: typing.Iterable[object]) -> object | None:
    """The option that *is* ``tp`` (identity only: an annotation may be unhashable or compare oddly)."""
    return next((option for option in options if option is tp), None)


def _json_kind(value: object) -> str | None:
    if value is None:
        return "null"
    return {str: "string", int: "integer", bool: "boolean", float: "number"}.get(type(value))


def _equality_key(value: object) -> tuple[str | None, object]:
    """A key under which JSON-equal scalars meet (``1`` and ``1.0`` do; ``true`` and ``1`` do not)."""
    kind = _json_kind(value)
    return ("number" if kind == "integer" else kind, value)


def _pydantic_attr(name: str) -> Any:
    """``pydantic.<name>`` when pydantic is already imported (it never is because of us), else ``None``."""
    module = sys.modules.get("pydantic")
    return None if module is None else getattr(module, name, None)


def _is_typed_dict(tp: object) -> bool:
    """``typing`` and ``typing_extensions`` TypedDicts alike (the latter is a separate class on 3.11)."""
    return (
        isinstance(tp, type)
        and issubclass(tp, dict)
        and hasattr(tp, "__required_keys__")
        and hasattr(tp, "__optional_keys__")
        and hasattr(tp, "__total__")
    )


def _is_model(tp: object) -> bool:
    base = _pydantic_attr("BaseModel")
    return base is not None and isinstance(tp, type) and issubclass(tp, base)


def _own_doc(tp: type) -> str:
    """A class's own docstring, first paragraph, lines joined by one space ("" when inherited or absent)."""
    doc = tp.__dict__.get("__doc__")
    if not isinstance(doc, str) or (dataclasses.is_dataclass(tp) and doc.startswith(f"{tp.__name__}(")):
        return ""  # absent, or the signature text @dataclass writes when there is no docstring
    lines: list[str] = []
    for line in inspect.cleandoc(doc).splitlines():
        if not line.strip() or line.strip().endswith(":"):
            break
        lines.append(line.strip())
    return " ".join(lines)


# --- converters -------------------------------------------------------------------------------


class Converter:
    """Turns a validated, frozen JSON value into what the annotation promises the body."""

    __slots__ = ()

    def __call__(self, value: Any) -> Any:
        raise NotImplementedError


class _Items(Converter):
    """An array: a tuple or a list, items converted (``each``) or per position (``prefix``)."""

    __slots__ = ("each", "make", "prefix")

    def __init__(
        self, make: Callable[[Any], Any], each: Converter | None, prefix: list[Converter | None] | None
    ) -> None:
        self.make = make
        self.each = each
        self.prefix = prefix

    def __call__(self, value: Any) -> Any:
        if self.prefix is not None:
            return self.make(item if c is None else c(item) for c, item in zip(self.prefix, value))
        each = self.each
        return self.make(value if each is None else (each(item) for item in value))


class _Values(Converter):
    """A ``dict[str, T]``: a plain dict with every value converted."""

    __slots__ = ("each",)

    def __init__(self, each: Converter) -> None:
        self.each = each

    def __call__(self, value: Any) -> Any:
        each = self.each
        return {key: each(item) for key, item in value.items()}


class _Keys(Converter):
    """A TypedDict: a plain dict copy with the named keys converted."""

    __slots__ = ("keys",)

    def __init__(self) -> None:
        self.keys: list[tuple[str, Converter]] = []

    def __call__(self, value: Any) -> Any:
        copy = dict(value)
        for key, sub in self.keys:
            if key in copy:
                copy[key] = sub(copy[key])
        return copy


class _Instance(Converter):
    """A dataclass: ``cls(**fields)``, fields converted; absent fields take the class defaults."""

    __slots__ = ("cls", "keys")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.keys: dict[str, Converter] = {}

    def __call__(self, value: Any) -> Any:
        keys = self.keys
        return self.cls(**{key: item if key not in keys else keys[key](item) for key, item in value.items()})


class _Model(Converter):
    """A pydantic model: ``cls.model_validate(value)`` (pydantic builds the nested values)."""

    __slots__ = ("cls",)

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __call__(self, value: Any) -> Any:
        return self.cls.model_validate(value)  # type: ignore[attr-defined]


class _Member(Converter):
    """An enum: the member with that value."""

    __slots__ = ("cls",)

    def __init__(self, cls: type[enum.Enum]) -> None:
        self.cls = cls

    def __call__(self, value: Any) -> Any:
        return self.cls(value)


class _Members(Converter):
    """A ``Literal`` with enum members: the member whose value it is (other values pass as they are)."""

    __slots__ = ("members",)

    def __init__(self, members: dict[tuple[str | None, object], enum.Enum]) -> None:
        self.members = members

    def __call__(self, value: Any) -> Any:
        return self.members.get(_equality_key(value), value)


class _Branches(Converter):
    """A union: the first branch (``anyOf`` order) whose schema accepts the value picks the converter."""

    __slots__ = ("branches", "schemas")

    def __init__(self, schemas: list[dict[str, Any]], converters: list[Converter | None]) -> None:
        self.schemas = list(zip(schemas, converters))
        self.branches: list[tuple[CompiledValidator, Converter | None]] = []

    def compile(self, defs: dict[str, Any]) -> None:
        self.branches = [
            (compile_validator(schema | {"$defs": defs} if defs else schema), converter)
            for schema, converter in self.schemas
        ]

    def __call__(self, value: Any) -> Any:
        for validator, converter in self.branches:
            if validator.is_valid(value):
                return value if converter is None else converter(value)
        return value


# --- the builder ------------------------------------------------------------------------------


class _Slot:
    """Where one mapped annotation lands: its schema node and its converter."""

    __slots__ = ("converter", "schema")

    def __init__(self) -> None:
        self.schema: dict[str, Any] = {}
        self.converter: Converter | None = None


class _Field:
    """One property of an object class: JSON key, annotation, required, default (``_NO_DEFAULT``)."""

    __slots__ = ("annotation", "default", "key", "required")

    def __init__(self, key: str, annotation: object, required: bool, default: object) -> None:
        self.key = key
        self.annotation = annotation
        self.required = required
        self.default = default


_NO_DEFAULT: Final = object()


class SchemaBuilder:
    """Map the annotations of one schema document (see the module docstring).

    ``recursive`` names the classes (by id) to write under ``$defs``; the
    builder reports the classes it found on their own path in ``found``, and
    the caller maps again with them when there are any.
    """

    def __init__(self, owner: str, recursive: frozenset[int] = frozenset()) -> None:
        self.owner = owner
        self.recursive = recursive
        self.found: set[int] = set()
        self.defs: dict[str, Any] = {}
        self.encodes = False  # an enum, dataclass or model was mapped (output values need encoding)
        self._def_names: dict[int, str] = {}
        self._def_converters: dict[int, Converter | None] = {}
        self._unions: list[_Branches] = []
        #: (node, default, where, path inside the annotation or None at the top, annotation):
        #: defaults to check once $defs are complete
        self.defaults: list[tuple[dict[str, Any], object, str, str | None, object]] = []

    def fail(self, where: str, path: str, detail: str) -> NoReturn:
        raise TypeError(f"{self.owner}: {where}: {detail} (at {path})")

    def unsupported(self, where: str, path: str, tp: object, why: str = "") -> NoReturn:
        self.fail(where, path, f"unsupported type {type_text(tp)}{why}; {SUPPORTED}")

    def map(
        self, annotation: object, where: str, root: str, extra: dict[str, Any]
    ) -> tuple[dict[str, Any], Converter | None]:
        """The schema node and converter of one annotation (``extra`` keys are added to the node)."""
        slot = _Slot()
        # Tasks: ("map", annotation, slot, path, extra, on_path) fills slot; ("done", fn)
        # runs fn once everything pushed after it (the node's children) is mapped.
        stack: list[tuple[Any, ...]] = [("map", annotation, slot, root, extra, frozenset())]
        while stack:
            task = stack.pop()
            if task[0] == "done":
                task[1]()
            else:
                _, tp, target, path, more, on_path = task
                self._map_one(tp, target, where, path, more, on_path, stack)
        return slot.schema, slot.converter

    def finish(self) -> None:
        """Compile the union converters' branch validators (``$defs`` is complete now)."""
        for union in self._unions:
            union.compile(self.defs)

    def check_defaults(self) -> None:
        """Every recorded default must be a valid value: the model reads it as the default."""
        for node, default, where, path, annotation in self.defaults:
            schema = node | {"$defs": self.defs} if self.defs else node
            if not compile_validator(schema).is_valid(default):
                detail = f"the default {default!r} does not match the type {type_text(annotation)}"
                at = "" if path is None else f" (at {path})"
                raise TypeError(f"{self.owner}: {where}: {detail}{at}")

    # --- one annotation -------------------------------------------------------------------

    def _map_one(
        self,
        annotation: object,
        slot: _Slot,
        where: str,
        path: str,
        extra: dict[str, Any],
        on_path: frozenset[int],
        stack: list[tuple[Any, ...]],
    ) -> None:
        tp, description, constraints = self._unwrap(annotation, where, path)
        while isinstance(tp, typing.NewType):  # NewType("UserId", int) is its supertype on the wire
            tp = tp.__supertype__
        if description is not None:
            extra = extra | {"description": description}
        node = slot.schema
        if constraints:
            # pushed before the children, so it runs after them (a union's branches are known then)
            stack.append(("done", lambda: self._constrain(node, constraints, where, path, tp)))
        origin = typing.get_origin(tp)
        scalar = _identical(tp, _SCALARS)
        if scalar is not None:
            node["type"] = _SCALARS[scalar]
        elif tp is None or tp is _NONE_TYPE:
            node["type"] = "null"
        elif tp is Any or tp is object:
            pass  # any JSON: {}
        elif origin is Literal:
            self._literal(slot, typing.get_args(tp), where, path)
        elif origin in _UNION_ORIGINS:
            self._union(slot, typing.get_args(tp), where, path, on_path, stack)
        elif _identical(tp, _BARE_ARRAYS) is not None:
            node["type"] = "array"
            if tp is tuple or tp is typing.Tuple:
                slot.converter = _Items(tuple, None, None)
        elif origin in _ARRAY_ORIGINS:
            self._array(slot, tp, origin, where, path, on_path, stack)
        elif _identical(tp, _BARE_OBJECTS) is not None or origin in _OBJECT_ORIGINS:
            self._mapping(slot, tp, where, path, on_path, stack)
        elif isinstance(tp, type) and issubclass(tp, enum.Enum):
            self._enum(slot, tp, where, path)
        elif isinstance(tp, type) and (_is_typed_dict(tp) or dataclasses.is_dataclass(tp) or _is_model(tp)):
            self._class(slot, tp, where, path, on_path, stack)
        else:
            self.unsupported(where, path, tp)
        node.update(extra)

    def _unwrap(self, tp: object, where: str, path: str) -> tuple[object, str | None, dict[str, Any]]:
        """Strip ``Annotated`` and TypedDict qualifiers: (type, description, constraints)."""
        description: str | None = None
        constraints: dict[str, Any] = {}
        field_info = _pydantic_attr("fields")
        field_type = None if field_info is None else field_info.FieldInfo
        while True:
            origin = typing.get_origin(tp)
            if origin is Annotated:
                pending = list(tp.__metadata__)  # type: ignore[attr-defined]
                while pending:
                    meta = pending.pop(0)
                    if field_type is not None and isinstance(meta, field_type):
                        if isinstance(meta.description, str) and description is None:
                            description = meta.description
                        pending[:0] = meta.metadata
                        continue
                    # a plain str, PEP 727's Doc(documentation) or any object with a str description
                    text = meta if isinstance(meta, str) else getattr(meta, "documentation", None)
                    if not isinstance(text, str) and not isinstance(meta, type):
                        text = getattr(meta, "description", None)
                    if isinstance(text, str):
                        description = text if description is None else description
                        continue
                    self._read_constraints(meta, constraints, where, path)
                tp = tp.__origin__  # type: ignore[attr-defined]
            elif origin is Required or origin is NotRequired or getattr(origin, "_name", None) == "ReadOnly":
                tp = typing.get_args(tp)[0]
            else:
                return tp, description, constraints

    def _read_constraints(self, meta: object, out: dict[str, Any], where: str, path: str) -> None:
        found = False
        for name in _CONSTRAINTS:
            value = getattr(meta, name, None)
            if value is None or isinstance(meta, type):
                continue
            found = True
            if name == "pattern":
                if type(value) is not str:
                    self.fail(where, path, f"constraint pattern={value!r} is not a string")
            elif name in ("min_length", "max_length"):
                if type(value) is not int or value < 0:
                    self.fail(where, path, f"constraint {name}={value!r} is not a non-negative int")
            elif type(value) not in (int, float) or not math.isfinite(value) or (name == "multiple_of" and value <= 0):
                self.fail(where, path, f"constraint {name}={value!r} is not a finite JSON number")
            out[name] = value
        if not found and type(meta).__module__.partition(".")[0] == "annotated_types":
            self.fail(where, path, f"constraint {meta!r} cannot be expressed in the tool-schema dialect")

    def _constrain(self, node: dict[str, Any], constraints: dict[str, Any], where: str, path: str, tp: object) -> None:
        targets = node["anyOf"] if "anyOf" in node else [node]
        for name, value in constraints.items():
            placed = False
            for target in targets:
                kind = target.get("type")
                if name in _NUMERIC and kind in ("integer", "number"):
                    target[_NUMERIC[name]] = value
                elif name in ("min_length", "max_length") and kind in _LENGTHS:
                    target[_LENGTHS[kind][name == "max_length"]] = value
                elif name == "pattern" and kind == "string":
                    target["pattern"] = value
                else:
                    continue
                placed = True
            if not placed:
                self.fail(where, path, f"constraint {name}={value!r} does not apply to {type_text(tp)}")

    def _literal(self, slot: _Slot, values: tuple[Any, ...], where: str, path: str) -> None:
        """``const`` / ``enum`` of the values; an enum member stands for its value and is given back as itself."""
        wire: dict[tuple[str | None, object], object] = {}  # JSON equality key -> the Literal value it came from
        kinds: set[str] = set()
        for value in values:
            member = isinstance(value, enum.Enum)
            json_value = value.value if member else value
            kind = _json_kind(json_value)
            if kind is None or (kind == "number" and not member) or not is_json_value(json_value):
                what = f"{value!r} (value {json_value!r})" if member else repr(value)
                self.fail(where, path, f"Literal value {what} is not a JSON scalar (str, int, bool or None)")
            key = _equality_key(json_value)
            if key in wire:
                self.fail(
                    where, path, f"Literal values {wire[key]!r} and {value!r} are the same JSON value {json_value!r}"
                )
            wire[key] = value
            kinds.add(kind)
        node = slot.schema
        json_values = [key[1] for key in wire]
        if kinds == {"null"}:
            node["type"] = "null"
        else:
            if len(kinds) == 1:
                node["type"] = kinds.pop()
            elif kinds == {"integer", "number"}:
                node["type"] = "number"
            if len(json_values) == 1:
                node["const"] = json_values[0]
            else:
                node["enum"] = json_values
        members = {key: value for key, value in wire.items() if isinstance(value, enum.Enum)}
        if members:
            slot.converter = _Members(members)
            self.encodes = True

    def _enum(self, slot: _Slot, tp: type[enum.Enum], where: str, path: str) -> None:
        if issubclass(tp, enum.Flag):
            self.unsupported(where, path, tp, " (a Flag combines members; use list[Enum])")
        values = [member.value for member in tp]
        if not values:
            self.unsupported(where, path, tp, " (an enum without members)")
        kinds = {_json_kind(value) for value in values}
        for value in values:
            if not is_json_value(value) or _json_kind(value) is None:
                self.unsupported(where, path, tp, f" (member value {value!r} is not a JSON scalar)")
        node = slot.schema
        if len(kinds) == 1:
            node["type"] = kinds.pop()
        node["enum"] = [snapshot_json(value, freeze=False) for value in values]
        doc = _own_doc(tp)
        if doc:
            node["description"] = doc
        slot.converter = _Member(tp)
        self.encodes = True

    def _union(
        self,
        slot: _Slot,
        members: tuple[Any, ...],
        where: str,
        path: str,
        on_path: frozenset[int],
        stack: list[tuple[Any, ...]],
    ) -> None:
        slots = [_Slot() for _ in members]

        def done() -> None:
            branches: list[dict[str, Any]] = []
            converters: list[Converter | None] = []
            for member in slots:
                # a nested anyOf (Optional[Union[...]] written through an alias) is flattened
                nested = member.schema.get("anyOf") if set(member.schema) == {"anyOf"} else None
                if nested is not None and member.converter is None:
                    branches.extend(nested)
                    converters.extend([None] * len(nested))
                else:
                    branches.append(member.schema)
                    converters.append(member.converter)
            if any(branch == {} for branch in branches):
                return  # Any absorbs everything: {} (kept), no conversion
            slot.schema["anyOf"] = branches
            if any(converter is not None for converter in converters):
                slot.converter = _Branches(branches, converters)
                self._unions.append(slot.converter)

        stack.append(("done", done))
        stack.extend(("map", member, s, path, {}, on_path) for member, s in reversed(list(zip(members, slots))))

    def _array(
        self,
        slot: _Slot,
        tp: object,
        origin: object,
        where: str,
        path: str,
        on_path: frozenset[int],
        stack: list[tuple[Any, ...]],
    ) -> None:
        args = typing.get_args(tp)
        node = slot.schema
        node["type"] = "array"
        is_tuple = origin is tuple
        if is_tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if args == ((),):  # tuple[()] spelled the old way
                args = ()
            items = [_Slot() for _ in args]
            # exact: items false closes the tail (the SDKs render tuple[A, B] / [A, B]);
            # the dialect wants a non-empty prefixItems, so tuple[()] is just items false
            if items:
                node["prefixItems"] = [item.schema for item in items]
            node["items"] = False
            if items:
                node["minItems"] = len(items)

            def done_prefix() -> None:
                converters = [item.converter for item in items]
                # no position converts: a plain tuple() of the array
                slot.converter = _Items(tuple, None, converters if any(converters) else None)

            stack.append(("done", done_prefix))
            stack.extend(
                ("map", arg, item, f"{path}[{index}]", {}, on_path)
                for index, (arg, item) in reversed(list(enumerate(zip(args, items))))
            )
            return
        item = _Slot()
        node["items"] = item.schema

        def done() -> None:
            if is_tuple or item.converter is not None:
                slot.converter = _Items(tuple if is_tuple else list, item.converter, None)

        stack.append(("done", done))
        stack.append(("map", args[0], item, path + "[]", {}, on_path))

    def _mapping(
        self, slot: _Slot, tp: object, where: str, path: str, on_path: frozenset[int], stack: list[tuple[Any, ...]]
    ) -> None:
        node = slot.schema
        node["type"] = "object"
        args = typing.get_args(tp)
        if not args:
            node["additionalProperties"] = True
            return
        key_type, value_type = self._unwrap(args[0], where, path)[0], args[1]
        if key_type is not str:
            self.unsupported(where, path, tp, " (JSON object keys are str)")
        if self._unwrap(value_type, where, path)[0] in (Any, object):
            node["additionalProperties"] = True
            return
        values = _Slot()
        node["additionalProperties"] = values.schema

        def done() -> None:
            if values.converter is not None:
                slot.converter = _Values(values.converter)

        stack.append(("done", done))
        stack.append(("map", value_type, values, path + "{}", {}, on_path))

    # --- classes: TypedDict, dataclass, pydantic model ------------------------------------

    def _class(
        self, slot: _Slot, tp: type, where: str, path: str, on_path: frozenset[int], stack: list[tuple[Any, ...]]
    ) -> None:
        key = id(tp)
        if key in on_path:
            self.found.add(key)
        if key in self.recursive or key in on_path:
            slot.schema["$ref"] = f"#/$defs/{self._def_name(tp)}"
            if key in self._def_converters:  # mapped (or being mapped) under $defs already
                slot.converter = self._def_converters[key]
                return
            if key in on_path:
                return  # first pass: the caller maps again with this class in $defs
            body = _Slot()
            self.defs[self._def_name(tp)] = body.schema
            self._def_converters[key] = body.converter = self._class_converter(tp)
            slot.converter = body.converter
            self._class_body(body, tp, where, path, on_path | {key}, stack)
            return
        slot.converter = self._class_converter(tp)
        self._class_body(slot, tp, where, path, on_path | {key}, stack)

    def _def_name(self, tp: type) -> str:
        name = self._def_names.get(id(tp))
        if name is None:
            base = tp.__name__
            taken = set(self._def_names.values())
            name, counter = base, 2
            while name in taken:  # few classes share a name; the counter keeps the text deterministic
                name, counter = f"{base}{counter}", counter + 1
            self._def_names[id(tp)] = name
        return name

    def _class_converter(self, tp: type) -> Converter | None:
        if _is_model(tp):
            self.encodes = True
            return _Model(tp)
        if dataclasses.is_dataclass(tp):
            self.encodes = True
            return _Instance(tp)
        # A TypedDict is converted only when one of its keys is; a recursive one cannot
        # know that before its keys are mapped, so it is always copied.
        return _Keys() if id(tp) in self.recursive else None

    def _class_body(
        self, slot: _Slot, tp: type, where: str, path: str, on_path: frozenset[int], stack: list[tuple[Any, ...]]
    ) -> None:
        fields, closed = self._fields(tp, where, path)
        node = slot.schema
        node["type"] = "object"
        doc = _own_doc(tp)
        if doc:
            node["description"] = doc
        slots = [_Slot() for _ in fields]
        node["properties"] = {field.key: s.schema for field, s in zip(fields, slots)}
        required = [field.key for field in fields if field.required]
        if required:
            node["required"] = required
        node["additionalProperties"] = not closed
        converter = slot.converter

        def done() -> None:
            keys: list[tuple[str, Converter]] = []
            for field, s in zip(fields, slots):
                if field.default is not _NO_DEFAULT:
                    s.schema["default"] = snapshot_json(field.default, freeze=False)
                    self.defaults.append(
                        (s.schema, field.default, where, format_path([field.key], path), field.annotation)
                    )
                if s.converter is not None:
                    keys.append((field.key, s.converter))
            if isinstance(converter, _Instance):
                converter.keys.update(keys)
            elif isinstance(converter, _Keys):
                converter.keys.extend(keys)
            elif keys and converter is None:  # a TypedDict: converted only when one of its keys is
                slot.converter = _Keys()
                slot.converter.keys.extend(keys)

        stack.append(("done", done))
        stack.extend(
            ("map", field.annotation, s, format_path([field.key], path), {}, on_path)
            for field, s in reversed(list(zip(fields, slots)))
        )

    def _fields(self, tp: type, where: str, path: str) -> tuple[list[_Field], bool]:
        """The class's properties in declared order, and whether the object is closed."""
        if _is_model(tp):
            out: list[_Field] = []
            undefined = _pydantic_attr("fields")
            for name, info in tp.model_fields.items():  # type: ignore[attr-defined]
                alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
                annotation: object = info.annotation
                metadata = list(info.metadata)
                if info.description is not None:
                    metadata.append(info.description)
                if metadata:
                    annotation = Annotated[(annotation, *metadata)]
                default = info.default
                if (
                    info.is_required()
                    or default is getattr(undefined, "PydanticUndefined", None)
                    or not is_json_value(default)
                ):
                    default = _NO_DEFAULT
                out.append(_Field(alias or name, annotation, info.is_required(), default))
            return out, tp.model_config.get("extra") != "allow"  # type: ignore[attr-defined]
        try:
            hints = typing.get_type_hints(tp, include_extras=True)
        except Exception as error:  # a forward reference that does not resolve
            self.fail(where, path, f"cannot resolve the annotations of {type_text(tp)}: {error}")
        if dataclasses.is_dataclass(tp):
            out = []
            for field in dataclasses.fields(tp):
                if not field.init:
                    continue
                missing = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
                has_json_default = field.default is not dataclasses.MISSING and is_json_value(field.default)
                out.append(
                    _Field(field.name, hints[field.name], missing, field.default if has_json_default else _NO_DEFAULT)
                )
            return out, True
        required_keys = tp.__required_keys__  # type: ignore[attr-defined]
        out = []
        for name, hint in hints.items():
            # With postponed annotations, Python 3.11 misses string Required/NotRequired
            # in __required_keys__, so an explicit qualifier in the resolved hint wins.
            qualifier = _qualifier(hint)
            required = qualifier if qualifier is not None else name in required_keys
            out.append(_Field(name, hint, required, _NO_DEFAULT))
        return out, True


def _qualifier(tp: object) -> bool | None:
    """``Required``/``NotRequired`` around (or inside ``Annotated`` of) a TypedDict key's hint."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Required or origin is NotRequired:
            return origin is Required
        if origin is Annotated or getattr(origin, "_name", None) == "ReadOnly":
            tp = tp.__origin__ if origin is Annotated else typing.get_args(tp)[0]  # type: ignore[attr-defined]
        else:
            return None


# --- output values ----------------------------------------------------------------------------


def encode_output(value: object) -> object:
    """A returned value as JSON: enum members become values, dataclasses and models objects.

    One explicit walk over the value (no recursion); each container is copied
    once (a shared one stays shared, a cycle stays a cycle for the registry's
    snapshot to report).
    """
    root = [value]
    memo: dict[int, object] = {}
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        container, key = stack.pop()
        item = container[key]
        if isinstance(item, enum.Enum):
            container[key] = item.value
            continue
        if _is_model(type(item)):
            container[key] = item.model_dump(mode="json", by_alias=True)
            continue
        if id(item) in memo:
            container[key] = memo[id(item)]
            continue
        copy: Any
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            copy = {field.name: getattr(item, field.name) for field in dataclasses.fields(item) if field.init}
        elif isinstance(item, list | tuple):
            copy = list(item)
        elif isinstance(item, dict):
            copy = dict(item)
        else:
            continue
        memo[id(item)] = container[key] = copy
        stack.extend((copy, index) for index in (copy if isinstance(copy, dict) else range(len(copy))))
    return root[0]
