"""The wheel carries the compiled twin and the templates, and works outside the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_SKIP = shutil.ignore_patterns(
    ".git", ".venv", "node_modules", "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.c", ".mypy_cache"
)


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.mark.once
def test_wheel_ships_the_extension_and_templates(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=_SKIP)
    env = {**os.environ, "DSH_CODEGEN_REQUIRE_EXTENSIONS": "1"}
    env.pop("DSH_CODEGEN_PURE_PYTHON", None)
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(source)], tmp_path, env)
    (wheel,) = (tmp_path / "dist").glob("dsh_codegen-*.whl")

    names = zipfile.ZipFile(wheel).namelist()
    compiled = [n for n in names if n.startswith("dsh_codegen/_") and n.endswith(".so")]
    assert {Path(n).name.split(".")[0] for n in compiled} >= {"_json_c", "_schema_c"}, names
    assert "dsh_codegen/py.typed" in names
    assert any(n.startswith("dsh_codegen/templates/") and n.endswith(".jinja") for n in names), names
    assert not any(n.endswith((".pyx", ".c")) for n in names), "sources must not ship in the wheel"

    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    python = target / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], tmp_path, env)
    probe = (
        "import importlib.resources as r, dsh_codegen, sys;"
        "assert 'site-packages' in dsh_codegen.__file__, dsh_codegen.__file__;"
        "print(dsh_codegen.backend());"
        "print(sorted(p.name for p in r.files('dsh_codegen.templates').iterdir() if p.is_dir()))"
    )
    out = _run([str(python), "-I", "-c", probe], tmp_path, env).splitlines()
    assert out[0] == "compiled"
    assert out[1] != "[]", "templates are missing from the installed package"
