"""Schema core: the compiled validator against jsonschema-rs, fastjsonschema and jsonschema, side by side.

Workloads: the 61-tool catalog of ``bench/data`` and the 120-schema tool corpus
of ``tests/corpus`` (pydantic, zod-to-json-schema and MCP shapes of the wider
dialect; valid and invalid argument sets for both), 1,000- and 10,000-property
objects, and 10 / 100 / 1,000 / 100,000-deep schemas; compile is timed on the
catalog, the corpus, the wide objects and the deep schemas (the paired target
tables time it twice: as is, where from the second pass on Python's ``re`` cache
returns our compiled patterns while jsonschema-rs builds its regexes every time,
and with that cache emptied before each pass, what a first compile costs). fastjsonschema
compiles with ``use_default=False`` so it never writes defaults into the
shared argument sets. Both twins of ours run in the same process (the compiled one imported
directly; the pure rows compile with ``_dialect_check`` uncompiled), so the
tables do not depend on ``DSH_CODEGEN_PURE_PYTHON``. Every
figure is a median per call (``bench._util.median_time``); ratios are against
``jsonschema-rs``. The deep-schema probe runs each peer in a subprocess (a
native stack overflow would otherwise end the run) and reports the first depth
at which it fails. Optional peers that are not installed are reported as such.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from bench._util import median_time, ratio_table
from dsh_codegen.schema import _dialect_check, _validator_py
from dsh_codegen.schema._validator import compile_program

__all__ = ["main"]

DATA = Path(__file__).resolve().parent / "data"
BASELINE = "jsonschema-rs"
DEEP_DEPTHS = (10, 20, 50, 100, 200, 500, 1_000, 10_000, 100_000)


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


jsonschema_rs = _optional("jsonschema_rs")
fastjsonschema = _optional("fastjsonschema")
jsonschema = _optional("jsonschema")
_schema_c = _optional("dsh_codegen._schema_c")


def _ours_compiled(schema: Any) -> Any:
    assert _schema_c is not None
    return _schema_c.CompiledValidator(compile_program(schema))


def _ours_pure(schema: Any) -> Any:
    # both halves of the pure twin: the uncompiled dialect check and the Python validator
    return _validator_py.CompiledValidator(_dialect_check.compile_program(schema))


def _fast_is_valid(schema: Any) -> Callable[[Any], bool]:
    assert fastjsonschema is not None
    validate = fastjsonschema.compile(schema, use_default=False)
    error = fastjsonschema.JsonSchemaException

    def is_valid(value: Any) -> bool:
        try:
            validate(value)
        except error:
            return False
        return True

    return is_valid


def _peers() -> dict[str, Callable[[Any], Callable[[Any], bool]] | str]:
    """name -> factory(schema) returning an is_valid callable, or a text saying why it is absent."""
    peers: dict[str, Callable[[Any], Callable[[Any], bool]] | str] = {}
    peers["ours (compiled)"] = (lambda s: _ours_compiled(s).is_valid) if _schema_c else "compiled twin not built"
    peers["ours (pure)"] = lambda s: _ours_pure(s).is_valid
    peers[BASELINE] = (lambda s: jsonschema_rs.validator_for(s).is_valid) if jsonschema_rs else "not installed"
    peers["fastjsonschema"] = _fast_is_valid if fastjsonschema else "not installed"
    peers["jsonschema"] = (lambda s: jsonschema.Draft202012Validator(s).is_valid) if jsonschema else "not installed"
    return peers


def _catalog() -> tuple[list[Any], list[Any]]:
    catalog = json.loads((DATA / "catalog60.json").read_text())
    args = json.loads((DATA / "catalog60_args.json").read_text())
    return catalog, args


def _corpus() -> tuple[list[Any], list[Any]]:
    """The tool corpus of ``tests/corpus`` in the catalog's shape (invalid sets must be objects for every peer)."""
    from tests.corpus import corpus

    catalog, args = [], []
    for name, schema, valid, invalid in corpus():
        catalog.append({"name": name, "parameters": schema})
        args.append({"valid": valid, "invalid": invalid})
    return catalog, args


