"""Codegen benchmark: dsh_codegen's SDK renderers against json-schema-to-typescript
and datamodel-code-generator, on the shared ~60-tool catalog and a generated
catalog of 1,000 distinct tools (every name, description and enum value unique).

Python rows compare like with like: our file (written in black's style, no
formatter) against datamodel-code-generator with its formatters
(black, isort) and, separately, against datamodel-code-generator with
``formatters=[]``, each pair sampled alternately (the order flipped every round,
CPU time, the median of the per-round ratios). ``python -m bench.bench_codegen
instructions`` counts both sides' instructions for catalog60's file under callgrind
(load-independent). The cold rows time a first render in a fresh process (imports
included) against json-schema-to-typescript's first compile in a fresh node.

Measured side by side in one run (medians): the library in-process against each
peer in-process (node's own timer for json-schema-to-typescript, with and
without its prettier pass; ``generate()`` for datamodel-code-generator with
TypedDict output), then whole process to whole process (``python -m
dsh_codegen sdk`` against ``node`` and ``datamodel-codegen``). Every side runs
twice more as separate processes to check that its output is byte-identical
across runs. Peers that are not installed are reported as such, not skipped
silently: ``npm ci`` installs json-schema-to-typescript (package.json),
``pip install datamodel-code-generator`` (the ``bench`` extra) the other.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._util import format_seconds, median_time, ratio_table
from dsh_codegen.codegen import (
    ToolSchemaEntry,
    load_catalog,
    render_py_sdk,
    render_sdk_module,
    render_ts_sdk,
)

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "catalog60.json"
JSTT = ROOT / "node_modules" / "json-schema-to-typescript"

# The peer gets the whole catalog as one schema (one property per tool's
# arguments and output), the fairest match for "render the catalog's types".
_NODE_SCRIPT = r"""
const { compile } = require(process.env.JSTT_PATH);
const fs = require("fs");
const crypto = require("crypto");
const [file, format, repeat, outFile] = process.argv.slice(2);
const catalog = JSON.parse(fs.readFileSync(file, "utf8"));
const props = {};
for (const t of catalog) {
  props[t.name + "_args"] = t.parameters;
  if (t.output_schema != null) props[t.name + "_output"] = t.output_schema;
}
const schema = { title: "Catalog", type: "object", properties: props, additionalProperties: false };
(async () => {
  const times = [];
  let out = "";
  // Untimed warm-up when timing in-process, so the JIT is warm as our side is
  // (median_time calibrates ours over many calls): at least 5 runs and 1.5 s.
  const warmStart = performance.now();
  for (let i = 0; Number(repeat) > 1 && i < 50 && (i < 5 || performance.now() - warmStart < 1500); i++) {
    await compile(JSON.parse(JSON.stringify(schema)), "Catalog", { format: format === "1", bannerComment: "" });
  }
  for (let i = 0; i < Number(repeat); i++) {
    const copy = JSON.parse(JSON.stringify(schema));
    const start = performance.now();
    out = await compile(copy, "Catalog", { format: format === "1", bannerComment: "" });
    times.push((performance.now() - start) / 1000);
  }
  times.sort((a, b) => a - b);
  if (outFile) fs.writeFileSync(outFile, out);
  console.log(JSON.stringify({ median: times[times.length >> 1],
    sha: crypto.createHash("sha256").update(out).digest("hex") }));
})();
"""


def _distinct(value: object, suffix: str) -> object:
    """``value`` with every property name, required name, description and string enum
    value made unique by ``suffix``: no text repeats across copies of a tool."""
    if isinstance(value, list):
        return [_distinct(item, suffix) for item in value]
    if not isinstance(value, dict):
        return value
    result: dict[str, object] = {}
    for key, child in value.items():
        if key == "properties" and isinstance(child, dict):
            result[key] = {f"{name}{suffix}": _distinct(sub, suffix) for name, sub in child.items()}
        elif key == "required" and isinstance(child, list):
            result[key] = [f"{name}{suffix}" for name in child]
        elif key == "description" and isinstance(child, str):
            result[key] = f"{child} ({suffix})"
        elif key == "enum" and isinstance(child, list):
            result[key] = [f"{item}{suffix}" if isinstance(item, str) else item for item in child]
        else:
            result[key] = _distinct(child, suffix)
    return result


def _distinct_catalog(base: list[ToolSchemaEntry], count: int) -> list[ToolSchemaEntry]:
    """``count`` tools cycling through ``base``, each copy with its own names and texts
    (separate objects too): what a real large catalog looks like to the renderers'
    caches, unlike copies renamed alone, which repeat every member."""
    entries = []
    for i in range(count):
        entry = base[i % len(base)]
        suffix = f"_{i:04d}"
        entries.append(
            ToolSchemaEntry(
                f"{entry.name}{suffix}",
                f"{entry.description} ({suffix})",
                _distinct(entry.parameters, suffix),
                _distinct(entry.output_schema, suffix),
            )
        )
    return entries


def _clear_caches() -> None:
    """Empty the TypeScript renderer's text caches (a first render in a fresh process)."""
    from dsh_codegen.codegen import _ts_types

    clear = getattr(_ts_types, "clear_caches", None)
    if clear is not None:
        clear()


