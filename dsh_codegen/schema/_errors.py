"""The schema layer's exceptions (docs/texts.md), shared by both twins."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from dsh_codegen.schema._program import Violation

__all__ = ["JsonSchemaError", "ToolArgsError"]


class JsonSchemaError(ValueError):
    """Raised when a raw JSON schema or a DSL spec is outside the supported subset.

    ``violations`` lists every problem found, in walk order, each rooted at
    ``schema`` (``schema.properties.a.type must be ...``). The message is
    ``unsupported JSON schema: <v1>; <v2>``. ``code`` is ``UNSUPPORTED_SCHEMA``.
    """

    code: ClassVar[str] = "UNSUPPORTED_SCHEMA"
    name: ClassVar[str] = "JsonSchemaError"
    violations: tuple[Violation, ...]
    message: str

    def __init__(self, violations: Iterable[Violation]) -> None:
        self.violations = tuple(violations)
        self.message = "unsupported JSON schema: " + "; ".join(v.message for v in self.violations)
        super().__init__(self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.violations,))


class ToolArgsError(ValueError):
    """Raised when tool arguments do not match the tool's parameter schema.

    ``violations`` holds the violations of :func:`validate_args`; the message
    is ``invalid arguments: <v1>; <v2>``. ``code`` is ``INVALID_ARGS``.
    """

    code: ClassVar[str] = "INVALID_ARGS"
    name: ClassVar[str] = "ToolArgsError"
    violations: tuple[Violation, ...]
    message: str

    def __init__(self, violations: Iterable[Violation]) -> None:
        self.violations = tuple(violations)
        self.message = "invalid arguments: " + "; ".join(v.message for v in self.violations)
        super().__init__(self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.violations,))
