"""The ``@tool`` decorator: a typed function becomes a registrable ``ToolDefinition``.

The parameters come from the signature (types) and the docstring (the
description's first paragraph and a Google-style ``Args:`` section); the
output schema comes from the return annotation. Both schemas are written in
the tool-schema dialect by :mod:`dsh_codegen.registry._typed_schema`; the
result is an ordinary :class:`ToolDefinition` with ``validates_arguments``,
checked as ``define_tool`` checks its input, so the registry validates
arguments before the body and the output after it, as for any definition.

What ``@tool`` returns is a :class:`TypedTool`: a ``ToolDefinition`` that is
also still the function (calling it calls the function as written, for unit
tests; ``__wrapped__`` is the function).

Guaranteed: the parameter root is closed; the body is called as
``await fn(**declared, run=run)`` with the declared names present in the
(validated, frozen) arguments, converted where the annotation promises more
than JSON (tuples, enum members, dataclass and model instances); absent
optional parameters take their Python defaults; the schemas never apply
defaults. An annotation the dialect cannot express is a ``TypeError`` at
decoration time naming the function, the parameter, the place inside the
annotation and the type.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Final, Generic, ParamSpec, Protocol, TypeAlias, TypeVar, cast, overload

from dsh_codegen.json import is_json_value, render_json_pretty, snapshot_json
from dsh_codegen.registry._definitions import (
    RESERVED_NAME_MESSAGE,
    ConcurrencyClassifier,
    FinalizeContent,
    PresentCall,
    PresentResult,
    Render,
    ToolDefinition,
    ToolOutput,
    check_callbacks,
    compiled_for,
    valid_timeout,
)
from dsh_codegen.registry._execution import ToolRunContext
from dsh_codegen.registry._results import ContentBlock
from dsh_codegen.registry._typed_schema import Converter, SchemaBuilder, encode_output, type_text
from dsh_codegen.schema import JsonSchemaObject, assert_object_json_schema

__all__ = ["TypedTool", "tool"]

#: A typed tool body: an ``async def`` function, or a plain one (run in a worker thread).
AsyncToolFunction: TypeAlias = Callable[..., Coroutine[Any, Any, Any]] | Callable[..., Any]

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


@dataclass(frozen=True, eq=False)
class TypedTool(ToolDefinition, Generic[P, R_co]):
    """What ``@tool`` returns: a :class:`ToolDefinition` that is still the decorated function.

    Register it like any definition (``registry.register(read_file)``): calls
    from a model then run the whole pipeline, with validated, frozen
    arguments. Call it like the function (``await read_file(path="a.txt")``)
    to run the function itself, as written: no validation, no registry, no
    output check, so a unit test exercises the body directly, as with
    pydantic-ai's and FastMCP's decorators. ``__wrapped__`` is the function
    (``inspect.signature`` and ``inspect.unwrap`` follow it); ``function``
    holds the same object.
    """

    function: Callable[P, R_co] = field(kw_only=True)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        return self.function(*args, **kwargs)

    @property
    def __wrapped__(self) -> Callable[P, R_co]:
        return self.function


class _ToolDecorator(Protocol):
    """What ``@tool(...)`` with options returns: the decorator proper."""

    def __call__(self, fn: Callable[P, R], /) -> TypedTool[P, R]: ...


_RUN: Final = "run"
_SECTION_NAMES: Final = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "returns",
        "return",
        "yields",
        "raises",
        "example",
        "examples",
        "note",
        "notes",
        "attributes",
        "see also",
        "warning",
        "warnings",
        "todo",
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
    """What the signature yields: the parameter schema, the body's names and how to call it."""

    __slots__ = ("converters", "names", "schema", "wants_run")

    def __init__(self) -> None:
        self.schema: dict[str, Any] = {}
        self.names: list[str] = []
        self.converters: list[tuple[str, Converter]] = []
        self.wants_run = False


def _signature_parameters(owner: str, fn: AsyncToolFunction, hints: dict[str, Any]) -> list[inspect.Parameter]:
    """The parameters meant for the model (``run`` checked and left out)."""
    out: list[inspect.Parameter] = []
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
                    f"or leave it unannotated (got {type_text(hint)})"
                )
        elif param.name not in hints:
            raise TypeError(f'{owner}: parameter "{param.name}" has no type annotation (use Any for any JSON)')
        out.append(param)
    return out


