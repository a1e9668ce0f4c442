"""Layer 1, lossless JSON: snapshot, frozen containers, parser, renderers (re-exports only).

The names resolve on first use (PEP 562), through the twin selector
``dsh_codegen.json._json``. Importing the package alone imports no twin, so
the compiled module ``dsh_codegen._json_c``, which imports this package's
``_errors`` and ``_frozen`` while it initialises, can be the first module a program imports:
an eager re-export would ask the selector for the half-initialised compiled
module (a circular import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_codegen._lazy import lazy_exports

if TYPE_CHECKING:
    from dsh_codegen.json._json import (
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
    from dsh_codegen.json._paths import format_path, quote_path
    from dsh_codegen.json._errors import DEFAULT_MAX_NODES

#: Where each public name lives (the module under ``dsh_codegen.json``). The layers above import
#: these names from here, never from the modules, so the modules may be renamed behind them.
_HOME: dict[str, str] = {
    "DEFAULT_MAX_NODES": "_errors",
    "FrozenJsonArray": "_json",
    "FrozenJsonObject": "_json",
    "JsonBudgetError": "_json",
    "LosslessJsonError": "_json",
    "dump_canonical_json": "_json",
    "format_path": "_paths",
    "is_json_value": "_json",
    "parse_json": "_json",
    "quote_path": "_paths",
    "render_json_pretty": "_json",
    "snapshot_content": "_json",
    "snapshot_json": "_json",
}

__all__: list[str] = [
    "DEFAULT_MAX_NODES",
    "FrozenJsonArray",
    "FrozenJsonObject",
    "JsonBudgetError",
    "LosslessJsonError",
    "dump_canonical_json",
    "format_path",
    "is_json_value",
    "parse_json",
    "quote_path",
    "render_json_pretty",
    "snapshot_content",
    "snapshot_json",
]


__getattr__, __dir__ = lazy_exports(globals(), _HOME)
