"""Build-time integration: the pre-commit hook manifest and the documented make recipe, run for real."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_codegen.cli import _build_parser

from _adapters_helpers import HERE
from _shared_helpers import run_in_session

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
DOC = (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
[MAKE_RECIPE] = re.findall(r"```make\n(.*?)```", DOC, re.DOTALL)
[PRE_COMMIT_CONFIG] = re.findall(r"```yaml\n(.*?)```", DOC, re.DOTALL)
SCRIPTS = Path(sys.executable).parent

# pre-commit's hook keys (its clientlib MANIFEST_HOOK_DICT) and the type each must have.
HOOK_KEYS: dict[str, type] = {
    "id": str, "name": str, "entry": str, "language": str, "alias": str, "files": str, "exclude": str,
    "types": list, "types_or": list, "exclude_types": list, "additional_dependencies": list, "args": list,
    "always_run": bool, "fail_fast": bool, "pass_filenames": bool, "description": str,
    "language_version": str, "log_file": str, "require_serial": bool, "stages": list, "verbose": bool,
    "minimum_pre_commit_version": str,
}  # fmt: skip
REQUIRED = ("id", "name", "entry", "language")


def _scalar(text: str, where: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("["):
        if not text.endswith("]"):
            raise ValueError(f"{where}: unterminated flow list")
        return [_scalar(item.strip(), where) for item in text[1:-1].split(",") if item.strip()]
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith(("'", "{", "&", "*", "!", "|", ">")) or " #" in text:
        raise ValueError(f"{where}: {text[:1]!r} is outside the plain form this file keeps to")
    return text


def read_manifest(text: str) -> list[dict[str, Any]]:
    """The hook list of a manifest kept to ``- key: value`` / ``  key: value`` lines (comments allowed)."""
    hooks: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        where = f".pre-commit-hooks.yaml:{number}"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("- "):
            hooks.append({})
            line = line[2:]
        elif line.startswith("  ") and hooks:
            line = line[2:]
        else:
            raise ValueError(f"{where}: expected '- key: value' or '  key: value'")
        key, sep, value = line.partition(": ")
        if not sep or not re.fullmatch(r"[a-z_]+", key) or key in hooks[-1]:
            raise ValueError(f"{where}: expected a new key, then ': ', then a value")
        hooks[-1][key] = _scalar(value.strip(), where)
    return hooks


HOOKS = read_manifest(MANIFEST.read_text(encoding="utf-8"))


def test_the_manifest_has_pre_commits_hook_shape() -> None:
    assert [hook["id"] for hook in HOOKS] == ["dsh-codegen-sdk-check", "dsh-codegen-sdk"]
    for hook in HOOKS:
        for key in REQUIRED:
            assert key in hook, (hook["id"], key)
        for key, value in hook.items():
            assert key in HOOK_KEYS, f"{hook['id']}: {key} is not a pre-commit hook key"
            assert isinstance(value, HOOK_KEYS[key]), (hook["id"], key, value)
        assert hook["language"] == "python"
        # The SDK depends on the tools, not on the files being committed.
        assert hook["pass_filenames"] is False and hook["always_run"] is True
        command = shlex.split(hook["entry"])
        # The entry is our console script (pre-commit installs this repository and runs it).
        assert command[0] == "dsh-codegen" and command[1] == "sdk"
        assert 'dsh-codegen = "dsh_codegen.cli:main"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "--check" in shlex.split(HOOKS[0]["entry"]) and "--check" not in shlex.split(HOOKS[1]["entry"])


def test_the_reader_refuses_what_it_does_not_understand() -> None:
    with pytest.raises(ValueError, match=r":1: expected"):
        read_manifest("id: x\n")
    with pytest.raises(ValueError, match=r":2: expected a new key"):
        read_manifest("- id: x\n  id: y\n")
    with pytest.raises(ValueError, match="outside the plain form"):
        read_manifest("- id: 'x'\n")


def test_the_manifest_reads_the_same_with_a_yaml_library() -> None:
    yaml = pytest.importorskip("yaml")  # not a dependency; a cross-check where it is installed
    assert yaml.safe_load(MANIFEST.read_text(encoding="utf-8")) == HOOKS
    config = yaml.safe_load(PRE_COMMIT_CONFIG)
    assert config["repos"][0]["hooks"][0]["id"] in {hook["id"] for hook in HOOKS}


def _documented_args() -> list[str]:
    [line] = [line for line in PRE_COMMIT_CONFIG.splitlines() if line.strip().startswith("args:")]
    args = _scalar(line.split("args:", 1)[1].strip(), "docs/adapters.md")
    assert isinstance(args, list)
    return [str(arg) for arg in args]


def test_each_hook_entry_with_the_documented_args_parses() -> None:
    assert "- id: dsh-codegen-sdk-check" in PRE_COMMIT_CONFIG
    for hook in HOOKS:
        parsed = _build_parser().parse_args(shlex.split(hook["entry"])[1:] + _documented_args())
        assert parsed.command == "sdk" and parsed.registry == "myapp.tools:registry"
        assert parsed.output == "myapp/tools_sdk.py" and parsed.check == ("--check" in hook["entry"])


TOOLS_MODULE = """\
from dsh_codegen import ToolRegistry

