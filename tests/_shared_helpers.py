"""Helpers shared by several test folders.

Importable as ``_shared_helpers`` from any test module: ``tests/conftest.py``
has no package ``__init__``, so pytest puts this folder on ``sys.path`` when it
loads that conftest (as it does each test folder for the folder's own helpers).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

__all__ = [
    "REPO",
    "TSC",
    "RecordingApprovals",
    "async_test",
    "compiled_twin",
    "import_file",
    "needs_tsc",
    "render_text",
    "require_compiled_twin",
    "run_in_session",
    "run_mypy",
    "run_tsc",
    "session_process",
]

#: The repository's root.
REPO = Path(__file__).resolve().parents[1]
#: TypeScript's compiler, as ``npm ci`` (run by ``make setup``) installs it.
TSC = REPO / "node_modules" / ".bin" / "tsc"
#: Marks a test that calls :func:`run_tsc`: skipped, saying why, where ``npm ci`` has not run.
needs_tsc = pytest.mark.skipif(not TSC.exists(), reason="node_modules/.bin/tsc missing: run `npm ci` (make test does)")

#: Seconds a process group gets between SIGTERM and SIGKILL.
STOP_GRACE = 5.0


def async_test(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test body in a fresh event loop; fail if it leaves tasks pending."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        async def main() -> None:
            await fn(*args, **kwargs)
            current = asyncio.current_task()
            pending = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
            assert pending == [], f"tasks left pending: {pending}"

        asyncio.run(main())

    return wrapper


def compiled_twin(name: str) -> Any:
    """The compiled twin ``dsh_codegen.<name>`` (``"_json_c"``, ``"_schema_c"``, ...), loaded whatever
    ``DSH_CODEGEN_PURE_PYTHON`` says, or None when the extension is not built (no compiler at install time).
    Typed ``Any``: the extension has no stubs, and the tests read its names."""
    try:
        return importlib.import_module(f"dsh_codegen.{name}")
    except ImportError:
        return None


def require_compiled_twin(name: str) -> ModuleType:
    """:func:`compiled_twin`, or skip the calling test when it is not built: nothing to compare."""
    twin: ModuleType | None = compiled_twin(name)
    if twin is None:
        pytest.skip(f"dsh_codegen.{name} is not built (no compiler at install time); nothing to compare")
    return twin


def import_file(path: Path, name: str) -> ModuleType:
    """Import the Python file at ``path`` as a fresh module called ``name`` (a ``tools/`` script, a generated SDK)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RecordingApprovals:
    """An ``ApprovalService`` that answers ``answer`` (changeable between calls) and records each request."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked: list[Any] = []

    async def request(self, request: Any) -> str:
        self.asked.append(request)
        return self.answer


def render_text(_args: Any, value: Any) -> list[dict[str, str]]:
    """A ``ToolOutput.render``: one text block (the value itself when it is a string, else its repr)."""
    return [{"type": "text", "text": value if isinstance(value, str) else repr(value)}]


def _stop_group(process: subprocess.Popen[Any]) -> None:
    """SIGTERM the process group, a grace, SIGKILL; then reap the leader (its pipes are drained)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            # the leader is not reaped yet (a zombie at worst), so its pid still names the group
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.communicate(timeout=STOP_GRACE)
            return
        except subprocess.TimeoutExpired:
            continue  # alive, or a process that left the group still holds a pipe
    process.wait()


@contextlib.contextmanager
def session_process(argv: Sequence[str | Path], **options: Any) -> Iterator[subprocess.Popen[Any]]:
    """``subprocess.Popen(argv, start_new_session=True, **options)``; on an exception leaving the block,
    the whole process group (the command and every child it started) is stopped and the command reaped
    before the exception goes on."""
    with subprocess.Popen(argv, start_new_session=True, **options) as process:
        try:
            yield process
        except BaseException:
            _stop_group(process)
            raise


def run_in_session(
    argv: Sequence[str | Path],
    *,
    timeout: float,
    input: str | bytes | None = None,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(argv, capture_output=True, timeout=timeout, ...)`` for commands that start
    children (``make``, a CLI serving MCP, a pip build): the command runs in a new session, and on the
    timeout or any other exception its whole process group is stopped (SIGTERM, a grace, SIGKILL) and
    reaped, where ``subprocess.run`` would kill the command alone and leave its children running."""
    stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
    with session_process(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options) as process:
        stdout, stderr = process.communicate(input, timeout=timeout)
    return subprocess.CompletedProcess(list(argv), process.returncode, stdout, stderr)


def run_mypy(
    folder: Path, *files: str | Path, options: Sequence[str] = (), cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Real ``mypy --strict`` (this interpreter's) over ``files``, with ``options`` added, run from ``cwd``
    (default: ``folder``; the repository when the checked code imports ``dsh_codegen``, which the editable
    install's import hook hides from mypy) with its cache in ``folder``. Returns the finished process
    whatever its status: what it must report is the calling test's to assert."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(folder / ".mypy_cache"), *options]
        + [str(file) for file in files],
        cwd=cwd or folder,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def run_tsc(folder: Path, *files: str) -> subprocess.CompletedProcess[str]:
    """Real ``tsc --noEmit --strict`` over ``files`` in ``folder``, read as ES2022 modules resolved the way a
    bundler resolves them (as generated SDKs are used). Returns the finished process whatever its status;
    a test that calls it carries :data:`needs_tsc`."""
    node = shutil.which("node")
    assert node is not None, "node is not on PATH"
    return subprocess.run(
        [node, str(TSC), "--noEmit", "--strict", "--target", "es2022", "--module", "esnext"]
        + ["--moduleResolution", "bundler", *files],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
