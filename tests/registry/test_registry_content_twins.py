"""``snapshot_content`` (the registry's rendering check): both json twins agree, and it means what it says.

Imports both twins directly, so it does not depend on the active one and runs
once (in the compiled pass).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from _shared_helpers import require_compiled_twin

from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, LosslessJsonError, _json_py

pytestmark = pytest.mark.once


def _compiled() -> ModuleType:
    return require_compiled_twin("_json_c")


def _outcome(fn: Any, value: Any) -> tuple[str, Any]:
    try:
        result = fn(value)
    except Exception as exc:
        return ("error", (type(exc), str(exc), getattr(exc, "path", None)))
    if result is None:
        return ("none", None)
    return ("ok", (type(result), [(type(block), dict(block)) for block in result]))


class _Text(str):
    pass


# Lossless content blocks, shapes that are lossless but not blocks, and lossy values.
CASES: list[Any] = [
    [],
    [{"type": "text", "text": "hi"}],
    [{"type": "image", "data": "AAAA", "mimeType": "image/png"}, {"type": "text", "text": ""}],
    ({"type": "text", "text": "a tuple of blocks"},),
    [{"type": "custom", "nested": {"a": [1, 2.5, None, True]}}],
    FrozenJsonArray([FrozenJsonObject({"type": "text", "text": "already frozen"})]),
    None,
    "text",
    42,
    {"type": "text", "text": "one block, not a list"},
    [{"text": "no type"}],
    [{"type": 1}],
    [{"type": None}],
    [{"type": ["text"]}],
    [{"type": "text"}, "not a block"],
    [{"type": "text"}, [{"type": "text"}]],
    [{"type": _Text("str subclass")}],
    [{"type": float("nan")}],
    [{"type": "text", "text": float("inf")}],
    [{"type": "text", 1: "int key"}],
    [{"type": "text", "text": object()}],
    {"type": {1, 2}},
]


@pytest.mark.parametrize("value", CASES, ids=[f"case{index}" for index in range(len(CASES))])
def test_both_twins_agree(value: Any) -> None:
    assert _outcome(_compiled().snapshot_content, value) == _outcome(_json_py.snapshot_content, value)


def test_it_is_the_snapshot_for_blocks_none_for_other_shapes_and_raises_for_lossy_values() -> None:
    for twin in (_compiled(), _json_py):
        source = [{"type": "text", "text": "hi"}]
        content = twin.snapshot_content(source)
        assert type(content) is FrozenJsonArray and type(content[0]) is FrozenJsonObject
        assert content == source and content[0] is not source[0]
        frozen = FrozenJsonArray([FrozenJsonObject({"type": "text"})])
        assert twin.snapshot_content(frozen) is frozen
        assert twin.snapshot_content([{"type": 1}]) is None
        assert twin.snapshot_content({"type": "text"}) is None
        with pytest.raises(LosslessJsonError) as info:
            twin.snapshot_content([{"type": "text", "text": float("nan")}])
        assert info.value.path == (0, "text")
