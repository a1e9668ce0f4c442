"""The ``@tool`` decorator: a typed ``async def`` becomes a ``define_tool`` definition.

The parameters come from the signature (types) and the docstring (the
description's first paragraph and a Google-style ``Args:`` section); the
output schema comes from the return annotation. The result is an ordinary
:class:`ToolDefinition` made by :func:`define_tool`, so the registry validates
arguments before the body and the output after it, as for any definition.

Guaranteed: the body is called as ``await fn(**declared, run=run)`` with only
the declared parameter names that are present in the (validated, frozen)
arguments (a value annotated ``tuple[T, ...]`` arrives as a tuple); absent
optional parameters take their Python defaults; the schemas never apply
defaults. Every annotation is mapped by one explicit-stack walk
(no recursion); an annotation the JSON-Schema subset cannot express exactly is
a ``TypeError`` at decoration time naming the function, the parameter, the
place inside the annotation and the type.
"""

from __future__ import annotations

import asyncio
import collections.abc
import inspect
import re
import types
import typing
from collections.abc import Callable, Coroutine, Sequence
from typing import Annotated, Any, Final, Literal, NoReturn, NotRequired, Required, TypeAlias, Union, overload

from dsh_codegen.json import is_json_value, render_json_pretty, snapshot_json
from dsh_codegen.json._paths import format_path
from dsh_codegen.registry._definitions import (
    ConcurrencyClassifier,
    FinalizeContent,
    PresentCall,
    PresentResult,
    Render,
    ToolDefinition,
    ToolOutput,
    define_tool,
)
from dsh_codegen.registry._execution import ToolRunContext
from dsh_codegen.registry._results import ContentBlock
from dsh_codegen.schema import compile_validator, value_schema_spec_to_json_schema

__all__ = ["tool"]

#: What ``@tool`` accepts: an ``async def`` function (any parameters, any result).
#: A typed tool body: an ``async def`` function, or a plain one (run in a worker thread).
AsyncToolFunction: TypeAlias = Callable[..., Coroutine[Any, Any, Any]] | Callable[..., Any]

_RUN: Final = "run"
_NONE_TYPE: Final = type(None)
_SUPPORTED: Final = (
    "supported: str, int, float, bool, None, list[T], tuple[T, ...], Sequence[T], dict[str, Any], "
    'Mapping[str, Any], Any, object, Literal[...], unions, TypedDict, Annotated[T, "description"]'
)
_SCALARS: Final[dict[object, str]] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_LITERAL_TYPES: Final[dict[type, str]] = {str: "string", int: "integer", bool: "boolean", _NONE_TYPE: "null"}
_ARRAY_ORIGINS: Final = (list, tuple, collections.abc.Sequence)
_OBJECT_ORIGINS: Final = (dict, collections.abc.Mapping)
_BARE_ARRAYS: Final = (list, tuple, collections.abc.Sequence, typing.List, typing.Tuple, typing.Sequence)
_BARE_OBJECTS: Final = (dict, collections.abc.Mapping, typing.Dict, typing.Mapping)
_UNION_ORIGINS: Final = (Union, types.UnionType)
_SECTION_NAMES: Final = frozenset(
    {
        "args", "arguments", "parameters", "params", "returns", "return", "yields", "raises",
        "example", "examples", "note", "notes", "attributes", "see also", "warning", "warnings", "todo",
    }
)
_SECTION_HEADER: Final = re.compile(r"([A-Za-z][A-Za-z ]*):\s*\Z")
_ARG_ENTRY: Final = re.compile(r"(\*{0,2}[A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:(.*)\Z")


# --- docstrings -------------------------------------------------------------------------


class _Docstring:
    """A docstring split into its summary, ``Args:`` entries and ``Returns:`` text."""

    __slots__ = ("params", "returns", "summary")

    def __init__(self, summary: str, params: dict[str, str], returns: str) -> None:
        self.summary = summary
        self.params = params
        self.returns = returns


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _section_name(line: str) -> str | None:
    match = _SECTION_HEADER.match(line.strip())
    if match is None or match.group(1).lower() not in _SECTION_NAMES:
        return None
    return match.group(1).lower()


