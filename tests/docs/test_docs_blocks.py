"""Every fenced ``python`` block of README.md and docs/ runs as written (issue 39).

A small runner of our own rather than ``pytest-examples``: it needs only the two
markers below and one subprocess per page, and adds no dependency. Each block
runs as a program saved to a file of its own (``__name__ == "__main__"``,
``__file__`` and ``sys.argv[0]`` that file, so a program may start itself as a
server), in a fresh namespace, in a temporary directory, with this
interpreter; it passes when it finishes without an exception (blocks assert
what they promise with ``assert``).

A block that is not a whole program says so on the line before its fence:

- ``<!-- docs: fragment (why) -->``: skipped on purpose, with the reason (a piece
  of a larger program, a block that needs a live server the page describes);
- ``<!-- docs: continues -->``: runs together with the block before it on the
  same page, as one program (a page that builds an example step by step).

The pages' ``text``, ``sh`` and other blocks are not Python and are not run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

pytestmark = pytest.mark.once

_FENCE = re.compile(
    r"^(?:<!-- docs: (?P<kind>[a-z]+)(?: \((?P<why>[^)]*)\))? -->\n)?```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_MARKER = re.compile(r"^<!-- docs: .*-->$", re.MULTILINE)


@dataclass
class Block:
    page: Path
    line: int
    code: str
    kind: str | None
    why: str | None


def blocks(page: Path) -> list[Block]:
    """The page's fenced ``python`` blocks, with their markers."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        if match.group("lang") not in ("python", "py"):
            if match.group("kind"):
                raise AssertionError(
                    f"{page}:{text.count(chr(10), 0, match.start()) + 1}: a docs marker before a "
                    f"{match.group('lang') or 'plain'} block (markers are for python blocks)"
                )
            continue
        line = text.count("\n", 0, match.start("code")) + 1
        found.append(Block(page, line, match.group("code"), match.group("kind"), match.group("why")))
    return found


def programs(page: Path) -> list[tuple[str, str]]:
    """The page's runnable programs: ``(where, code)``, continuations joined to what they continue."""
    out: list[tuple[str, str]] = []
    for block in blocks(page):
        where = f"{page.relative_to(ROOT)}:{block.line}"
        if block.kind == "fragment":
            continue
        if block.kind == "continues":
            assert out, f"{where}: 'continues' with no block before it"
            out[-1] = (out[-1][0], out[-1][1] + "\n" + block.code)
        else:
            assert block.kind is None, f"{where}: unknown docs marker {block.kind!r}"
            out.append((where, block.code))
    return out


# Runs each program in a fresh namespace and prints one JSON line per program.
_DRIVER = textwrap.dedent(
    """
    import contextlib, io, json, pathlib, re, sys, traceback
    for index, (where, code) in enumerate(json.loads(sys.stdin.read())):
        path = pathlib.Path(f"block_{index}_{re.sub(r'[^A-Za-z0-9]+', '_', where)}.py").resolve()
        path.write_text(code, encoding="utf-8")
        sys.argv = [str(path)]
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, where, "exec"), {"__name__": "__main__", "__file__": str(path)})
            failure = None
        except BaseException:
            failure = traceback.format_exc(limit=-6)
        print(json.dumps({"where": where, "failure": failure}), flush=True)
    """
)


def _run(page: Path, tmp_path: Path) -> list[dict[str, str | None]]:
    todo = programs(page)
    env = {k: v for k, v in os.environ.items() if k != "DSH_CODEGEN_PURE_PYTHON"}
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER],
        input=json.dumps(todo),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(todo), f"{page}: the runner stopped early\n{done.stderr[-3000:]}"
    return results


WITH_PYTHON = [page for page in PAGES if blocks(page)]


@pytest.mark.parametrize("page", WITH_PYTHON, ids=[str(p.relative_to(ROOT)) for p in WITH_PYTHON])
def test_every_python_block_runs(page: Path, tmp_path: Path) -> None:
    failures = [f"{r['where']}:\n{r['failure']}" for r in _run(page, tmp_path) if r["failure"]]
    assert not failures, "\n".join(failures)


def test_fragments_say_why_and_markers_sit_on_python_blocks() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        marked = {b.line for b in blocks(page) if b.kind}
        for block in blocks(page):
            if block.kind == "fragment":
                assert block.why and block.why.strip(), f"{page}:{block.line}: a fragment must say why it is one"
        # every marker in the page is attached to a python block
        assert len(_MARKER.findall(text)) == len(marked), f"{page}: a docs marker that is not before a python block"


def test_the_runner_runs_something_on_every_page_with_python() -> None:
    for page in WITH_PYTHON:
        assert programs(page) or all(b.kind == "fragment" for b in blocks(page))
    assert sum(len(programs(page)) for page in WITH_PYTHON) >= 15
