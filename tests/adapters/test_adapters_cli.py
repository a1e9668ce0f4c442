"""``dsh-codegen sdk|catalog`` with --catalog in foreign tool formats and with --mcp."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_codegen.adapters import to_anthropic_tools, to_mcp_tools, to_openai_tools

from _adapters_helpers import HERE
from _shared_helpers import run_in_session

SCHEMAS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]


def dsh(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # `--mcp` starts a server: a timeout stops it with the CLI (run_in_session)
    return run_in_session([sys.executable, "-m", "dsh_codegen", *args], text=True, timeout=120, cwd=cwd)


@pytest.mark.once
@pytest.mark.parametrize(
    ("document", "name"),
    [
        ({"tools": to_mcp_tools(SCHEMAS)}, "mcp"),
        (to_openai_tools(SCHEMAS), "openai"),
        (to_anthropic_tools(SCHEMAS), "anthropic"),
    ],
)
def test_sdk_from_foreign_tool_lists_detected_or_named(document: object, name: str, tmp_path: Path) -> None:
    # An MCP tool without an outputSchema answers text, so its catalog types the value a string.
    ours = {**SCHEMAS[0], "output_schema": {"type": "string"}} if name == "mcp" else {**SCHEMAS[0]}
    (tmp_path / "ours.json").write_text(json.dumps([ours]), encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps(document), encoding="utf-8")
    expected = dsh("sdk", "--lang", "py", "--catalog", "ours.json", cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    detected = dsh("sdk", "--lang", "py", "--catalog", "tools.json", cwd=tmp_path)
    named = dsh("sdk", "--lang", "py", "--catalog", "tools.json", "--format", name, cwd=tmp_path)
    for done in (detected, named):
        assert done.returncode == 0, done.stderr
        # Same tools, so the same file apart from the source named in its header.
        assert done.stdout.splitlines()[2:] == expected.stdout.splitlines()[2:]
    markdown = dsh("catalog", "--catalog", "tools.json", cwd=tmp_path)
    assert markdown.returncode == 0 and "read_file" in markdown.stdout


@pytest.mark.once
def test_wrong_format_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(to_openai_tools(SCHEMAS)), encoding="utf-8")
    done = dsh("sdk", "--lang", "ts", "--catalog", "tools.json", "--format", "anthropic", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        done.stderr
        == "dsh-codegen: error: tools.json: tools[0].type is 'function'; only custom tools (with an input_schema) convert\n"
    )


@pytest.mark.once
def test_sdk_from_a_running_mcp_server_with_check(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    if shutil.which("make") is None:
        # Where make is installed, test_adapters_build.py's make-recipe test runs these very
        # commands (`sdk --lang py --mcp ... -o`, then with --check; each starts the server).
        command = shlex.join([sys.executable, str(HERE / "sdk_server.py")])
        out = tmp_path / "tools_sdk.py"
        written = dsh("sdk", "--lang", "py", "--mcp", command, "-o", str(out), cwd=tmp_path)
        assert written.returncode == 0, written.stderr
        text = out.read_text(encoding="utf-8")
        assert "class AddOutput(TypedDict):" in text  # typed outputs where the server publishes them
        checked = dsh("sdk", "--lang", "py", "--mcp", command, "-o", str(out), "--check", cwd=tmp_path)
        assert checked.returncode == 0, checked.stderr + checked.stdout
    missing = dsh("sdk", "--lang", "py", "--mcp", "/nonexistent/server", cwd=tmp_path)
    assert missing.returncode == 2
    assert "--mcp /nonexistent/server: cannot start the MCP server" in missing.stderr


@pytest.mark.once
def test_sdk_mcp_warnings_name_the_mcp_source(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    command = shlex.join([sys.executable, str(HERE / "lowlevel_server.py")])
    done = dsh("sdk", "--lang", "py", "--mcp", command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        f'dsh-codegen: warning: --mcp {command}: tool "pick" parameters#/properties/choice: '
        "unsupported or malformed schema: Any\n"
    )
    # A tool without an outputSchema answers text: str, as import_mcp_tools returns it.
    assert "async def mixed(self, args: dict[str, Any]) -> str:" in done.stdout


@pytest.mark.once
def test_sdk_mcp_start_up_timeout_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    command = shlex.join([sys.executable, "-c", "import time; time.sleep(60)"])
    done = dsh("sdk", "--lang", "py", "--mcp", command, "--mcp-timeout", "0.5", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"dsh-codegen: error: --mcp {command}: the MCP server did not answer within 0.5 s "
        "(initialize and tools/list); check the command, or allow more time (--mcp-timeout)\n"
    )
    bad = dsh("sdk", "--lang", "py", "--mcp", command, "--mcp-timeout", "0", cwd=tmp_path)
    assert bad.returncode == 2 and "--mcp-timeout: expected a positive number of seconds, got '0'" in bad.stderr
