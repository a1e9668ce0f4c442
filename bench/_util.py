"""Small timing helpers shared by the benchmark modules.

Every figure is a median over repeated samples, measured side by side in one
run, and reported as a ratio against a named baseline.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["median_time", "ratio_table", "format_seconds"]


def median_time(
    fn: Callable[[], object],
    *,
    repeat: int = 7,
    min_sample_s: float = 0.05,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Median seconds per call of ``fn``, read on ``clock`` (wall time unless told).

    Each sample runs ``fn`` enough times to last at least ``min_sample_s`` (the
    loop count is calibrated once), with the garbage collector paused during
    the sample, as ``timeit`` does.
    """
    fn()  # warm-up (also surfaces errors before timing)
    loops = 1
    while True:
        start = clock()
        for _ in range(loops):
            fn()
        elapsed = clock() - start
        if elapsed >= min_sample_s or loops >= 1 << 20:
            break
        loops *= 2 if elapsed <= 0 else max(2, min(10, int(min_sample_s / elapsed) + 1))
    samples = []
    for _ in range(repeat):
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            start = clock()
            for _ in range(loops):
                fn()
            samples.append((clock() - start) / loops)
        finally:
            if gc_was_enabled:
                gc.enable()
    return statistics.median(samples)


def format_seconds(seconds: float) -> str:
    """Human units: ns, us, ms or s with three significant digits."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def ratio_table(title: str, rows: Sequence[tuple[str, float | str]], *, baseline: str) -> str:
    """Render ``rows`` (name, seconds or a failure text) with ratios to ``baseline``.

    A ratio below 1.0 means faster than the baseline.
    """
    base = dict(rows).get(baseline)
    width = max(len(name) for name, _ in rows)
    lines = [title, "-" * len(title)]
    for name, value in rows:
        if isinstance(value, str):
            lines.append(f"  {name:<{width}}  {value}")
            continue
        ratio = f"{value / base:8.3f}x" if isinstance(base, float) and base > 0 else "       -"
        lines.append(f"  {name:<{width}}  {format_seconds(value):>10}  {ratio} vs {baseline}")
    return "\n".join(lines)
