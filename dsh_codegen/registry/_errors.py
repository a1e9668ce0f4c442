"""Registry exceptions, error codes and the one rule for an exception's message.

Every exception here carries a ``code`` of docs/texts.md; the pipeline turns
an exception into a failed result whose ``error.info`` is ``{name, code}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = [
    "CODE_RUN_FAILED",
    "INVALID_ARGS",
    "INVALID_TOOL_OUTPUT",
    "RUN_CODE_NAME",
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "TOOL_TIMEOUT",
    "UNKNOWN_TOOL",
    "UNSUPPORTED_SCHEMA",
    "CodeRunFailedError",
    "HarnessError",
    "ToolNotFoundError",
    "ToolOutputError",
    "ToolTimeoutError",
    "error_message",
]

TOOL_ABORTED: Final = "ABORTED"
TOOL_ABORTED_BEFORE_DISPATCH: Final = "ABORTED_BEFORE_DISPATCH"
TOOL_TIMEOUT: Final = "TOOL_TIMEOUT"
UNKNOWN_TOOL: Final = "UNKNOWN_TOOL"
INVALID_ARGS: Final = "INVALID_ARGS"
INVALID_TOOL_OUTPUT: Final = "INVALID_TOOL_OUTPUT"
UNSUPPORTED_SCHEMA: Final = "UNSUPPORTED_SCHEMA"
CODE_RUN_FAILED: Final = "CODE_RUN_FAILED"
#: The reserved Code Mode transport; never registrable, in any mode.
RUN_CODE_NAME: Final = "run_code"

UNPRINTABLE: Final = "<unprintable thrown value>"


class HarnessError(Exception):
    """Base of every coded registry error.

    Raised when the registry or a policy fails in a way the model must see with
    a machine-readable ``code``; the pipeline reports it as a failed result
    whose ``error.info`` is ``ToolErrorInfo(name, code)``. ``name`` is the class
    name unless a subclass overrides it.
    """

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    @property
    def name(self) -> str:
        return type(self).__name__


class ToolNotFoundError(HarnessError):
    """Raised when a call names a tool the calling scope cannot see (code ``UNKNOWN_TOOL``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, UNKNOWN_TOOL)

    @classmethod
    def unknown(cls, tool_name: str) -> ToolNotFoundError:
        """The plain ``unknown tool "<name>"`` error."""
        return cls(f'unknown tool "{tool_name}"')

    @classmethod
    def code_only(cls, tool_name: str) -> ToolNotFoundError:
        """The route-back error for a model-direct native call under a code presentation."""
        return cls(
            f'unknown tool "{tool_name}": only `run_code` is callable directly'
            f" \u2014 call `{tool_name}` from inside a `run_code` program instead"
        )


class ToolOutputError(HarnessError):
    """Raised when a body, wrapper or policy value fails the tool's output declaration.

    ``violations`` holds each violation text in order (code ``INVALID_TOOL_OUTPUT``).
    """

    def __init__(self, tool_name: str, violations: Sequence[str]) -> None:
        self.tool_name = tool_name
        self.violations: tuple[str, ...] = tuple(violations)
        super().__init__(
            f'tool "{tool_name}" returned invalid output: {"; ".join(self.violations)}',
            INVALID_TOOL_OUTPUT,
        )


def format_timeout_ms(timeout_ms: float) -> str:
    """Number text of a millisecond budget: Python's own text (``1500``, ``2.5``)."""
    return repr(timeout_ms)


class ToolTimeoutError(HarnessError):
    """Raised (as a result) when a tool's own deadline fires first (code ``TOOL_TIMEOUT``)."""

    def __init__(self, timeout_ms: float) -> None:
        self.timeout_ms = timeout_ms
        super().__init__(f"tool call timed out after {format_timeout_ms(timeout_ms)}ms", TOOL_TIMEOUT)


class CodeRunFailedError(HarnessError):
    """Raised when a ``run_code`` program fails (code ``CODE_RUN_FAILED``).

    ``kind`` is one of ``exception``, ``timeout``, ``abort``, ``worker-exit``,
    ``invalid-output``, ``output-limit``. ``calls`` (one line each) are the
    tool calls the program started before it failed and how each ended, so
    the model does not repeat side effects blindly; they follow
    :attr:`CALLS_HEADER` when there are any. Captured ``logs`` are appended
    last, only when there are any, after :attr:`LOGS_HEADER` (so a reader of
    the message alone, such as tracing, can leave them out).
    """

    #: What introduces the tool calls the program started before it failed.
    CALLS_HEADER: Final = "\nTool calls the program started (their effects stay):\n"
    #: What separates the failure's text from the captured logs in the message.
    LOGS_HEADER: Final = "\nCaptured output:\n"

    def __init__(self, kind: str, message: str, logs: Sequence[str] = (), calls: Sequence[str] = ()) -> None:
        self.kind = kind
        self.detail = message
        self.logs: tuple[str, ...] = tuple(logs)
        self.calls: tuple[str, ...] = tuple(calls)
        text = f"code run failed ({kind}): {message}"
        if self.calls:
            text += self.CALLS_HEADER + "\n".join(self.calls)
        if self.logs:
            text += self.LOGS_HEADER + "\n".join(self.logs)
        super().__init__(text, CODE_RUN_FAILED)


def error_message(exc: BaseException) -> str:
    """The message of a raised exception (docs/texts.md, "Error content").

    ``exc.message`` when it is a ``str``; else ``str(exc)`` when non-empty; else
    the class name. Never raises: if inspecting the exception raises, the text
    is ``<unprintable thrown value>``.
    """
    try:
        message = getattr(exc, "message", None)
        if type(message) is str:
            return message
        text = str(exc)
        if type(text) is not str:  # a hostile __str__ may return a str subclass
            text = str.__str__(text)
        return text if text else type(exc).__name__
    except Exception:
        return UNPRINTABLE


def error_info_of(exc: BaseException) -> tuple[str, str] | None:
    """``(name, code)`` for a coded ("HarnessError-like") exception, else ``None``.

    Lower layers cannot import :class:`HarnessError` (``ToolArgsError``,
    ``JsonSchemaError`` live in the schema layer), so any exception carrying a
    ``str`` ``code`` counts; ``name`` is its ``str`` ``name`` or the class name.
    Never raises.
    """
    try:
        code = getattr(exc, "code", None)
        if type(code) is not str:
            return None
        name = getattr(exc, "name", None)
        if type(name) is not str:
            name = type(exc).__name__
        return (name, code)
    except Exception:
        return None
