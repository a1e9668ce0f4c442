"""What MCP's transports can carry: JSON text in UTF-8, so no lone surrogate.

``json.loads`` turns the valid JSON text ``"\\ud800"`` into a Python string
holding a lone surrogate, and the registry keeps it (it is lossless JSON). The
SDK's transports encode every message as UTF-8 in a task of their own, where
such a string fails that task: over stdio the whole session ends (the client's
``stdio_client`` block exits with an ``ExceptionGroup``; the server's response
never leaves and the client waits forever). The registry refuses such call
arguments at entry (docs/json.md, "Lone surrogates and UTF-8"); what the
adapters make themselves (a served result, an elicitation answer, a log or
progress notification) is checked here, with the json layer's own rule, before
it reaches the SDK, and becomes a failure of the one call that holds it.

:func:`mcp_http_client` does the same for a streamable-HTTP server that goes
away: the failure of one request's POST becomes that request's error.
"""

from __future__ import annotations

import json
from typing import Any

from dsh_codegen.json import LosslessJsonError, is_json_value, snapshot_json

__all__ = ["mcp_http_client", "utf8_refusal"]


def utf8_refusal(value: object) -> str | None:
    """Why the JSON value ``value`` cannot travel as UTF-8 (where it holds a lone surrogate), else ``None``.

    The words are ``snapshot_json(value, utf8_strings=True)``'s, naming the
    path: ``"value.content[0].text" is not lossless JSON: string holding a lone
    surrogate (U+D800), which UTF-8 cannot carry``.
    """
    if is_json_value(value, utf8_strings=True):
        return None
    try:
        snapshot_json(value, freeze=False, utf8_strings=True)
    except LosslessJsonError as error:
        return str(error)
    return None


def mcp_http_client(**options: Any) -> Any:
    """An ``httpx2.AsyncClient`` for the SDK's ``streamable_http_client(url, http_client=...)``.

    The SDK's streamable-HTTP client sends each request's POST from a task of
    its transport; a POST that cannot reach the server (the server exited, the
    connection was refused or reset) raises there, which fails the transport's
    task group: the caller's whole ``streamable_http_client`` block ends with an
    ``ExceptionGroup`` and every tool of that server is lost. With this client a
    POST that fails that way comes back as an HTTP 502 carrying a JSON-RPC error
    (``the MCP server could not be reached: ConnectError: ...``), which the SDK
    gives to the one request, so only that call fails (``import_mcp_tools``:
    ``MCP_CONNECTION_ERROR``) and the session goes on (a server that comes back
    answers the next call). Other methods (the standalone ``GET`` stream, the
    closing ``DELETE``) fail as before: the SDK already contains those.

    ``options`` go to ``httpx2.AsyncClient`` (``timeout``, ``headers``, ...); a
    ``transport`` given there is the one wrapped. Close it (``async with``)
    when done; the SDK does not close a client it was given.

    Raised errors: ``ImportError`` naming the ``mcp`` extra when it is missing.
    """
    from dsh_codegen._extras import require_extra

    httpx2 = require_extra("httpx2", "mcp", "mcp_http_client")

    class _PerRequestFailures(httpx2.AsyncBaseTransport):  # type: ignore[misc, name-defined]
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            try:
                return await self._inner.handle_async_request(request)
            except httpx2.TransportError as error:
                if request.method != "POST":
                    raise
                failure = {
                    "jsonrpc": "2.0",
                    "id": None,  # the SDK answers the request this POST carried
                    "error": {
                        "code": -32000,
                        "message": f"the MCP server could not be reached: {type(error).__name__}: {error}",
                    },
                }
                return httpx2.Response(
                    502,
                    headers={"content-type": "application/json"},
                    content=json.dumps(failure).encode(),
                    request=request,
                )

        async def aclose(self) -> None:
            await self._inner.aclose()

    inner = options.pop("transport", None) or httpx2.AsyncHTTPTransport()
    return httpx2.AsyncClient(transport=_PerRequestFailures(inner), **options)