def _write_catalog(catalog: list[ToolSchemaEntry], path: Path) -> None:
    items = [
        {"name": e.name, "description": e.description, "parameters": e.parameters, "output_schema": e.output_schema}
        for e in catalog
    ]
    path.write_text(json.dumps(items), encoding="utf-8")


def _combined_schema(catalog: list[ToolSchemaEntry]) -> dict[str, object]:
    props: dict[str, object] = {}
    for entry in catalog:
        props[f"{entry.name}_args"] = entry.parameters
        if entry.output_schema is not None:
            props[f"{entry.name}_output"] = entry.output_schema
    return {"title": "Catalog", "type": "object", "properties": props, "additionalProperties": False}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wall(
    argv: list[str], repeat: int, env: dict[str, str] | None = None, *, reports_sha: bool = False
) -> tuple[float, str]:
    """Median wall seconds of a whole process, and whether its output was the same every run.

    The output is stdout, or (``reports_sha``) the ``sha`` the node script prints.
    """
    times, digests = [], set()
    for _ in range(repeat):
        start = time.perf_counter()
        result = subprocess.run(argv, capture_output=True, env=env, timeout=900, check=True)
        times.append(time.perf_counter() - start)
        digests.add(json.loads(result.stdout)["sha"] if reports_sha else _sha(result.stdout))
    return statistics.median(times), "yes" if len(digests) == 1 else f"NO ({len(digests)} different outputs)"


def _node() -> str | None:
    node = shutil.which("node")
    return node if node and JSTT.is_dir() else None


