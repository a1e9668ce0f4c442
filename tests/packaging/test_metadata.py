"""The package metadata: one version everywhere, the licence, the Pythons we claim, the changelog's form."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dsh_codegen

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.once

_RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)
# Keep a Changelog's kinds of change, the only sub-headings a release may have.
_KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def _claimed_pythons() -> list[str]:
    """The interpreters the Makefile tests (``MATRIX ?= ...``): what we claim."""
    (line,) = [line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith("MATRIX ?=")]
    return line.split("=", 1)[1].split()


def test_the_changelog_the_package_the_metadata_and_the_command_agree_on_the_version() -> None:
    releases = _RELEASE.findall(CHANGELOG)
    assert releases, "CHANGELOG.md names no release"
    newest = releases[0][0]
    assert dsh_codegen.__version__ == newest
    assert importlib.metadata.version("dsh_codegen") == newest
    done = subprocess.run(
        [sys.executable, "-m", "dsh_codegen", "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.startswith(f"dsh-codegen {newest} ("), done.stdout
    # pyproject.toml reads the version from the package: no second copy to drift.
    assert "version" in PYPROJECT["dynamic"] and "version" not in PYPROJECT


def test_the_changelog_keeps_a_changelog_form() -> None:
    lines = CHANGELOG.splitlines()
    assert lines[0] == "# Changelog"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[0] == "## [Unreleased]", headings
    releases = _RELEASE.findall(CHANGELOG)
    assert len(releases) == len(headings) - 1, f"a release heading is not '## [X.Y.Z] - YYYY-MM-DD': {headings}"
    versions = [tuple(int(part) for part in version.split(".")) for version, _ in releases]
    dates = [date for _, date in releases]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions), versions
    assert dates == sorted(dates, reverse=True), dates
    kinds = {line[4:] for line in lines if line.startswith("### ")}
    assert kinds <= _KINDS, kinds - _KINDS


def test_the_metadata_names_the_licence_the_pythons_and_the_typing() -> None:
    assert PYPROJECT["license"] == "MIT" and PYPROJECT["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    classifiers = PYPROJECT["classifiers"]
    claimed = _claimed_pythons()
    listed = [
        c.rsplit(" :: ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert listed == claimed
    assert PYPROJECT["requires-python"] == f">={claimed[0]}"
    assert "Typing :: Typed" in classifiers
    # A licence expression replaces the licence classifiers (PEP 639 forbids both).
    assert not [c for c in classifiers if c.startswith("License ::")]
    assert PYPROJECT["keywords"] and PYPROJECT["readme"] == "README.md"
    # No invented addresses: a URL in the metadata must not be a placeholder.
    for url in PYPROJECT.get("urls", {}).values():
        assert "<" not in url and "example" not in url, url


def test_the_installed_metadata_carries_the_licence_and_classifiers() -> None:
    meta = importlib.metadata.metadata("dsh_codegen")
    assert meta["License-Expression"] == "MIT"
    assert set(PYPROJECT["classifiers"]) <= set(meta.get_all("Classifier") or [])
