"""The seam through which the registry reaches Code Mode (layer 5 plugs in here).

The registry owns the reserved ``run_code`` transport's *shape* (schema,
output declaration, rendering, ``present_call``) because it must reserve and
present it in every mode; running a program is delegated to a
:class:`CodeModeProvider`, installed with :func:`install_code_mode`. The
registry's calls that mount a code runtime install Code Mode's bridge when no
provider is installed (:func:`mount_code_mode`); importing a module installs
nothing. Without a runtime, ``run_code`` fails with the docs/texts.md
"requires a code runtime" message.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from dsh_codegen.json import render_json_pretty
from dsh_codegen.registry.code_runtime import CodeRuntime
from dsh_codegen.registry._definitions import CompiledTool, ToolDefinition, ToolOutput, compiled_for
from dsh_codegen.registry._errors import RUN_CODE_NAME

if TYPE_CHECKING:
    from dsh_codegen.registry._execution import ToolExecution, ToolRunContext
    from dsh_codegen.registry._results import ToolExecutionResult
    from dsh_codegen.registry._registry import ToolRegistry
    from dsh_codegen.registry.views import GenericCallView

__all__ = [
    "CodeModeProvider",
    "CodeRuntime",
    "install_code_mode",
    "mount_code_mode",
    "no_runtime_message",
    "run_code_tool",
]

#: Each runtime language with a ``run_code`` schema, and its name in the schema's descriptions.
_FLAVORS: Final = {"typescript": "TypeScript", "python": "Python"}
KNOWN_LANGUAGES: Final = tuple(_FLAVORS)
#: How the unknown-language errors list the known ones: ``"typescript", "python"``.
KNOWN_LANGUAGES_TEXT: Final = ", ".join(f'"{name}"' for name in KNOWN_LANGUAGES)
NO_OUTPUT: Final = "(run_code completed with no output)"
#: The default ``ToolRegistry(max_run_code_chars=)``: about 10,000 tokens, a few percent of a
#: 128k-200k-token context, so several large results still fit in one conversation (see docs/codemode.md).
DEFAULT_RUN_CODE_CHARS: Final = 40_000


def clip_text(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its head and tail around a marker line.

    The head and the tail keep ``limit // 2`` characters each (the first lines,
    where a dump's shape shows, and the last, where a program prints its
    summary, its result and its errors); the marker says how much was cut.
    """
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    marker = (
        f"\n[... {cut:,} of {len(text):,} characters cut here: run_code shows the first and the last"
        f" {half:,}; print less, or print a slice ...]\n"
    )
    return text[:half] + marker + text[len(text) - half :]


def clip_content(content: Sequence[Any], limit: int | None) -> list[Any] | None:
    """``content`` with each text block clipped to ``limit`` characters, or ``None`` when none is longer."""
    if limit is None or not any(
        block.get("type") == "text" and len(block.get("text", "")) > limit for block in content
    ):
        return None
    return [
        {**block, "text": clip_text(block["text"], limit)} if block.get("type") == "text" else block
        for block in content
    ]


@runtime_checkable
class CodeModeProvider(Protocol):
    """Runs ``run_code`` programs for a registry: Code Mode's ``CodeModeBridge``, unless another is installed."""

    async def run_code(self, registry: ToolRegistry, run: ToolRunContext, code: str, description: str) -> Any:
        """Run ``code`` and return the canonical ``{logs, result?}`` value.

        Cancellation: must abort in-flight sub-calls and drain them before returning.
        """
        ...


_provider: CodeModeProvider | None = None


#: What ``run_code`` says after ``install_code_mode(None)`` removed the provider.
NOT_INSTALLED: Final = (
    "dsh_codegen: Code Mode is not installed (install_code_mode(None) removed it);"
    " install_code_mode(CodeModeBridge()) installs it again"
)


