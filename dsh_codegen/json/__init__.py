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
        snapshot_json,
    )

__all__: list[str] = [
    "FrozenJsonArray",
    "FrozenJsonObject",
    "JsonBudgetError",
    "LosslessJsonError",
    "dump_canonical_json",
    "is_json_value",
    "parse_json",
    "render_json_pretty",
    "snapshot_json",
]


__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(__all__, "_json"))
