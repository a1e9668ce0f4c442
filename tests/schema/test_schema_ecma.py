"""ECMA-262 ``pattern`` translation (``schema/_ecma.py``) against a real ECMA-262 engine.

Node's ``RegExp`` (without the ``u`` flag) is the oracle: generated patterns,
heavy in character classes, ranges and the characters Python's class parser
treats as set operations, are compiled by both, and every one that either side
accepts must be accepted by the other and match the same subject strings.
``compile_pattern`` sets no warnings filter, so the tests also hold that the
translated text never makes ``re`` warn.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_codegen.schema._ecma import PatternError, compile_pattern, translate

OUTSIDE = [
    "a",
    "b",
    "-",
    "[",
    "]",
    "^",
    "$",
    ".",
    "\\d",
    "\\w",
    "\\s",
    "\\b",
    "&",
    "~",
    "|",
    "(",
    ")",
    "?",
    "*",
    "+",
    "{2}",
    "{1,}",
    "\\-",
    "\\]",
    "0",
    "z",
    "_",
    " ",
    "\n",
    "é",
    "[^",
    "(?:",
    "\\.",
    "\\\\",
    "\\x41",
    "\\u00e9",
]
INSIDE = [
    "a",
    "z",
    "-",
    "\\d",
    "\\w",
    "\\s",
    "\\b",
    "[",
    "&",
    "~",
    "|",
    "^",
    "0",
    "9",
    "_",
    "\\-",
    "\\]",
    "+",
    "\\x41",
    ".",
]
SUBJECTS = [
    "",
    "a",
    "b",
    "-",
    "ab",
    "a-b",
    "0",
    "_",
    "`",
    "z",
    "\n",
    "a\n",
    " ",
    "é",
    "\u00a0",
    "&",
    "~|",
    "[]",
    "aab",
    "A",
    "\\",
    ".",
    "x-z",
    "\u2028",
    "\x08",
]

NODE_ORACLE = """
const [patterns, subjects] = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = {};
for (const p of patterns) {
  let r;
  try { r = new RegExp(p); } catch (e) { out[p] = null; continue; }
  out[p] = subjects.map(s => r.test(s));
}
process.stdout.write(JSON.stringify(out));
"""


def _ours(pattern: str) -> list[bool] | None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            compiled = compile_pattern(pattern)
        except PatternError:
            return None
    return [compiled.search(subject) is not None for subject in SUBJECTS]


def _node(patterns: list[str]) -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None, "node is installed by make setup (the TypeScript checks need it too)"
    result = subprocess.run(
        [node, "-e", NODE_ORACLE],
        input=json.dumps([patterns, SUBJECTS]),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answers: dict[str, Any] = json.loads(result.stdout)
    return answers


def _generated(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    patterns: set[str] = set()
    while len(patterns) < count:
        if rng.random() < 0.5:
            patterns.add("".join(rng.choice(OUTSIDE) for _ in range(rng.randint(1, 7))))
        else:
            body = "".join(rng.choice(INSIDE) for _ in range(rng.randint(1, 5)))
            patterns.add("^[" + rng.choice(["", "^"]) + body + "]+$")
    return sorted(patterns)


# Each was translated wrongly or made ``re`` warn before the class was read range by range.
HAZARDS = [
    "^[[]$",
    "^[a&&b]+$",
    "^[~~]+$",
    "^[||]+$",
    "^[+--]$",
    "^[--a]+$",
    "^[--9]+$",
    "^[^--9]+$",
    "^[\\w-z]+$",
    "^[a-\\d]+$",
    "^[\\s-]+$",
    "^[[&&~~||]+$",
    "^[\\--\\wa\\-]+$",
    "^[--[&]+$",
    "^[--~]+$",
    "^[\\b-z]+$",
]


def test_hazard_patterns_mean_what_ecma_262_means_and_never_warn() -> None:
    expected = _node(HAZARDS)
    for pattern in HAZARDS:
        assert expected[pattern] is not None, f"{pattern!r} is valid ECMA-262"
        assert _ours(pattern) == expected[pattern], (pattern, translate(pattern))


def test_an_inverted_range_is_refused_as_ecma_262_refuses_it() -> None:
    assert _node(["^[--&]$", "^[z-a]$", "^[a--]$"]) == dict.fromkeys(["^[--&]$", "^[z-a]$", "^[a--]$"])
    for pattern in ("^[--&]$", "^[z-a]$", "^[a--]$"):
        with pytest.raises(PatternError, match="is not a valid regular expression"):
            compile_pattern(pattern)


@pytest.mark.parametrize("seed", [0, 1])
def test_generated_patterns_agree_with_node(seed: int) -> None:
    patterns = _generated(seed, 3000)
    theirs = _node(patterns)
    disagreements = [(p, _ours(p), theirs[p]) for p in patterns if _ours(p) != theirs[p]]
    assert disagreements == []
    accepted = sum(1 for p in patterns if theirs[p] is not None)
    assert accepted > 1500, "the generator should mostly make valid patterns"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab-[]^$.\\dws&~|()?*+{},0 ", max_size=12))
def test_any_text_compiles_or_is_refused_with_a_pattern_error(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            compiled = compile_pattern(pattern)
        except PatternError as exc:
            assert str(exc)
        else:
            assert compiled.flags & 256  # re.ASCII: \b and the copied classes are ASCII, as ECMA-262's
