"""What MCP's transports can carry: JSON text in UTF-8, so no lone surrogate.

``json.loads`` turns the valid JSON text ``"\\ud800"`` into a Python string
holding a lone surrogate, and the registry keeps it (it is lossless JSON). The
SDK's transports encode every message as UTF-8 in a task of their own, where
such a string fails that task: over stdio the whole session ends (the client's
``stdio_client`` block exits with an ``ExceptionGroup``; the server's response
never leaves and the client waits forever). So both adapters check what they
are about to hand to the SDK and turn a lone surrogate into a failure of the
one call that holds it.

:func:`mcp_http_client` does the same for a streamable-HTTP server that goes
away: the failure of one request's POST becomes that request's error.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["lone_surrogate", "mcp_http_client"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: object) -> str | None:
    """``"U+D800"`` for the first lone surrogate in the JSON value ``value`` (keys included), else ``None``."""
    match = _LONE_SURROGATE.search(json.dumps(value, ensure_ascii=False))
    return None if match is None else f"U+{ord(match.group()):04X}"


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
                    502, headers={"content-type": "application/json"}, content=json.dumps(failure).encode(), request=request
                )

        async def aclose(self) -> None:
            await self._inner.aclose()

    inner = options.pop("transport", None) or httpx2.AsyncHTTPTransport()
    return httpx2.AsyncClient(transport=_PerRequestFailures(inner), **options)
