"""Mounting a code runtime: a runtime without a Code Mode presentation says so; set_code_runtime (issue 39)."""

from __future__ import annotations

import pytest

from _registry_helpers import async_test, call, echo_tool, error_code, registry_with, text
from dsh_codegen.codemode import PythonSubprocessRuntime
from dsh_codegen.registry import RUN_CODE_NAME, ToolChange, ToolRegistry

RUN = {"code": "return 1 + 1", "description": "Add."}


@async_test
async def test_a_runtime_without_a_code_mode_says_to_set_the_mode() -> None:
    # Issue 39: this answered a bare `unknown tool "run_code"`, which does not say what is wrong.
    registry = registry_with(echo_tool(), code_runtime=PythonSubprocessRuntime())
    result = await registry.execute(call(RUN_CODE_NAME, RUN))
    assert error_code(result) == "UNKNOWN_TOOL"
    assert text(result) == (
        'Error: unknown tool "run_code": a code runtime is mounted but this caller\'s presentation is "native";'
        ' set the mode to offer run_code: ToolRegistry(mode="code", code_runtime=...) or "both",'
        ' registry.set_code_runtime(runtime, mode="code"), or present_as("code") on the scope'
    )
    # A native registry with no runtime at all keeps the plain text.
    plain = await registry_with(echo_tool()).execute(call(RUN_CODE_NAME, RUN))
    assert text(plain) == 'Error: unknown tool "run_code"'


@async_test
async def test_set_code_runtime_mounts_a_runtime_and_a_mode_on_an_existing_registry() -> None:
    registry = registry_with(echo_tool())
    changes: list[ToolChange] = []
    registry.on_change(changes.append)
    assert [t["name"] for t in registry.assemble().tools] == ["echo"]

    runtime = PythonSubprocessRuntime()
    registry.set_code_runtime(runtime, mode="code")
    try:
        assert changes == [ToolChange("present_as", None, None)]
        assembly = registry.assemble()
        assert [t["name"] for t in assembly.tools] == [RUN_CODE_NAME]
        assert "class Tools(Protocol):" in assembly.sections[-1].text  # the Python SDK: the runtime's language
        result = await registry.execute(call(RUN_CODE_NAME, RUN))
        assert (result.is_error, text(result)) == (False, "2")
    finally:
        await runtime.aclose()

    # Without mode= the presentation stays; None unmounts the runtime.
    registry.set_code_runtime(None)
    assert registry.mode == "code"
    result = await registry.execute(call(RUN_CODE_NAME, RUN))
    assert "requires a code runtime" in text(result)


def test_set_code_runtime_checks_the_mode() -> None:
    registry = ToolRegistry()
    with pytest.raises(ValueError, match='mode must be "native", "code" or "both", got \'codes\''):
        registry.set_code_runtime(PythonSubprocessRuntime(), mode="codes")  # type: ignore[arg-type]
    assert registry.code_runtime is None and registry.mode == "native"
