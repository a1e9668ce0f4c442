"""_ext/_json_float_table.pxi is what tools/float_table.py computes now, with exact integers."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from _shared_helpers import import_file

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    return import_file(ROOT / "tools" / "float_table.py", "float_table")


@pytest.mark.once
def test_the_table_is_regenerated_byte_for_byte() -> None:
    generator = _generator()
    text = (ROOT / "_ext" / "_json_float_table.pxi").read_text(encoding="utf-8")
    assert text == generator.render(), "_ext/_json_float_table.pxi is stale: run python tools/float_table.py"
    assert generator.main(["--check"]) == 0


@pytest.mark.once
def test_each_power_is_the_ceiling_of_ten_to_the_minus_k_in_128_bits() -> None:
    generator = _generator()
    constants = generator.constants()
    rows = generator.table(constants["k_min"], constants["k_max"])
    assert len(rows) == constants["k_max"] - constants["k_min"] + 1
    for k, (high, low) in zip(range(constants["k_min"], constants["k_max"] + 1), rows):
        g = high << 64 | low
        assert 1 << 127 <= g < 1 << 128
        # g = ceil(10**-k * 2**r): g - 1 < 10**-k * 2**r <= g, in integers.
        r = 127 - generator._floor_log2_pow10(-k)
        num, den = (10**-k, 1) if k <= 0 else (1, 10**k)
        num, den = (num << r, den) if r >= 0 else (num, den << -r)
        assert (g - 1) * den < num <= g * den, k


def _floor_log10_of_three_to_the(three: int, e: int) -> int:
    """floor(log10(three * 2**e)) for three in (1, 3), by counting decimal digits."""
    if e >= 0:
        return len(str(three << e)) - 1
    return len(str(three * 5**-e)) - 1 + e  # three * 2**e = three * 5**-e / 10**-e


@pytest.mark.once
def test_the_exponent_estimates_are_exact_at_every_exponent() -> None:
    generator = _generator()
    c = generator.constants()
    shift = generator.SHIFT
    for q in range(generator.Q_MIN, generator.Q_MAX + 1):
        assert (q * c["log10_2"]) >> shift == _floor_log10_of_three_to_the(1, q), q
        assert (q * c["log10_2"] + c["log10_3_4"]) >> shift == _floor_log10_of_three_to_the(3, q - 2), q
    for e in range(-c["k_max"], -c["k_min"] + 1):
        exact = (10**e).bit_length() - 1 if e >= 0 else -(10**-e).bit_length()
        assert (e * c["log2_10"]) >> shift == exact, e
    assert (c["k_min"], c["k_max"]) == (-324, 292)
