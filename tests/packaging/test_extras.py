"""A missing optional extra is one ImportError naming the extra and the install command (issue 39)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.once

# Each probe runs in a fresh interpreter where the extra's top-level package cannot be imported
# (None in sys.modules is how Python marks a module as unimportable), as in a venv without the extra.
PROBES = {
    "monty": ("pydantic_monty", "from dsh_codegen.codemode import MontyRuntime\nMontyRuntime()", "MontyRuntime"),
    "ray": ("ray", "from dsh_codegen.codemode import RayRuntime\nRayRuntime()", "RayRuntime"),
    "serve_mcp": (
        "mcp",
        "import asyncio\nfrom dsh_codegen import ToolRegistry\nfrom dsh_codegen.adapters import serve_mcp\n"
        "asyncio.run(serve_mcp(ToolRegistry()))",
        "serve_mcp",
    ),
    "McpToolServer": (
        "mcp",
        "from dsh_codegen import ToolRegistry\nfrom dsh_codegen.adapters import McpToolServer\n"
        "McpToolServer(ToolRegistry())",
        "McpToolServer",
    ),
    "import_mcp_tools": (
        "mcp",
        "import asyncio\nfrom dsh_codegen import ToolRegistry\nfrom dsh_codegen.adapters import import_mcp_tools\n"
        "asyncio.run(import_mcp_tools(ToolRegistry(), object()))",
        "import_mcp_tools",
    ),
}


def _probe(blocked: str, code: str) -> subprocess.CompletedProcess[str]:
    program = f"import sys\nsys.modules[{blocked!r}] = None\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("case", sorted(PROBES))
def test_a_missing_extra_names_the_extra_and_the_install_command(case: str) -> None:
    blocked, code, feature = PROBES[case]
    extra = {"pydantic_monty": "monty", "ray": "ray"}.get(blocked, "mcp")
    done = _probe(blocked, code)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    distribution = {"monty": "pydantic-monty"}.get(extra, extra)
    assert last == (
        f'ImportError: {feature} needs the optional extra "{extra}" ({distribution} is not installed): '
        f"pip install 'dsh_codegen[{extra}]'"
    ), done.stderr


def test_the_command_says_which_extra_mcp_needs(tmp_path: object) -> None:
    done = _probe(
        "mcp", "import sys\nfrom dsh_codegen.cli import main\nsys.exit(main(['sdk', '--lang', 'py', '--mcp', 'x']))"
    )
    assert done.returncode == 2
    assert done.stderr == (
        'dsh-codegen: error: --mcp (an MCP server\'s tools) needs the optional extra "mcp" (mcp is not installed): '
        "pip install 'dsh_codegen[mcp]'\n"
    )


def test_other_import_failures_are_not_renamed() -> None:
    from dsh_codegen._extras import require_extra

    with pytest.raises(ImportError, match='needs the optional extra "mcp"'):
        require_extra("mcp_not_installed_here.sub", "mcp", "x")
    # a module the extra itself imports is missing: the original error, untouched
    done = _probe("anyio", "from dsh_codegen._extras import require_extra\nrequire_extra('mcp', 'mcp', 'x')")
    assert "ModuleNotFoundError" in done.stderr and "optional extra" not in done.stderr, done.stderr
