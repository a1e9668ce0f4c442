"""bench/compare.py: the before/after table of two checkouts' benchmark runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench._util import ratio_table
from bench.compare import read_rows

pytestmark = pytest.mark.once
ROOT = Path(__file__).resolve().parents[2]


def test_rows_are_read_by_table_and_name() -> None:
    first = ratio_table(
        "json: parse", [("dsh parse", 2.6e-7), ("orjson", 1.3e-6), ("peer", "not installed")], baseline="orjson"
    )
    second = ratio_table("schema: validate", [("dsh parse", 1.5e-3)], baseline="dsh parse")
    assert read_rows(f"{first}\n\n{second}\n") == {
        ("json: parse", "dsh parse"): 2.6e-7,
        ("json: parse", "orjson"): 1.3e-6,
        ("schema: validate", "dsh parse"): 1.5e-3,
    }


def _tree(root: Path, seconds: dict[str, float]) -> Path:
    (root / "bench").mkdir(parents=True)
    (root / "bench" / "__init__.py").write_text("")
    (root / "bench" / "__main__.py").write_text(
        "import importlib, sys\nimportlib.import_module(f'bench.bench_{sys.argv[1]}').main()\n"
    )
    (root / "bench" / "_util.py").write_text((ROOT / "bench" / "_util.py").read_text())
    (root / "bench" / "bench_toy.py").write_text(
        "from bench._util import ratio_table\n"
        f"def main():\n    print(ratio_table('toy', {sorted(seconds.items())!r}, baseline='peer'))\n"
    )
    return root


def test_two_checkouts_are_compared_row_by_row(tmp_path: Path) -> None:
    before = _tree(tmp_path / "before", {"ours": 2e-6, "peer": 1e-6, "gone": 5e-6})
    after = _tree(tmp_path / "after", {"ours": 3e-6, "peer": 1e-6, "new": 4e-6})
    done = subprocess.run(
        [sys.executable, "-m", "bench.compare", str(before), str(after), "toy", "--rounds", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert "=== toy (1 rounds each, alternated) ===" in lines
    assert any(line.split() == ["ours", "2", "us", "->", "3", "us", "1.50x"] for line in lines), done.stdout
    assert any(line.split() == ["peer", "1", "us", "->", "1", "us", "1.00x"] for line in lines), done.stdout
    assert "  only before: gone" in lines and "  only after: new" in lines
