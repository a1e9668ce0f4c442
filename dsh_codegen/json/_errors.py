"""The JSON layer's errors: the limits, the two error classes, and the wording of every refusal.

Both twins build every error through the functions here, and ask the checks
here whose answer decides one (an int past the digit limit, a lone
surrogate), so each message exists once. It imports only the standard
library and :mod:`dsh_codegen.json._paths`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import Any, Final

from dsh_codegen.json._paths import format_path, quote_path

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_NODES",
    "MAX_SAFE_INTEGER",
    "ROOT",
    "JsonBudgetError",
    "LONE_SURROGATE",
    "LosslessJsonError",
    "budget_option",
    "changed_error",
    "chars_budget_error",
    "cycle_error",
    "float_error",
    "int_too_long",
    "int_too_long_error",
    "key_error",
    "lone_surrogate",
    "make_error",
    "nodes_budget_error",
    "option_error",
    "surrogate_error",
    "type_error",
    "unsafe_int_error",
]

#: The root name of every path in a :class:`LosslessJsonError` message.
ROOT = "value"

#: The largest integer a double holds exactly (``safe_integers=True`` bound).
MAX_SAFE_INTEGER = 2**53 - 1

_LOG10_2 = 0.30102999566398120

#: The default ``max_nodes`` of every walk: the most values it visits (docs/json.md).
DEFAULT_MAX_NODES = 10_000_000

#: The default ``max_chars`` of the writers: the longest text they write.
DEFAULT_MAX_CHARS = 1 << 28


class LosslessJsonError(ValueError):
    """Raised when a value is not lossless JSON (docs/json.md, "What is JSON here").

    ``path`` holds the segments from the root to the offending value (keys as
    ``str``, array indices as ``int``; ``()`` for the root itself),
    ``path_text`` the rendered path (``value.items[3]``) and ``reason`` the
    part of the message after the path. The message is
    ``"<path_text>" is not lossless JSON: <reason>``.
    """

    __module__ = "dsh_codegen.json"

    path: tuple[str | int, ...]
    path_text: str
    reason: str

    def __init__(self, reason: str, path: tuple[str | int, ...] = ()) -> None:
        self.path = path
        self.path_text = format_path(path, ROOT)
        self.reason = reason
        super().__init__(f"{quote_path(self.path_text)} is not lossless JSON: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.path))


class JsonBudgetError(ValueError):
    """Raised when a walk would visit more values, or write more text, than its budget allows.

    Shared references are legal JSON input, but a value that shares a list
    with itself n levels deep describes 2**n values: the budget stops such a
    walk after ``max_nodes`` values (every walk) or ``max_chars`` characters
    of text (the writers) instead of letting it run for minutes. ``budget``
    names the option (``"max_nodes"`` or ``"max_chars"``), ``limit`` its
    value, ``path`` and ``path_text`` where the walk stopped (as in
    :class:`LosslessJsonError`). It is not a :class:`LosslessJsonError`: the
    value may be perfectly lossless, just too large to walk.
    """

    __module__ = "dsh_codegen.json"

    budget: str
    limit: int
    path: tuple[str | int, ...]
    path_text: str

    def __init__(self, budget: str, limit: int, path: tuple[str | int, ...] = ()) -> None:
        self.budget = budget
        self.limit = limit
        self.path = path
        self.path_text = format_path(path, ROOT)
        what = "values visited" if budget == "max_nodes" else "characters written"
        super().__init__(
            f"JSON walk budget exceeded at {quote_path(self.path_text)}: more than {limit} {what} ({budget}={limit})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.budget, self.limit, self.path))


# --- messages (both twins build every error through these) -------------------------------


def _type_name(value: object) -> str:
    try:
        name = type(value).__qualname__
    except Exception:  # a hostile metaclass; never let the error text raise
        return "<unknown type>"
    return name if type(name) is str else "<unknown type>"


def make_error(reason: str, path: Iterable[str | int]) -> LosslessJsonError:
    """Build the error for ``reason`` at ``path`` (segments from the root)."""
    return LosslessJsonError(reason, tuple(path))


def float_error(value: float, path: Iterable[str | int]) -> LosslessJsonError:
    """The error for a NaN, an infinity or ``-0.0``."""
    if value != value:
        reason = "NaN is not a JSON number"
    elif value == 0.0:
        reason = "-0.0 does not survive a JSON round trip"
    elif value > 0.0:
        reason = "inf is not a JSON number"
    else:
        reason = "-inf is not a JSON number"
    return make_error(reason, path)


def int_too_long_error(path: Iterable[str | int]) -> LosslessJsonError:
    """The error for an int whose decimal text exceeds the interpreter's limit."""
    limit = sys.get_int_max_str_digits()
    return make_error(
        f"int with more than {limit} decimal digits cannot be written as JSON (sys.get_int_max_str_digits())",
        path,
    )


