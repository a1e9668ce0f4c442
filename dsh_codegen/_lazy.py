"""Lazy re-exports (PEP 562) for the package ``__init__`` files.

A package lists each public name with the private module (relative to the
package) that defines it, and binds the two hooks this module builds::

    __getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

A name's module is imported on the name's first use, and the value is then
stored in the package namespace, so later lookups are plain attribute reads.
Type checkers do not run the hooks: each package imports the same names under
``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    namespace: dict[str, Any],
    exports: Mapping[str, str],
    submodules: Collection[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.

    ``exports`` maps a public name to the module it comes from (``"_catalog"`` for
    ``<package>._catalog``); ``submodules`` names subpackages that resolve to the
    module itself (the top-level package's layers). Any other name raises the
    ``AttributeError`` Python raises for a missing module attribute. ``__dir__``
    lists the namespace and the package's ``__all__``.
    """
    package: str = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = exports.get(name)
        if home is not None:
            value = getattr(importlib.import_module(f"{package}.{home}"), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace["__all__"]))

    return __getattr__, __dir__
