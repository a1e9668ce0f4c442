"""Layering (docs/index.md, the layer map): a lower layer never imports a higher one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dsh_codegen"

# Layer of each top-level part of the package; modules not listed are layer 0
# (shared plumbing: _env, _backend, _version), importable from anywhere.
LAYERS = {
    "json": 1,
    "_json_c": 1,
    "schema": 2,
    "_schema_c": 2,
    "_compile_c": 2,
    "codegen": 3,
    "templates": 3,
    "registry": 4,
    "codemode": 5,
    "otel": 5,
    "adapters": 6,
    "cli": 7,
    "__main__": 7,
    "_demo": 7,
    "__init__": 7,
}


def _layer_of(dotted: str) -> int:
    parts = dotted.split(".")
    if parts[0] != "dsh_codegen":
        return 0
    return LAYERS.get(parts[1], 0) if len(parts) > 1 else 7


def _imports(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".pyx":
        return re.findall(r"^\s*(?:from|c?import)\s+(dsh_codegen[\w.]*)", text, re.MULTILINE)
    found: list[str] = []
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    if path.name == "__init__.py":
        package = module.removesuffix(".__init__")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append(name)
            found += [f"{name}.{alias.name}" for alias in node.names if name == "dsh_codegen"]
    return [name for name in found if name.startswith("dsh_codegen")]


def _sources() -> list[Path]:
    return sorted([*PACKAGE.rglob("*.py"), *(ROOT / "_ext").glob("*.pyx")])


@pytest.mark.once
def test_lower_layers_never_import_higher_ones() -> None:
    offences = []
    for path in _sources():
        rel = path.relative_to(ROOT)
        own = ".".join(("dsh_codegen", *rel.with_suffix("").parts[1:])) if rel.parts[0] == "dsh_codegen" else (
            f"dsh_codegen.{path.stem}"
        )
        layer = _layer_of(own)
        for target in _imports(path):
            if _layer_of(target) > layer:
                offences.append(f"{rel} (layer {layer}) imports {target} (layer {_layer_of(target)})")
    assert offences == []


@pytest.mark.once
def test_the_layer_check_sees_imports() -> None:
    # Guards the checker itself: it must find the registry's imports of lower layers.
    registry_imports = [name for path in (PACKAGE / "registry").rglob("*.py") for name in _imports(path)]
    assert any(name.startswith("dsh_codegen.json") for name in registry_imports)
    assert _layer_of("dsh_codegen.registry._pipeline") == 4
    assert _layer_of("dsh_codegen._backend") == 0