def _jstt(node: str, script: Path, catalog_file: Path, fmt: bool, repeat: int) -> dict[str, object]:
    env = {**os.environ, "JSTT_PATH": str(JSTT)}
    result = subprocess.run(
        [node, str(script), str(catalog_file), "1" if fmt else "0", str(repeat)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=True,
    )
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _dcg_generate(schema_text: str, formatted: bool = True) -> str:
    from datamodel_code_generator import DataModelType, InputFileType, generate

    options: dict[str, object] = {} if formatted else {"formatters": []}
    out = generate(
        schema_text,
        input_file_type=InputFileType.JsonSchema,
        output_model_type=DataModelType.TypingTypedDict,
        **options,
    )  # type: ignore[arg-type]
    assert isinstance(out, str)
    return out


_COLD_SCRIPT = """
import sys, time
start = time.perf_counter()
from dsh_codegen.codegen import load_catalog, render_ts_sdk
catalog = load_catalog(sys.argv[1])
loaded = time.perf_counter()
render_ts_sdk(catalog)
print(time.perf_counter() - loaded)
"""


def _cold_ours(catalog_file: Path, repeat: int) -> float:
    """Median first render (import of the codegen layer excluded, of the TypeScript writer
    included) in a fresh interpreter: what the first tools:sdk section of a process costs."""
    # Bytecode written and current, as in an installed wheel (pip compiles it at install): with
    # PYTHONDONTWRITEBYTECODE set (some sandboxes and CI images set it) and a source newer than its
    # .pyc, every "cold" run would also compile the codegen modules from source, which no
    # user's first render pays. One untimed run writes them.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    times = []
    for index in range(repeat + 1):
        result = subprocess.run(
            [sys.executable, "-c", _COLD_SCRIPT, str(catalog_file)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
            env=env,
        )
        if index:
            times.append(float(result.stdout.strip()))
    return statistics.median(times)


def _cold_peer(node: str, script: Path, catalog_file: Path, repeat: int) -> float:
    """Median first compile of json-schema-to-typescript in a fresh node (no warm-up)."""
    return statistics.median(float(_jstt(node, script, catalog_file, False, 1)["median"]) for _ in range(repeat))  # type: ignore[arg-type]


def _speedups(title: str, rows: list[tuple[str, float | str]], ours: list[str], peers: list[str]) -> str:
    values = dict(rows)
    lines = [f"  speed-up ({title}):"]
    for peer in peers:
        base = values.get(peer)
        if not isinstance(base, float):
            continue
        for name in ours:
            mine = values.get(name)
            if isinstance(mine, float) and mine > 0:
                lines.append(f"    {name} is {base / mine:7.1f}x faster than {peer}")
    return "\n".join(lines)


def _render_cold(catalog: list[ToolSchemaEntry]) -> str:
    _clear_caches()
    return render_ts_sdk(catalog)


def _library_ts(label: str, catalog: list[ToolSchemaEntry], catalog_file: Path, script: Path, slow: bool) -> None:
    rows: list[tuple[str, float | str]] = [
        ("render_ts_sdk", median_time(lambda: render_ts_sdk(catalog), repeat=7)),
        ("render_ts_sdk (caches cleared)", median_time(lambda: _render_cold(catalog), repeat=7)),
        ("render_sdk_module(ts)", median_time(lambda: render_sdk_module(catalog, "typescript"), repeat=7)),
    ]
    rows.append(("render_ts_sdk, cold (fresh process)", _cold_ours(catalog_file, 5)))
    node = _node()
    peers = [
        "json-schema-to-typescript (no format)",
        "json-schema-to-typescript (prettier)",
        "json-schema-to-typescript, cold (fresh node)",
    ]
    if node is None:
        rows += [(peer, "not installed (npm ci)") for peer in peers]
    else:
        rows.append((peers[0], float(_jstt(node, script, catalog_file, False, 7)["median"])))  # type: ignore[arg-type]
        rows.append((peers[1], float(_jstt(node, script, catalog_file, True, 3 if slow else 5)["median"])))  # type: ignore[arg-type]
        rows.append((peers[2], _cold_peer(node, script, catalog_file, 5)))
    print(ratio_table(f"TypeScript, in-process, {label}", rows, baseline=peers[0]))
    print(
        _speedups(
            "in-process, warm",
            rows,
            ["render_ts_sdk", "render_ts_sdk (caches cleared)", "render_sdk_module(ts)"],
            peers[:2],
        )
    )
    print(_speedups("cold against cold", rows, ["render_ts_sdk, cold (fresh process)"], peers[2:]))


def _paired_ratios(ours: Callable[[], object], peer: Callable[[], object], rounds: int) -> tuple[float, float, float]:
    """Median seconds per call of ``ours`` and ``peer`` and the median of the per-round
    ratios ``peer / ours``, sampled the same way for both sides: the two alternate
    sample by sample, the order flipped every round, the collector paused per sample.
    CPU time (``time.process_time``), so the other processes on the machine count
    less than in wall time. Ours is much faster, so its sample is as many calls as
    last about one peer call (at least one); a round's ratio compares two samples
    taken within a second of each other. One untimed warm-up pair first.
    """
    ours()
    start = time.process_time()
    peer()
    peer_once = max(time.process_time() - start, 1e-6)
    start = time.process_time()
    ours()
    loops = max(1, min(1000, int(peer_once / max(time.process_time() - start, 1e-6))))
    mine: list[float] = []
    theirs: list[float] = []
    ratios: list[float] = []
    for index in range(rounds):
        sample: dict[str, float] = {}
        for side in ("ours", "peer") if index % 2 == 0 else ("peer", "ours"):
            fn, count = (ours, loops) if side == "ours" else (peer, 1)
            gc.disable()
            try:
                start = time.process_time()
                for _ in range(count):
                    fn()
                sample[side] = (time.process_time() - start) / count
            finally:
                gc.enable()
        mine.append(sample["ours"])
        theirs.append(sample["peer"])
        ratios.append(sample["peer"] / max(sample["ours"], 1e-9))
    return statistics.median(mine), statistics.median(theirs), statistics.median(ratios)


def _cpu_time(fn: Callable[[], object], samples: int = 7) -> float:
    """Median CPU seconds per call of ``fn`` (samples of at least ~50 ms, collector paused)."""
    return median_time(fn, repeat=samples, clock=time.process_time)


def _library_py(label: str, catalog: list[ToolSchemaEntry], slow: bool) -> None:
    # Our file needs no formatter (it is written in black's style), so the same call is
    # compared with the peer formatted and with the peer unformatted, each pair sampled
    # alternately (_paired_ratios).
    # The table's times are CPU time (process_time), the file's from its pairing with the
    # unformatted peer; the speed-up lines below are the pairs' per-round medians.
    rows: list[tuple[str, float | str]] = [
        ("render_py_sdk", _cpu_time(lambda: render_py_sdk(catalog))),
        ("render_sdk_module(py)", _cpu_time(lambda: render_sdk_module(catalog, "python"))),
    ]
    peers = ["datamodel-code-generator (TypedDict, black+isort)", "datamodel-code-generator (TypedDict, formatters=[])"]
    pairs: list[str] = []
    try:
        import datamodel_code_generator  # noqa: F401
    except ImportError:
        rows += [(peer, "not installed (pip install datamodel-code-generator)") for peer in peers]
    else:
        schema_text = json.dumps(_combined_schema(catalog))
        rounds = 3 if slow else 9
        for peer, formatted in zip(peers, (True, False), strict=True):
            mine, theirs, ratio = _paired_ratios(
                lambda: render_sdk_module(catalog, "python"), lambda: _dcg_generate(schema_text, formatted), rounds
            )
            rows.append((peer, theirs))
            if not formatted:
                rows[1] = ("render_sdk_module(py)", mine)
            pairs.append(
                f"    render_sdk_module(py) {format_seconds(mine)} vs {peer} {format_seconds(theirs)}: "
                f"{ratio:.1f}x faster (median of {rounds} alternating rounds' ratios, CPU time)"
            )
    print(ratio_table(f"Python, in-process, {label}", rows, baseline=peers[1]))
    if pairs:
        print("  speed-up (in-process, file against file, paired; formatted peer, then unformatted):")
        print("\n".join(pairs))
    print(_speedups("in-process, prompt text", rows, ["render_py_sdk"], peers[1:]))


def _whole_process(
    label: str, catalog: list[ToolSchemaEntry], catalog_file: Path, schema_file: Path, script: Path, repeat: int
) -> None:
    python = [sys.executable, "-m", "dsh_codegen", "sdk", "--catalog", str(catalog_file)]
    ts_rows: list[tuple[str, float | str]] = []
    checks: list[tuple[str, str]] = []
    seconds, same = _wall(python + ["--lang", "ts"], repeat)
    ts_rows.append(("dsh-codegen sdk --lang ts", seconds))
    checks.append(("dsh-codegen sdk --lang ts", same))
    node = _node()
    peers = ["node json-schema-to-typescript (no format)", "node json-schema-to-typescript (prettier)"]
    if node is None:
        ts_rows += [(peer, "not installed (npm ci)") for peer in peers]
    else:
        env = {**os.environ, "JSTT_PATH": str(JSTT)}
        for peer, fmt in zip(peers, ("0", "1"), strict=True):
            seconds, same = _wall([node, str(script), str(catalog_file), fmt, "1"], repeat, env, reports_sha=True)
            ts_rows.append((peer, seconds))
            checks.append((peer, same))
    print(ratio_table(f"TypeScript, whole process, {label}", ts_rows, baseline=peers[0]))
    print(_speedups("whole process", ts_rows, ["dsh-codegen sdk --lang ts"], peers))
    py_rows: list[tuple[str, float | str]] = []
    seconds, same = _wall(python + ["--lang", "py"], repeat)
    py_rows.append(("dsh-codegen sdk --lang py", seconds))
    checks.append(("dsh-codegen sdk --lang py", same))
    peer = "datamodel-codegen (TypedDict)"
    dcg = shutil.which("datamodel-codegen", path=str(Path(sys.executable).parent)) or shutil.which("datamodel-codegen")
    if dcg is None:
        py_rows.append((peer, "not installed (pip install datamodel-code-generator)"))
    else:
        seconds, same = _wall(
            [
                dcg,
                "--input",
                str(schema_file),
                "--input-file-type",
                "jsonschema",
                "--output-model-type",
                "typing.TypedDict",
            ],
            repeat,
        )
        py_rows.append((peer, seconds))
        checks.append((peer, same))
    print(ratio_table(f"Python, whole process, {label}", py_rows, baseline=peer))
    print(_speedups("whole process", py_rows, ["dsh-codegen sdk --lang py"], [peer]))
    print(f"byte-identical output across {repeat} runs, {label}:")
    for name, same in checks:
        print(f"  {name:<45} {same}")


def _determinism_in_process(catalog: list[ToolSchemaEntry]) -> None:
    renders: list[Callable[[], str]] = [
        lambda: render_ts_sdk(catalog),
        lambda: render_py_sdk(catalog),
        lambda: render_sdk_module(catalog, "typescript"),
    ]
    same = all(len({_sha(render().encode()) for _ in range(3)}) == 1 for render in renders)
    reordered = list(reversed(catalog))
    same = (
        same
        and render_ts_sdk(reordered) == render_ts_sdk(catalog)
        and render_py_sdk(reordered) == render_py_sdk(catalog)
    )
    print(f"in-process renders identical across repeats and input orders: {'yes' if same else 'NO'}")


def main() -> None:
    base = load_catalog(DATA)
    distinct = _distinct_catalog(base, 1000)
    with tempfile.TemporaryDirectory(prefix="dsh-bench-codegen-") as tmp:
        root = Path(tmp)
        script = root / "jstt.cjs"
        script.write_text(_NODE_SCRIPT, encoding="utf-8")
        for label, catalog, slow in (("catalog60 (61 tools)", base, False), ("1,000 distinct tools", distinct, True)):
            catalog_file = root / f"catalog_{len(catalog)}.json"
            _write_catalog(catalog, catalog_file)
            schema_file = root / f"schema_{len(catalog)}.json"
            schema_file.write_text(json.dumps(_combined_schema(catalog)), encoding="utf-8")
            print(f"\n--- {label} ---")
            _determinism_in_process(catalog)
            _library_ts(label, catalog, catalog_file, script, slow)
            _library_py(label, catalog, slow)
            _whole_process(label, catalog, catalog_file, schema_file, script, repeat=3)
    print(
        "\n(ratios: below 1.0 is faster than the baseline; interpreter start-up (~15-35 ms) and the imports of"
        " dsh_codegen are inside the whole-process figures; the cold figures load the TypeScript writer;"
        " `python -m bench.bench_codegen instructions` counts the Python file's instructions against the peer's)"
    )


def _count(side: str, calls: int) -> None:
    """``python -m bench.bench_codegen count SIDE N`` (run under callgrind by :func:`instructions`):
    one warm-up render of catalog60's Python file by SIDE (``ours``: ``render_sdk_module(c,
    "python")``; ``peer``: datamodel-code-generator ``formatters=[]``), then N more."""
    catalog = load_catalog(DATA)
    schema_text = json.dumps(_combined_schema(catalog))
    render: Callable[[], object] = (
        (lambda: render_sdk_module(catalog, "python"))
        if side == "ours"
        else (lambda: _dcg_generate(schema_text, False))
    )
    for _ in range(calls + 1):
        render()


def _collected(side: str, calls: int) -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-bench-callgrind-") as tmp:
        result = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                sys.executable,
                "-m",
                "bench.bench_codegen",
                "count",
                side,
                str(calls),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=3600,
            check=True,
        )
    for line in result.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"no callgrind total in the output of {side} x{calls}: {result.stderr[-300:]}")


def instructions() -> None:
    """``python -m bench.bench_codegen instructions``: instructions per Python SDK file of
    catalog60, ours against datamodel-code-generator (``formatters=[]``), each the difference
    between a run with N renders and one with none (start-up and the warm-up cancel out), so
    the ratio does not depend on the machine's load. Takes a few minutes (the peer under
    valgrind is slow); needs ``valgrind`` on PATH."""
    if shutil.which("valgrind") is None:
        print("instructions: needs valgrind on PATH")
        return
    per_call = {}
    for side, calls in (("ours", 4), ("peer", 1)):
        per_call[side] = (_collected(side, calls) - _collected(side, 0)) / calls
    print(
        f"instructions per Python SDK file, catalog60: render_sdk_module(py) {per_call['ours'] / 1e6:.1f} M, "
        f"datamodel-code-generator (formatters=[]) {per_call['peer'] / 1e6:.1f} M: "
        f"{per_call['peer'] / per_call['ours']:.1f}x fewer"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["count"]:
        _count(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["instructions"]:
        instructions()
    else:
        main()
