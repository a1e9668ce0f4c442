"""Layer package: re-exports only (house rule 4, docs/contributing.md)."""

from dsh_codegen.registry._approval import (
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalService,
    CallDeferred,
    SuspensionScope,
    approval_channel,
    current_suspension_scope,
    suspension_scope,
)
from dsh_codegen.registry._assembly import PromptAssembly, PromptSection
from dsh_codegen.registry._codemode_seam import CodeModeProvider, CodeRuntime, install_code_mode
from dsh_codegen.registry._definitions import ToolDefinition, ToolOutput, define_tool
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
from dsh_codegen.registry._events import LogLevel, ToolEvent, ToolLog, ToolProgress, watch_tool_events
from dsh_codegen.registry._gate import PipelineGate
from dsh_codegen.registry._loop import ToolCall, execute_tool_calls, parse_call_arguments, resume_tool_calls
from dsh_codegen.registry.pipeline import PIPELINE_STAGES, CallSettle
from dsh_codegen.registry._registry import Disposer, ToolChange, ToolRegistry, ToolSchema, ToolScope
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
from dsh_codegen.registry._typed import TypedTool, tool
from dsh_codegen.registry._session_log import (
    JsonlSessionLog,
    MemorySessionLog,
    SessionLog,
    SessionLogContents,
    derive_messages,
    event_time,
    read_session_log,
    replay_result,
)
from dsh_codegen.registry.cancel import AbortController, AbortError, AbortSignal
from dsh_codegen.registry.policies import ToolMetrics, ToolStats, metrics_policy, retry_policy, timeout_policy
from dsh_codegen.registry.suspension import PendingApproval, SuspendedCall, Suspension, ToolCallsSuspended
from dsh_codegen.registry.views import ToolCallView, ToolResultView

__all__ = [
    "RUN_CODE_NAME",
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "TOOL_TIMEOUT",
    "PIPELINE_STAGES",
    "UNSET",
    "AbortController",
    "AbortError",
    "AbortSignal",
    "Accept",
    "Allow",
    "ApprovalAnswer",
    "ApprovalRequest",
    "ApprovalService",
    "approval_channel",
    "CallDeferred",
    "SuspensionScope",
    "suspension_scope",
    "current_suspension_scope",
    "Ask",
    "Block",
    "CodeModeProvider",
    "CodeRunFailedError",
    "CodeRuntime",
    "Deny",
    "Disposer",
    "HarnessError",
    "PipelineGate",
    "PromptAssembly",
    "PromptSection",
    "ToolChange",
    "ToolDefinition",
    "ToolDispatchExecution",
    "ToolCallView",
    "ToolError",
    "ToolErrorInfo",
    "ToolExecution",
    "ToolExecutionInput",
    "ToolExecutionResult",
    "ToolExecutionToken",
    "ToolEvent",
    "ToolLog",
    "ToolProgress",
    "LogLevel",
    "watch_tool_events",
    "ToolFailure",
    "ToolNotFoundError",
    "ToolOutput",
    "ToolOutputError",
    "ToolRegistry",
    "ToolResultView",
    "ToolRunContext",
    "ToolSchema",
    "ToolScope",
    "ToolSuccess",
    "ToolTimeoutError",
    "TypedTool",
    "define_tool",
    "tool",
    "install_code_mode",
    # The loop helper, the session log and the policies.
    "ToolCall",
    "execute_tool_calls",
    "parse_call_arguments",
    # Suspended calls (a "deferred" approval) and their resume.
    "PendingApproval",
    "SuspendedCall",
    "Suspension",
    "ToolCallsSuspended",
    "resume_tool_calls",
    "SessionLog",
    "MemorySessionLog",
    "JsonlSessionLog",
    "SessionLogContents",
    "read_session_log",
    "derive_messages",
    "replay_result",
    "event_time",
    "timeout_policy",
    "retry_policy",
    "metrics_policy",
    "ToolMetrics",
    "ToolStats",
    # The call hook's settle (on_execute).
    "CallSettle",
]
