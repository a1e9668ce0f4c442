"""Per-call cost of tracing (``dsh_codegen.otel``) and of the seam it stands on (``on_execute``).

The call is ``bench_registry``'s: one trivial ``echo5`` tool, arguments parsed
from the model's raw text by ``parse_call_arguments``, ``registry.execute``
awaited in a batch of 200 calls per sample. Rows, each in a worker process
of its own (so every tree and every variant has the same harness):

- ``base: dsh execute``: the tree before the seam (the parent of the commit
  that added ``on_execute``), and ``seam: dsh execute``: the tree of that
  commit, each exported from git into a scratch directory, with compiled
  twins: this checkout's when ``_ext/`` and the compiled sources are
  unchanged since, else built once from the tree's own sources (kept in
  ``build/bench-otel/``, by a hash of those sources). The seam's cost when nothing uses it is the seam
  row against the base row: the two trees differ by that commit alone;
- ``dsh execute``: this checkout, nothing instrumented (against the base row
  it also carries every later change to the call path);
- ``dsh execute + no-op on_execute hook``: a hook that returns ``None``
  (what the seam costs once something uses it);
- ``instrument(), API only``: ``dsh_codegen.otel.instrument`` with
  OpenTelemetry's no-op tracer provider (non-recording spans: the cost of
  the instrumentation's listeners and context switching alone);
- ``instrument(), SDK``: with the SDK's ``TracerProvider``, a
  ``SimpleSpanProcessor`` and the in-memory exporter (every span recorded,
  ended and exported; the exporter is cleared between samples).

The workers are sampled round-robin (one batch of each per round, 41 rounds
by default) and the median per call is reported, as ratios against the base
row and against this checkout's plain row. ``python -m bench.bench_otel
callgrind [VARIANT ...]`` counts instructions per call instead (valgrind's
callgrind, ``PYTHONHASHSEED=0``, a 1,200-call run less a 200-call run,
/1,000) for the rows of the named variants (``plain``, ``hook``,
``otel-api``, ``otel-sdk``; all when none is named).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._util import format_seconds

ROOT = Path(__file__).resolve().parents[1]
BATCH = 200
ROUNDS = int(os.environ.get("DSH_BENCH_OTEL_ROUNDS", "41"))
#: What a compiled twin is built from: the base tree may reuse this checkout's builds only if none changed.
COMPILED_SOURCES = ("_ext", "dsh_codegen/_schema_c.pxd")

# The worker: ``python -c WORKER <variant> [<calls>]``, with the tree under test first on the path (then
# this checkout, for ``bench``). With a call count it runs that many calls and exits (for callgrind);
# without one it reads batch sizes from stdin and answers each with the seconds the batch took. Written
# against names the base tree has too.
WORKER = r"""
import asyncio, gc, sys, time
from bench.bench_registry import RAW, echo5_tool
from dsh_codegen.registry import AbortController, ToolExecutionInput, ToolRegistry, ToolSuccess, parse_call_arguments

registry = ToolRegistry()
registry.register(echo5_tool())
variant = sys.argv[1]
exporter = None
if variant == "hook":
    registry.on_execute(lambda execution: None)
elif variant == "otel-api":
    from opentelemetry.trace import NoOpTracerProvider
    from dsh_codegen.otel import instrument
    instrument(registry, tracer_provider=NoOpTracerProvider())
elif variant == "otel-sdk":
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from dsh_codegen.otel import instrument
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(registry, tracer_provider=provider)
else:
    assert variant == "plain", variant
signal = AbortController().signal
loop = asyncio.new_event_loop()

async def calls(count):
    for _ in range(count):
        result = await registry.execute(ToolExecutionInput("c1", "echo5", parse_call_arguments(RAW), signal))
    assert type(result) is ToolSuccess, result

if len(sys.argv) > 2:
    loop.run_until_complete(calls(int(sys.argv[2]) + 1))
    sys.exit(0)
loop.run_until_complete(calls(50))
if exporter is not None:
    assert len(exporter.get_finished_spans()) == 50
    exporter.clear()
gc.collect()
gc.freeze()
for line in sys.stdin:
    count = int(line)
    gc.collect()
    gc.disable()
    start = time.perf_counter()
    loop.run_until_complete(calls(count))
    elapsed = time.perf_counter() - start
    gc.enable()
    if exporter is not None:
        exporter.clear()
    print(elapsed, flush=True)
