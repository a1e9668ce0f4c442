"""Helpers shared by several test folders (the registry's and the Code Mode bridge's).

Importable as ``_shared_helpers`` from any test module: ``tests/conftest.py``
has no package ``__init__``, so pytest puts this folder on ``sys.path`` when it
loads that conftest (as it does each test folder for the folder's own helpers).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["async_test", "render_text"]


def async_test(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test body in a fresh event loop; fail if it leaves tasks pending."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        async def main() -> None:
            await fn(*args, **kwargs)
            current = asyncio.current_task()
            pending = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
            assert pending == [], f"tasks left pending: {pending}"

        asyncio.run(main())

    return wrapper


def render_text(_args: Any, value: Any) -> list[dict[str, str]]:
    """A ``ToolOutput.render``: one text block (the value itself when it is a string, else its repr)."""
    return [{"type": "text", "text": value if isinstance(value, str) else repr(value)}]
