"""Layer package: re-exports only (see DESIGN.md)."""

# --- runtimes (issue 14) ---
from dsh_codegen.codemode._monty import MontyRuntime
from dsh_codegen.codemode._subprocess import PythonSubprocessRuntime, StartMethod

__all__: list[str] = [
    # runtimes (issue 14)
    "MontyRuntime",
    "PythonSubprocessRuntime",
    "StartMethod",
]