def _parse_docstring(owner: str, doc: str | None) -> _Docstring:
    """Parse a Google-style docstring.

    The summary is the first paragraph (lines joined by one space). ``Args:``
    (also ``Arguments:``, ``Parameters:``, ``Params:``) entries are
    ``name: text`` or ``name (type): text``, continued on lines indented deeper
    than the entry. ``Returns:`` text becomes the output's description.
    Raised errors: ``ValueError`` for an ``Args:`` line that is not an entry.
    """
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary = _summary_lines(lines)
    index = len(summary)
    params: dict[str, str] = {}
    returns: list[str] = []
    while index < len(lines):
        line = lines[index]
        section = _section_name(line) if line.strip() else None
        index += 1
        if section is None:
            continue
        header_indent = _indent(line)
        body: list[str] = []
        while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > header_indent):
            body.append(lines[index])
            index += 1
        if section in ("args", "arguments", "parameters", "params"):
            _parse_args(owner, body, params)
        elif section in ("returns", "return"):
            returns.extend(text.strip() for text in body if text.strip())
    return _Docstring(" ".join(summary), params, " ".join(returns))


def _summary_lines(lines: list[str]) -> list[str]:
    """The first paragraph: the lines before the first blank line or section header."""
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _section_name(line) is not None:
            break
        summary.append(line.strip())
    return summary


def _parse_args(owner: str, body: list[str], params: dict[str, str]) -> None:
    entries: dict[str, list[str]] = {}
    entry_indent: int | None = None
    current: list[str] | None = None
    for line in body:
        if not line.strip():
            continue
        indent = _indent(line)
        if entry_indent is None:
            entry_indent = indent
        if indent > entry_indent and current is not None:
            current.append(line.strip())  # a continuation line
            continue
        match = _ARG_ENTRY.match(line.strip())
        if match is None:
            raise ValueError(f"{owner}: docstring Args: line {line.strip()!r} is not 'name: description'")
        first = match.group(2).strip()
        current = entries[match.group(1).lstrip("*")] = [first] if first else []
    params.update((name, " ".join(parts)) for name, parts in entries.items())


# --- annotations -> schema specs ------------------------------------------------------------


def _type_text(tp: object) -> str:
    if tp is None or tp is _NONE_TYPE:
        return "None"
    if isinstance(tp, type) and typing.get_origin(tp) is None:
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _unwrap(tp: object) -> tuple[object, str | None, bool | None]:
    """Strip ``Annotated``/``Required``/``NotRequired``: (type, description, required-qualifier)."""
    description: str | None = None
    qualifier: bool | None = None
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            for meta in tp.__metadata__:  # type: ignore[attr-defined]
                # a plain str, or a Field-like object: pydantic's Field(description=...)
                # or PEP 727's Doc(documentation)
                text = meta if isinstance(meta, str) else getattr(meta, "description", getattr(meta, "documentation", None))
                if isinstance(text, str) and description is None:
                    description = text
            tp = tp.__origin__  # type: ignore[attr-defined]
        elif origin is Required or origin is NotRequired:
            qualifier = origin is Required if qualifier is None else qualifier
            tp = typing.get_args(tp)[0]
        else:
            return tp, description, qualifier


