"""OpenTelemetry tracing of a tool registry (extra ``dsh_codegen[otel]``; see ``docs/tracing.md``)."""

from dsh_codegen.otel._instrument import instrument

__all__ = ["instrument"]
