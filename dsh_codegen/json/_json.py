"""Selects the lossless-JSON twin: compiled ``dsh_codegen._json_c`` or ``_json_py``.

The only module that knows which twin runs; type checkers see the Python twin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_codegen._backend import load_compiled

__all__ = [
    "FrozenJsonArray",
    "FrozenJsonObject",
    "JsonBudgetError",
    "LosslessJsonError",
    "dump_canonical_json",
    "is_json_value",
    "parse_json",
    "render_json_pretty",
    "snapshot_content",
    "snapshot_json",
]

_c = load_compiled("_json_c")

if TYPE_CHECKING or _c is None:
    from dsh_codegen.json._json_py import (
        FrozenJsonArray,
        FrozenJsonObject,
        JsonBudgetError,
        LosslessJsonError,
        dump_canonical_json,
        is_json_value,
        parse_json,
        render_json_pretty,
        snapshot_content,
        snapshot_json,
    )
else:
    FrozenJsonArray = _c.FrozenJsonArray
    FrozenJsonObject = _c.FrozenJsonObject
    JsonBudgetError = _c.JsonBudgetError
    LosslessJsonError = _c.LosslessJsonError
    dump_canonical_json = _c.dump_canonical_json
    is_json_value = _c.is_json_value
    parse_json = _c.parse_json
    render_json_pretty = _c.render_json_pretty
    snapshot_content = _c.snapshot_content
    snapshot_json = _c.snapshot_json
