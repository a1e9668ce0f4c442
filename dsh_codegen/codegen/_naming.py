"""Identifiers and keys: the one place that decides how a name appears in code.

TypeScript keys are bare when they match ``^[A-Za-z_$][A-Za-z0-9_$]*$`` and
JSON-quoted otherwise. Python tool methods and ``TypedDict`` fields are used
bare only when Python would keep them as written (an identifier that is
NFKC-stable, since Python normalizes identifiers, and not a hard keyword).
Class names come from :class:`ClassNamer`.
"""

from __future__ import annotations

import keyword
import re
import unicodedata
from collections.abc import Iterable

from dsh_codegen.codegen._literals import code_string

__all__ = [
    "CLASS_NAME_CAP",
    "ClassNamer",
    "are_py_field_names",
    "camel_case",
    "is_py_field_name",
    "is_py_method_name",
    "ts_key",
]

#: Longest class-name base; a collision suffix may follow it.
CLASS_NAME_CAP = 120

_HARD_KEYWORDS = frozenset(keyword.kwlist) | {"__debug__"}
_ASCII_PARTS = re.compile("[A-Za-z0-9]+")


def ts_key(name: str) -> str:
    """A TypeScript property key: bare when plain, else a JSON-quoted string."""
    # Bare means ^[A-Za-z_$][A-Za-z0-9_$]*$. For ASCII text str.isidentifier() is
    # exactly [A-Za-z_][A-Za-z0-9_]*, so reading "$" as "_" tests the same without
    # a regex call (this runs once per member of every object); most keys pass
    # isidentifier() as they are, without the copy replace() makes.
    if name.isascii() and (name.isidentifier() or name.replace("$", "_").isidentifier()):
        return name
    return code_string(name)


def _is_stable_identifier(name: str) -> bool:
    if not name.isidentifier() or name in _HARD_KEYWORDS:
        return False
    # NFKC maps every ASCII character to itself: only other text needs the normalization.
    return name.isascii() or unicodedata.normalize("NFKC", name) == name


def is_py_method_name(name: str) -> bool:
    """True when a tool can be declared ``async def <name>`` (docs/sdk-text.md, "Python").

    An identifier, NFKC-stable, not a hard keyword or ``__debug__``, and not
    starting with ``_``. Soft keywords (``match``, ``type``) are fine.
    """
    return not name.startswith("_") and _is_stable_identifier(name)


def is_py_field_name(name: str) -> bool:
    """True when ``name`` can be a ``TypedDict`` field written in class syntax.

    As :func:`is_py_method_name` but a leading ``_`` is allowed except the
    name-mangled ``__x`` form (double underscore not ending in ``__``).
    """
    if name.startswith("__") and not name.endswith("__"):
        return False
    return _is_stable_identifier(name)


def are_py_field_names(names: Iterable[str]) -> bool:
    """True when every one of ``names`` passes :func:`is_py_field_name` (one call per
    class: the plain ASCII names most fields have are settled inline)."""
    for name in names:
        if name.isascii() and name.isidentifier() and name[0] != "_" and name not in _HARD_KEYWORDS:
            continue  # ASCII: NFKC-stable; no leading "_": not the mangled form
        if not is_py_field_name(name):
            return False
    return True


def _is_continue(char: str) -> bool:
    return char != "_" and ("a" + char).isidentifier()


def camel_case(name: str) -> str:
    """The CamelCase of docs/sdk-text.md ("Python", classes): split on non-identifier characters and ``_``,
    capitalize each part's first letter, join; prefix ``Tool`` unless the
    result starts with a letter-like character (``1st-tool`` -> ``Tool1stTool``).
    The result is NFKC-normalized (Python would normalize it anyway).
    """
    if name.isascii():
        # For ASCII, identifier characters other than "_" are exactly [A-Za-z0-9],
        # and NFKC changes nothing: the same result without a call per character.
        joined = "".join([part[0].upper() + part[1:] for part in _ASCII_PARTS.findall(name)])
        return "Tool" + joined if not joined or joined[0].isdigit() else joined
    return _camel_case_general(name)


def _camel_case_general(name: str) -> str:
    """:func:`camel_case` for any text, a character at a time."""
    parts: list[str] = []
    current: list[str] = []
    for char in name:
        if _is_continue(char):
            current.append(char)
        elif current:
            parts.append("".join(current))
            current = []
    if current:
        parts.append("".join(current))
    joined = "".join(part[0].upper() + part[1:] for part in parts)
    joined = unicodedata.normalize("NFKC", joined)
    # NFKC can produce characters that are not identifier characters.
    joined = "".join(char for char in joined if _is_continue(char))
    if not joined or not joined[0].isidentifier():
        joined = "Tool" + joined
    return joined


class ClassNamer:
    """Allocates unique class names: ``base`` capped at 120 characters, then
    ``base2``, ``base3``, ... on collision, skipping taken names.

    Each base remembers its next suffix, so a run of colliding bases costs
    amortized O(1) per name rather than a probe from 2 every time.
    """

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._taken: set[str] = set(reserved)
        self._next: dict[str, int] = {}

    def reserve(self, names: Iterable[str]) -> None:
        """Mark ``names`` taken (module-level names, field and method names)."""
        self._taken.update(names)

    def allocate(self, base: str) -> str:
        """A fresh name for ``base`` (already an identifier)."""
        base = base[:CLASS_NAME_CAP]
        if base not in self._taken:
            self._taken.add(base)
            return base
        suffix = self._next.get(base, 2)
        while f"{base}{suffix}" in self._taken:
            suffix += 1
        name = f"{base}{suffix}"
        self._next[base] = suffix + 1
        self._taken.add(name)
        return name
