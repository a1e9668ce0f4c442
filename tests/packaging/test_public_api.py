"""The public names: a committed snapshot, the promised top-level names, and re-exports only in ``__init__``.

Changing the public surface means editing ``public_api.txt`` on purpose (run
this file with ``DSH_UPDATE_PUBLIC_API=1`` and read the diff).
"""

from __future__ import annotations

import ast
import importlib
import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SNAPSHOT = HERE / "public_api.txt"
MODULES = (
    "dsh_codegen",
    "dsh_codegen.json",
    "dsh_codegen.schema",
    "dsh_codegen.codegen",
    "dsh_codegen.registry",
    "dsh_codegen.registry.cancel",
    "dsh_codegen.registry.code_runtime",
    "dsh_codegen.registry.policies",
    "dsh_codegen.registry.scheduler",
    "dsh_codegen.registry.views",
    "dsh_codegen.codemode",
    "dsh_codegen.adapters",
    "dsh_codegen.otel",
)

# The names the documentation promises at the top level (docs/api/index.md: every public name is
# importable from dsh_codegen).
PROMISED_NAMES = """
snapshot_json is_json_value LosslessJsonError render_json_pretty FrozenJsonObject FrozenJsonArray
assert_supported_json_schema assert_object_json_schema JsonSchemaError validate_json_schema_value
compile_validator CompiledValidator value_schema_spec_to_json_schema parameter_schema_spec_to_json_schema
ValueSchemaSpec ParameterSchemaSpec validate_args ToolArgsError Violation
json_schema_to_ts json_schema_to_py render_ts_sdk render_py_sdk render_sdk_module ToolSchemaEntry
define_tool ToolOutput ToolDefinition ToolRegistry ToolScope ToolExecutionInput ToolExecutionResult
Allow Deny Ask Accept Block ToolSuccess ToolFailure ToolError HarnessError ToolTimeoutError AbortError
AbortController AbortSignal UNSET TOOL_ABORTED TOOL_ABORTED_BEFORE_DISPATCH TOOL_TIMEOUT RUN_CODE_NAME
timeout_policy execute_tool_calls ToolCall PromptAssembly SessionLog MemorySessionLog JsonlSessionLog
derive_messages ApprovalService ApprovalRequest CodeRunFailedError backend tool
CodeRuntime ToolCallError PythonSubprocessRuntime MontyRuntime
import_mcp_tools serve_mcp to_openai_tools from_openai_tools to_anthropic_tools from_anthropic_tools
to_mcp_tools from_mcp_tools
""".split()


def _current() -> str:
    lines = []
    for name in MODULES:
        module = importlib.import_module(name)
        exported = module.__all__
        assert len(exported) == len(set(exported)), f"{name}.__all__ has duplicates"
        lines += [f"{name}: {symbol}" for symbol in sorted(exported)]
    return "\n".join(lines) + "\n"


@pytest.mark.once
def test_public_names_match_the_snapshot() -> None:
    current = _current()
    if os.environ.get("DSH_UPDATE_PUBLIC_API") == "1":
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert current == SNAPSHOT.read_text(encoding="utf-8")


@pytest.mark.once
def test_design_names_are_exported_from_the_top_level() -> None:
    import dsh_codegen

    missing = [name for name in PROMISED_NAMES if name not in dsh_codegen.__all__ or not hasattr(dsh_codegen, name)]
    assert missing == []


@pytest.mark.once
def test_package_init_files_only_re_export() -> None:
    offences = []
    for path in sorted((HERE.parents[1] / "dsh_codegen").rglob("__init__.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            allowed = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign)
            is_docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            # Lazy re-exports (PEP 562) bind the hooks dsh_codegen._lazy builds (an assignment, no def)
            # and import the same names for type checkers.
            is_type_only = isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
            if not (isinstance(node, allowed) or is_docstring or is_type_only):
                offences.append(f"{path}:{node.lineno}: {type(node).__name__}")
    assert offences == []


@pytest.mark.once
def test_lazy_top_level_table_matches_the_layers() -> None:
    import sys

    code = (
        "import sys, dsh_codegen;"
        "print(sorted(m for m in ('json', 'schema', 'codegen', 'registry', 'codemode', 'adapters')"
        " if 'dsh_codegen.' + m in sys.modules))"
    )
    import subprocess

    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", "import dsh_codegen must not load a layer"

    import dsh_codegen

    expected = {}
    for layer in ("json", "schema", "codegen", "registry", "codemode", "adapters"):
        module = importlib.import_module(f"dsh_codegen.{layer}")
        for symbol in module.__all__:
            # A name a higher layer re-exports (codemode's CodeRuntime) stays with the lowest.
            expected.setdefault(symbol, layer)
    assert dsh_codegen._EXPORTS == expected
    assert dsh_codegen.__all__ == ["__version__", "backend", *expected]
    for symbol, layer in expected.items():
        assert getattr(dsh_codegen, symbol) is getattr(importlib.import_module(f"dsh_codegen.{layer}"), symbol)
    with pytest.raises(AttributeError, match="no_such_name"):
        dsh_codegen.no_such_name  # noqa: B018 (the lookup is what raises)


@pytest.mark.once
@pytest.mark.parametrize(
    "package", ["dsh_codegen", "dsh_codegen.json", "dsh_codegen.schema", "dsh_codegen.codegen", "dsh_codegen.adapters"]
)
def test_lazy_packages_list_resolve_and_refuse_names_as_a_module_does(package: str) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) <= set(dir(module)) and dir(module) == sorted(dir(module))
    with pytest.raises(AttributeError) as caught:
        module.no_such_name  # noqa: B018 (the lookup is what raises)
    assert str(caught.value) == f"module {package!r} has no attribute 'no_such_name'"
    name = module.__all__[-1]
    value = getattr(module, name)
    assert vars(module)[name] is value  # resolved once, then a plain attribute