class _Mapper:
    """Map one annotation (a parameter's or the return's) to a ``ValueSchemaSpec``."""

    __slots__ = ("owner", "tuples", "where")

    def __init__(self, owner: str, where: str) -> None:
        self.owner = owner
        self.where = where
        #: array specs mapped from ``tuple`` annotations (their values become tuples), by id;
        #: holding the specs keeps every id unique while the mapper lives, even for a spec a
        #: union dropped (``Any | tuple[int, ...]``)
        self.tuples: dict[int, dict[str, Any]] = {}

    def fail(self, path: str, detail: str) -> NoReturn:
        raise TypeError(f"{self.owner}: {self.where}: {detail} (at {path})")

    def unsupported(self, path: str, tp: object, why: str = "") -> NoReturn:
        self.fail(path, f"unsupported type {_type_text(tp)}{why}; {_SUPPORTED}")

    def map(self, annotation: object, root: str, extra: dict[str, Any]) -> dict[str, Any]:
        result: list[Any] = [None]
        on_path: set[int] = set()
        # Tasks: ("map", annotation, sink, key, path, extra) stores the spec at
        # sink[key] with extra keys added; ("union", ...) collapses members mapped
        # before it; ("exit", id) takes a TypedDict off the current path.
        stack: list[tuple[Any, ...]] = [("map", annotation, result, 0, root, extra)]
        while stack:
            task = stack.pop()
            kind = task[0]
            if kind == "exit":
                on_path.discard(task[1])
            elif kind == "union":
                _, members, origins, sink, key, path, extra = task
                collapsed = self._collapse(members, origins, path)
                sink[key] = merged = collapsed | extra
                if id(collapsed) in self.tuples:
                    self.tuples[id(merged)] = merged
            else:
                _, tp, sink, key, path, extra = task
                self._map_one(tp, sink, key, path, extra, stack, on_path)
        spec: dict[str, Any] = result[0]
        return spec

    def _map_one(
        self,
        annotation: object,
        sink: Any,
        key: str | int,
        path: str,
        extra: dict[str, Any],
        stack: list[tuple[Any, ...]],
        on_path: set[int],
    ) -> None:
        tp, description, _ = _unwrap(annotation)
        if description is not None:
            extra = extra | {"description": description}
        origin = typing.get_origin(tp)
        scalar = _identical(tp, _SCALARS)
        if scalar is not None:
            sink[key] = {"type": _SCALARS[scalar]} | extra
        elif tp is None or tp is _NONE_TYPE:
            sink[key] = {"type": "null"} | extra
        elif tp is Any or tp is object:
            sink[key] = {"type": "json"} | extra
        elif origin is Literal:
            literals = [self._literal(value, path) for value in typing.get_args(tp)]
            sink[key] = self._collapse(literals, [tp] * len(literals), path) | extra
        elif origin in _UNION_ORIGINS:
            branches = typing.get_args(tp)
            members: list[Any] = [None] * len(branches)
            stack.append(("union", members, branches, sink, key, path, extra))
            stack.extend(("map", branch, members, i, path, {}) for i, branch in reversed(list(enumerate(branches))))
        elif _identical(tp, _BARE_ARRAYS) is not None:
            sink[key] = spec = {"type": "array"} | extra
            if tp is tuple or tp is typing.Tuple:
                self.tuples[id(spec)] = spec
        elif origin in _ARRAY_ORIGINS:
            args = typing.get_args(tp)
            if origin is tuple and (len(args) != 2 or args[1] is not Ellipsis):
                self.unsupported(path, tp, " (only tuple[T, ...] is an array; fixed-length tuples are not)")
            spec = {"type": "array"} | extra
            sink[key] = spec
            if origin is tuple:
                self.tuples[id(spec)] = spec
            stack.append(("map", args[0], spec, "items", path + "[]", {}))
        elif _identical(tp, _BARE_OBJECTS) is not None or origin in _OBJECT_ORIGINS:
            args = typing.get_args(tp)
            if args:
                key_type, value_type = _unwrap(args[0])[0], _unwrap(args[1])[0]
                if key_type is not str:
                    self.unsupported(path, tp, " (JSON object keys are str)")
                if value_type is not Any and value_type is not object:
                    self.unsupported(
                        path, tp, " (an open object's values cannot be constrained: use dict[str, Any] or a TypedDict)"
                    )
            sink[key] = {"type": "object", "additionalProperties": True} | extra
        elif typing.is_typeddict(tp):
            self._typed_dict(tp, sink, key, path, extra, stack, on_path)
        else:
            self.unsupported(path, tp)

    def _typed_dict(
        self,
        tp: Any,
        sink: Any,
        key: str | int,
        path: str,
        extra: dict[str, Any],
        stack: list[tuple[Any, ...]],
        on_path: set[int],
    ) -> None:
        if id(tp) in on_path:
            self.fail(path, f"recursive TypedDict {_type_text(tp)} (the schema subset has no references)")
        try:
            hints = typing.get_type_hints(tp, include_extras=True)
        except Exception as error:  # a forward reference that does not resolve
            self.fail(path, f"cannot resolve the annotations of TypedDict {_type_text(tp)}: {error}")
        required_keys = tp.__required_keys__
        spec: dict[str, Any] = {"type": "object", "additionalProperties": False}
        doc = _own_doc(tp)
        if doc:
            spec["description"] = doc
        spec |= extra
        properties: dict[str, Any] = {name: None for name in hints}
        spec["properties"] = properties
        sink[key] = spec
        on_path.add(id(tp))
        stack.append(("exit", id(tp)))
        for name, hint in reversed(hints.items()):
            # With postponed annotations, Python 3.11 misses string Required/NotRequired
            # in __required_keys__, so an explicit qualifier in the resolved hint wins.
            qualifier = _unwrap(hint)[2]
            required = qualifier if qualifier is not None else name in required_keys
            stack.append(("map", hint, properties, name, format_path([name], path), {"required": True} if required else {}))

    def _literal(self, value: object, path: str) -> dict[str, Any]:
        kind = _LITERAL_TYPES.get(type(value))
        if kind is None:
            self.fail(path, f"Literal value {value!r} is not a JSON scalar (str, int, bool or None)")
        return {"type": "null"} if kind == "null" else {"type": kind, "const": value}

    def _collapse(self, members: list[dict[str, Any]], origins: Sequence[object], path: str) -> dict[str, Any]:
        """Merge union members: one spec, or a ``oneOf`` of pairwise disjoint branches.

        Members of one scalar type merge (an unconstrained one absorbs the
        others' values), ``number`` absorbs ``integer``, any JSON absorbs all.
        """
        flat: list[tuple[dict[str, Any], object]] = []
        for member, origin in zip(members, origins):
            if "oneOf" in member:
                flat.extend((branch, origin) for branch in member["oneOf"])
            else:
                flat.append((member, origin))
        if any(member.get("type") == "json" for member, _ in flat):
            return {"type": "json"}
        types_seen = {member["type"] for member, _ in flat}
        branches: list[Any] = []  # a spec, or a scalar type's name until its group is merged
        branch_origins: list[object] = []
        groups: dict[str, list[dict[str, Any]]] = {}
        for member, origin in flat:
            kind = member["type"]
            if kind == "integer" and "number" in types_seen:
                continue
            if kind in ("array", "object"):
                branches.append(member)
                branch_origins.append(origin)
            elif kind in groups:
                groups[kind].append(member)
            else:
                groups[kind] = [member]
                branches.append(kind)
                branch_origins.append(origin)
        specs: list[dict[str, Any]] = [_merge_scalars(groups[b]) if isinstance(b, str) else b for b in branches]
        if len(specs) == 1:
            return specs[0]
        for i, first in enumerate(specs):
            for j in range(i + 1, len(specs)):
                if not _disjoint(first, specs[j]):
                    self.fail(
                        path,
                        f"union members {_type_text(branch_origins[i])} and {_type_text(branch_origins[j])} overlap "
                        "(a value could match both, and the schema's oneOf needs exactly one match)",
                    )
        return {"oneOf": specs}