def _read_parameters(owner: str, fn: AsyncToolFunction, hints: dict[str, Any], doc: _Docstring) -> _Parameters:
    params = _signature_parameters(owner, fn, hints)
    unknown = [name for name in doc.params if name not in {p.name for p in params}]
    if unknown:
        raise ValueError(f"{owner}: docstring Args: documents {', '.join(unknown)}, not parameters of the function")
    recursive: frozenset[int] = frozenset()
    while True:  # a second pass when the first found classes that contain themselves
        builder = SchemaBuilder(owner, recursive)
        out = _map_parameters(builder, params, hints, doc)
        if not builder.found - recursive:
            break
        recursive |= builder.found
    builder.check_defaults()
    builder.finish()
    return out


def _map_parameters(
    builder: SchemaBuilder, params: list[inspect.Parameter], hints: dict[str, Any], doc: _Docstring
) -> _Parameters:
    out = _Parameters()
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in params:
        if param.name == _RUN:
            out.wants_run = True
            continue
        where = f'parameter "{param.name}"'
        # The docstring entry is passed in as a default: an Annotated description,
        # more specific, replaces it.
        documented = {"description": doc.params[param.name]} if param.name in doc.params else {}
        schema, converter = builder.map(hints[param.name], where, param.name, documented)
        if param.default is param.empty:
            required.append(param.name)
        elif is_json_value(param.default):
            schema["default"] = snapshot_json(param.default, freeze=False)
            builder.defaults.append((schema, param.default, where, None, hints[param.name]))
        properties[param.name] = schema
        if converter is not None:
            out.converters.append((param.name, converter))
        out.names.append(param.name)
    out.schema = {"type": "object", "properties": properties}
    if required:
        out.schema["required"] = required
    out.schema["additionalProperties"] = False
    if builder.defs:
        out.schema["$defs"] = builder.defs
    return out


def _map_output(owner: str, annotation: object, returns: str) -> tuple[dict[str, Any], bool]:
    """The output schema and whether returned values need encoding (enums, dataclasses, models)."""
    recursive: frozenset[int] = frozenset()
    while True:
        builder = SchemaBuilder(owner, recursive)
        schema, _ = builder.map(annotation, "return annotation", "return", {})
        if not builder.found - recursive:
            break
        recursive |= builder.found
    if returns and "description" not in schema:
        schema["description"] = returns
    if builder.defs:
        schema["$defs"] = builder.defs
    builder.check_defaults()
    return schema, builder.encodes


def _check_options(owner: str, name: str, timeout_ms: float | None) -> None:
    """``define_tool``'s checks of the name and timeout, with its texts."""
    if type(name) is not str or not name:
        raise ValueError(f"define_tool(): name must be a non-empty string, got {name!r}")
    if name == "run_code":
        raise ValueError(RESERVED_NAME_MESSAGE)
    if not valid_timeout(timeout_ms):
        raise ValueError(f"define_tool({name}): timeout_ms must be a positive finite number")


def _build(
    fn: Callable[P, R],
    *,
    name: str | None,
    description: str | None,
    output_render: Render | None,
    timeout_ms: float | None,
    is_concurrency_safe: ConcurrencyClassifier | None,
    finalize_content: FinalizeContent | None,
    present_call: PresentCall | None,
    present_result: PresentResult | None,
) -> TypedTool[P, R]:
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
        raise TypeError(
            f"{owner}: missing return annotation (the output schema comes from it; use -> Any for any JSON)"
        )
    output_schema, encodes = _map_output(owner, hints["return"], doc.returns)
    tool_description = description if description is not None else doc.summary
    if not tool_description:
        raise ValueError(f"{owner}: no description: pass description= or give the function a docstring")
    tool_name = name if name is not None else fn.__name__
    _check_options(owner, tool_name, timeout_ms)
    declared = tuple(params.names)
    converters = tuple(params.converters)
    wants_run = params.wants_run
    # The body is called with the keyword arguments the schema declared, which the
    # signature's static types cannot follow (hence the plain callable type here).
    body: AsyncToolFunction = fn

    async def execute(args: Any, run: ToolRunContext) -> Any:
        # args is the registry's validated, frozen snapshot (an object): only the
        # declared names are passed; Python applies the defaults of absent ones.
        kwargs = {key: args[key] for key in declared if key in args}
        for key, converter in converters:
            if key in kwargs:
                kwargs[key] = converter(kwargs[key])
        if wants_run:
            kwargs[_RUN] = run
        if is_async:
            value = await body(**kwargs)
        else:
            # A plain function runs in the default executor (with the caller's context
            # variables); the call waits for the thread even when cancelled, never abandons it.
            value = await run.to_thread(body, **kwargs)
        return encode_output(value) if encodes else value

    assert_object_json_schema(params.schema)
    definition: TypedTool[P, R] = TypedTool(
        name=tool_name,
        description=tool_description,
        parameters=params.schema,
        output=ToolOutput(
            cast(JsonSchemaObject, output_schema), output_render if output_render is not None else _render_default
        ),
        execute=execute,
        finalize_content=finalize_content,
        timeout_ms=timeout_ms,
        is_concurrency_safe=is_concurrency_safe,
        present_call=present_call,
        present_result=present_result,
        validates_arguments=True,
        function=fn,
    )
    check_callbacks(f"define_tool({tool_name})", definition)
    compiled_for(definition)  # compiles both validators now: a bad schema fails at decoration
    return definition


