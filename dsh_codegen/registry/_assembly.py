"""Prompt assembly: the tools and sections a scope contributes to a system prompt.

``native`` contributes every visible tool's schema and no section. ``code``
contributes only the ``run_code`` transport plus the ``tools:code-only`` rule
(order 99) and the ``tools:sdk`` section (order 150); ``both`` contributes the
native schemas, ``run_code`` last, and the SDK (the code-only rule renders
empty). ``on_assemble`` listeners then rewrite the result as a waterfall.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from dsh_codegen.codegen import render_py_sdk, render_ts_sdk
from dsh_codegen.registry.code_runtime import runtime_sdk_notes
from dsh_codegen.registry._errors import RUN_CODE_NAME

if TYPE_CHECKING:
    from dsh_codegen.registry._definitions import CompiledTool
    from dsh_codegen.registry._registry import ToolRegistry, ToolScope

__all__ = ["PromptAssembly", "PromptSection"]

CODE_ONLY_RULE: Final = (
    "`run_code` is the only tool you can call directly \u2014 a tool call naming any other tool"
    " fails. Reach every tool the SDK declares below from inside the program."
)
_RENDERERS: Final[dict[str, Callable[..., str]]] = {
    "typescript": render_ts_sdk,
    "python": render_py_sdk,
}


@dataclass(frozen=True, slots=True)
class PromptSection:
    """One named prompt section; lower ``order`` renders first.

    ``id`` names it (``tools:sdk`` at order 150, ``tools:code-only`` at 99);
    ``text`` is what goes into the system prompt. ``registry.assemble()``
    returns them in :class:`PromptAssembly`'s ``sections``.
    """

    id: str
    order: int
    text: str


@dataclass(frozen=True, slots=True)
class PromptAssembly:
    """What the registry contributes to a prompt: tool schemas (wire order) and sections."""

    tools: tuple[dict[str, Any], ...]
    sections: tuple[PromptSection, ...] = ()


def sdk_renderer(registry: ToolRegistry, mode: str) -> Callable[..., str]:
    """The SDK renderer for the registry's runtime, checked before anything else is assembled.

    The text it renders carries the runtime's own ``sdk_notes`` (what its
    programs can and cannot do beyond the common contract).

    Raised errors (``ValueError``): no runtime (``dsh_codegen: mode "<mode>"
    requires a code runtime ...``); a runtime language without a renderer.
    ``TypeError`` for ``sdk_notes`` that are not a tuple of ``str``.
    """
    from dsh_codegen.registry._codemode_seam import KNOWN_LANGUAGES_TEXT, no_runtime_message

    runtime = registry.code_runtime
    if runtime is None:
        raise ValueError(no_runtime_message(mode))
    language = getattr(runtime, "language", None)
    renderer = _RENDERERS.get(language) if type(language) is str else None
    if renderer is None:
        raise ValueError(
            f'dsh_codegen: no SDK renderer registered for runtime language "{language}" (known: {KNOWN_LANGUAGES_TEXT})'
        )
    notes = runtime_sdk_notes(runtime)
    return lambda catalog, extra=(): renderer(catalog, notes=notes + extra)


#: How many tool names the concurrency note lists in each group before it counts the rest.
_NOTE_NAMES: Final = 20


def _names(names: list[str]) -> str:
    shown = ", ".join(f"`{name}`" for name in names[:_NOTE_NAMES])
    return shown + (f" and {len(names) - _NOTE_NAMES} more" if len(names) > _NOTE_NAMES else "")


def _run(names: list[str]) -> str:
    return "runs" if len(names) == 1 else "run"


def concurrency_note(tools: Sequence[CompiledTool], max_parallel: int) -> str:
    """The SDK bullet saying which of these tools' calls overlap under ``asyncio.gather`` and which run alone.

    From each tool's ``is_concurrency_safe``: ``True`` overlaps, a callable
    overlaps for the arguments it approves, anything else runs alone (the
    fail-closed default): so a model does not expect speed from gathering
    tools that run one at a time.
    """
    concurrent: list[str] = []
    sometimes: list[str] = []
    alone: list[str] = []
    for tool in tools:
        if tool.name == RUN_CODE_NAME:
            continue
        safe = tool.definition.is_concurrency_safe
        (concurrent if safe is True else alone if safe is None or safe is False else sometimes).append(tool.name)
    at_most = f" (at most {max_parallel} at a time)"
    if not concurrent and not sometimes:
        return (
            "Every tool here runs alone: calls gathered with `asyncio.gather` still run one after another,"
            " in submission order, so gather them for convenience, not speed."
        )
    if not alone and not sometimes:
        return f"Every tool here runs concurrently with the others under `asyncio.gather`{at_most}."
    parts = []
    if concurrent:
        parts.append(f"{_names(concurrent)} {_run(concurrent)} concurrently under `asyncio.gather`{at_most}")
    if sometimes:
        parts.append(f"{_names(sometimes)} {_run(sometimes)} concurrently for some arguments and alone for others")
    if alone:
        parts.append(
            f"{_names(alone)} {_run(alone)} alone: a gathered call to one waits until the calls before it"
            " have finished, and the calls after it wait for it"
        )
    return "Concurrency here: " + "; ".join(parts) + "."


def assemble_for(
    registry: ToolRegistry,
    mode: str,
    tools: list[CompiledTool],
    chain: tuple[ToolScope, ...],
    tool_order: Sequence[str] | None,
) -> PromptAssembly:
    """The registry's own assembly for one scope (before ``on_assemble`` listeners).

    Raised errors (``ValueError``): no runtime in a non-native mode; unknown
    runtime language; ``tool_order lists unregistered tool "<name>"``.
    """
    from dsh_codegen.registry._registry import _schema_of

    sections: tuple[PromptSection, ...] = ()
    if mode == "native":
        wire = tools
    else:
        renderer = sdk_renderer(registry, mode)
        catalog = registry.catalog(chain[0] if chain else None)
        overlap = concurrency_note(tools, registry.max_parallel_sub_calls)
        sections = (
            PromptSection("tools:code-only", 99, CODE_ONLY_RULE if mode == "code" else ""),
            PromptSection("tools:sdk", 150, renderer(catalog, (overlap,))),
        )
        wire = [t for t in tools if t.name == RUN_CODE_NAME] if mode == "code" else tools
    schemas = [_schema_of(tool) for tool in wire]
    if tool_order:
        by_name = {schema["name"]: schema for schema in schemas}
        leading = dict.fromkeys(tool_order)  # first mention wins; read once
        for name in leading:
            if name not in by_name:
                raise ValueError(f'tool_order lists unregistered tool "{name}"')
        schemas = [by_name[name] for name in leading] + [s for s in schemas if s["name"] not in leading]
    return PromptAssembly(tuple(schemas), sections)


def run_assemble_listeners(listeners: list[Callable[..., Any]], base: PromptAssembly) -> PromptAssembly:
    """Run ``fn(assembly, next)`` listeners as a waterfall; the first registered runs outermost.

    ``next()`` returns the downstream assembly (the registry's own at the end).
    Raised errors: ``TypeError`` when a listener returns something other than
    a ``PromptAssembly``; whatever a listener raises.
    """

    def run(index: int) -> PromptAssembly:
        if index == len(listeners):
            return base
        result = listeners[index](base, lambda: run(index + 1))
        if not isinstance(result, PromptAssembly):
            raise TypeError(f"on_assemble listener returned {type(result).__name__}, not a PromptAssembly")
        return result

    return run(0)