def _merge_scalars(group: list[dict[str, Any]]) -> dict[str, Any]:
    """One spec for union members of one scalar type (a lone member is kept with its annotations)."""
    if len(group) == 1:
        return group[0]
    merged: dict[str, Any] = {"type": group[0]["type"]}
    description = next((member["description"] for member in group if "description" in member), None)
    if description is not None:
        merged["description"] = description
    collected: list[Any] = []
    for member in group:
        values = _scalar_values(member)
        if values is None:
            return merged  # an unconstrained member absorbs the others' values
        collected.extend(values)
    unique = list(dict.fromkeys(collected))  # one JSON type per group, so equality is JSON equality
    merged.update({"const": unique[0]} if len(unique) == 1 else {"enum": unique})
    return merged


def _identical(tp: object, options: typing.Iterable[object]) -> object | None:
    """The option that *is* ``tp`` (identity only: an annotation may be unhashable or compare oddly)."""
    return next((option for option in options if option is tp), None)


def _own_doc(tp: type) -> str:
    doc = tp.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return ""
    return " ".join(_summary_lines(inspect.cleandoc(doc).splitlines()))


def _scalar_values(spec: dict[str, Any]) -> list[Any] | None:
    """A scalar spec's allowed values (``None``: unconstrained)."""
    if "const" in spec:
        return [spec["const"]]
    if "enum" in spec:
        return list(spec["enum"])
    return None


