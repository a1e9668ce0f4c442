"""Lossless JSON: parse, snapshot and render against their peers, side by side.

Payloads (generated deterministically, no files): a ~1 MB typical tool result
(a file listing, grep matches and nested records), a 100,000-key object and a
100,000-deep value. Peers: ``copy.deepcopy``, a ``json`` round trip, an
``orjson`` round trip and ``msgspec.json`` decode(encode) for the snapshot;
``json.dumps(indent=2)`` and ``orjson`` ``OPT_INDENT_2`` for the renderer,
``orjson`` ``OPT_SORT_KEYS`` for the canonical writer.
The parser (``parse_json``, text to frozen value) runs first, on the
5-field argument text of a typical tool call and on the ~1 MB tool result's
compact text, against ``json.loads``, ``json.loads`` + ``snapshot_json``
(what the registry did before), ``orjson.loads`` and ``msgspec.json.decode``.
Both twins of ours run in the same process (the compiled one imported
directly), so the table does not depend on ``DSH_CODEGEN_PURE_PYTHON``.
Optional peers that are not installed are reported as such. Peers are sampled
round-robin (see ``_interleaved``) so that a shared machine's load affects
them alike.
"""

from __future__ import annotations

import copy
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from bench._util import ratio_table
from dsh_codegen.json import _json_py

__all__ = ["ARGUMENTS_TEXT", "main", "tool_result_payload", "wide_payload", "deep_payload"]

#: The argument text of a typical model-emitted tool call (five fields).
ARGUMENTS_TEXT = '{"a": "hello", "b": 42, "c": 2.5, "d": true, "e": ["x", "y", "z"]}'


def _optional(name: str) -> ModuleType | None:
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


orjson = _optional("orjson")
msgspec_json = _optional("msgspec.json")
_json_c = _optional("dsh_codegen._json_c")


def tool_result_payload(target_bytes: int = 1_000_000) -> dict[str, Any]:
    """A realistic tool result of about ``target_bytes`` of compact JSON."""
    rng = random.Random(20260101)
    words = ["alpha", "beta", "gamma", "delta", "config", "handler", "request", "value", "TODO", "naïve", "日本"]
    dirs = ["src", "lib", "tests", "docs", "pkg/util", "internal/api", "cmd/tool"]
    files: list[dict[str, Any]] = []
    matches: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    result: dict[str, Any] = {
        "tool": "workspace_scan",
        "ok": True,
        "elapsed_ms": 1234.5,
        "files": files,
        "matches": matches,
        "records": records,
        "truncated": False,
        "cursor": None,
    }
    size = 0
    i = 0
    while size < target_bytes:
        i += 1
        path = f"{rng.choice(dirs)}/{rng.choice(words)}_{i}.py"
        files.append(
            {
                "path": path,
                "size": rng.randrange(10, 200_000),
                "mtime": 1_700_000_000 + rng.randrange(0, 10_000_000),
                "executable": rng.random() < 0.1,
                "tags": rng.sample(words, 2),
            }
        )
        line = " ".join(rng.choice(words) for _ in range(rng.randrange(4, 14)))
        matches.append(
            {
                "path": path,
                "line": rng.randrange(1, 5000),
                "column": rng.randrange(0, 80),
                "text": f'    {line} = "{rng.choice(words)}"\t# note',
                "submatches": [{"start": 4, "end": 9, "match": {"text": line[:5]}}],
            }
        )
        if i % 4 == 0:
            records.append(
                {
                    "id": i,
                    "score": round(rng.random(), 6),
                    "owner": {"name": rng.choice(words), "team": {"id": rng.randrange(100), "labels": [1, 2.5, None]}},
                    "history": [{"at": j, "delta": rng.randrange(-50, 50)} for j in range(3)],
                }
            )
        if i % 16 == 0:
            size = len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
    return result


def wide_payload(keys: int = 100_000) -> dict[str, Any]:
    """An object with ``keys`` members of mixed scalar values."""
    return {f"key_{i:06d}": (i if i % 3 == 0 else f"v{i}" if i % 3 == 1 else i / 7) for i in range(keys)}


def deep_payload(depth: int = 100_000) -> Any:
    """A value nested ``depth`` levels, alternating objects and arrays."""
    value: Any = [1]
    for level in range(depth - 1):
        value = {"k": value} if level % 2 else [value]
    return value


