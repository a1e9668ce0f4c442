"""Write _ext/_json_float_table.pxi: the powers of ten of the compiled float formatter.

The compiled writer (``_ext/_json_c.pyx``, ``dsh_json_format_double``) finds a
float's shortest digits with one 128-bit multiply by a cached power of ten (the
method of Giulietti's Schubfach). For every decimal exponent ``k`` it can need,
the table holds ``g = ceil(10**-k * 2**r)`` with ``r`` chosen so that
``2**127 <= g < 2**128``, as two 64-bit words; ``beta = 127 - r`` is
``floor(log2(10**-k))``. Everything is computed with exact Python integers.

The formatter estimates ``floor(log10(2**q))``, ``floor(log10(3/4 * 2**q))`` and
``floor(log2(10**-k))`` with a multiply and a shift; this script checks those
estimates against the exact values over every exponent a double has and writes
their constants beside the table. Run from the checkout:

    python tools/float_table.py           # rewrite the table
    python tools/float_table.py --check   # exit 1 (and say so) when the file is stale

tests/json/test_json_float_table.py runs the check.
"""

from __future__ import annotations

import argparse
import decimal
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "_ext" / "_json_float_table.pxi"
COMMAND = "python tools/float_table.py"

# A finite double is c * 2**q with 1 <= c < 2**53 and these q.
Q_MIN = -1074
Q_MAX = 971
# The estimates are (q * A + B) >> SHIFT (floor division by 2**SHIFT, also for negative values).
SHIFT = 41


def _ten(n: int) -> int:
    """10**n for n >= 0 (an int, for the type checker)."""
    return int(10**n)


def _floor_log10_ratio(num: int, den: int) -> int:
    """floor(log10(num / den)) for positive integers, exactly."""
    k = len(str(num)) - len(str(den))  # within one of the answer
    while _le_pow10(k, num, den) is False:
        k -= 1
    while _le_pow10(k + 1, num, den):
        k += 1
    return k


def _le_pow10(k: int, num: int, den: int) -> bool:
    """10**k <= num / den."""
    return _ten(k) * den <= num if k >= 0 else den <= num * _ten(-k)


def _pow2(q: int) -> tuple[int, int]:
    return (1 << q, 1) if q >= 0 else (1, 1 << -q)


def _floor_log2_pow10(e: int) -> int:
    """floor(log2(10**e)), exactly."""
    if e >= 0:
        return (_ten(e)).bit_length() - 1
    d = _ten(-e)  # log2(1/d): -(bit_length - 1) when d is a power of two, else one less
    return -(d.bit_length() - 1) - (0 if d & (d - 1) == 0 else 1)


def _scaled(x: decimal.Decimal) -> int:
    """floor(x * 2**SHIFT), from 60 correctly rounded digits (checked exhaustively afterwards)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return int((x * (1 << SHIFT)).to_integral_value(rounding=decimal.ROUND_FLOOR))


def _check(name: str, exact: dict[int, int], a: int, b: int) -> None:
    wrong = [x for x, v in exact.items() if (x * a + b) >> SHIFT != v]
    if wrong:
        raise SystemExit(f"{COMMAND}: the estimate of {name} is wrong at {wrong[:5]}")


def constants() -> dict[str, int]:
    """The estimate constants, each checked against the exact value at every exponent."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        a = _scaled(decimal.Decimal(2).log10())
        b = _scaled(decimal.Decimal(3).log10() - decimal.Decimal(4).log10())
        c = _scaled(decimal.Decimal(10).ln() / decimal.Decimal(2).ln())
    log10_pow2 = {q: _floor_log10_ratio(*_pow2(q)) for q in range(Q_MIN, Q_MAX + 1)}
    _check("floor(log10(2**q))", log10_pow2, a, 0)
    three_quarters = {}
    for q in range(Q_MIN, Q_MAX + 1):
        num, den = _pow2(q - 2)
        three_quarters[q] = _floor_log10_ratio(3 * num, den)
    _check("floor(log10(3/4 * 2**q))", three_quarters, a, b)
    k_min = min(min(log10_pow2.values()), min(three_quarters.values()))
    k_max = max(max(log10_pow2.values()), max(three_quarters.values()))
    log2_pow10 = {e: _floor_log2_pow10(e) for e in range(-k_max, -k_min + 1)}
    _check("floor(log2(10**e))", log2_pow10, c, 0)
    # The formatter shifts c (times 4, plus 2) left by h = q + floor(log2(10**-k)) + 1 within 64 bits.
    for q in range(Q_MIN, Q_MAX + 1):
        for k in {log10_pow2[q], three_quarters[q]}:
            if not 1 <= q + log2_pow10[-k] + 1 <= 4:
                raise SystemExit(f"{COMMAND}: the shift at q = {q}, k = {k} is outside 1..4")
    return {"k_min": k_min, "k_max": k_max, "log10_2": a, "log10_3_4": b, "log2_10": c}


def table(k_min: int, k_max: int) -> list[tuple[int, int]]:
    """ceil(10**-k * 2**r) in [2**127, 2**128), for k from k_min to k_max, as (high, low) words."""
    rows = []
    for k in range(k_min, k_max + 1):
        beta = _floor_log2_pow10(-k)
        r = 127 - beta
        num, den = (_ten(-k), 1) if k <= 0 else (1, _ten(k))
        if r >= 0:
            num <<= r
        else:
            den <<= -r
        g = -(-num // den)
        assert 1 << 127 <= g < 1 << 128, k
        rows.append((g >> 64, g & ((1 << 64) - 1)))
    return rows


def render() -> str:
    c = constants()
    lines = [
        f"# Generated by {COMMAND}: do not edit (tests/json/test_json_float_table.py checks it).",
        "# The powers of ten of dsh_json_format_double (_json_c.pyx): row k - K_MIN holds",
        "# ceil(10**-k * 2**(127 - floor(log2(10**-k)))) as its high and low 64-bit words.",
        "cdef extern from *:",
        '    """',
        "    #include <stdint.h>",
        f"    #define DSH_JSON_K_MIN ({c['k_min']})",
        f"    #define DSH_JSON_K_MAX {c['k_max']}",
        f"    /* floor(log10(2**q)) = (q * LOG10_2) >> {SHIFT}; floor(log10(3/4 * 2**q)) adds LOG10_3_4 first;",
        f"       floor(log2(10**e)) = (e * LOG2_10) >> {SHIFT}: exact for every exponent of a double",
        "       (>> of a negative value: an arithmetic shift, as GCC and Clang do). */",
        f"    #define DSH_JSON_LOG_SHIFT {SHIFT}",
        f"    #define DSH_JSON_LOG10_2 {c['log10_2']}LL",
        f"    #define DSH_JSON_LOG10_3_4 ({c['log10_3_4']}LL)",
        f"    #define DSH_JSON_LOG2_10 {c['log2_10']}LL",
        "    static const uint64_t dsh_json_pow10_table[][2] = {",
    ]
    for high, low in table(c["k_min"], c["k_max"]):
        lines.append(f"        {{0x{high:016x}ULL, 0x{low:016x}ULL}},")
    lines += ["    };", '    """', ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not TABLE.exists() or TABLE.read_text(encoding="utf-8") != text:
            print(f"{TABLE.relative_to(ROOT)} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