def install_code_mode(provider: CodeModeProvider | None) -> None:
    """Install (or with ``None`` remove) the process-wide Code Mode provider.

    Mounting a code runtime (``ToolRegistry(code_runtime=...)``,
    ``set_code_runtime``) installs ``dsh_codegen.codemode.CodeModeBridge`` when
    no provider is installed, so this is needed only to install another
    provider (which later mounts keep) or to remove it.
    """
    global _provider
    _provider = provider


def mount_code_mode() -> None:
    """Install Code Mode's ``CodeModeBridge`` unless a provider is installed (the runtime-mounting calls)."""
    if _provider is None:
        # The registry cannot import the Code Mode layer above it; the call that mounts a runtime
        # loads it by name instead, the one such load (tests/packaging/test_layers.py names it).
        codemode = importlib.import_module("dsh_codegen.codemode")
        install_code_mode(codemode.CodeModeBridge())


def no_runtime_message(mode: str) -> str:
    """docs/texts.md, "run_code with no runtime mounted", with the Python names."""
    return (
        f'dsh_codegen: mode "{mode}" requires a code runtime \u2014 pass'
        " code_runtime=PythonSubprocessRuntime() (or another CodeRuntime)"
        ' or set mode="native"'
    )


def _flavor(language: str) -> str:
    flavor = _FLAVORS.get(language) if type(language) is str else None
    if flavor is None:
        raise ValueError(
            f'dsh_codegen: no run_code schema flavor registered for runtime language "{language}"'
            f" (known: {KNOWN_LANGUAGES_TEXT})"
        )
    return flavor


def render_run_code(_args: Any, value: Any) -> list[dict[str, str]]:
    """docs/texts.md, "run_code output": logs, then the rendered result (a string raw, anything else pretty JSON)."""
    parts: list[str] = []
    logs = "\n".join(value["logs"])
    if logs:
        parts.append(logs)
    if "result" in value:
        result = value["result"]
        rendered = result if type(result) is str else render_json_pretty(result)
        if rendered:
            parts.append(rendered)
    return [{"type": "text", "text": "\n".join(parts) if parts else NO_OUTPUT}]


def present_run_code(args: Any) -> GenericCallView:
    """The generic card for a ``run_code`` call (there is deliberately no ``present_result``)."""
    return {
        "card": "generic",
        "title": args["description"],
        "kind": "execute",
        "rawInput": args["code"],
    }


def run_code_tool(registry: ToolRegistry, language: str) -> CompiledTool:
    """Build the ``run_code`` transport for ``language``.

    Raised errors: ``ValueError`` ``dsh_codegen: no run_code schema flavor
    registered for runtime language ...`` for an unknown language.
    """
    flavor = _flavor(language)

    async def execute(args: Any, run: ToolRunContext) -> Any:
        description = args["description"]
        if not description.strip():
            raise ValueError("invalid description: expected a non-empty string")
        if registry.code_runtime is None:
            raise ValueError(no_runtime_message(registry.presentation(registry.chain_for(run.agent))))
        if _provider is None:
            raise RuntimeError(NOT_INSTALLED)
        return await _provider.run_code(registry, run, args["code"], description)

    def finalize(_execution: ToolExecution, result: ToolExecutionResult) -> list[Any] | None:
        # After post-execute (where spill_policy, when configured, saw and kept the whole text).
        return clip_content(result.content, registry.max_run_code_chars)

    definition = ToolDefinition(
        name=RUN_CODE_NAME,
        description=(
            f"Execute a {flavor} program that calls the tools declared in the SDK section."
            " Both `code` and `description` are required."
        ),
        parameters={
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": f"The program: the body of an async {flavor} function.",
                },
                "description": {
                    "type": "string",
                    "description": "Required: a short, human-readable summary of what the program does.",
                },
            },
            "required": ["code", "description"],
        },
        output=ToolOutput(
            {
                "type": "object",
                "properties": {
                    "logs": {"type": "array", "items": {"type": "string"}},
                    "result": {},
                },
                "required": ["logs"],
                "additionalProperties": False,
            },
            render_run_code,
        ),
        execute=execute,
        finalize_content=finalize,
        present_call=present_run_code,
        validates_arguments=True,
    )
    return compiled_for(definition)
