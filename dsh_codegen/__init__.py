"""dsh_codegen: a tool registry, execution pipeline and Code Mode toolkit.

This module only re-exports the public names of each layer (DESIGN.md).
"""

from __future__ import annotations

from dsh_codegen import codegen as _codegen
from dsh_codegen import json as _json
from dsh_codegen import registry as _registry
from dsh_codegen import schema as _schema
from dsh_codegen._backend import backend
from dsh_codegen._version import __version__
from dsh_codegen.codegen import *  # noqa: F403
from dsh_codegen.json import *  # noqa: F403
from dsh_codegen.registry import *  # noqa: F403
from dsh_codegen.schema import *  # noqa: F403

__all__ = ["__version__", "backend"]
__all__ += _json.__all__
__all__ += _schema.__all__
__all__ += _codegen.__all__
__all__ += _registry.__all__