from myapp.text_tool import text_tool


async def echo(args, run):
    return args["text"]


registry = ToolRegistry()
registry.register(text_tool("echo", "Echo a text.", echo))
"""
EXTRA_TOOL = """
registry.register(text_tool("shout", "Upper-case a text.", echo))
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "myapp" / "tools.py").write_text(TOOLS_MODULE, encoding="utf-8")
    shutil.copy(HERE / "text_tool.py", tmp_path / "myapp" / "text_tool.py")
    (tmp_path / "Makefile").write_text(MAKE_RECIPE, encoding="utf-8")
    return tmp_path


def _env() -> dict[str, str]:
    # The project's environment: our console script on PATH; the project itself is not installed.
    return {**os.environ, "PATH": f"{SCRIPTS}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": ""}


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # make -> dsh-codegen -> an MCP server: a timeout stops all of them (run_in_session)
    return run_in_session(argv, text=True, timeout=180, cwd=cwd, env=_env())


@pytest.mark.once
def test_the_make_recipe_regenerates_and_checks_from_a_registry_module(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    project = _project(tmp_path)
    assert _run(["make", "sdk-check"], project).returncode != 0  # nothing generated yet
    made = _run(["make", "sdk"], project)
    assert made.returncode == 0, made.stderr
    py_sdk = (project / "myapp" / "tools_sdk.py").read_text(encoding="utf-8")
    assert py_sdk.startswith("# Code generated by dsh_codegen") and "async def echo(" in py_sdk
    assert "echo" in (project / "myapp" / "tools_sdk.ts").read_text(encoding="utf-8")
    checked = _run(["make", "sdk-check"], project)
    assert checked.returncode == 0, checked.stderr + checked.stdout
    # The tools change: the check fails with a diff naming the new tool; regenerating fixes it.
    with (project / "myapp" / "tools.py").open("a", encoding="utf-8") as handle:
        handle.write(EXTRA_TOOL)
    stale = _run(["make", "sdk-check"], project)
    assert stale.returncode != 0 and "+    async def shout(" in stale.stdout
    assert "myapp/tools_sdk.py is stale" in stale.stderr
    assert _run(["make", "sdk"], project).returncode == 0
    assert _run(["make", "sdk-check"], project).returncode == 0


@pytest.mark.once
def test_the_make_recipe_takes_an_mcp_server(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    project = _project(tmp_path)
    server = shlex.join([sys.executable, str(HERE / "sdk_server.py")])
    tools = f"TOOLS=--mcp {shlex.quote(server)}"
    made = _run(["make", "sdk", tools], project)
    assert made.returncode == 0, made.stderr
    assert "class AddOutput(TypedDict):" in (project / "myapp" / "tools_sdk.py").read_text(encoding="utf-8")
    checked = _run(["make", "sdk-check", tools], project)
    assert checked.returncode == 0, checked.stderr + checked.stdout


@pytest.mark.once
def test_the_hooks_run_as_pre_commit_runs_them(tmp_path: Path) -> None:
    # pre-commit runs `entry + args` in the repository root (pass_filenames: false adds nothing).
    project = _project(tmp_path)
    check, regenerate = (shlex.split(hook["entry"]) + _documented_args() for hook in HOOKS)
    missing = _run(check, project)
    assert missing.returncode == 1 and "myapp/tools_sdk.py is missing" in missing.stderr
    assert _run(regenerate, project).returncode == 0
    assert _run(check, project).returncode == 0
    (project / "myapp" / "tools_sdk.py").write_text("# edited by hand\n", encoding="utf-8")
    assert _run(check, project).returncode == 1
