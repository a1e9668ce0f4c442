"""The twin selector: one switch, all-or-nothing, loud when the build is required."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

import dsh_codegen
from dsh_codegen import _backend


def _backend_in_subprocess(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "DSH_CODEGEN_PURE_PYTHON"}
    if env_value is not None:
        env["DSH_CODEGEN_PURE_PYTHON"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", "import dsh_codegen; print(dsh_codegen.backend())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_backend_matches_the_requested_twin() -> None:
    if os.environ.get("DSH_CODEGEN_PURE_PYTHON") == "1":
        assert dsh_codegen.backend() == "pure"
    elif os.environ.get("DSH_CODEGEN_REQUIRE_EXTENSIONS") == "1":
        # make test builds the extension first: the compiled twin must be in use.
        assert dsh_codegen.backend() == "compiled"
    assert dsh_codegen.backend() in {"compiled", "pure"}


def test_only_the_value_1_selects_the_pure_twin() -> None:
    built = _backend._all_built()
    assert _backend_in_subprocess("1") == "pure"
    for other in (None, "0", "true", "yes", ""):
        assert _backend_in_subprocess(other) == ("compiled" if built else "pure")


def test_compiled_modules_load_when_selected() -> None:
    for name in _backend.COMPILED_MODULES:
        module = _backend.load_compiled(name)
        if _backend.USE_COMPILED:
            assert module is not None and module.__name__ == f"dsh_codegen.{name}"
        else:
            assert module is None


@pytest.mark.parametrize("name", _backend.COMPILED_MODULES)
def test_each_compiled_module_can_be_the_first_import(name: str) -> None:
    # Each one imports parts of its layer while it initialises: the layer packages
    # must not ask the selector for a half-initialised compiled module then.
    if not _backend._all_built():
        pytest.skip("the compiled twin is not built")
    env = {k: v for k, v in os.environ.items() if k != "DSH_CODEGEN_PURE_PYTHON"}
    code = (
        f"import dsh_codegen.{name};"
        "from dsh_codegen.registry import ToolRegistry, ToolExecutionInput, AbortController;"
        "from dsh_codegen.schema import compile_validator;"
        "import dsh_codegen;"
        "assert dsh_codegen.backend() == 'compiled';"
        "assert type(compile_validator({})).__module__ == 'dsh_codegen._schema_c';"
        "print(ToolRegistry.execute.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "dsh_codegen.registry._registry"  # one pipeline source, never patched in


#: The one module of each layer that may import a compiled twin (and ``_backend``, which loads them).
SELECTORS = {"dsh_codegen/_backend.py", "dsh_codegen/json/_json.py", "dsh_codegen/schema/_validator.py"}


@pytest.mark.once
def test_only_the_selectors_load_a_compiled_twin() -> None:
    package = Path(dsh_codegen.__file__).resolve().parent
    loaders = sorted(
        str(path.relative_to(package.parent))
        for path in package.rglob("*.py")
        if "load_compiled(" in path.read_text(encoding="utf-8")
    )
    assert set(loaders) == SELECTORS, loaders


def test_no_module_but_the_selectors_asks_which_twin_runs() -> None:
    # A module that checks its own __name__ against a compiled module's, or imports one by name,
    # knows which twin runs: only _backend and the selectors may (the dialect check once did both).
    package = Path(dsh_codegen.__file__).resolve().parent
    askers = sorted(
        str(path.relative_to(package.parent))
        for path in package.rglob("*.py")
        if path.name != "_backend.py"
        and re.search(
            r"__name__ *== *[\"']dsh_codegen\.|import_module\([\"']dsh_codegen\.\w+_c[\"']",
            path.read_text(encoding="utf-8"),
        )
    )
    assert askers == [], askers


@pytest.mark.once
def test_the_pure_twins_import_no_compiled_code() -> None:
    # With the compiled twin built and chosen, importing the pure twins (as the differential
    # tests and the benches do) must not pull in any compiled module.
    if not _backend._all_built():
        pytest.skip("the compiled twin is not built")
    env = {k: v for k, v in os.environ.items() if k != "DSH_CODEGEN_PURE_PYTHON"}
    pure = (
        "dsh_codegen.json._json_py",
        "dsh_codegen.schema._validator_py",
        "dsh_codegen.schema._dialect_check",
        "dsh_codegen.schema._dialect_rules",
    )
    code = (
        "import sys, importlib;"
        f"[importlib.import_module(name) for name in {pure!r}];"
        "print(sorted(name for name in sys.modules if name.startswith('dsh_codegen._') and name.endswith('_c')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- a pure fallback says so, once, at import -----------------------------------------------

_PROBE = """
import json, sys, warnings
sys.path.insert(0, sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import dsh_codegen
    import dsh_codegen.json, dsh_codegen.schema, dsh_codegen._backend
    from dsh_codegen.cli import version_text
    dsh_codegen.validate_json_schema_value({"type": "string"}, "x")
    dsh_codegen.backend()
assert dsh_codegen.__file__.startswith(sys.argv[1]), dsh_codegen.__file__
print(json.dumps({
    "backend": dsh_codegen.backend(),
    "version": version_text(),
    "warnings": [[w.category.__name__, str(w.message)] for w in caught],
}))
"""


def _package_copy(tmp_path: Path, extensions: dict[str, str]) -> Path:
    """A copy of the package with no compiled module but ``extensions`` (source name -> copied name)."""
    package = Path(dsh_codegen.__file__).parent
    target = tmp_path / "site" / "dsh_codegen"
    shutil.copytree(package, target, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    for source, name in extensions.items():
        shutil.copy2(package / source, target / name)
    return target.parent


def _probe(site: Path, *, pure: bool = False) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in {"DSH_CODEGEN_PURE_PYTHON", "PYTHONWARNINGS"}}
    if pure:
        env["DSH_CODEGEN_PURE_PYTHON"] = "1"
    # -S: no site-packages, so the editable install's finder cannot supply the checkout's modules.
    done = subprocess.run(
        [sys.executable, "-S", "-c", _PROBE, str(site)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _built_files() -> dict[str, str]:
    package = Path(dsh_codegen.__file__).parent
    found: dict[str, str] = {}
    for name in _backend.COMPILED_MODULES:
        spec = find_spec(f"dsh_codegen.{name}")
        if spec is None or spec.origin is None:
            pytest.skip("the compiled twin is not built")
        found[name] = Path(spec.origin).relative_to(package).as_posix()
    return found


@pytest.mark.once
def test_a_missing_extension_warns_once_with_the_reason_and_the_fix(tmp_path: Path) -> None:
    result = _probe(_package_copy(tmp_path, {}))
    assert result["backend"] == "pure"
    assert "(backend: pure; " in str(result["version"])
    warned = result["warnings"]
    assert isinstance(warned, list) and len(warned) == 1, warned
    category, message = warned[0]
    assert category == "RuntimeWarning"
    python = f"{sys.implementation.name} {sys.version_info.major}.{sys.version_info.minor}"
    modules = ", ".join(f"dsh_codegen.{name}" for name in _backend.COMPILED_MODULES)
    assert message.startswith(
        f"dsh_codegen: the compiled extension is not built for {python} (missing: {modules}); "
        "running the pure-Python twin"
    )
    assert "make setup" in message and "pip install" in message and "DSH_CODEGEN_PURE_PYTHON=1" in message


@pytest.mark.once
def test_an_extension_built_for_another_python_is_named(tmp_path: Path) -> None:
    built = _built_files()
    first = _backend.COMPILED_MODULES[0]
    foreign = f"{first}.cpython-39-x86_64-linux-gnu.so"
    # The others are built for this Python: only the first one is missing, and the fallback is whole.
    copies = {built[name]: built[name] for name in _backend.COMPILED_MODULES[1:]}
    copies[built[first]] = foreign
    result = _probe(_package_copy(tmp_path, copies))
    assert result["backend"] == "pure"
    [[category, message]] = result["warnings"]  # type: ignore[misc]
    assert category == "RuntimeWarning"
    assert message.startswith(
        f"dsh_codegen: the compiled extension is built only for another Python ({foreign}), not for "
        f"{sys.implementation.name} {sys.version_info.major}.{sys.version_info.minor} (missing: dsh_codegen.{first}); "
    ), message


@pytest.mark.once
def test_no_warning_when_the_pure_twin_is_chosen_or_the_extension_is_built(tmp_path: Path) -> None:
    chosen = _probe(_package_copy(tmp_path / "a", {}), pure=True)
    assert (chosen["backend"], chosen["warnings"]) == ("pure", [])
    if _backend._all_built():
        built = _built_files()
        complete = _probe(_package_copy(tmp_path / "b", {path: path for path in built.values()}))
        assert (complete["backend"], complete["warnings"]) == ("compiled", [])


@pytest.mark.once
def test_the_warning_reaches_a_user_once_with_default_filters(tmp_path: Path) -> None:
    site = _package_copy(tmp_path, {})
    env = {k: v for k, v in os.environ.items() if k not in {"DSH_CODEGEN_PURE_PYTHON", "PYTHONWARNINGS"}}
    env["PYTHONPATH"] = str(site)
    done = subprocess.run(
        [sys.executable, "-S", "-m", "dsh_codegen", "--version"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "(backend: pure; " in done.stdout
    assert done.stderr.count("RuntimeWarning: dsh_codegen: the compiled extension is not built") == 1, done.stderr