def unsafe_int_error(path: Iterable[str | int]) -> LosslessJsonError:
    """The error for an int beyond ``±(2**53-1)`` under ``safe_integers=True``."""
    return make_error("int beyond ±(2**53-1) with safe_integers=True", path)


#: A surrogate code point (U+D800-U+DFFF): in a ``str`` it stands alone (Python joins no pairs).
LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> int:
    """The first surrogate code point in ``text`` (which UTF-8 cannot encode), or ``-1``."""
    if text.isascii():
        return -1
    found = LONE_SURROGATE.search(text)
    return -1 if found is None else ord(found.group())


def surrogate_error(code: int, path: Iterable[str | int], key: bool = False) -> LosslessJsonError:
    """The error for a string (or an object key: path the object) holding a lone surrogate, under ``utf8_strings=True``."""
    what = "object key" if key else "string"
    return make_error(f"{what} holding a lone surrogate (U+{code:04X}), which UTF-8 cannot carry", path)


def cycle_error(path: Iterable[str | int]) -> LosslessJsonError:
    """The error for a container that contains itself."""
    return make_error("the container contains itself (a cycle)", path)


def changed_error(path: Iterable[str | int]) -> LosslessJsonError:
    """The error for a container that changed while it was walked (path: the container)."""
    return make_error("the container changed while it was walked (mutated during the walk)", path)


def nodes_budget_error(limit: int, path: Iterable[str | int]) -> JsonBudgetError:
    """The error for a walk that would visit more than ``limit`` values (path: the next one)."""
    return JsonBudgetError("max_nodes", limit, tuple(path))


def chars_budget_error(limit: int, path: Iterable[str | int]) -> JsonBudgetError:
    """The error for a writer whose text would exceed ``limit`` characters (path: the value written)."""
    return JsonBudgetError("max_chars", limit, tuple(path))


def budget_option(name: str, value: object) -> int:
    """The limit a ``max_nodes`` / ``max_chars`` option means (``None``: no limit)."""
    if value is None:
        return sys.maxsize
    if type(value) is not int:
        raise TypeError(f"{name} must be an int or None, not {_type_name(value)}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value if value < sys.maxsize else sys.maxsize


def key_error(key: object, path: Iterable[str | int]) -> LosslessJsonError:
    """The error for an object key that is not exactly ``str`` (path: the object)."""
    return make_error(f"object key of type {_type_name(key)} (keys must be exactly str)", path)


def type_error(value: object, path: Iterable[str | int]) -> LosslessJsonError:
    """The error for a value of any type other than the JSON types (docs/json.md)."""
    name = _type_name(value)
    for base, what in ((dict, "dict"), (list, "list"), (tuple, "tuple"), (str, "str"), (int, "int"), (float, "float")):
        if issubclass(type(value), base):
            # Subclasses may override anything (iteration, __repr__, __float__): not JSON.
            return make_error(f"type {name} is not a JSON type (a subclass of {what}; only the exact type is)", path)
    return make_error(f"type {name} is not a JSON type", path)


def option_error(name: str, value: object) -> TypeError | ValueError:
    """The error for a bad keyword option of the renderers."""
    if type(value) is not int:
        return TypeError(f"{name} must be an int, not {_type_name(value)}")
    return ValueError(f"{name} must be >= 0, got {value}")


def int_too_long(value: int) -> bool:
    """Whether ``int.__repr__(value)`` would raise for exceeding the digit limit."""
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        return False
    bits = value.bit_length()
    # digits <= floor(bits * log10(2)) + 1; only near the limit do we pay for the text.
    if bits * _LOG10_2 + 1.0 < limit:
        return False
    try:
        int.__repr__(value)
    except ValueError:
        return True
    return False
