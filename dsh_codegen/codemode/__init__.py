"""Layer package: re-exports only (house rule 4, docs/contributing.md).

Importing it installs nothing: mounting a code runtime on a registry installs
the dispatch bridge (``docs/codemode.md``, "Turning it on").
"""

# The dispatch bridge and the runtime contract.
from dsh_codegen.codemode._bridge import CodeModeBridge
from dsh_codegen.codemode._preflight import preflight_check
from dsh_codegen.codemode._spill import spill_policy
from dsh_codegen.registry.code_runtime import (
    CodeDispatch,
    CodeRunFailure,
    CodeRunFailureKind,
    CodeRunRequest,
    CodeRunResult,
    CodeRunSuccess,
    CodeRunSuspended,
    CodeRuntime,
    SubCallSuspended,
    ToolCallError,
)
from dsh_codegen.registry import CodeRunFailedError

# The runtimes.
from dsh_codegen.codemode._monty import MontyRuntime
from dsh_codegen.codemode._ray import RayRuntime
from dsh_codegen.codemode._subprocess import CommandRuntime, PythonSubprocessRuntime, StartMethod

__all__: list[str] = [
    # The dispatch bridge and the runtime contract.
    "CodeDispatch",
    "CodeModeBridge",
    "CodeRunFailedError",
    "CodeRunFailure",
    "CodeRunFailureKind",
    "CodeRunRequest",
    "CodeRunResult",
    "CodeRunSuccess",
    "CodeRunSuspended",
    "CodeRuntime",
    "SubCallSuspended",
    "ToolCallError",
    "preflight_check",
    "spill_policy",
    # The runtimes.
    "CommandRuntime",
    "MontyRuntime",
    "PythonSubprocessRuntime",
    "RayRuntime",
    "StartMethod",
]
