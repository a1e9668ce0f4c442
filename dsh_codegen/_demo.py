"""The main demonstration job (``make demo``)."""

from __future__ import annotations

from dsh_codegen._backend import backend

__all__ = ["run_demo"]


def run_demo() -> int:
    print(f"dsh_codegen demo (backend: {backend()})")
    return 0
