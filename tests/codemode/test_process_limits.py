"""The budgets every process runtime takes: the same keywords, defaults and checks for each, declared once.

Nothing here starts a process: a runtime starts its first one on its first run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import pytest

from dsh_codegen.codemode import CommandRuntime, PythonSubprocessRuntime
from dsh_codegen.codemode._subprocess import ProcessHost, ProcessLimits, ProcessOptions

pytestmark = pytest.mark.once


def _ray_runtime(**options: Any) -> ProcessHost:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from dsh_codegen.codemode import RayRuntime

    return RayRuntime(**options)  # connects to no cluster until it is started or runs


RUNTIMES: dict[str, Callable[..., ProcessHost]] = {
    "PythonSubprocessRuntime": lambda **options: PythonSubprocessRuntime(start="spawn", **options),
    "CommandRuntime": lambda **options: CommandRuntime([sys.executable, "-m", "dsh_codegen.codemode.child"], **options),
    "RayRuntime": _ray_runtime,
}

#: The defaults PythonSubprocessRuntime's docstring states (and the others' say they share).
DEFAULTS = {
    "wall_timeout_s": 30.0,
    "cpu_seconds": None,
    "memory_bytes": 2 << 30,
    "max_processes": None,
    "max_output_bytes": 64 << 20,
    "max_log_bytes": 1 << 20,
    "network": True,
    "preflight": True,
}

BAD = [
    ("wall_timeout_s", 0, "wall_timeout_s must be a positive finite number"),
    ("wall_timeout_s", float("inf"), "wall_timeout_s must be a positive finite number"),
    ("wall_timeout_s", "30", "wall_timeout_s must be a positive finite number"),
    ("cpu_seconds", 0, "cpu_seconds must be a positive integer or None"),
    ("memory_bytes", 1.5, "memory_bytes must be a positive integer or None"),
    ("max_processes", True, "max_processes must be a positive integer or None"),
    ("max_output_bytes", -1, "max_output_bytes must be a non-negative integer"),
    ("max_log_bytes", "1", "max_log_bytes must be a non-negative integer"),
]


def test_the_keywords_and_the_record_name_the_same_budgets() -> None:
    # The runtimes' typed keywords and the record that holds the defaults and checks must not drift apart.
    assert ProcessOptions.__optional_keys__ == {field.name for field in fields(ProcessLimits)} == set(DEFAULTS)
    assert ProcessOptions.__required_keys__ == frozenset()


@pytest.mark.parametrize("name", RUNTIMES)
def test_every_process_runtime_has_the_documented_defaults(name: str) -> None:
    runtime = RUNTIMES[name]()
    assert {key: getattr(runtime, key) for key in DEFAULTS} == DEFAULTS
    given = {**DEFAULTS, "wall_timeout_s": 2, "cpu_seconds": 3, "max_processes": 64, "network": False}
    runtime = RUNTIMES[name](**given)
    assert {key: getattr(runtime, key) for key in DEFAULTS} == {**given, "wall_timeout_s": 2.0}


@pytest.mark.parametrize("name", RUNTIMES)
@pytest.mark.parametrize(("keyword", "value", "message"), BAD)
def test_a_bad_budget_is_refused_naming_it(name: str, keyword: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        RUNTIMES[name](**{keyword: value})


@pytest.mark.parametrize("name", RUNTIMES)
def test_an_unknown_keyword_is_refused_naming_the_runtime(name: str) -> None:
    # the text Python gave when each constructor listed its keywords itself
    with pytest.raises(TypeError, match=f"^{name}\\.__init__\\(\\) got an unexpected keyword argument 'timeout_ms'$"):
        RUNTIMES[name](timeout_ms=5000)
