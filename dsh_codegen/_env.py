"""The one place that reads ``DSH_CODEGEN_PURE_PYTHON``.

Only the exact value ``"1"`` selects the pure-Python twin; any other value (or
none) lets the compiled twin load when it was built.
"""

from __future__ import annotations

import os

__all__ = ["PURE_PYTHON_REQUESTED"]

PURE_PYTHON_REQUESTED: bool = os.environ.get("DSH_CODEGEN_PURE_PYTHON") == "1"
