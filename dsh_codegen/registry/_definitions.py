"""Tool definitions: ``ToolOutput``, ``ToolDefinition``, ``define_tool`` and their compiled form.

A :class:`ToolDefinition` holds JSON schemas. ``define_tool`` builds one from
the schema DSL or from plain JSON Schema (whichever each schema is) and marks
it ``validates_arguments=True`` (the registry checks arguments before the
body); a definition built directly is *raw*: it owns its input validation, but
its output is still enforced by the registry.

Validators are compiled once per definition (at ``define_tool`` or at the
first registration) and reused by every call.
"""

from __future__ import annotations

import inspect
import logging
import math
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

from dsh_codegen.json import FrozenJsonObject, LosslessJsonError, snapshot_json
from dsh_codegen.registry._errors import RUN_CODE_NAME
from dsh_codegen.registry._results import ContentBlock, JsonValue, ToolExecutionResult
from dsh_codegen.schema import (
    CompiledValidator,
    JsonSchema,
    JsonSchemaError,
    JsonSchemaObject,
    ParameterSchemaSpec,
    Violation,
    ValueSchemaSpec,
    assert_object_json_schema,
    assert_supported_json_schema,
    compile_validator,
    parameter_schema_spec_to_json_schema,
    value_schema_spec_to_json_schema,
)

if TYPE_CHECKING:
    from dsh_codegen.registry._execution import ToolExecution, ToolRunContext
    from dsh_codegen.registry.views import ToolCallView, ToolResultView

__all__ = ["ToolDefinition", "ToolOutput", "define_tool"]

_log = logging.getLogger("dsh_codegen")

Render = Callable[[Any, Any], Sequence[ContentBlock]]
PresentationMeta = Callable[[Any, Any], JsonValue]
Execute = Callable[[Any, "ToolRunContext"], Awaitable[Any]]
FinalizeContent = Callable[["ToolExecution", ToolExecutionResult], Sequence[ContentBlock] | None]
#: ``is_concurrency_safe``: ``True`` (every call may overlap others), ``False`` (none may: the
#: default, like ``None``), or ``fn(args)`` deciding per call (only an exact ``True`` overlaps).
ConcurrencyClassifier = Callable[[Any], object] | bool
PresentCall = Callable[[Any], "ToolCallView | None"]
PresentResult = Callable[[Any, ToolExecutionResult], "ToolResultView | None"]

RESERVED_NAME_MESSAGE: Final = (
    'tool name "run_code" is reserved for the Code Mode presentation transport and cannot be registered or shadowed'
)


@dataclass(frozen=True, slots=True, eq=False)
class ToolOutput:
    """A tool's canonical output declaration.

    ``schema`` is the schema of the value the body returns: plain JSON Schema
    of the tool-schema dialect (a :data:`JsonSchemaObject`), or, given to
    ``define_tool``, a ``ValueSchemaSpec`` of the schema DSL (``define_tool``
    reads either, see there). Both are typed, so ``mypy`` rejects a misspelt
    keyword or an unknown type in a schema literal. ``render(args, value)``
    returns the model-facing content blocks; ``presentation_meta(args,
    value)`` optionally derives JSON metadata for top-level calls. Both
    projectors must be synchronous.
    """

    schema: ValueSchemaSpec | JsonSchemaObject
    render: Render
    presentation_meta: PresentationMeta | None = None


@dataclass(frozen=True, eq=False)
class ToolDefinition:
    """A registrable tool.

    ``parameters`` and ``output.schema`` are JSON schemas (the tool-schema
    dialect). ``execute(args, run)`` returns the canonical JSON value.
    ``validates_arguments`` is ``True`` for ``define_tool`` definitions
    (arguments are validated against ``parameters`` before the body); this is
    also the raw-schema entry: a definition built directly from a published JSON
    Schema sees whatever arguments arrive, unless it passes
    ``validates_arguments=True`` to have the registry validate them with the
    same compiled validator. ``relax_strict_nulls`` (with
    ``validates_arguments``): the ``null`` an OpenAI strict-mode model sends for
    an optional property whose schema does not admit ``null`` is dropped before
    validation, as ``ToolRegistry(relax_strict_nulls=True)`` does for every
    tool. Registration checks the rest (see ``ToolRegistry.register``).
    """

    name: str
    description: str
    parameters: Any
    output: ToolOutput | None
    execute: Execute
    finalize_content: FinalizeContent | None = None
    timeout_ms: float | None = None
    is_concurrency_safe: ConcurrencyClassifier | None = None
    present_call: PresentCall | None = None
    present_result: PresentResult | None = None
    validates_arguments: bool = False
    relax_strict_nulls: bool = False

    def call_view(self, arguments: object) -> ToolCallView | None:
        """``present_call(args)`` with soft validation: ``None`` for malformed arguments or a failing presenter."""
        view: ToolCallView | None = _present(self, "present_call", self.present_call, arguments)
        return view

    def result_view(self, arguments: object, result: ToolExecutionResult) -> ToolResultView | None:
        """``present_result(args, result)`` with soft validation (see :meth:`call_view`)."""
        view: ToolResultView | None = _present(self, "present_result", self.present_result, arguments, result)
        return view


