"""The frozen containers: deeply immutable, lossless JSON objects and arrays.

Both twins build their results as these classes (one definition, so a value
made by either twin is the same type). Constructing one validates its contents
through the selected twin's ``snapshot_json``, imported when it is called.
"""

from __future__ import annotations

from typing import Any, NoReturn, final

__all__ = ["FrozenJsonArray", "FrozenJsonObject"]


def _frozen(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is frozen (deeply immutable lossless JSON)")


@final
class FrozenJsonObject(dict[str, Any]):
    """A deeply frozen, lossless JSON object (a ``dict`` subclass).

    Guaranteed: the whole subtree is lossless JSON and frozen; every mutator
    (``__setitem__``, ``__delitem__``, ``update``, ``pop``, ``popitem``,
    ``clear``, ``setdefault``, ``|=``) raises ``TypeError``. Reads, iteration,
    ``==`` with plain dicts, ``dict(x)``, ``x | {...}`` (a plain ``dict``),
    ``json.dumps``, ``copy``/``deepcopy`` (the same object: it is immutable)
    and pickling (a fresh frozen equal value) work.

    ``FrozenJsonObject(x)`` behaves as ``snapshot_json(dict(x))``: it
    validates and freezes the contents, raising :class:`LosslessJsonError`.
    Calling ``dict``'s own methods on an instance (``dict.__setitem__(x, ...)``)
    bypasses the freeze and voids every guarantee.
    """

    __slots__ = ()
    # The public home: repr, pickles and tracebacks name dsh_codegen.json.
    __module__ = "dsh_codegen.json"

    def __new__(cls, *args: Any, **kwargs: Any) -> FrozenJsonObject:
        from dsh_codegen.json._json import snapshot_json

        frozen: FrozenJsonObject = snapshot_json(dict(*args, **kwargs))
        return frozen

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The contents were set in __new__; re-running dict.__init__ would mutate.
        pass

    def __init_subclass__(cls, **kwargs: Any) -> NoReturn:
        raise TypeError("FrozenJsonObject cannot be subclassed")

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenJsonObject, (dict(self),))

    def __copy__(self) -> FrozenJsonObject:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenJsonObject:
        return self

    __setitem__ = _frozen
    __delitem__ = _frozen
    __ior__ = _frozen
    update = _frozen
    pop = _frozen
    popitem = _frozen
    clear = _frozen
    setdefault = _frozen


@final
class FrozenJsonArray(list[Any]):
    """A deeply frozen, lossless JSON array (a ``list`` subclass).

    Guaranteed: the whole subtree is lossless JSON and frozen; every mutator
    (``__setitem__`` and ``__delitem__`` including slices, ``append``,
    ``extend``, ``insert``, ``remove``, ``pop``, ``clear``, ``sort``,
    ``reverse``, ``+=``, ``*=``) raises ``TypeError``. Reads, iteration,
    ``==`` with plain lists, ``list(x)``, ``x + [...]`` (a plain ``list``),
    ``json.dumps``, ``copy``/``deepcopy`` (the same object) and pickling (a
    fresh frozen equal value) work.

    ``FrozenJsonArray(x)`` behaves as ``snapshot_json(list(x))``. Calling
    ``list``'s own methods on an instance bypasses the freeze and voids every
    guarantee.
    """

    __slots__ = ()
    __module__ = "dsh_codegen.json"

    def __new__(cls, *args: Any, **kwargs: Any) -> FrozenJsonArray:
        from dsh_codegen.json._json import snapshot_json

        frozen: FrozenJsonArray = snapshot_json(list(*args, **kwargs))
        return frozen

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The contents were set in __new__; re-running list.__init__ would mutate.
        pass

    def __init_subclass__(cls, **kwargs: Any) -> NoReturn:
        raise TypeError("FrozenJsonArray cannot be subclassed")

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenJsonArray, (list(self),))

    def __copy__(self) -> FrozenJsonArray:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenJsonArray:
        return self

    __setitem__ = _frozen
    __delitem__ = _frozen
    __iadd__ = _frozen
    __imul__ = _frozen
    append = _frozen
    extend = _frozen
    insert = _frozen
    remove = _frozen
    pop = _frozen
    clear = _frozen
    sort = _frozen
    reverse = _frozen