def _failure(fn: Callable[[], object]) -> str | None:
    """How ``fn`` fails (it runs once), or ``None`` when it works."""
    try:
        fn()
    except RecursionError:
        return "fails: RecursionError"
    except Exception as exc:  # report how a peer fails, never stop the run
        return f"fails: {type(exc).__name__}: {str(exc)[:60]}"
    return None


def _interleaved(rows: list[tuple[str, Callable[[], object]]], *, samples: int = 9) -> list[tuple[str, float | str]]:
    """Median seconds per call for each row, sampled round-robin.

    The machine this runs on is shared: sampling the peers in turn, rather than
    one after the other, exposes them all to the same load, so the ratios hold
    even when the absolute figures drift. Each sample lasts about 20 ms.
    """
    results: dict[str, float | str] = {}
    loops: dict[str, int] = {}
    for name, fn in rows:
        failure = _failure(fn)
        if failure is not None:
            results[name] = failure
            continue
        # Calibrate: one call's duration, then enough calls for ~20 ms.
        start = time.perf_counter()
        fn()
        once = max(time.perf_counter() - start, 1e-7)
        loops[name] = max(1, min(10_000, int(0.02 / once)))
    timings: dict[str, list[float]] = {name: [] for name in loops}
    live = [(name, fn) for name, fn in rows if name in loops]
    for _ in range(samples):
        for name, fn in live:
            count = loops[name]
            gc.disable()
            try:
                start = time.perf_counter()
                for _ in range(count):
                    fn()
                timings[name].append((time.perf_counter() - start) / count)
            finally:
                gc.enable()
    for name, values in timings.items():
        results[name] = statistics.median(values)
    return [(name, results[name]) for name, _ in rows]


def _paired(ours: Callable[[], object], peer: Callable[[], object], *, rounds: int = 31) -> tuple[float, float]:
    """Median seconds per call of ``ours`` and ``peer``, sampled as alternating pairs.

    The fair comparison the issue asks for: the same payload object, the two
    functions alternating sample by sample (each sample ~5 ms, the collector
    paused), nothing heavier run between them, so both meet the same caches and
    the same load. The first pair is a warm-up.
    """
    loops = []
    for fn in (ours, peer):
        start = time.perf_counter()
        fn()
        loops.append(max(1, min(10_000, int(0.005 / max(time.perf_counter() - start, 1e-7)))))
    samples: tuple[list[float], list[float]] = ([], [])
    fns = (ours, peer)
    for index in range(rounds + 1):
        for slot in (0, 1) if index % 2 == 0 else (1, 0):
            fn, count = fns[slot], loops[slot]
            gc.disable()
            try:
                start = time.perf_counter()
                for _ in range(count):
                    fn()
                elapsed = (time.perf_counter() - start) / count
            finally:
                gc.enable()
            if index:
                samples[slot].append(elapsed)
    return statistics.median(samples[0]), statistics.median(samples[1])


def _fair_section(name: str, payload: Any) -> None:
    """Ours against orjson in alternating pairs, with the bytes each writes."""
    if _json_c is None or orjson is None:
        print(f"fair pairs, {name}: needs the compiled twin and orjson")
        return
    opt = orjson.OPT_INDENT_2
    pretty = _json_c.render_json_pretty(payload)
    peer_text = orjson.dumps(payload, option=opt)
    canonical = _json_c.dump_canonical_json(payload)
    lines = [f"fair pairs, {name} (alternating ~5 ms samples, medians of 31 each)"]
    lines.append("-" * len(lines[0]))
    pairs = [
        (
            "render_json_pretty vs orjson OPT_INDENT_2 .decode()",
            lambda: _json_c.render_json_pretty(payload),
            lambda: orjson.dumps(payload, option=opt).decode(),
            f"bytes {len(pretty.encode()):,} vs {len(peer_text):,}",
        ),
        (
            "dump_canonical_json vs orjson OPT_SORT_KEYS .decode()",
            lambda: _json_c.dump_canonical_json(payload),
            lambda: orjson.dumps(payload, option=orjson.OPT_SORT_KEYS).decode(),
            f"bytes {len(canonical.encode()):,} vs {len(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)):,}",
        ),
        (
            "snapshot_json (freeze) vs orjson loads(dumps)",
            lambda: _json_c.snapshot_json(payload),
            lambda: orjson.loads(orjson.dumps(payload)),
            "",
        ),
    ]
    for label, ours, peer, size in pairs:
        a, b = _paired(ours, peer)
        lines.append(f"  {label:<54} {a * 1e3:8.3f} ms vs {b * 1e3:8.3f} ms = {a / b:5.2f}x  {size}")
    print("\n".join(lines))


