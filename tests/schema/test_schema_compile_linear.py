"""Compiling is linear in schema size for every keyword (issue 11): doubling the input at most triples the time.

A quadratic step (``required`` checked against a list, say) makes the doubled
case about four times slower, a linear one about two; three leaves room for a
busy machine. Each size is timed as the best of five runs, at sizes where a
compile takes tens of milliseconds on the compiled twin (so a quadratic step is
milliseconds, not microseconds). A pair over the bound is measured again (up to
three pairs): a busy neighbour can spoil one pair, but a quadratic step is over
the bound in every one. The sizes were checked by making one keyword quadratic
(``enum`` keys and ``properties`` names kept in a list): the test fails then.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import pytest

from dsh_codegen.schema import compile_validator

N = 20_000


def wide_required(n: int) -> dict[str, Any]:
    names = [f"p{i}" for i in range(n)]
    return {"type": "object", "properties": {name: {"type": "string"} for name in names}, "required": names}


def wide_required_open(n: int) -> dict[str, Any]:
    names = [f"p{i}" for i in range(n)]
    return {"type": "object", "properties": {"p0": {"type": "string", "minLength": 1}}, "required": names}


def wide_enum(n: int) -> dict[str, Any]:
    return {"type": "string", "enum": [f"v{i}" for i in range(n)]}


def wide_any_enum(n: int) -> dict[str, Any]:
    return {"enum": [[i, {"k": i}] for i in range(n)]}


def wide_dialect_properties(n: int) -> dict[str, Any]:
    return {"type": "object", "properties": {f"p{i}": {"type": ["integer", "null"], "minimum": 0} for i in range(n)}, "additionalProperties": False}


def deep_refs(n: int) -> dict[str, Any]:
    defs = {f"d{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/d{i + 1}"}}} for i in range(n)}
    defs[f"d{n}"] = {"type": "integer"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def _compile_time(schema: Any) -> float:
    """One compile, the collector paused (as timeit does: its pauses are not the algorithm's)."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        compile_validator(schema)
        return time.perf_counter() - start
    finally:
        gc.enable()


def _best_pair(build: Callable[[int], Any], n: int, rounds: int = 5) -> tuple[float, float]:
    """Best compile times at ``n`` and ``2 * n``, alternated so both sizes see the same machine."""
    small_schema, large_schema = build(n), build(2 * n)
    small = large = float("inf")
    for _ in range(rounds):
        small = min(small, _compile_time(small_schema))
        large = min(large, _compile_time(large_schema))
    return small, large


# Cheap keywords get larger inputs, costly ones smaller, so that every case takes tens of milliseconds:
# noise stays small, and the suite does not spend seconds on a case that a tenth of its size proves.
@pytest.mark.parametrize(
    ("build", "n"),
    [
        (wide_required, N),
        (wide_required_open, 5 * N),
        (wide_enum, 5 * N // 2),
        (wide_any_enum, N // 4),
        (wide_dialect_properties, N // 4),
        (deep_refs, N // 4),
    ],
)
def test_doubling_the_schema_at_most_triples_compile_time(build: Callable[[int], Any], n: int) -> None:
    pairs = []
    for _ in range(3):
        small, large = _best_pair(build, n)
        pairs.append(f"{small * 1e3:.1f} ms at {n}, {large * 1e3:.1f} ms at {2 * n}")
        if large <= 3 * small:
            return
    pytest.fail(f"{build.__name__}: every pair over 3x: " + "; ".join(pairs))
