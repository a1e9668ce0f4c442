"""dsh_codegen: a tool registry, execution pipeline and Code Mode toolkit.

This module only re-exports the public names of each layer (DESIGN.md), and
lazily: ``import dsh_codegen`` loads no layer until one of its names is first
used, so the command line and callers that need one layer do not pay for the
others (the registry layer brings asyncio, the code generator jinja2).
``tests/packaging/test_public_api.py`` checks this table against every
layer's ``__all__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dsh_codegen._backend import backend
from dsh_codegen._version import __version__

if TYPE_CHECKING:
    from dsh_codegen.codegen import *  # noqa: F403
    from dsh_codegen.json import *  # noqa: F403
    from dsh_codegen.registry import *  # noqa: F403
    from dsh_codegen.schema import *  # noqa: F403

#: Public name -> the layer package that defines it.
_EXPORTS: dict[str, str] = {
    # dsh_codegen.json
    "FrozenJsonArray": "json",
    "FrozenJsonObject": "json",
    "JsonBudgetError": "json",
    "LosslessJsonError": "json",
    "dump_canonical_json": "json",
    "is_json_value": "json",
    "parse_json": "json",
    "render_json_pretty": "json",
    "snapshot_json": "json",
    # dsh_codegen.schema
    "CompiledValidator": "schema",
    "JsonSchema": "schema",
    "JsonSchemaError": "schema",
    "JsonValue": "schema",
    "ParameterSchemaSpec": "schema",
    "PropertySchemaSpec": "schema",
    "ToolArgsError": "schema",
    "ValueSchemaSpec": "schema",
    "Violation": "schema",
    "assert_object_json_schema": "schema",
    "assert_supported_json_schema": "schema",
    "compile_validator": "schema",
    "parameter_schema_spec_to_json_schema": "schema",
    "validate_args": "schema",
    "validate_json_schema_value": "schema",
    "value_schema_spec_to_json_schema": "schema",
    # dsh_codegen.codegen
    "CatalogError": "codegen",
    "ToolSchemaEntry": "codegen",
    "catalog_from_json": "codegen",
    "json_schema_to_py": "codegen",
    "json_schema_to_ts": "codegen",
    "load_catalog": "codegen",
    "render_catalog_markdown": "codegen",
    "render_py_sdk": "codegen",
    "render_sdk_module": "codegen",
    "render_ts_sdk": "codegen",
    # dsh_codegen.registry
    "RUN_CODE_NAME": "registry",
    "TOOL_ABORTED": "registry",
    "TOOL_ABORTED_BEFORE_DISPATCH": "registry",
    "TOOL_TIMEOUT": "registry",
    "PIPELINE_STAGES": "registry",
    "UNSET": "registry",
    "AbortController": "registry",
    "AbortError": "registry",
    "AbortSignal": "registry",
    "Accept": "registry",
    "Allow": "registry",
    "ApprovalAnswer": "registry",
    "ApprovalRequest": "registry",
    "ApprovalService": "registry",
    "Ask": "registry",
    "Block": "registry",
    "CodeModeProvider": "registry",
    "CodeRunFailedError": "registry",
    "CodeRuntime": "registry",
    "Deny": "registry",
    "Disposer": "registry",
    "HarnessError": "registry",
    "PipelineGate": "registry",
    "PromptAssembly": "registry",
    "PromptSection": "registry",
    "ToolChange": "registry",
    "ToolDefinition": "registry",
    "ToolDispatchExecution": "registry",
    "ToolCallView": "registry",
    "ToolError": "registry",
    "ToolErrorInfo": "registry",
    "ToolExecution": "registry",
    "ToolExecutionInput": "registry",
    "ToolExecutionResult": "registry",
    "ToolExecutionToken": "registry",
    "ToolFailure": "registry",
    "ToolNotFoundError": "registry",
    "ToolOutput": "registry",
    "ToolOutputError": "registry",
    "ToolRegistry": "registry",
    "ToolResultView": "registry",
    "ToolRunContext": "registry",
    "ToolSchema": "registry",
    "ToolScope": "registry",
    "ToolSuccess": "registry",
    "ToolTimeoutError": "registry",
    "define_tool": "registry",
    "tool": "registry",
    "install_code_mode": "registry",
    "ToolCall": "registry",
    "execute_tool_calls": "registry",
    "parse_call_arguments": "registry",
    "SessionLog": "registry",
    "MemorySessionLog": "registry",
    "JsonlSessionLog": "registry",
    "SessionLogContents": "registry",
    "read_session_log": "registry",
    "derive_messages": "registry",
    "replay_result": "registry",
    "event_time": "registry",
    "timeout_policy": "registry",
    "retry_policy": "registry",
    "metrics_policy": "registry",
    "ToolMetrics": "registry",
    "ToolStats": "registry",
}

_LAYERS = frozenset(_EXPORTS.values()) | {"codemode", "adapters", "cli"}

__all__ = [
    "__version__",
    "backend",
    "FrozenJsonArray",
    "FrozenJsonObject",
    "JsonBudgetError",
    "LosslessJsonError",
    "dump_canonical_json",
    "is_json_value",
    "parse_json",
    "render_json_pretty",
    "snapshot_json",
    "CompiledValidator",
    "JsonSchema",
    "JsonSchemaError",
    "JsonValue",
    "ParameterSchemaSpec",
    "PropertySchemaSpec",
    "ToolArgsError",
    "ValueSchemaSpec",
    "Violation",
    "assert_object_json_schema",
    "assert_supported_json_schema",
    "compile_validator",
    "parameter_schema_spec_to_json_schema",
    "validate_args",
    "validate_json_schema_value",
    "value_schema_spec_to_json_schema",
    "CatalogError",
    "ToolSchemaEntry",
    "catalog_from_json",
    "json_schema_to_py",
    "json_schema_to_ts",
    "load_catalog",
    "render_catalog_markdown",
    "render_py_sdk",
    "render_sdk_module",
    "render_ts_sdk",
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
    "define_tool",
    "tool",
    "install_code_mode",
    "ToolCall",
    "execute_tool_calls",
    "parse_call_arguments",
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
]


def __getattr__(name: str) -> Any:
    layer = _EXPORTS.get(name)
    if layer is not None:
        value = getattr(importlib.import_module(f"dsh_codegen.{layer}"), name)
    elif name in _LAYERS:
        value = importlib.import_module(f"dsh_codegen.{name}")
    else:
        raise AttributeError(f"module 'dsh_codegen' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
