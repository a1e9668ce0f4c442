"""The Code Mode bridge is installed by the calls that mount a runtime, not by importing a module (issue 36 item 5).

Each case runs in a fresh interpreter: which provider is installed is process-wide state.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.once  # orchestration only: no twin involved

# A third-party runtime written against the public protocol alone (it never imports dsh_codegen.codemode).
PRELUDE = '''
import asyncio
import json
import sys

from dsh_codegen import AbortController, ToolExecutionInput, ToolRegistry, install_code_mode, tool
from dsh_codegen.registry.code_runtime import CodeRunRequest, CodeRunResult, CodeRunSuccess


class EchoRuntime:
    """Each line of a program is one call of ``echo`` with that line as its text."""

    language = "python"

    async def run(self, request: CodeRunRequest) -> CodeRunResult:
        logs = [json.dumps(await request.dispatch("echo", {"text": line})) for line in request.code.splitlines()]
        return CodeRunSuccess(tuple(logs))


@tool
async def echo(text: str) -> str:
    """Say it back."""
    return text


def run_code(registry: ToolRegistry, program: str = "hi") -> str:
    call = ToolExecutionInput("c1", "run_code", {"code": program, "description": "echo"}, AbortController().signal)
    return asyncio.run(registry.execute(call)).content[0]["text"]
'''


def _run(body: str) -> list[str]:
    completed = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.splitlines()


def test_constructing_a_registry_with_a_runtime_installs_the_bridge() -> None:
    assert _run("""
        registry = ToolRegistry(mode="code", code_runtime=EchoRuntime())
        registry.register(echo)
        print(run_code(registry, "hi\\nthere"))
    """) == ['"hi"', '"there"']


def test_set_code_runtime_installs_the_bridge() -> None:
    assert _run("""
        registry = ToolRegistry()
        registry.register(echo)
        registry.set_code_runtime(EchoRuntime(), mode="code")
        print(run_code(registry))
    """) == ['"hi"']


def test_importing_code_mode_installs_nothing() -> None:
    # A provider the application installed stays installed whatever is imported later, and mounting a
    # runtime keeps it (the bridge is installed only where none is).
    assert (
        _run("""
        class Provider:
            async def run_code(self, registry, run, code, description):
                return {"logs": [f"the application's provider ran {code!r}"]}

        install_code_mode(Provider())
        import dsh_codegen.codemode

        registry = ToolRegistry(mode="code", code_runtime=EchoRuntime())
        registry.register(echo)
        print(run_code(registry))
        registry.set_code_runtime(EchoRuntime())
        print(run_code(registry))
    """)
        == ["the application's provider ran 'hi'"] * 2
    )


def test_a_removed_bridge_fails_run_code_saying_how_to_install_it() -> None:
    lines = _run("""
        registry = ToolRegistry(mode="code", code_runtime=EchoRuntime())
        registry.register(echo)
        install_code_mode(None)
        print(run_code(registry))
        from dsh_codegen.codemode import CodeModeBridge

        install_code_mode(CodeModeBridge())
        print(run_code(registry))
    """)
    assert lines == [
        "Error: dsh_codegen: Code Mode is not installed (install_code_mode(None) removed it);"
        " install_code_mode(CodeModeBridge()) installs it again",
        '"hi"',
    ]