def _per_call(calls: list[tuple[Callable[[Any], Any], Any]]) -> float:
    def run() -> None:
        for fn, value in calls:
            fn(value)

    return median_time(run) / len(calls)


def _catalog_tables(catalog: list[Any], args: list[Any], label: str = "catalog") -> list[str]:
    peers = _peers()
    valid_rows: list[tuple[str, float | str]] = []
    invalid_rows: list[tuple[str, float | str]] = []
    for name, factory in peers.items():
        if isinstance(factory, str):
            valid_rows.append((name, factory))
            invalid_rows.append((name, factory))
            continue
        validators = [factory(tool["parameters"]) for tool in catalog]
        valid = [(v, a) for v, entry in zip(validators, args) for a in entry["valid"]]
        invalid = [(v, a) for v, entry in zip(validators, args) for a in entry["invalid"]]
        assert all(v(a) for v, a in valid), name
        assert not any(v(a) for v, a in invalid), name
        valid_rows.append((name, _per_call(valid)))
        invalid_rows.append((name, _per_call(invalid)))
    n_valid = sum(len(e["valid"]) for e in args)
    n_invalid = sum(len(e["invalid"]) for e in args)
    return [
        ratio_table(
            f"is_valid per call, {label} of {len(catalog)} tools, {n_valid} valid argument sets",
            valid_rows,
            baseline=BASELINE,
        ),
        ratio_table(f"is_valid per call, {label}, {n_invalid} invalid argument sets", invalid_rows, baseline=BASELINE),
    ]


def _violations_table(catalog: list[Any], args: list[Any], label: str = "catalog") -> str:
    rows: list[tuple[str, float | str]] = []
    if _schema_c is not None:
        ours = [_ours_compiled(tool["parameters"]) for tool in catalog]
        rows.append(
            (
                "ours (compiled) violations()",
                _per_call([(v.violations, a) for v, e in zip(ours, args) for a in e["invalid"]]),
            )
        )
        rows.append(
            (
                "ours (compiled) validate_args()",
                _per_call([(v.validate_args, a) for v, e in zip(ours, args) for a in e["invalid"]]),
            )
        )
    pure = [_ours_pure(tool["parameters"]) for tool in catalog]
    rows.append(
        ("ours (pure) violations()", _per_call([(v.violations, a) for v, e in zip(pure, args) for a in e["invalid"]]))
    )
    if jsonschema_rs is not None:
        rs = [jsonschema_rs.validator_for(tool["parameters"]) for tool in catalog]
        rows.append((BASELINE, _per_call([(v.is_valid, a) for v, e in zip(rs, args) for a in e["invalid"]])))
        rows.append(
            (
                "jsonschema-rs iter_errors()",
                _per_call([(lambda a, v=v: list(v.iter_errors(a)), a) for v, e in zip(rs, args) for a in e["invalid"]]),
            )
        )
    else:
        rows.append((BASELINE, "not installed"))
    if jsonschema is not None:
        js = [jsonschema.Draft202012Validator(tool["parameters"]) for tool in catalog]
        rows.append(
            (
                "jsonschema iter_errors()",
                _per_call([(lambda a, v=v: list(v.iter_errors(a)), a) for v, e in zip(js, args) for a in e["invalid"]]),
            )
        )
    return ratio_table(
        f"violations on {label} invalid argument sets (baseline: jsonschema-rs is_valid)", rows, baseline=BASELINE
    )


def _compile_table(catalog: list[Any], label: str = "catalog") -> str:
    schemas = [tool["parameters"] for tool in catalog]
    rows: list[tuple[str, float | str]] = []
    if _schema_c is not None:
        rows.append(("ours (compiled)", median_time(lambda: [_ours_compiled(s) for s in schemas]) / len(schemas)))
    rows.append(("ours (pure)", median_time(lambda: [_ours_pure(s) for s in schemas]) / len(schemas)))
    rows.append(("ours subset check only", median_time(lambda: [compile_program(s) for s in schemas]) / len(schemas)))
    if jsonschema_rs is not None:
        rows.append((BASELINE, median_time(lambda: [jsonschema_rs.validator_for(s) for s in schemas]) / len(schemas)))
    if fastjsonschema is not None:
        rows.append(
            (
                "fastjsonschema",
                median_time(lambda: [fastjsonschema.compile(s, use_default=False) for s in schemas], repeat=3)
                / len(schemas),
            )
        )
    if jsonschema is not None:
        rows.append(
            (
                "jsonschema (construct + check_schema)",
                median_time(
                    lambda: [
                        (jsonschema.Draft202012Validator.check_schema(s), jsonschema.Draft202012Validator(s))
                        for s in schemas
                    ]
                )
                / len(schemas),
            )
        )
    return ratio_table(f"compile per schema, {label} of {len(schemas)} tools", rows, baseline=BASELINE)