_MALFORMED: Final = object()


def _present(
    definition: ToolDefinition, label: str, present: Callable[..., Any] | None, arguments: object, *rest: object
) -> Any:
    """``present(args, *rest)`` on the soft arguments; ``None`` when absent, malformed or raising (logged)."""
    if present is None:
        return None
    args = soft_arguments(definition, arguments)
    if args is _MALFORMED:
        return None
    try:
        return present(args, *rest)
    except Exception:
        _log.warning("%s of tool %r raised", label, definition.name, exc_info=True)
        return None


def soft_arguments(definition: ToolDefinition, arguments: object) -> Any:
    """The arguments a soft-validating callback sees, or ``_MALFORMED``.

    Raw definitions get ``arguments`` as given. ``define_tool`` definitions get
    a frozen snapshot, and ``_MALFORMED`` when it is lossy or invalid.
    """
    if not definition.validates_arguments:
        return arguments
    try:
        frozen = snapshot_json(arguments)
    except (LosslessJsonError, RecursionError, TypeError, ValueError):
        return _MALFORMED
    if not compiled_for(definition).arguments_valid(frozen):
        return _MALFORMED
    return frozen


# --- compiled form ----------------------------------------------------------------------


#: How many valid frozen argument objects a tool remembers (more than a pool runs at once).
_VALID_ARGUMENTS_KEPT: Final = 64


class CompiledTool:
    """Everything the pipeline needs from a definition, resolved once.

    Holds the compiled output validator and, for ``define_tool`` definitions,
    the compiled argument validator.
    """

    __slots__ = (
        "args_validator",
        "definition",
        "execute",
        "finalize_content",
        "name",
        "output_schema",
        "output_validator",
        "parameters",
        "presentation_meta",
        "relax_strict_nulls",
        "render",
        "valid_arguments",
        "__weakref__",
    )

    def __init__(self, definition: ToolDefinition) -> None:
        output = definition.output
        assert output is not None
        self.definition = definition
        self.name = definition.name
        self.parameters = definition.parameters
        self.output_schema = output.schema
        self.output_validator: CompiledValidator = compile_validator(output.schema)
        self.args_validator: CompiledValidator | None = (
            compile_validator(definition.parameters) if definition.validates_arguments else None
        )
        self.relax_strict_nulls = definition.relax_strict_nulls
        self.execute = definition.execute
        self.render = output.render
        self.presentation_meta = output.presentation_meta
        self.finalize_content = definition.finalize_content
        # id -> the frozen arguments arguments_valid found valid (the pipeline reads it).
        self.valid_arguments: dict[int, object] = {}

    def arguments_valid(self, arguments: object) -> bool:
        """Whether ``arguments`` pass the argument schema (always, for raw definitions).

        Arguments found valid that are already a frozen snapshot (a
        ``FrozenJsonObject`` never changes) are remembered by identity in
        :attr:`valid_arguments`, and the pipeline does not validate that same
        object again. So a call that ``registry.execution_mode`` classified
        (the loop helper and the Code Mode bridge classify calls, then execute
        the same inputs, several at a time) has its arguments validated once.
        """
        validator = self.args_validator
        if validator is None:
            return True
        valid = self.valid_arguments
        if valid.get(id(arguments)) is arguments:
            return True
        if not validator.is_valid(arguments):
            return False
        if type(arguments) is FrozenJsonObject:
            if len(valid) >= _VALID_ARGUMENTS_KEPT:
                valid.clear()  # a bound, not a cache policy: a forgotten object is validated again
            valid[id(arguments)] = arguments  # held: its id cannot be reused while it is here
        return True


_compiled: weakref.WeakKeyDictionary[ToolDefinition, CompiledTool] = weakref.WeakKeyDictionary()


def compiled_for(definition: ToolDefinition) -> CompiledTool:
    """The compiled form of a checked definition (compiled on first use, then cached)."""
    compiled = _compiled.get(definition)
    if compiled is None:
        compiled = _compiled[definition] = CompiledTool(definition)
    return compiled


# --- checks -----------------------------------------------------------------------------


