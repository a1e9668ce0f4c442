"""The one normalization point: every value, rendering and authored result becomes a frozen result here.

A body's return value, a wrapper's authored success and a post-execute
replacement value all go through :func:`normalize_value` (snapshot,
validate, freeze, render, ``presentation_meta``); a wrapper's authored
failure goes through :func:`normalize_authored`. Every output violation
message is made here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from dsh_codegen.json import LosslessJsonError, snapshot_content, snapshot_json
from dsh_codegen.registry._errors import ToolNotFoundError, ToolOutputError, error_message
from dsh_codegen.registry._materialize import (
    RESULT_NOT_LOSSLESS,
    ContentShapeError,
    check_content,
    snapshot_contexts,
)
from dsh_codegen.registry._results import (
    UNSET,
    ToolError,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    failure_from_exception,
)
from dsh_codegen.registry.pipeline._call import CallEntry, not_found, plain_failure

if TYPE_CHECKING:
    from dsh_codegen.registry._definitions import CompiledTool

__all__ = ["normalize_authored", "normalize_value"]

_NOT_BLOCKS: Final = "output.render must return a list of content blocks"


def normalize_value(
    call: CallEntry,
    compiled: CompiledTool,
    value: object,
    contexts: tuple[Any, ...],
    concludes_turn: bool,
) -> ToolExecutionResult:
    """Snapshot, validate, freeze and render a canonical value (and its ``meta``) into a success.

    Violations (any of them makes an ``INVALID_TOOL_OUTPUT`` failure with no
    value): ``value is not lossless JSON``, ``value snapshot failed: <msg>``,
    the output schema's violations rooted at ``value``, ``output.render
    failed: <msg>``, ``output.render returned non-lossless JSON``,
    ``output.render must return a list of content blocks``,
    ``output.presentation_meta failed: <msg>``,
    ``output.presentation_meta returned non-lossless JSON``. ``meta`` is
    computed only for top-level calls of tools declaring ``presentation_meta``.
    """
    try:
        frozen = snapshot_json(value)
    except LosslessJsonError:
        return _output_failure(compiled, ["value is not lossless JSON"], contexts)
    except Exception as exc:
        return _output_failure(compiled, [f"value snapshot failed: {error_message(exc)}"], contexts)
    if not compiled.output_validator.is_valid(frozen):
        return _invalid_output(compiled, frozen, contexts)
    args = call.execution.arguments
    problem: str | None = None
    content: Any = None
    try:
        rendered = compiled.render(args, frozen)
    except Exception as exc:
        problem = f"output.render failed: {error_message(exc)}"
    else:
        try:
            content = snapshot_content(rendered)
        except Exception as exc:
            problem = _content_problem(exc)
        else:
            if content is None:
                problem = _NOT_BLOCKS
    project = compiled.presentation_meta
    if project is not None and call.execution.parent is None:
        meta, problems = _project_meta(project, args, frozen, problem)
        if problems:
            return _output_failure(compiled, problems, contexts)
        return ToolSuccess(frozen, content, meta, contexts, concludes_turn)
    if problem is not None:
        return _output_failure(compiled, [problem], contexts)
    return ToolSuccess(frozen, content, UNSET, contexts, concludes_turn)


def _invalid_output(compiled: CompiledTool, frozen: object, contexts: tuple[Any, ...]) -> ToolFailure:
    violations = [str(v) for v in compiled.output_validator.violations(frozen, "value")]
    return _output_failure(compiled, violations, contexts)


def _content_problem(exc: Exception) -> str:
    """The violation for a rendering whose snapshot or content check raised ``exc``."""
    if isinstance(exc, LosslessJsonError):
        return "output.render returned non-lossless JSON"
    if isinstance(exc, ContentShapeError):
        return _NOT_BLOCKS
    return f"output.render failed: {error_message(exc)}"


def _project_meta(project: Any, args: object, frozen: object, render_problem: str | None) -> tuple[Any, list[str]]:
    """``presentation_meta(args, value)``, snapshotted, and every problem so far (rendering's first)."""
    problems = [] if render_problem is None else [render_problem]
    meta: Any = UNSET
    try:
        projected = project(args, frozen)
    except Exception as exc:
        problems.append(f"output.presentation_meta failed: {error_message(exc)}")
    else:
        try:
            meta = snapshot_json(projected)
        except LosslessJsonError:
            problems.append("output.presentation_meta returned non-lossless JSON")
        except Exception as exc:
            problems.append(f"output.presentation_meta failed: {error_message(exc)}")
    return meta, problems


def _output_failure(compiled: CompiledTool, violations: list[str], contexts: tuple[Any, ...]) -> ToolFailure:
    return failure_from_exception(ToolOutputError(compiled.name, violations), additional_contexts=contexts)


def normalize_authored(call: CallEntry, returned: object) -> ToolExecutionResult:
    """Normalize what a wrapper returned.

    A result some ``next()`` produced is kept as is. A wrapper-authored
    success is re-validated and re-rendered from its value under the tool the
    scope resolves now (``unknown tool`` if it is gone); its contexts and
    ``concludes_turn`` are kept. A wrapper-authored failure keeps its message,
    info, content, meta and contexts (``tool result must be losslessly
    JSON-serializable`` if they are lossy). Anything else raises ``TypeError``
    (treated as a raising wrapper).
    """
    produced = call.settlement.produced
    if produced is not None:
        for item in produced:
            if item is returned:
                return item
    if type(returned) is ToolSuccess:
        try:
            contexts = snapshot_contexts(returned.additional_contexts, "tools/execute")
        except (ValueError, TypeError, RecursionError):
            return plain_failure(RESULT_NOT_LOSSLESS)
        name = call.execution.name
        compiled = call.registry.resolve(name, call.chain)
        if compiled is None:
            return not_found(ToolNotFoundError.unknown(name), contexts)
        return normalize_value(call, compiled, returned.value, contexts, returned.concludes_turn is True)
    if type(returned) is ToolFailure:
        return _materialize_failure(returned)
    raise TypeError(f"tools/execute wrapper returned {type(returned).__name__}; expected a ToolSuccess or ToolFailure")


def _materialize_failure(failure: ToolFailure) -> ToolFailure:
    error = failure.error
    if type(error) is not ToolError or type(error.message) is not str:
        return plain_failure(RESULT_NOT_LOSSLESS)
    try:
        content = check_content(snapshot_json(failure.content))
        meta = failure.meta if failure.meta is UNSET else snapshot_json(failure.meta)
        contexts = snapshot_contexts(failure.additional_contexts, "tools/execute")
    except (ValueError, TypeError, RecursionError):
        return plain_failure(RESULT_NOT_LOSSLESS)
    info = error.info
    if info is not None and (
        type(info) is not ToolErrorInfo or type(info.name) is not str or type(info.code) is not str
    ):
        return plain_failure(RESULT_NOT_LOSSLESS)
    if content is failure.content and meta is failure.meta and contexts is failure.additional_contexts:
        return failure
    return ToolFailure(error, content, meta, contexts)