def _wide(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    kinds = [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}, {"type": "number"}]
    schema = {
        "type": "object",
        "properties": {f"p{i}": kinds[i % 4] for i in range(n)},
        "required": [f"p{i}" for i in range(0, n, 3)],
    }
    samples = [7, "text", True, 2.5]
    value = {f"p{i}": samples[i % 4] for i in range(n)}
    return schema, value


def _wide_table(n: int) -> str:
    schema, value = _wide(n)
    rows: list[tuple[str, float | str]] = []
    for name, factory in _peers().items():
        if isinstance(factory, str):
            rows.append((name, factory))
            continue
        is_valid = factory(schema)
        assert is_valid(value), name
        rows.append((name, median_time(lambda: is_valid(value))))
    compile_rows = [
        (name, median_time(lambda factory=factory: factory(schema), repeat=3, min_sample_s=0.02))
        for name, factory in _peers().items()
        if not isinstance(factory, str)
    ]
    return "\n\n".join(
        [
            ratio_table(f"is_valid on a {n:,}-property object", rows, baseline=BASELINE),
            ratio_table(f"compile a {n:,}-property object", compile_rows, baseline=BASELINE),
        ]
    )


_PROBE = r"""
import sys, json
sys.setrecursionlimit(1000)  # the interpreter default
peer, depths = sys.argv[1], json.loads(sys.argv[2])
def schema_of(depth):
    s = {"type": "integer"}
    for _ in range(depth):
        s = {"type": "array", "items": s}
    return s
def value_of(depth):
    v = 1
    for _ in range(depth):
        v = [v]
    return v
def make(s):
    if peer == "ours":
        from dsh_codegen.schema import compile_validator
        return compile_validator(s).is_valid
    if peer == "jsonschema-rs":
        import jsonschema_rs
        return jsonschema_rs.validator_for(s).is_valid
    if peer == "fastjsonschema":
        import fastjsonschema
        f = fastjsonschema.compile(s)
        def ok(v):
            f(v)
            return True
        return ok
    import jsonschema
    return jsonschema.Draft202012Validator(s).is_valid
def works(depth):
    try:
        return make(schema_of(depth))(value_of(depth)) is True, ""
    except BaseException as exc:
        return False, type(exc).__name__
last_ok = 0
for depth in depths:
    ok, why = works(depth)
    if not ok:
        lo, hi = last_ok, depth  # bisect: lo works, hi fails
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if works(mid)[0]:
                lo = mid
            else:
                hi = mid
        print(f"OK {lo}", flush=True)
        print(f"FAIL {hi} {why}", flush=True)
        break
    last_ok = depth
    print(f"OK {depth}", flush=True)
"""