def _snapshot_rows(payload: Any) -> list[tuple[str, float | str]]:
    rows: list[tuple[str, Callable[[], object]]] = []
    missing: list[tuple[str, float | str]] = []
    if _json_c is not None:
        rows.append(("snapshot_json compiled (freeze)", lambda: _json_c.snapshot_json(payload)))
        rows.append(("snapshot_json compiled (no freeze)", lambda: _json_c.snapshot_json(payload, freeze=False)))
    rows.append(("snapshot_json pure (freeze)", lambda: _json_py.snapshot_json(payload)))
    rows.append(("copy.deepcopy", lambda: copy.deepcopy(payload)))
    rows.append(("json loads(dumps)", lambda: json.loads(json.dumps(payload))))
    if orjson is not None:
        rows.append(("orjson loads(dumps)", lambda: orjson.loads(orjson.dumps(payload))))
    else:
        missing.append(("orjson loads(dumps)", "not installed"))
    if msgspec_json is not None:
        rows.append(("msgspec decode(encode)", lambda: msgspec_json.decode(msgspec_json.encode(payload))))
    else:
        missing.append(("msgspec decode(encode)", "not installed"))
    return _interleaved(rows) + missing


def _parse_rows(text: str) -> list[tuple[str, float | str]]:
    rows: list[tuple[str, Callable[[], object]]] = []
    missing: list[tuple[str, float | str]] = []
    if _json_c is not None:
        rows.append(("parse_json compiled", lambda: _json_c.parse_json(text)))
    rows.append(("parse_json pure", lambda: _json_py.parse_json(text)))
    rows.append(("json.loads", lambda: json.loads(text)))
    snapshot = _json_c.snapshot_json if _json_c is not None else _json_py.snapshot_json
    rows.append(("json.loads + snapshot_json", lambda: snapshot(json.loads(text))))
    if orjson is not None:
        rows.append(("orjson.loads", lambda: orjson.loads(text)))
    else:
        missing.append(("orjson.loads", "not installed"))
    if msgspec_json is not None:
        rows.append(("msgspec.json.decode", lambda: msgspec_json.decode(text)))
    else:
        missing.append(("msgspec.json.decode", "not installed"))
    return _interleaved(rows) + missing


def _parse_section() -> None:
    """parse_json on a tool call's arguments and on the ~1 MB result text."""

    def ratio(rows: dict[str, float | str], name: str, base: str) -> str:
        a, b = rows.get(name), rows.get(base)
        return f"{a / b:.2f}" if isinstance(a, float) and isinstance(b, float) and b > 0 else "n/a"

    texts = [
        ("5-field arguments", ARGUMENTS_TEXT),
        ("~1 MB tool result", json.dumps(tool_result_payload(), separators=(",", ":"), ensure_ascii=False)),
    ]
    for name, text in texts:
        print(f"\n##### parse, {name}: {len(text.encode()):,} bytes\n")
        rows = _parse_rows(text)
        print(ratio_table(f"parse, {name}", rows, baseline="json.loads"))
        table = dict(rows)
        print()
        print("targets (compiled twin):")
        print(
            f"  parse_json / json.loads                 = {ratio(table, 'parse_json compiled', 'json.loads')}  (target < 1)"
        )
        print(
            f"  parse_json / (json.loads + snapshot)    = {ratio(table, 'parse_json compiled', 'json.loads + snapshot_json')}"
        )
        print(f"  parse_json / orjson.loads               = {ratio(table, 'parse_json compiled', 'orjson.loads')}")
        print(
            f"  parse_json / msgspec.json.decode        = {ratio(table, 'parse_json compiled', 'msgspec.json.decode')}"
        )


