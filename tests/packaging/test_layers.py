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
    "_dialect_check_c": 2,
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
        own = (
            ".".join(("dsh_codegen", *rel.with_suffix("").parts[1:]))
            if rel.parts[0] == "dsh_codegen"
            else (f"dsh_codegen.{path.stem}")
        )
        layer = _layer_of(own)
        for target in _imports(path):
            if _layer_of(target) > layer:
                offences.append(f"{rel} (layer {layer}) imports {target} (layer {_layer_of(target)})")
    assert offences == []


# Loads by name (``importlib.import_module("dsh_codegen....")``) up the layers, each with its reason. The
# one: a registry that mounts a code runtime installs Code Mode's bridge, which the registry cannot import
# (docs/codemode.md, "Turning it on").
UPWARD_LOADS = {("dsh_codegen/registry/_codemode_seam.py", "dsh_codegen.codemode")}


def _loads_by_name(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of each ``import_module`` call in ``path`` naming a module of the package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        name = node.args[0].value
        if callee == "import_module" and isinstance(name, str) and name.startswith("dsh_codegen."):
            found.append((node.lineno, name))
    return found


@pytest.mark.once
def test_lower_layers_load_no_higher_one_by_name_but_the_named_one() -> None:
    loads = set()
    offences = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        layer = _layer_of(_own_module(path))
        for line, name in _loads_by_name(path):
            if _layer_of(name) > layer:
                loads.add((rel, name))
                if (rel, name) not in UPWARD_LOADS:
                    offences.append(f"{rel}:{line}: loads {name} (layer {_layer_of(name)}) from layer {layer}")
    assert offences == []
    assert loads == UPWARD_LOADS  # no stale entry


@pytest.mark.once
def test_the_layer_check_sees_imports() -> None:
    # Guards the checker itself: it must find the registry's imports of lower layers.
    registry_imports = [name for path in (PACKAGE / "registry").rglob("*.py") for name in _imports(path)]
    assert any(name.startswith("dsh_codegen.json") for name in registry_imports)
    assert _layer_of("dsh_codegen.registry._pipeline") == 4
    assert _layer_of("dsh_codegen._backend") == 0


# --- Public seams: a layer imports only another layer's public names ---------------------------------

# The layer each top-level part of the package belongs to, by name (codemode and otel share a number
# but are two layers). Parts not listed are the package's own plumbing (_env, _backend, _version,
# _extras, _lazy): private to the package, shared by every layer, not a layer with a seam.
SEAM_LAYERS = {
    "json": "json",
    "_json_c": "json",
    "schema": "schema",
    "_schema_c": "schema",
    "_dialect_check_c": "schema",
    "codegen": "codegen",
    "templates": "codegen",
    "registry": "registry",
    "codemode": "codemode",
    "otel": "otel",
    "adapters": "adapters",
    "cli": "cli",
    "__main__": "cli",
    "_demo": "cli",
    "__init__": "cli",
}


def _seam_layer(dotted: str) -> str | None:
    """The layer of ``dsh_codegen.<part>...``; ``None`` for the plumbing and for other packages."""
    parts = dotted.split(".")
    if parts[0] != "dsh_codegen":
        return None
    return SEAM_LAYERS.get(parts[1]) if len(parts) > 1 else "cli"


def _own_module(path: Path) -> str:
    rel = path.relative_to(ROOT)
    if rel.parts[0] != "dsh_codegen":  # _ext/<name>.pyx is built into dsh_codegen.<name>
        return f"dsh_codegen.{path.stem}"
    return ".".join(("dsh_codegen", *rel.with_suffix("").parts[1:]))


def _imported(path: Path, text: str) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of each import in ``text``, the source of ``path`` (``names`` empty for ``import m``)."""
    if path.suffix == ".pyx":
        found = []
        for number, line in enumerate(text.splitlines(), 1):
            match = re.match(r"\s*from\s+(dsh_codegen[\w.]*)\s+c?import\s+\(?\s*([\w\s,]*)", line)
            if match:
                names = [name.split()[0] for name in match.group(2).split(",") if name.strip()]
                found.append((number, match.group(1), names))
            elif match := re.match(r"\s*c?import\s+(dsh_codegen[\w.]*)", line):
                found.append((number, match.group(1), []))
        return found
    module = _own_module(path)
    package = module.removesuffix(".__init__") if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name, [alias.name for alias in node.names]))
    return found


def _private_crossings(path: Path, text: str | None = None) -> list[str]:
    """Each import in ``path`` (or in ``text``, as if it were ``path``'s source) of another layer's
    ``_module`` or ``_name``, as ``file:line: what``."""
    rel = path.relative_to(ROOT)
    own = _seam_layer(_own_module(path))
    offences = []
    source = path.read_text(encoding="utf-8") if text is None else text
    for line, module, names in _imported(path, source):
        targets = [f"{module}.{name}" for name in names] if module == "dsh_codegen" else [module]
        for target in targets:
            layer = _seam_layer(target)
            if layer is None or layer == own:
                continue
            private = [part for part in target.split(".")[1:] if part.startswith("_")]
            private += [name for name in names if module != "dsh_codegen" and name.startswith("_")]
            if private:
                imported = f"from {module} import {', '.join(names)}" if names else f"import {module}"
                offences.append(f"{rel}:{line}: {imported} (the {layer} layer's private {', '.join(private)})")
    return offences


@pytest.mark.once
def test_layers_import_only_each_others_public_names() -> None:
    # What a layer needs from another it imports from that layer's package or a public module; the
    # lower layer makes it public (docs/contributing.md, rule 4), so its private modules may change.
    offences = [offence for path in _sources() for offence in _private_crossings(path)]
    assert offences == [], "imports of another layer's private names:\n" + "\n".join(offences)


@pytest.mark.once
def test_the_seam_check_sees_private_imports() -> None:
    # Guards the checker itself, on sources written the ways the package writes imports (read as the
    # source of a module of the Code Mode layer that does not exist).
    def crossings(rel: str, text: str) -> list[str]:
        return _private_crossings(ROOT / rel, text)

    probe = "dsh_codegen/codemode/_seam_probe.py"
    assert crossings(probe, "from dsh_codegen.registry._results import UNSET\n") == [
        f"{probe}:1: from dsh_codegen.registry._results import UNSET (the registry layer's private _results)"
    ]
    assert crossings(probe, "import os\nfrom dsh_codegen.schema import _ANNOTATIONS\n") == [
        f"{probe}:2: from dsh_codegen.schema import _ANNOTATIONS (the schema layer's private _ANNOTATIONS)"
    ]
    assert crossings(probe, "def f():\n    import dsh_codegen.json._paths\n") == [
        f"{probe}:2: import dsh_codegen.json._paths (the json layer's private _paths)"
    ]
    assert crossings(probe, "from ..registry._errors import error_message\n") == [
        f"{probe}:1: from dsh_codegen.registry._errors import error_message (the registry layer's private _errors)"
    ]
    assert crossings(probe, "from dsh_codegen import _json_c\n") == [
        f"{probe}:1: from dsh_codegen import _json_c (the json layer's private _json_c)"
    ]
    # Allowed: the own layer's privates, another layer's public names and modules, the plumbing.
    allowed = (
        "from dsh_codegen.codemode._pool import SubCallPool\n"
        "from dsh_codegen.registry import ToolRegistry\n"
        "from dsh_codegen.registry.scheduler import CallScheduler\n"
        "from dsh_codegen._extras import require_extra\n"
    )
    assert crossings(probe, allowed) == []
    # The compiled twins' sources are checked too, as the modules they build.
    assert crossings(
        "_ext/_schema_c.pyx", "from libc.math cimport floor\nfrom dsh_codegen.json._paths import quote_path\n"
    ) == ["_ext/_schema_c.pyx:2: from dsh_codegen.json._paths import quote_path (the json layer's private _paths)"]
    assert crossings("_ext/_schema_c.pyx", "from dsh_codegen.schema._program import (\n    NULL,\n)\n") == []
