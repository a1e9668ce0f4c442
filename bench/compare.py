"""Before/after: the same benchmark areas of two checkouts, run alternately on one machine.

``python -m bench.compare BEFORE AFTER [area ...] [--rounds N] [--python PY]``

``BEFORE`` and ``AFTER`` are checkouts of this repository, each with its extensions built in
place for ``PY`` (default: this interpreter), e.g. ``git worktree add --detach ../before <rev>``
and ``python setup.py build_ext --inplace`` there. Each round runs ``python -m bench <area>`` in
BEFORE, then in AFTER (the order flips every round, so neither side always runs on a warmer
machine), and the table gives, for every row both sides printed (matched by its table's title
and its name), the median of its per-round times on each side and AFTER / BEFORE. Rows of the
peers (orjson, jsonschema-rs, ...) are measured in both runs too: how far their ratio strays from
1.0 is the noise of the sitting. Rows only one side has are listed by name.

Only rows printed as ``<name>  <number> <unit>`` (``bench._util.ratio_table``) are read; a bench
that prints its own layout contributes nothing here.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

__all__ = ["main", "read_rows"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_ROW = re.compile(r"^ {2}(?P<name>\S.*?) {2,}(?P<value>\d+(?:\.\d+)?(?:e[+-]?\d+)?) (?P<unit>ns|us|ms|s)\b")


def read_rows(text: str) -> dict[tuple[str, str], float]:
    """The timed rows of a bench run's output: ``(table title, row name) -> seconds``."""
    rows: dict[tuple[str, str], float] = {}
    lines = text.splitlines()
    title = ""
    for index, line in enumerate(lines):
        if index + 1 < len(lines) and lines[index + 1].startswith("---") and line.strip():
            title = line.strip()
            continue
        match = _ROW.match(line)
        if match is not None:
            seconds = float(match["value"]) * _UNITS[match["unit"]]
            rows[(title, match["name"].strip())] = seconds
    return rows


def _run(tree: Path, area: str, python: str) -> dict[tuple[str, str], float]:
    done = subprocess.run([python, "-m", "bench", area], cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: python -m bench {area} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return read_rows(done.stdout)


def _fmt(seconds: float) -> str:
    for unit in ("s", "ms", "us"):
        if seconds >= _UNITS[unit]:
            return f"{seconds / _UNITS[unit]:.3g} {unit}"
    return f"{seconds / _UNITS['ns']:.3g} ns"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("areas", nargs="*", help="bench areas (default: every area AFTER has)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each side per area (default 2)")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    areas = args.areas or sorted(p.stem.removeprefix("bench_") for p in (args.after / "bench").glob("bench_*.py"))
    for area in areas:
        samples: dict[str, dict[tuple[str, str], list[float]]] = {"before": {}, "after": {}}
        for round_ in range(args.rounds):
            order = [("before", args.before), ("after", args.after)]
            for side, tree in order if round_ % 2 == 0 else reversed(order):
                for key, seconds in _run(tree, area, args.python).items():
                    samples[side].setdefault(key, []).append(seconds)
        print(f"\n=== {area} ({args.rounds} rounds each, alternated) ===")
        both = [key for key in samples["after"] if key in samples["before"]]
        title = None
        for key in both:
            if key[0] != title:
                title = key[0]
                print(f"{title}")
            before = statistics.median(samples["before"][key])
            after = statistics.median(samples["after"][key])
            print(f"  {key[1]:<48} {_fmt(before):>10} -> {_fmt(after):>10}  {after / before:6.2f}x")
        for side in ("before", "after"):
            other = "after" if side == "before" else "before"
            only = [key[1] for key in samples[side] if key not in samples[other]]
            if only:
                print(f"  only {side}: {', '.join(only)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
