"""Compiling is linear in schema size for every keyword: the time of a compile at 2n against n.

A quadratic step (``required`` checked against a list, say) makes the doubled
case about four times slower, a linear one about two. Each size is timed as the
best of five compiles, alternated so both sizes see the same machine, at sizes
where a compile takes tens of milliseconds on the compiled twin (so a quadratic
step costs milliseconds, not microseconds). The sizes were checked by making one
keyword quadratic (``enum`` keys and ``properties`` names kept in a list): its
row then reads about 4x. This was a test until issue 36; timing belongs here.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from dsh_codegen.schema import compile_validator

N = 20_000
#: The ratio above which a row is marked: between a linear step's 2x and a quadratic one's 4x.
BOUND = 3.0


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
    return {
        "type": "object",
        "properties": {f"p{i}": {"type": ["integer", "null"], "minimum": 0} for i in range(n)},
        "additionalProperties": False,
    }


def deep_refs(n: int) -> dict[str, Any]:
    defs = {f"d{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/d{i + 1}"}}} for i in range(n)}
    defs[f"d{n}"] = {"type": "integer"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


# Cheap keywords get larger inputs, costly ones smaller, so that every case takes tens of milliseconds.
CASES: list[tuple[Callable[[int], Any], int]] = [
    (wide_required, N),
    (wide_required_open, 5 * N),
    (wide_enum, 5 * N // 2),
    (wide_any_enum, N // 4),
    (wide_dialect_properties, N // 4),
    (deep_refs, N // 4),
]


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


def best_pair(build: Callable[[int], Any], n: int, rounds: int = 5) -> tuple[float, float]:
    """Best compile times at ``n`` and ``2 * n``, alternated so both sizes see the same machine."""
    small_schema, large_schema = build(n), build(2 * n)
    small = large = float("inf")
    for _ in range(rounds):
        small = min(small, _compile_time(small_schema))
        large = min(large, _compile_time(large_schema))
    return small, large


def main() -> None:
    print(
        f"compile time at 2n against n, the lowest of three pairs (a busy neighbour spoils one pair; a "
        f"quadratic step is over in every one): linear ~2x, quadratic ~4x; marked over {BOUND}x"
    )
    for build, n in CASES:
        small, large = min((best_pair(build, n) for _ in range(3)), key=lambda pair: pair[1] / pair[0])
        mark = "  <-- over the bound" if large > BOUND * small else ""
        print(
            f"  {build.__name__:<24} n={n:>7,}  {small * 1e3:8.1f} ms  2n {large * 1e3:8.1f} ms"
            f"  {large / small:5.2f}x{mark}"
        )