"""

BASE = "base: dsh execute"
SEAM = "seam: dsh execute"
PLAIN = "dsh execute"
#: (row, tree, variant): the tree is ``base`` (before on_execute), ``seam`` (the commit that added it) or
#: ``head`` (this checkout).
ROWS = [
    (BASE, "base", "plain"),
    (SEAM, "seam", "plain"),
    (PLAIN, "head", "plain"),
    ("dsh execute + no-op on_execute hook", "head", "hook"),
    ("dsh execute, instrument(), API only", "head", "otel-api"),
    ("dsh execute, instrument(), SDK + in-memory exporter", "head", "otel-sdk"),
]


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def trees(scratch: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """The trees to measure: ``base`` and ``seam`` exported into ``scratch``, ``head`` this checkout.

    Returns their paths and short commits. All run compiled: the exported
    trees get this checkout's compiled twins when no compiled source changed
    since, else twins built from their own sources (see :func:`_built_twins`).
    """
    seam = _git("log", "-1", "--format=%H", "-S", "def on_execute", "--", "dsh_codegen/registry/_registry.py")
    if not seam:
        raise RuntimeError("no commit adds on_execute in this history")
    revs = {
        "base": _git("rev-parse", "--short", f"{seam}^"),
        "seam": _git("rev-parse", "--short", seam),
        "head": _git("rev-parse", "--short", "HEAD"),
    }
    for key in ("base", "seam"):
        _export(revs[key], scratch / key)
    return {"base": scratch / "base", "seam": scratch / "seam", "head": ROOT}, revs


def _export(rev: str, tree: Path) -> None:
    """``rev``'s ``dsh_codegen`` in ``tree``, with compiled twins built from ``rev``'s sources."""
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "dsh_codegen"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    if (
        subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", rev, "HEAD", "--", *COMPILED_SOURCES]).returncode
        == 0
    ):
        built_dir = ROOT / "dsh_codegen"
    else:
        built_dir = _built_twins(rev)
    for built in built_dir.glob("_*_c.*.so"):
        shutil.copy2(built, tree / "dsh_codegen" / built.name)


def _built_twins(rev: str) -> Path:
    """The compiled twins of ``rev`` (built in a scratch checkout of it the first time, then kept).

    Kept by what they are built from, so trees with the same compiled sources share one build.
    """
    sources = _git("ls-tree", "-r", rev, "--", *COMPILED_SOURCES)
    kept = ROOT / "build" / "bench-otel" / hashlib.sha256(sources.encode()).hexdigest()[:16]
    if any(kept.glob("_*_c.*.so")):
        return kept
    with tempfile.TemporaryDirectory(prefix="dsh-bench-otel-build-") as scratch:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", scratch], input=archive, check=True)
        print(f"building the compiled twins of {rev} (once; kept in {kept})", file=sys.stderr)
        subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=scratch,
            check=True,
            env=dict(os.environ, DSH_CODEGEN_REQUIRE_EXTENSIONS="1"),
            capture_output=True,
        )
        kept.mkdir(parents=True, exist_ok=True)
        for built in (Path(scratch) / "dsh_codegen").glob("_*_c.*.so"):
            shutil.copy2(built, kept / built.name)
    return kept


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(dict.fromkeys((str(tree), str(ROOT)))), PYTHONHASHSEED="0")
    env.pop("DSH_CODEGEN_PURE_PYTHON", None)
    return env


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-otel-") as scratch:
        paths, revs = trees(Path(scratch))
        workers: dict[str, subprocess.Popen[str]] = {}
        try:
            for name, key, variant in ROWS:
                tree = paths[key]
                workers[name] = subprocess.Popen(
                    [sys.executable, "-c", WORKER, variant],
                    cwd=tree,
                    env=_env(tree),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            samples: dict[str, list[float]] = {name: [] for name in workers}
            for _ in range(ROUNDS):
                for name, worker in workers.items():
                    assert worker.stdin is not None and worker.stdout is not None
                    worker.stdin.write(f"{BATCH}\n")
                    worker.stdin.flush()
                    samples[name].append(float(worker.stdout.readline()) / BATCH)
        finally:
            for worker in workers.values():
                if worker.stdin is not None:
                    worker.stdin.close()
                worker.wait(timeout=60)
    timed = {name: statistics.median(values) for name, values in samples.items()}
    title = f"otel: per-call time, trivial 5-property tool (median of {ROUNDS} round-robin batches)"
    print(title)
    print("-" * len(title))
    width = max(len(name) for name in timed)
    for name, value in timed.items():
        print(
            f"  {name:<{width}}  {format_seconds(value):>10}  {value / timed[BASE]:6.3f}x base"
            f"  {value / timed[PLAIN]:6.3f}x plain"
        )
    print(
        f"  base is {revs['base']} (before on_execute), seam {revs['seam']} (the commit adding it),"
        f" this checkout {revs['head']}"
    )


def callgrind(variants: list[str]) -> None:
    """Instructions per call of the rows whose variant is named (all rows when none is; see the docstring)."""
    with tempfile.TemporaryDirectory(prefix="dsh-bench-otel-") as scratch:
        paths, revs = trees(Path(scratch))
        counts: dict[str, float] = {}
        for name, key, variant in ROWS:
            if variants and variant not in variants:
                continue
            totals = []
            for calls in (200, 1200):
                done = subprocess.run(
                    [
                        "valgrind",
                        "--tool=callgrind",
                        "--callgrind-out-file=/dev/null",
                        sys.executable,
                        "-c",
                        WORKER,
                        variant,
                        str(calls),
                    ],
                    cwd=paths[key],
                    env=_env(paths[key]),
                    capture_output=True,
                    text=True,
                    check=True,
                )
                match = re.search(r"Collected : (\d+)", done.stderr)
                assert match is not None, done.stderr[-2000:]
                totals.append(int(match.group(1)))
            counts[name] = (totals[1] - totals[0]) / 1000
    print(
        f"otel: instructions per call (callgrind; base {revs['base']}, seam {revs['seam']},"
        f" this checkout {revs['head']})"
    )
    first = next(iter(counts.values()))
    for name, value in counts.items():
        print(f"  {name:<52} {value:>10,.0f}  {value / first:6.3f}x {next(iter(counts))}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["callgrind"]:
        callgrind(sys.argv[2:])
    else:
        main()
