"""What MCP's transports can carry: JSON text in UTF-8, so no lone surrogate.

``json.loads`` turns the valid JSON text ``"\\ud800"`` into a Python string
holding a lone surrogate, and the registry keeps it (it is lossless JSON). The
SDK's transports encode every message as UTF-8 in a task of their own, where
such a string fails that task: over stdio the whole session ends (the client's
``stdio_client`` block exits with an ``ExceptionGroup``; the server's response
never leaves and the client waits forever). So both adapters check what they
are about to hand to the SDK and turn a lone surrogate into a failure of the
one call that holds it.
"""

from __future__ import annotations

import json
import re

__all__ = ["lone_surrogate"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: object) -> str | None:
    """``"U+D800"`` for the first lone surrogate in the JSON value ``value`` (keys included), else ``None``."""
    match = _LONE_SURROGATE.search(json.dumps(value, ensure_ascii=False))
    return None if match is None else f"U+{ord(match.group()):04X}"