def valid_timeout(timeout_ms: object) -> bool:
    """Whether ``timeout_ms`` is ``None`` or a positive finite ``int``/``float`` (never a ``bool``)."""
    if timeout_ms is None:
        return True
    if type(timeout_ms) is int:
        return timeout_ms > 0
    if type(timeout_ms) is float:
        return timeout_ms > 0 and math.isfinite(timeout_ms)
    return False


def _require_sync(owner: str, label: str, fn: object) -> None:
    if fn is None:
        return
    if not callable(fn):
        raise TypeError(f"{owner}: {label} must be callable")
    if inspect.iscoroutinefunction(fn):
        raise TypeError(f"{owner}: {label} must be synchronous (got a coroutine function)")


def check_callbacks(owner: str, definition: ToolDefinition) -> None:
    """Reject non-callables and coroutine functions where a synchronous callback is required."""
    if not callable(definition.execute):
        raise TypeError(f"{owner}: execute must be callable")
    output = definition.output
    assert output is not None
    if not callable(output.render):
        raise TypeError(f"{owner}: output.render must be callable")
    _require_sync(owner, "output.render", output.render)
    _require_sync(owner, "output.presentation_meta", output.presentation_meta)
    _require_sync(owner, "finalize_content", definition.finalize_content)
    if type(definition.is_concurrency_safe) is not bool:  # a constant needs no call
        _require_sync(owner, "is_concurrency_safe", definition.is_concurrency_safe)
    _require_sync(owner, "present_call", definition.present_call)
    _require_sync(owner, "present_result", definition.present_result)


def missing_output_message(name: str) -> str:
    return f'tool "{name}" must declare output {{ schema, render, presentation_meta? }}'


def check_for_registration(definition: object) -> CompiledTool:
    """Check a definition for ``register`` and return its compiled form.

    Raised errors: ``TypeError`` for a non-definition, a missing ``output`` or
    a bad callback; ``ValueError`` for a bad name, the reserved name or a bad
    ``timeout_ms``; ``JsonSchemaError`` for an unsupported output schema.
    """
    if not isinstance(definition, ToolDefinition):
        raise TypeError(f"register() expects a ToolDefinition, got {type(definition).__name__}")
    name = definition.name
    if type(name) is not str or not name:
        raise ValueError(f"tool name must be a non-empty string, got {name!r}")
    if name == RUN_CODE_NAME:
        raise ValueError(RESERVED_NAME_MESSAGE)
    if type(definition.description) is not str:
        raise TypeError(f'tool "{name}": description must be a string')
    if not isinstance(definition.output, ToolOutput):
        raise TypeError(missing_output_message(name))
    if not valid_timeout(definition.timeout_ms):
        raise ValueError(f'tool "{name}" timeout_ms must be a positive finite number')
    check_callbacks(f'tool "{name}"', definition)
    compiled = _compiled.get(definition)
    if compiled is None:
        assert_supported_json_schema(definition.output.schema)
        compiled = compiled_for(definition)
    return compiled


#: Keywords that mark a mapping as JSON Schema rather than a ParameterSchemaSpec: in the DSL every
#: value is a property's spec (a mapping), never a string, a list or a boolean.
_SCHEMA_MARKERS: Final = (
    "type",
    "$schema",
    "$ref",
    "$id",
    "required",
    "additionalProperties",
    "anyOf",
    "oneOf",
    "allOf",
)
#: JSON Schema keywords whose value is a mapping: a parameter spec made only of these may be a JSON
#: Schema that forgot its ``"type": "object"``.
_MAPPING_KEYWORDS: Final = frozenset(("properties", "$defs", "definitions", "propertyNames", "dependentRequired"))


def _is_raw_json_schema(parameters: object) -> bool:
    """Whether ``parameters`` is plainly JSON Schema: a DSL spec maps every name to a spec mapping."""
    if type(parameters) is not dict:
        return False
    return any(type(parameters.get(keyword)) in (str, list, bool) for keyword in _SCHEMA_MARKERS)


def _note(text: str) -> Violation:
    return Violation((), "spec", text)