@overload
def tool(
    fn: Callable[P, R],
    *,
    name: str | None = None,
    description: str | None = None,
    output_render: Render | None = None,
    timeout_ms: float | None = None,
    is_concurrency_safe: ConcurrencyClassifier | None = None,
    finalize_content: FinalizeContent | None = None,
    present_call: PresentCall | None = None,
    present_result: PresentResult | None = None,
) -> TypedTool[P, R]: ...


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
) -> _ToolDecorator: ...


def tool(
    fn: Callable[P, R] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    output_render: Render | None = None,
    timeout_ms: float | None = None,
    is_concurrency_safe: ConcurrencyClassifier | None = None,
    finalize_content: FinalizeContent | None = None,
    present_call: PresentCall | None = None,
    present_result: PresentResult | None = None,
) -> TypedTool[P, R] | _ToolDecorator:
    """Turn a typed function into a :class:`TypedTool`, a registrable definition (``@tool`` or ``@tool(...)``).

    The decorated name stays callable as the function (``await
    read_file(path="a.txt")`` runs the body directly, for unit tests) and
    ``read_file.__wrapped__`` is the function; ``registry.register(read_file)``
    makes it a tool whose calls run the whole pipeline.

    An ``async def`` body runs in the task that awaits ``execute``; a plain
    ``def`` body runs in a worker thread of the loop's default executor
    (``run.to_thread``, ``asyncio.to_thread`` that waits for its thread), as
    pydantic-ai and openai-agents run them.

    The name defaults to the function's ``__name__``, the description to the
    docstring's first paragraph. Each parameter (except ``run``, which
    receives the :class:`ToolRunContext`) becomes a property of the closed
    parameter object: required unless it has a default, described by
    ``Annotated[T, "text"]`` or the docstring's ``Args:`` entry, with a
    lossless-JSON default recorded as the ``default`` annotation. The return
    annotation is the output schema; the default ``output_render`` is one text
    block (a string raw, anything else as pretty JSON). The other options are
    passed to :func:`define_tool` unchanged.

    Cancellation: an ``async def`` body is cancelled when its signal aborts
    (a timeout, the caller's abort, a cancellation of the awaiting task): its
    pending ``await`` raises ``CancelledError``. A thread cannot be
    interrupted: for a plain ``def`` body the registry aborts ``run.signal``
    and waits for the thread to return (no orphaned work,
    ``ToolRunContext.to_thread``), so a long plain body should take ``run:
    ToolRunContext`` and return early once ``run.signal.aborted``.

    Raised errors: ``TypeError`` for a generator or async generator function, a
    parameter not passable by keyword, a missing annotation, an unsupported
    type, a constraint that does not fit or a default that does not match
    (docs/typed-tools.md, "Type mapping"); ``ValueError`` for a
    missing description or a docstring ``Args:`` entry that names no
    parameter; whatever :func:`define_tool` raises (name, timeout, callbacks).
    """

    def decorate(function: Callable[P, R]) -> TypedTool[P, R]:
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

    # decorate's P and R are bound per call when it is returned: the protocol says so to mypy.
    return cast(_ToolDecorator, decorate) if fn is None else decorate(fn)
