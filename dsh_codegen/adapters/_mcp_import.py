"""``import_mcp_tools``: the tools of a live MCP ``ClientSession`` as registry tools.

The ``mcp`` package (extra ``dsh_codegen[mcp]``) is imported lazily: this
module loads without it, and only a call that needs it fails when it is absent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dsh_codegen.adapters._formats import ToolNote, from_mcp_tools
from dsh_codegen.adapters._schema_tools import render_value_as_text, tool_from_schema
from dsh_codegen.registry import (
    Disposer,
    HarnessError,
    ToolExecution,
    ToolExecutionResult,
    ToolExecutionToken,
    ToolRegistry,
    ToolRunContext,
    ToolScope,
    ToolSuccess,
)
from dsh_codegen.schema import JsonSchemaError

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

__all__ = ["McpImport", "McpToolError", "import_mcp_tools"]

MCP_TOOL_ERROR = "MCP_TOOL_ERROR"
MCP_CONNECTION_ERROR = "MCP_CONNECTION_ERROR"


class McpToolError(HarnessError):
    """Raised (inside an imported tool's body) when the MCP server reports a failure.

    ``code`` is ``MCP_TOOL_ERROR`` for a result with ``isError: true`` (the
    message is its text content) and ``MCP_CONNECTION_ERROR`` when the request
    itself failed (the server exited, the connection closed, a JSON-RPC error).
    """


@dataclass(eq=False)
class McpImport:
    """What :func:`import_mcp_tools` registered.

    ``names`` are the registered names (with the prefix), in the server's
    order; ``notes`` the schema-lowering notes; ``skipped`` the tools left
    out with ``on_unsupported="skip"`` (name -> the ``JsonSchemaError``).
    Calling it (or :meth:`dispose`) unregisters every imported tool.
    """

    names: tuple[str, ...]
    notes: tuple[ToolNote, ...]
    skipped: Mapping[str, JsonSchemaError]
    _disposers: list[Disposer] = field(default_factory=list, repr=False)

    def dispose(self) -> None:
        for disposer in reversed(self._disposers):
            disposer()

    def __call__(self) -> None:
        self.dispose()


async def list_all_tools(session: ClientSession) -> list[Tool]:
    from mcp.types import PaginatedRequestParams

    tools: list[Tool] = []
    result = await session.list_tools()
    tools.extend(result.tools)
    while result.next_cursor is not None:
        result = await session.list_tools(params=PaginatedRequestParams(cursor=result.next_cursor))
        tools.extend(result.tools)
    return tools


def _text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")  # type: ignore[union-attr]


class _Attachments:
    """The non-text blocks of MCP results, carried from a call's body to its ``finalize_content``.

    ``render`` sees only the value, so it cannot see the server's image, audio
    or resource blocks; the body keeps them here under the call's token and
    the tool's ``finalize_content`` (run exactly once per call, after
    post-execute) appends them to the final content of a success.
    """

    def __init__(self) -> None:
        self._pending: dict[ToolExecutionToken, list[dict[str, Any]]] = {}

    def keep(self, token: ToolExecutionToken, result: CallToolResult) -> None:
        blocks = [
            block.model_dump(by_alias=True, exclude_none=True, mode="json")
            for block in result.content
            if getattr(block, "type", None) != "text"
        ]
        if blocks:
            self._pending[token] = blocks

    def finalize(self, execution: ToolExecution, result: ToolExecutionResult) -> list[Mapping[str, Any]] | None:
        blocks = self._pending.pop(execution.token, None)
        if blocks is None or not isinstance(result, ToolSuccess):
            return None
        # An image-only answer renders an empty text block first: leave it out.
        kept = [block for block in result.content if not (block.get("type") == "text" and block.get("text") == "")]
        return [*kept, *blocks]


def _body(
    session: ClientSession, remote: str, structured: bool, attachments: _Attachments
) -> Callable[[Any, ToolRunContext], Any]:
    async def execute(args: Any, run: ToolRunContext) -> Any:
        from mcp import MCPError

        signal = run.signal
        signal.throw_if_aborted()
        call = asyncio.ensure_future(session.call_tool(remote, _plain(args)))
        remove = signal.add_listener(lambda _signal: call.cancel())
        try:
            result = await call
        except asyncio.CancelledError:
            # Aborted by the signal: the SDK sent notifications/cancelled for the request.
            signal.throw_if_aborted()
            raise
        except MCPError as error:
            raise McpToolError(f'MCP request for tool "{remote}" failed: {error}', MCP_CONNECTION_ERROR) from None
        except (OSError, EOFError, RuntimeError) as error:
            raise McpToolError(f'MCP request for tool "{remote}" failed: {error}', MCP_CONNECTION_ERROR) from None
        finally:
            remove()
        if result.is_error:
            # Servers that render failures as CONTRACT.md does (serve_mcp) already say "Error: ";
            # the registry adds it again to the failure's content.
            text = _text_of(result).removeprefix("Error: ")
            raise McpToolError(text or f'MCP tool "{remote}" reported an error', MCP_TOOL_ERROR)
        attachments.keep(run.token, result)
        if structured:
            return result.structured_content
        return _text_of(result)

    return execute


def _plain(value: Any) -> Any:
    """Frozen arguments as plain ``dict``/``list`` (the SDK serialises them with pydantic)."""
    from dsh_codegen.json import snapshot_json

    return snapshot_json(value, freeze=False)


def _read_only(tool: Tool) -> bool:
    annotations = tool.annotations
    return annotations is not None and annotations.read_only_hint is True


async def import_mcp_tools(
    registry_or_scope: ToolRegistry | ToolScope,
    session: ClientSession,
    *,
    prefix: str = "",
    concurrency_from_annotations: bool = False,
    on_unsupported: Literal["raise", "skip"] = "raise",
    timeout_ms: float | None = None,
) -> McpImport:
    """Register every tool of an initialised MCP ``session`` in ``registry_or_scope``.

    Each tool keeps its published input schema (foreign forms lowered, with
    notes) and the registry validates arguments against it before the
    request. A tool publishing an ``outputSchema`` returns its structured
    content (validated against that schema); any other returns its text
    content (the text blocks joined by newlines) as a string. The result's
    other blocks (image, audio, resource, resource_link, as MCP spells them)
    follow the rendered text in the final content of a success. A result with
    ``isError: true`` becomes a failure (``McpToolError``, code
    ``MCP_TOOL_ERROR``, the server's text as message); a request that fails
    (the server exited or closed the connection) becomes a failure with code
    ``MCP_CONNECTION_ERROR``. With ``concurrency_from_annotations=True`` a tool
    annotated ``readOnlyHint: true`` is ``is_concurrency_safe``; otherwise the
    annotations are ignored (they are hints from the server, not guarantees).

    A tool whose schema the schema core does not accept raises its
    ``JsonSchemaError`` (tools registered so far are unregistered again), or
    is recorded in ``skipped`` with ``on_unsupported="skip"``. The session
    must stay open while the tools are used; dispose the result before
    closing it.

    Cancellation: cancelling this coroutine while it lists the tools cancels
    the ``tools/list`` request and registers nothing. A call's signal
    aborting while its request runs cancels the request (the SDK sends
    ``notifications/cancelled``) and the call ends ``ABORTED``.
    """
    if on_unsupported not in ("raise", "skip"):
        raise ValueError(f'on_unsupported must be "raise" or "skip", got {on_unsupported!r}')
    tools = await list_all_tools(session)
    notes: list[ToolNote] = []
    imported = McpImport((), (), {})
    names: list[str] = []
    skipped: dict[str, JsonSchemaError] = {}
    attachments = _Attachments()
    try:
        for tool in tools:
            name = prefix + tool.name
            try:
                [schema] = from_mcp_tools([tool], notes=notes)
                structured = "output_schema" in schema
                definition = tool_from_schema(
                    schema,
                    _body(session, tool.name, structured, attachments),
                    output_schema=schema.get("output_schema", {"type": "string"}),
                    render=render_value_as_text,
                    timeout_ms=timeout_ms,
                    is_concurrency_safe=(
                        (lambda _args: True) if concurrency_from_annotations and _read_only(tool) else None
                    ),
                    finalize_content=attachments.finalize,
                    name=name,
                )
                imported._disposers.append(registry_or_scope.register(definition))
            except JsonSchemaError as error:
                if on_unsupported == "raise":
                    raise
                skipped[name] = error
                continue
            names.append(name)
    except BaseException:
        imported.dispose()
        raise
    imported.names = tuple(names)
    imported.notes = tuple(notes)
    imported.skipped = skipped
    return imported