def _render_rows(payload: Any) -> list[tuple[str, float | str]]:
    rows: list[tuple[str, Callable[[], object]]] = []
    missing: list[tuple[str, float | str]] = []
    if _json_c is not None:
        rows.append(("render_json_pretty compiled", lambda: _json_c.render_json_pretty(payload)))
        rows.append(("dump_canonical_json compiled", lambda: _json_c.dump_canonical_json(payload)))
    rows.append(("render_json_pretty pure", lambda: _json_py.render_json_pretty(payload)))
    rows.append(("json.dumps(indent=2)", lambda: json.dumps(payload, indent=2, ensure_ascii=False)))
    if orjson is not None:
        opt = orjson.OPT_INDENT_2
        rows.append(("orjson OPT_INDENT_2 (bytes)", lambda: orjson.dumps(payload, option=opt)))
        rows.append(("orjson OPT_INDENT_2 + decode", lambda: orjson.dumps(payload, option=opt).decode()))
        # The canonical writer's peer: compact, sorted keys.
        rows.append(("orjson OPT_SORT_KEYS (bytes)", lambda: orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)))
    else:
        missing.append(("orjson OPT_INDENT_2 (bytes)", "not installed"))
    return _interleaved(rows) + missing


def _targets(snapshot: dict[str, float | str], render: dict[str, float | str]) -> str:
    """The issue's targets for the compiled twin, as plain ratios."""

    def ratio(a: float | str | None, b: float | str | None) -> str:
        return f"{a / b:.2f}" if isinstance(a, float) and isinstance(b, float) and b > 0 else "n/a"

    snap = snapshot.get("snapshot_json compiled (freeze)")
    rend = render.get("render_json_pretty compiled")
    return "\n".join(
        [
            "targets (compiled twin):",
            f"  snapshot(freeze) / orjson round trip = {ratio(snap, snapshot.get('orjson loads(dumps)'))}  (target <= 1)",
            f"  render / orjson OPT_INDENT_2 bytes   = {ratio(rend, render.get('orjson OPT_INDENT_2 (bytes)'))}  (target <= 1.5)",
            f"  render / orjson OPT_INDENT_2 to str  = {ratio(rend, render.get('orjson OPT_INDENT_2 + decode'))}",
            f"  json.dumps(indent=2) / render        = {ratio(render.get('json.dumps(indent=2)'), rend)}  (target >= 5)",
            f"  canonical / orjson OPT_SORT_KEYS     = {ratio(render.get('dump_canonical_json compiled'), render.get('orjson OPT_SORT_KEYS (bytes)'))}",
        ]
    )


def fair() -> None:
    """Only the fair pairs (``python -m bench json-fair``): render, canonical, snapshot vs orjson."""
    for name, payload in (("~1 MB tool result", tool_result_payload()), ("100,000-key object", wide_payload())):
        _fair_section(name, payload)
        print()


def main() -> None:
    if _json_c is None:
        print("note: dsh_codegen._json_c is not built; only the pure twin is measured")
    payloads = [
        ("~1 MB tool result", tool_result_payload()),
        ("100,000-key object", wide_payload()),
        ("100,000-deep value", deep_payload()),
    ]
    baseline_snapshot = "orjson loads(dumps)" if orjson is not None else "json loads(dumps)"
    baseline_render = "orjson OPT_INDENT_2 (bytes)" if orjson is not None else "json.dumps(indent=2)"
    print(
        f"recursion limit {sys.getrecursionlimit()}; medians of 9 round-robin samples of ~20 ms; "
        "ratio < 1 is faster than the baseline"
    )
    _parse_section()
    for name, payload in payloads:
        if name.endswith("deep value"):
            size = "compact size not measurable with json (too deep)"
        else:
            size = f"{len(json.dumps(payload, separators=(',', ':'), ensure_ascii=False).encode()):,} bytes compact"
        print(f"\n##### {name}: {size}\n")
        snapshot_rows = _snapshot_rows(payload)
        render_rows = _render_rows(payload)
        print(ratio_table(f"snapshot, {name}", snapshot_rows, baseline=baseline_snapshot))
        print()
        print(ratio_table(f"render, {name}", render_rows, baseline=baseline_render))
        print()
        print(_targets(dict(snapshot_rows), dict(render_rows)))
        if not name.endswith("deep value"):
            print()
            _fair_section(name, payload)


if __name__ == "__main__":
    main()
