"""Layer package: re-exports only (see DESIGN.md)."""

from dsh_codegen.registry._errors import (
    RUN_CODE_NAME,
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    TOOL_TIMEOUT,
    CodeRunFailedError,
    HarnessError,
    ToolNotFoundError,
    ToolOutputError,
    ToolTimeoutError,
)
from dsh_codegen.registry._execution import (
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionToken,
    ToolRunContext,
)
from dsh_codegen.registry._gate import PipelineGate
from dsh_codegen.registry._results import (
    UNSET,
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
    ToolError,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
)
from dsh_codegen.registry.cancel import AbortController, AbortError, AbortSignal

__all__ = [
    "RUN_CODE_NAME",
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "TOOL_TIMEOUT",
    "UNSET",
    "AbortController",
    "AbortError",
    "AbortSignal",
    "Accept",
    "Allow",
    "Ask",
    "Block",
    "CodeRunFailedError",
    "Deny",
    "HarnessError",
    "PipelineGate",
    "ToolDispatchExecution",
    "ToolError",
    "ToolErrorInfo",
    "ToolExecution",
    "ToolExecutionInput",
    "ToolExecutionResult",
    "ToolExecutionToken",
    "ToolFailure",
    "ToolNotFoundError",
    "ToolOutputError",
    "ToolRunContext",
    "ToolSuccess",
    "ToolTimeoutError",
]
