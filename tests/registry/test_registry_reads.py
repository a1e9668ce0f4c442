"""The pipeline reads the registry only through its read interface (``RegistryReads``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dsh_codegen.registry.pipeline as pipeline
from dsh_codegen.registry import ToolRegistry
from dsh_codegen.registry.pipeline import RegistryReads

pytestmark = pytest.mark.once

_READS = {name for name in vars(RegistryReads) if not name.startswith("_")}


def _registry_reads(source: str) -> list[tuple[int, str]]:
    """``(line, attribute)`` of every read of ``registry.<x>`` or ``<y>.registry.<x>`` in ``source``."""
    reads = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        if (isinstance(owner, ast.Name) and owner.id == "registry") or (
            isinstance(owner, ast.Attribute) and owner.attr == "registry"
        ):
            reads.append((node.lineno, node.attr))
    return reads


def test_the_read_interface_is_small_and_the_registry_provides_it() -> None:
    assert _READS == {
        "approval",
        "relax_strict_nulls",
        "version",
        "chain_for",
        "entry_view",
        "presentation",
        "view",
        "resolve",
        "unknown_tool_error",
        "guarded",
        "guards_of",
    }
    registry = ToolRegistry()
    for name in _READS:
        assert hasattr(registry, name), name


def test_every_stage_module_reads_the_registry_through_the_interface_only() -> None:
    modules = sorted(Path(pipeline.__file__).parent.glob("*.py"))
    assert len(modules) >= 9
    seen = set()
    for path in modules:
        for line, attr in _registry_reads(path.read_text(encoding="utf-8")):
            assert attr in _READS, f"{path.name}:{line} reads registry.{attr}"
            seen.add(attr)
    assert seen == _READS  # every part of the interface is used: nothing in it is dead


def test_the_check_sees_a_private_read() -> None:
    assert sorted(_registry_reads("call.registry._global.tools\nregistry.mode")) == [(1, "_global"), (2, "mode")]
