"""Layer package: re-exports only (see DESIGN.md)."""

from dsh_codegen.codemode._subprocess import PythonSubprocessRuntime, StartMethod

# --- runtimes (issue 14) ---
__all__: list[str] = [
    "PythonSubprocessRuntime",
    "StartMethod",
]
