"""Layer 1, lossless JSON: snapshot, frozen containers, parser, renderers (re-exports only)."""

from dsh_codegen.json._json import (
    FrozenJsonArray,
    FrozenJsonObject,
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
    "LosslessJsonError",
    "dump_canonical_json",
    "is_json_value",
    "parse_json",
    "render_json_pretty",
    "snapshot_json",
]