def _parameters_schema(name: str, parameters: object) -> JsonSchema:
    """``define_tool``'s parameter schema: JSON Schema when a keyword marks it so, else the DSL.

    The two cannot be confused once a value is a string, a list or a boolean
    (``"type": "object"``, a ``required`` list): a DSL spec has only
    mappings. A failure says which reading was used and how to ask for the
    other.
    """
    if _is_raw_json_schema(parameters):
        try:
            assert_object_json_schema(parameters)
            checked: JsonSchema = snapshot_json(parameters, freeze=False)
        except JsonSchemaError as error:
            raise JsonSchemaError(
                [
                    *error.violations,
                    _note(
                        f"define_tool({name}): parameters was read as JSON Schema (a keyword such as type or required"
                        " has a string, list or boolean value); a ParameterSchemaSpec maps each parameter name to its"
                        ' spec instead, e.g. {"path": {"type": "string", "required": True}}'
                    ),
                ]
            ) from None
        return checked
    try:
        return parameter_schema_spec_to_json_schema(cast(ParameterSchemaSpec, parameters))
    except JsonSchemaError as error:
        if type(parameters) is dict and _MAPPING_KEYWORDS.intersection(parameters):
            raise JsonSchemaError(
                [
                    *error.violations,
                    _note(
                        f"define_tool({name}): parameters was read as a ParameterSchemaSpec (parameter name -> spec),"
                        ' as no value marks it as JSON Schema; to pass a JSON Schema, declare "type": "object" at its root'
                    ),
                ]
            ) from None
        raise


def _output_schema(name: str, spec: object) -> JsonSchema:
    """``define_tool``'s output schema: the DSL when ``spec`` compiles as a ``ValueSchemaSpec``, else JSON Schema.

    Where both readings accept a spec they mean the same (the DSL compiles to
    JSON Schema, and its own marks, ``required: True`` and ``type: "json"``,
    are not JSON Schema); so the DSL is tried first, then JSON Schema, and a
    spec that is neither reports both readings' violations.
    """
    try:
        return value_schema_spec_to_json_schema(cast(ValueSchemaSpec, spec))
    except JsonSchemaError as dsl_error:
        try:
            assert_supported_json_schema(spec)
            checked: JsonSchema = snapshot_json(spec, freeze=False)
        except JsonSchemaError as schema_error:
            raise JsonSchemaError(
                [
                    _note(
                        f"define_tool({name}): output.schema is neither a ValueSchemaSpec (the schema DSL; paths from"
                        " spec) nor a supported JSON Schema (paths from schema)"
                    ),
                    *dsl_error.violations,
                    *schema_error.violations,
                ]
            ) from None
        return checked


def define_tool(
    *,
    name: str,
    description: str,
    parameters: ParameterSchemaSpec | JsonSchemaObject,
    output: ToolOutput,
    execute: Execute,
    finalize_content: FinalizeContent | None = None,
    timeout_ms: float | None = None,
    is_concurrency_safe: ConcurrencyClassifier | None = None,
    present_call: PresentCall | None = None,
    present_result: PresentResult | None = None,
) -> ToolDefinition:
    """Build a validated tool from the schema DSL or from plain JSON Schema.

    ``parameters`` is a ``ParameterSchemaSpec`` (parameter name -> spec, the
    implicit object root, which stays open: an undeclared key reaches the
    body, which receives the whole arguments object) or an object-rooted JSON
    Schema, read as such when a keyword marks it (``"type": "object"``, a
    ``required`` list; its root is open or closed as it says).
    ``output.schema`` is a ``ValueSchemaSpec``, or a JSON Schema when it does
    not compile as one (where both readings accept a spec they mean the
    same). Both are compiled to JSON schemas and validators now. The registry
    validates call arguments before the body and reports bad ones as
    ``INVALID_ARGS`` results.

    Raised errors: ``JsonSchemaError`` for a bad spec or schema (it says
    which reading was used and how to pass the other form); ``TypeError`` for
    a missing ``output`` or a bad callback; ``ValueError`` for a bad name, the
    reserved name or ``define_tool(<name>): timeout_ms must be a positive
    finite number``.
    """
    if type(name) is not str or not name:
        raise ValueError(f"define_tool(): name must be a non-empty string, got {name!r}")
    if name == RUN_CODE_NAME:
        raise ValueError(RESERVED_NAME_MESSAGE)
    if type(description) is not str:
        raise TypeError(f"define_tool({name}): description must be a string")
    if not isinstance(output, ToolOutput):
        raise TypeError(missing_output_message(name))
    if not valid_timeout(timeout_ms):
        raise ValueError(f"define_tool({name}): timeout_ms must be a positive finite number")
    parameters_schema = _parameters_schema(name, parameters)
    output_schema = _output_schema(name, output.schema)
    definition = ToolDefinition(
        name=name,
        description=description,
        parameters=parameters_schema,
        output=ToolOutput(cast(JsonSchemaObject, output_schema), output.render, output.presentation_meta),
        execute=execute,
        finalize_content=finalize_content,
        timeout_ms=timeout_ms,
        is_concurrency_safe=is_concurrency_safe,
        present_call=present_call,
        present_result=present_result,
        validates_arguments=True,
    )
    check_callbacks(f"define_tool({name})", definition)
    compiled_for(definition)
    return definition