def _deep_probe(peer: str) -> tuple[str, int]:
    """(finding, deepest depth that worked) for one peer, in a separate process."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, peer, json.dumps(DEEP_DEPTHS)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "timed out", 0
    lines = proc.stdout.split()
    passed = [int(lines[i + 1]) for i in range(0, len(lines) - 1, 2) if lines[i] == "OK"]
    best = max(passed, default=0)
    if "FAIL" in lines:
        at = lines.index("FAIL")
        return f"ok up to {best:,}; fails at {int(lines[at + 1]):,} ({lines[at + 2]})", best
    if proc.returncode != 0:
        failed_at = next((d for d in DEEP_DEPTHS if d not in passed), 0)
        return f"ok up to {best:,}; process died at {failed_at:,} (exit {proc.returncode})", best
    return f"ok at every depth up to {DEEP_DEPTHS[-1]:,}", best


def _deep_tables() -> list[str]:
    out = []
    rows: list[tuple[str, float | str]] = []
    deepest: dict[str, int] = {}
    for name in ("ours", BASELINE, "fastjsonschema", "jsonschema"):
        module = {"ours": "dsh_codegen", BASELINE: "jsonschema_rs"}.get(name, name)
        if _optional(module) is None:
            rows.append((name, "not installed"))
            continue
        finding, deepest[name] = _deep_probe(name)
        rows.append((name, finding))
    width = max(len(n) for n, _ in rows)
    title = "deep array schemas (compile + is_valid, default recursion limit, separate process)"
    out.append("\n".join([title, "-" * len(title)] + [f"  {n:<{width}}  {v}" for n, v in rows]))
    for depth in (10, 100, 1_000, 100_000):
        schema: Any = {"type": "integer"}
        value: Any = 1
        for _ in range(depth):
            schema = {"type": "array", "items": schema}
            value = [value]
        timing: list[tuple[str, float | str]] = []
        compiling: list[tuple[str, float | str]] = []
        for name, factory in _peers().items():
            if isinstance(factory, str):
                timing.append((name, factory))
                continue
            if deepest.get(name.split(" ")[0], depth) < depth:
                timing.append((name, "fails (see the probe above)"))
                continue
            try:
                is_valid = factory(schema)
                assert is_valid(value)
                timing.append((name, median_time(lambda: is_valid(value), repeat=3, min_sample_s=0.02)))
                compiling.append(
                    (name, median_time(lambda factory=factory: factory(schema), repeat=3, min_sample_s=0.02))
                )
            except BaseException as exc:  # RecursionError and friends: that is the finding
                if isinstance(exc, KeyboardInterrupt):
                    raise
                timing.append((name, f"fails ({type(exc).__name__})"))
        out.append(ratio_table(f"is_valid on a {depth:,}-deep array schema and value", timing, baseline=BASELINE))
        out.append(ratio_table(f"compile a {depth:,}-deep array schema", compiling, baseline=BASELINE))
    return out


def _paired_ratio(ours: Callable[[], object], theirs: Callable[[], object], rounds: int = 15) -> float:
    """Median over ``rounds`` of (ours / theirs), each round timing both back to back.

    On a shared machine the load moves between two sequential medians; timing
    the pair inside each round cancels most of that drift.
    """
    ratios = []
    for _ in range(rounds):
        a = median_time(ours, repeat=1, min_sample_s=0.02)
        b = median_time(theirs, repeat=1, min_sample_s=0.02)
        ratios.append(a / b)
    ratios.sort()
    return ratios[len(ratios) // 2]


def _paired_table(catalog: list[Any], args: list[Any], label: str = "catalog") -> str:
    """The targets of issues 3 and 10, as paired ratios of the compiled twin against jsonschema-rs."""
    title = f"targets on the {label}: compiled twin vs jsonschema-rs, paired median ratio (< 1.0: ours faster)"
    if _schema_c is None or jsonschema_rs is None:
        return f"{title}\n  skipped: compiled twin or jsonschema-rs missing"
    ours = [_ours_compiled(tool["parameters"]) for tool in catalog]
    rs = [jsonschema_rs.validator_for(tool["parameters"]) for tool in catalog]

    def loop(pairs: list[tuple[Callable[[Any], Any], Any]]) -> Callable[[], None]:
        def run() -> None:
            for fn, value in pairs:
                fn(value)

        return run

    def calls(validators: list[Any], method: str, key: str) -> list[tuple[Callable[[Any], Any], Any]]:
        return [(getattr(v, method), a) for v, e in zip(validators, args) for a in e[key]]

    schema, value = _wide(10_000)
    wide_ours = _ours_compiled(schema).is_valid
    wide_rs = jsonschema_rs.validator_for(schema).is_valid
    schemas = [tool["parameters"] for tool in catalog]
    wide_rows = (
        []
        if label != "catalog"
        else [
            (
                "is_valid, 10,000-property object (target <= 1.0)",
                _paired_ratio(lambda: wide_ours(value), lambda: wide_rs(value)),
            ),
        ]
    )
    rows = [
        (
            "is_valid, valid sets (target <= 1.0)",
            _paired_ratio(loop(calls(ours, "is_valid", "valid")), loop(calls(rs, "is_valid", "valid"))),
        ),
        (
            "is_valid, invalid sets (target <= 1.0)",
            _paired_ratio(loop(calls(ours, "is_valid", "invalid")), loop(calls(rs, "is_valid", "invalid"))),
        ),
        *wide_rows,
        (
            "violations() vs rs is_valid, invalid sets (target <= 3.0)",
            _paired_ratio(loop(calls(ours, "violations", "invalid")), loop(calls(rs, "is_valid", "invalid"))),
        ),
        (
            "validate_args() vs rs is_valid, invalid sets (target <= 3.0)",
            _paired_ratio(loop(calls(ours, "validate_args", "invalid")), loop(calls(rs, "is_valid", "invalid"))),
        ),
        (
            "violations() vs rs iter_errors(), invalid sets",
            _paired_ratio(
                loop(calls(ours, "violations", "invalid")),
                loop([(lambda a, v=v: list(v.iter_errors(a)), a) for v, e in zip(rs, args) for a in e["invalid"]]),
            ),
        ),
        (
            "compile (target <= 1.0)",
            _paired_ratio(
                lambda: [_ours_compiled(s) for s in schemas], lambda: [jsonschema_rs.validator_for(s) for s in schemas]
            ),
        ),
        # The row above compiles the same schemas pass after pass, so from the second pass on
        # Python's re cache hands us every compiled pattern, while jsonschema-rs builds its
        # regexes again each time. Emptying that cache before each pass (both sides, so the
        # sampling stays the same) makes every pass pay what a process's first compile pays.
        (
            "compile, re cache emptied before each pass",
            _paired_ratio(
                lambda: (re.purge(), [_ours_compiled(s) for s in schemas]),
                lambda: (re.purge(), [jsonschema_rs.validator_for(s) for s in schemas]),
            ),
        ),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join([title, "-" * len(title)] + [f"  {name:<{width}}  {ratio:6.3f}x" for name, ratio in rows])


def main() -> None:
    """Print every schema-core table."""
    catalog, args = _catalog()
    corpus, corpus_args = _corpus()
    tables = [_paired_table(catalog, args), _paired_table(corpus, corpus_args, "corpus")]
    tables.extend(_catalog_tables(catalog, args))
    tables.extend(_catalog_tables(corpus, corpus_args, "corpus"))
    tables.append(_violations_table(catalog, args))
    tables.append(_violations_table(corpus, corpus_args, "corpus"))
    tables.append(_compile_table(catalog))
    tables.append(_compile_table(corpus, "corpus"))
    tables.append(_wide_table(1_000))
    tables.append(_wide_table(10_000))
    tables.extend(_deep_tables())
    print("\n\n".join(tables))


def callgrind(workload: str, peer: str, passes: int) -> None:
    """One warm-up pass and ``passes`` more of compiling every schema of ``workload``, for instruction counts.

    ``python -m bench.bench_schema WORKLOAD PEER N`` under ``valgrind --tool=callgrind``;
    instructions per schema are the difference of the runs with N = 5 and N = 0,
    divided by 5 x the number of schemas (start-up, imports and the warm-up cancel
    out). WORKLOAD is ``catalog`` or ``corpus``; PEER is ``ours`` (``compile_program``
    plus the compiled twin's ``CompiledValidator``), ``program`` (``compile_program``
    alone) or ``rs`` (``jsonschema_rs.validator_for``).
    """
    catalog = (_catalog() if workload == "catalog" else _corpus())[0]
    schemas = [tool["parameters"] for tool in catalog]
    factories: dict[str, Callable[[Any], object]] = {"ours": _ours_compiled, "program": compile_program}
    if jsonschema_rs is not None:
        factories["rs"] = jsonschema_rs.validator_for
    factory = factories[peer]
    for _ in range(passes + 1):
        for schema in schemas:
            factory(schema)
    print(f"{len(schemas)} schemas, {passes} passes after the warm-up")


if __name__ == "__main__":
    if len(sys.argv) == 4:
        callgrind(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        main()