def _disjoint(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether no JSON value matches both specs (``False`` when unsure)."""
    if "oneOf" in a or "oneOf" in b or a.get("type") == "json" or b.get("type") == "json":
        return False
    kind_a, kind_b = a["type"], b["type"]
    if kind_a != kind_b:
        return {kind_a, kind_b} != {"integer", "number"}
    if kind_a == "array":
        return False  # the empty array matches both
    if kind_a == "object":
        return _objects_disjoint(a, b)
    values_a, values_b = _scalar_values(a), _scalar_values(b)
    if values_a is None or values_b is None:
        return False
    return not any(type(x) is type(y) and x == y for x in values_a for y in values_b)


def _objects_disjoint(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a["additionalProperties"] or b["additionalProperties"]:
        return False
    props_a: dict[str, Any] = a.get("properties", {})
    props_b: dict[str, Any] = b.get("properties", {})
    for name, prop in props_a.items():
        if prop.get("required") and name not in props_b:
            return True
        if prop.get("required") and props_b[name].get("required") and _disjoint(prop, props_b[name]):
            return True
    return any(prop.get("required") and name not in props_a for name, prop in props_b.items())


# --- tuple-typed arguments ------------------------------------------------------------------

# A converter turns the registry's frozen argument value into what a tuple
# annotation promises. ("tuple", item) / ("list", item): an array becomes a
# tuple / a list with converted items (item None: items unchanged);
# ("object", ((key, converter), ...)): a copy with those keys converted;
# ("union", array, ((validator, converter), ...)): by the value's JSON kind,
# the one array branch (union arrays never overlap) or the object branch whose
# validator accepts the value (None: the only object branch).
_Converter: TypeAlias = tuple[Any, ...]


def _spec_children(node: dict[str, Any]) -> list[dict[str, Any]]:
    if "oneOf" in node:
        return list(node["oneOf"])
    if "items" in node:
        return [node["items"]]
    return list(node.get("properties", {}).values())


def _tuple_converter(spec: dict[str, Any], tuples: dict[int, dict[str, Any]]) -> _Converter | None:
    """The converter for a mapped spec, or ``None`` when no tuple annotation is inside it."""
    if not tuples:
        return None
    results: dict[int, _Converter | None] = {}
    stack: list[tuple[dict[str, Any], bool]] = [(spec, False)]
    while stack:  # post-order: children's converters first
        node, done = stack.pop()
        if not done:
            stack.append((node, True))
            stack.extend((child, False) for child in _spec_children(node))
            continue
        results[id(node)] = _node_converter(node, results, tuples)
    return results[id(spec)]


def _node_converter(
    node: dict[str, Any], results: dict[int, _Converter | None], tuples: dict[int, dict[str, Any]]
) -> _Converter | None:
    if "oneOf" in node:
        branches: list[dict[str, Any]] = node["oneOf"]
        array: _Converter | None = None
        objects: list[tuple[dict[str, Any], _Converter]] = []
        for branch in branches:
            converter = results[id(branch)]
            if converter is not None and branch["type"] == "array":
                array = converter
            elif converter is not None:
                objects.append((branch, converter))
        if array is None and not objects:
            return None
        single = sum(1 for branch in branches if branch["type"] == "object") == 1
        choices = tuple(
            (None if single else compile_validator(value_schema_spec_to_json_schema(branch)), converter)  # type: ignore[arg-type]
            for branch, converter in objects
        )
        return ("union", array, choices)
    if node.get("type") == "array":
        item = results[id(node["items"])] if "items" in node else None
        if id(node) in tuples:
            return ("tuple", item)
        return None if item is None else ("list", item)
    converters = tuple(
        (key, results[id(prop)]) for key, prop in node.get("properties", {}).items() if results[id(prop)] is not None
    )
    return ("object", converters) if converters else None


def _convert(converter: _Converter, value: Any) -> Any:
    """Apply a converter (recursion depth is bounded by the annotation's nesting, not the value's)."""
    kind = converter[0]
    if kind == "tuple" or kind == "list":
        item = converter[1]
        items = value if item is None else [_convert(item, element) for element in value]
        return tuple(items) if kind == "tuple" else list(items)
    if kind == "object":
        copy = dict(value)
        for key, sub in converter[1]:
            if key in copy:
                copy[key] = _convert(sub, copy[key])
        return copy
    # arguments are the registry's validated snapshot: exact frozen containers or scalars
    if isinstance(value, list):
        return value if converter[1] is None else _convert(converter[1], value)
    if isinstance(value, dict):
        for validator, sub in converter[2]:
            if validator is None or validator.is_valid(value):
                return _convert(sub, value)
    return value


# --- the decorator ------------------------------------------------------------------------


def _render_default(_args: Any, value: Any) -> list[ContentBlock]:
    """One text block: a string raw, any other value as pretty JSON."""
    return [{"type": "text", "text": value if type(value) is str else render_json_pretty(value)}]


def _type_hints(owner: str, fn: AsyncToolFunction) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except NameError:
        pass  # retry below: ToolRunContext is often imported only under TYPE_CHECKING
    except Exception as error:
        raise TypeError(f"{owner}: cannot resolve the annotations: {error}") from error
    try:
        return typing.get_type_hints(fn, localns={"ToolRunContext": ToolRunContext}, include_extras=True)
    except Exception as error:
        raise TypeError(f"{owner}: cannot resolve the annotations: {error}") from error


class _Parameters:
    """What the signature yields: the parameter spec, the body's names and how to call it."""

    __slots__ = ("converters", "defaults", "names", "spec", "wants_run")

    def __init__(self) -> None:
        self.spec: dict[str, Any] = {}
        self.names: list[str] = []
        self.converters: list[tuple[str, _Converter]] = []
        self.defaults: dict[str, tuple[object, object]] = {}  # name -> (default, annotation), JSON defaults only
        self.wants_run = False


def _read_parameters(owner: str, fn: AsyncToolFunction, hints: dict[str, Any], doc: _Docstring) -> _Parameters:
    out = _Parameters()
    for param in inspect.signature(fn).parameters.values():
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise TypeError(
                f'{owner}: parameter "{param.name}" is {param.kind.description}; '
                "tool parameters must be passable by keyword (no *args, **kwargs or positional-only)"
            )
        if param.name == _RUN:
            hint = hints.get(_RUN, ToolRunContext)
            if hint is not ToolRunContext:
                raise TypeError(
                    f'{owner}: parameter "run" receives the run context: annotate it ToolRunContext '
                    f"or leave it unannotated (got {_type_text(hint)})"
                )
            out.wants_run = True
            continue
        if param.name not in hints:
            raise TypeError(f'{owner}: parameter "{param.name}" has no type annotation (use Any for any JSON)')
        mapper = _Mapper(owner, f'parameter "{param.name}"')
        # The docstring entry is passed in as a default: an Annotated description,
        # more specific, replaces it.
        documented = {"description": doc.params[param.name]} if param.name in doc.params else {}
        spec = mapper.map(hints[param.name], param.name, documented)
        if param.default is param.empty:
            spec["required"] = True
        elif is_json_value(param.default):
            spec["default"] = snapshot_json(param.default, freeze=False)
            out.defaults[param.name] = (param.default, hints[param.name])
        out.spec[param.name] = spec
        converter = _tuple_converter(spec, mapper.tuples)
        if converter is not None:
            out.converters.append((param.name, converter))
        out.names.append(param.name)
    unknown = [name for name in doc.params if name not in out.names and name != _RUN]
    if unknown:
        raise ValueError(f"{owner}: docstring Args: documents {', '.join(unknown)}, not parameters of the function")
    return out


def _check_defaults(owner: str, definition: ToolDefinition, defaults: dict[str, tuple[object, object]]) -> None:
    """A recorded default must be a valid value: the model reads it as the parameter's default."""
    properties = definition.parameters["properties"]
    for name, (default, annotation) in defaults.items():
        if not compile_validator(properties[name]).is_valid(default):
            raise TypeError(
                f'{owner}: parameter "{name}": the default {default!r} does not match the type {_type_text(annotation)}'
            )


def _build(
    fn: AsyncToolFunction,
    *,
    name: str | None,
    description: str | None,
    output_render: Render | None,
    timeout_ms: float | None,
    is_concurrency_safe: ConcurrencyClassifier | None,
    finalize_content: FinalizeContent | None,
    present_call: PresentCall | None,
    present_result: PresentResult | None,
) -> ToolDefinition:
    owner = f"tool({getattr(fn, '__qualname__', None) or repr(fn)})"
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        kind = "an async generator" if inspect.isasyncgenfunction(fn) else "a generator"
        raise TypeError(f"{owner}: the tool body must return its value, not yield it (got {kind} function)")
    if not callable(fn):
        raise TypeError(f"{owner}: the tool body must be a function, got {type(fn).__name__}")
    is_async = inspect.iscoroutinefunction(fn)
    hints = _type_hints(owner, fn)
    doc = _parse_docstring(owner, fn.__doc__)
    params = _read_parameters(owner, fn, hints, doc)
    if "return" not in hints:
        raise TypeError(f"{owner}: missing return annotation (the output schema comes from it; use -> Any for any JSON)")
    output_spec = _Mapper(owner, "return annotation").map(hints["return"], "return", {})
    if doc.returns and "description" not in output_spec:
        output_spec["description"] = doc.returns
    tool_description = description if description is not None else doc.summary
    if not tool_description:
        raise ValueError(f"{owner}: no description: pass description= or give the function a docstring")
    declared = tuple(params.names)
    converters = tuple(params.converters)
    wants_run = params.wants_run

    async def execute(args: Any, run: ToolRunContext) -> Any:
        # args is the registry's validated, frozen snapshot (an object): only the
        # declared names are passed; Python applies the defaults of absent ones.
        kwargs = {key: args[key] for key in declared if key in args}
        for key, converter in converters:
            if key in kwargs:
                kwargs[key] = _convert(converter, kwargs[key])
        if wants_run:
            kwargs[_RUN] = run
        if is_async:
            return await fn(**kwargs)
        # A plain function runs in the default executor (with the caller's context
        # variables); the registry waits for the thread, never abandons it.
        return await asyncio.to_thread(fn, **kwargs)

    definition = define_tool(
        name=name if name is not None else fn.__name__,
        description=tool_description,
        parameters=params.spec,  # built at run time; define_tool re-checks it
        output=ToolOutput(schema=output_spec, render=output_render if output_render is not None else _render_default),
        execute=execute,
        finalize_content=finalize_content,
        timeout_ms=timeout_ms,
        is_concurrency_safe=is_concurrency_safe,
        present_call=present_call,
        present_result=present_result,
    )
    _check_defaults(owner, definition, params.defaults)
    return definition


@overload
def tool(
    fn: AsyncToolFunction,
    *,
    name: str | None = None,
    description: str | None = None,
    output_render: Render | None = None,
    timeout_ms: float | None = None,
    is_concurrency_safe: ConcurrencyClassifier | None = None,
    finalize_content: FinalizeContent | None = None,
    present_call: PresentCall | None = None,
    present_result: PresentResult | None = None,
) -> ToolDefinition: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    output_render: Render | None = None,
    timeout_ms: float | None = None,
    is_concurrency_safe: ConcurrencyClassifier | None = None,
    finalize_content: FinalizeContent | None = None,
    present_call: PresentCall | None = None,
    present_result: PresentResult | None = None,
) -> Callable[[AsyncToolFunction], ToolDefinition]: ...


