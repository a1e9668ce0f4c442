"""Run the benchmarks: ``python -m bench`` (all) or ``python -m bench json schema``."""

from __future__ import annotations

import importlib
import platform
import sys
from pathlib import Path


def _areas() -> list[str]:
    here = Path(__file__).resolve().parent
    return sorted(path.stem.removeprefix("bench_") for path in here.glob("bench_*.py"))


def main(argv: list[str]) -> int:
    import dsh_codegen

    known = _areas()
    chosen = argv or known
    unknown = [name for name in chosen if name not in known]
    if unknown:
        print(f"unknown benchmark area(s): {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    print(
        f"dsh_codegen {dsh_codegen.__version__}, backend {dsh_codegen.backend()}, "
        f"Python {platform.python_version()}, {platform.machine()}"
    )
    for name in chosen:
        print(f"\n=== {name} ===")
        importlib.import_module(f"bench.bench_{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
