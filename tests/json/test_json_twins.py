"""The two twins agree: values, types and error messages (a differential test).

Imports both twins directly, so it does not depend on the active one and runs
once (in the compiled pass).
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from _shared_helpers import require_compiled_twin

from dsh_codegen.json import _json_py
from json_strategies import any_values, lossless_values, surrogate_free

pytestmark = pytest.mark.once


def _compiled() -> ModuleType:
    return require_compiled_twin("_json_c")


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as exc:  # compare the class, the message and the path
        return ("error", (type(exc), str(exc), getattr(exc, "path", None)))


def _typed(value: Any) -> Any:
    """``value`` with every container tagged by its exact type (iteratively)."""
    out: list[Any] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        out.append(type(item).__name__)
        if isinstance(item, dict):
            out.append(list(item.keys()))
            stack.extend(item.values())
        elif isinstance(item, list):
            out.append(len(item))
            stack.extend(item)
        else:
            out.append(repr(item))
    return out


def test_twins_export_the_same_names() -> None:
    compiled = _compiled()
    assert compiled.__all__ == _json_py.__all__
    for name in _json_py.__all__:
        assert hasattr(compiled, name), name
    # One class each, shared: values from either twin are interchangeable.
    assert compiled.FrozenJsonObject is _json_py.FrozenJsonObject
    assert compiled.FrozenJsonArray is _json_py.FrozenJsonArray
    assert compiled.LosslessJsonError is _json_py.LosslessJsonError


@settings(max_examples=300)
@given(value=any_values, freeze=st.booleans(), safe=st.booleans(), utf8=st.booleans())
def test_twins_agree_on_snapshot(value: Any, freeze: bool, safe: bool, utf8: bool) -> None:
    compiled = _compiled()
    c = _outcome(compiled.snapshot_json, value, freeze=freeze, safe_integers=safe, utf8_strings=utf8)
    p = _outcome(_json_py.snapshot_json, value, freeze=freeze, safe_integers=safe, utf8_strings=utf8)
    assert c[0] == p[0]
    if c[0] == "ok":
        assert _typed(c[1]) == _typed(p[1])
    else:
        assert c[1] == p[1]
    options = {"safe_integers": safe, "utf8_strings": utf8}
    assert compiled.is_json_value(value, **options) == _json_py.is_json_value(value, **options)
    assert compiled.is_json_value(value, **options) == (p[0] == "ok")
    if utf8 and p[0] == "ok":
        # What utf8_strings lets through, UTF-8 carries.
        json.dumps(value, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("twin_name", ["compiled", "pure"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"m": "\ud800"},
            '"value.m" is not lossless JSON: string holding a lone surrogate (U+D800), which UTF-8 cannot carry',
        ),
        (
            ["ok", {"a": ["é", "工\udfff"]}],
            '"value[1].a[1]" is not lossless JSON: string holding a lone surrogate (U+DFFF), which UTF-8 cannot carry',
        ),
        (
            {"x": {"k\udc00": 1}},
            '"value.x" is not lossless JSON: object key holding a lone surrogate (U+DC00), which UTF-8 cannot carry',
        ),
        (
            "😀\ud83d",
            '"value" is not lossless JSON: string holding a lone surrogate (U+D83D), which UTF-8 cannot carry',
        ),
    ],
)
def test_utf8_strings_refuses_lone_surrogates_in_both_twins(twin_name: str, value: Any, message: str) -> None:
    twin = _compiled() if twin_name == "compiled" else _json_py
    assert twin.snapshot_json(value) == value  # lossless JSON: our writers escape a lone surrogate
    with pytest.raises(twin.LosslessJsonError) as caught:
        twin.snapshot_json(value, utf8_strings=True)
    assert str(caught.value) == message
    assert not twin.is_json_value(value, utf8_strings=True)
    # A frozen value is looked into as well (it is lossless, not necessarily UTF-8 safe).
    frozen = twin.snapshot_json(value)
    if not isinstance(frozen, str):
        assert not twin.is_json_value(frozen, utf8_strings=True)
    assert twin.is_json_value({"é": ["ü工😀", "plain"]}, utf8_strings=True)


@settings(max_examples=300)
@given(value=any_values, indent=st.integers(0, 4), max_indent=st.integers(0, 12), sort_keys=st.booleans())
def test_twins_agree_on_writers(value: Any, indent: int, max_indent: int, sort_keys: bool) -> None:
    compiled = _compiled()
    c = _outcome(compiled.render_json_pretty, value, indent=indent, max_indent=max_indent)
    p = _outcome(_json_py.render_json_pretty, value, indent=indent, max_indent=max_indent)
    assert c == p
    c = _outcome(compiled.dump_canonical_json, value, sort_keys=sort_keys)
    p = _outcome(_json_py.dump_canonical_json, value, sort_keys=sort_keys)
    assert c == p


@settings(max_examples=200)
@given(value=lossless_values)
def test_snapshot_then_json_dumps_equals_json_dumps(value: Any) -> None:
    compiled = _compiled()
    expected = json.dumps(value)
    for twin in (compiled, _json_py):
        assert json.dumps(twin.snapshot_json(value)) == expected
        assert json.dumps(twin.snapshot_json(value, freeze=False)) == expected
        assert twin.is_json_value(value)


@settings(max_examples=200)
@given(value=lossless_values)
def test_canonical_writer_matches_json_dumps(value: Any) -> None:
    compiled = _compiled()
    if surrogate_free(value):
        for sort_keys in (True, False):
            expected = json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False)
            assert compiled.dump_canonical_json(value, sort_keys=sort_keys) == expected
            assert _json_py.dump_canonical_json(value, sort_keys=sort_keys) == expected
    else:
        text = compiled.dump_canonical_json(value)
        text.encode("utf-8")  # lone surrogates are escaped
        assert json.loads(text) == json.loads(json.dumps(value, sort_keys=True))


@pytest.mark.parametrize("depth", [100_000])
def test_twins_agree_on_deep_values(depth: int) -> None:
    compiled = _compiled()
    value: Any = ["leaf", float("nan")]
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    c = _outcome(compiled.snapshot_json, value)
    p = _outcome(_json_py.snapshot_json, value)
    assert c == p and c[0] == "error"
    c = _outcome(compiled.render_json_pretty, value)
    p = _outcome(_json_py.render_json_pretty, value)
    assert c == p and c[0] == "error"


def test_the_compiled_module_can_be_the_first_import() -> None:
    # It imports dsh_codegen.json._errors and _frozen while it initialises: the package must not
    # ask the selector for the half-initialised module then (a circular import).
    import os
    import subprocess
    import sys

    _compiled()
    env = {key: value for key, value in os.environ.items() if key != "DSH_CODEGEN_PURE_PYTHON"}
    code = (
        "import dsh_codegen._json_c as c, sys;"
        "assert 'dsh_codegen.json._json' not in sys.modules;"
        "from dsh_codegen.json import parse_json, snapshot_json;"
        "assert parse_json is c.parse_json and snapshot_json is c.snapshot_json;"
        "print(c.parse_json('[1]'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[1]\n"