def tool(
    fn: AsyncToolFunction | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    output_render: Render | None = None,
    timeout_ms: float | None = None,
    is_concurrency_safe: ConcurrencyClassifier | None = None,
    finalize_content: FinalizeContent | None = None,
    present_call: PresentCall | None = None,
    present_result: PresentResult | None = None,
) -> ToolDefinition | Callable[[AsyncToolFunction], ToolDefinition]:
    """Turn a typed function into a :class:`ToolDefinition` (``@tool`` or ``@tool(...)``).

    An ``async def`` body runs in the task that awaits ``execute``; a plain
    ``def`` body runs in a worker thread of the loop's default executor
    (``asyncio.to_thread``), as pydantic-ai and openai-agents run them.

    The name defaults to the function's ``__name__``, the description to the
    docstring's first paragraph. Each parameter (except ``run``, which
    receives the :class:`ToolRunContext`) becomes a property of the open
    parameter object: required unless it has a default, described by
    ``Annotated[T, "text"]`` or the docstring's ``Args:`` entry, with a
    lossless-JSON default recorded as the ``default`` annotation. The return
    annotation is the output schema; the default ``output_render`` is one text
    block (a string raw, anything else as pretty JSON). The other options are
    passed to :func:`define_tool` unchanged.

    Cancellation: a thread cannot be interrupted. If the task awaiting the
    call is cancelled, the registry aborts ``run.signal`` and waits for the
    thread to return (no orphaned work): a long plain body should take
    ``run: ToolRunContext`` and return early once ``run.signal.aborted``.

    Raised errors: ``TypeError`` for a generator or async generator function, a
    parameter not passable by keyword, a missing annotation, an unsupported
    or recursive type or overlapping union members; ``ValueError`` for a
    missing description or a docstring ``Args:`` entry that names no
    parameter; whatever :func:`define_tool` raises (name, timeout, callbacks).
    """

    def decorate(function: AsyncToolFunction) -> ToolDefinition:
        return _build(
            function,
            name=name,
            description=description,
            output_render=output_render,
            timeout_ms=timeout_ms,
            is_concurrency_safe=is_concurrency_safe,
            finalize_content=finalize_content,
            present_call=present_call,
            present_result=present_result,
        )

    return decorate if fn is None else decorate(fn)
