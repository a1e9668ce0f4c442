"""The lossless JSON parser, pure-Python twin of ``parse_json`` in ``_ext/_json_c.pyx``.

The parser reads the grammar of Python's own ``json`` module (its C scanner,
the one ``json.loads`` uses) with an explicit stack of open containers, so a
text nested 100,000 deep parses under the default recursion limit. Strings are
decoded by ``json.decoder.scanstring``, the function that scanner calls, so
string values and string errors are exactly ``json.loads``'s.

A text the standard library's decoder parses (no ``NaN`` or ``Infinity``, not
too deep for it) is parsed by it and snapshotted: the same value, in about
two thirds of the time. Everything else goes through the scanner here, which
words every error.

The compiled twin hands every text it does not finish itself (any error, a
lossy number, a ``str`` subclass) to :func:`parse_json` here, so the two
twins give the same verdict and message by construction.
"""

from __future__ import annotations

import math
import re
from json import JSONDecodeError
from json import decoder as _decoder
from collections.abc import Callable
from typing import Any, Final, cast

from dsh_codegen.json._shared import FrozenJsonArray, FrozenJsonObject

__all__ = ["parse_json"]

# JSON's four whitespace characters, as json.decoder skips them. The pattern
# matches the empty string, so the match is never None.
_WS: Final = cast(Callable[[str, int], "re.Match[str]"], re.compile(r"[ \t\n\r]*").match)
# The C scanner's number grammar (ASCII digits only: "\d" would take any Unicode digit).
_NUMBER: Final = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?").match
# The string decoder json's own scanner calls (the C one when built): its values and errors.
_scanstring: Final[Callable[[str, int], tuple[str, int]]] = _decoder.scanstring  # type: ignore[attr-defined]
_BOM: Final = "\ufeff"
# Fast paths for the common shapes, each matching a subset of what the exact code
# accepts and giving the same result; anything else goes the exact (slow) way.
_PLAIN_STRING = r'"([^"\\\x00-\x1f]*)"'  # no escape, no control character
_STRING: Final = re.compile(_PLAIN_STRING).match
_FIRST_KEY: Final = re.compile(r"[ \t\n\r]*" + _PLAIN_STRING + r"[ \t\n\r]*:[ \t\n\r]*").match
_NEXT_KEY: Final = re.compile(r"[ \t\n\r]*,[ \t\n\r]*" + _PLAIN_STRING + r"[ \t\n\r]*:[ \t\n\r]*").match
_NEXT_ITEM: Final = re.compile(r"[ \t\n\r]*,[ \t\n\r]*").match
_WHITESPACE: Final = " \t\n\r"



def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# The stdlib decoder (its C scanner when built) for the common case: a text it
# parses, that is not NaN or Infinity, snapshots to exactly what the scanner
# below builds. Anything it rejects (malformed, a constant, too deep, too many
# digits) goes to the scanner below, which words the error.
_STDLIB_SCAN: Final[Callable[[str, int], tuple[Any, int]]] = _decoder.JSONDecoder(
    parse_constant=_reject_constant
).scan_once  # type: ignore[attr-defined]

_snapshot: Callable[[Any], Any] | None = None


def _pure_snapshot() -> Callable[[Any], Any]:
    # _json_py imports this module (it re-exports parse_json): import it on first use.
    global _snapshot
    if _snapshot is None:
        from dsh_codegen.json._json_py import snapshot_json

        _snapshot = snapshot_json
    return _snapshot


def _trailing_comma_message(text: str, comma: int) -> str | None:
    """The running interpreter's message for a comma before a closing bracket, if it has one.

    Python 3.13's ``json`` says ``Illegal trailing comma before end of array``
    (or ``object``) at the comma, where earlier versions say what they expected
    after it. Asked once, of ``json`` itself, so the scanner follows whatever
    Python runs it.
    """
    try:
        _decoder.JSONDecoder().decode(text)
    except JSONDecodeError as exc:
        if exc.pos == comma:
            return exc.msg
    return None


_TRAILING_COMMA_IN_ARRAY: Final = _trailing_comma_message("[0, ]", 2)
_TRAILING_COMMA_IN_OBJECT: Final = _trailing_comma_message('{"": 0, }', 6)

#: The messages of the texts ``json.loads`` accepts but lossless JSON does not.
CONSTANT_MESSAGES: Final = {
    "NaN": "NaN is not a JSON number",
    "Infinity": "Infinity is not a JSON number",
    "-Infinity": "-Infinity is not a JSON number",
}


def _key(text: str, idx: int, comma: int = -1) -> tuple[str, int]:
    """Read an object member's key and its ``:`` at ``idx``; return the key and the value's index.

    ``comma`` is the position of the comma before the key (``-1`` for the first key).
    """
    if not text.startswith('"', idx):
        if comma >= 0 and _TRAILING_COMMA_IN_OBJECT is not None and text.startswith("}", idx):
            raise JSONDecodeError(_TRAILING_COMMA_IN_OBJECT, text, comma)
        raise JSONDecodeError("Expecting property name enclosed in double quotes", text, idx)
    key, idx = _scanstring(text, idx + 1)
    if not text.startswith(":", idx):
        idx = _WS(text, idx).end()
        if not text.startswith(":", idx):
            raise JSONDecodeError("Expecting ':' delimiter", text, idx)
    return key, _WS(text, idx + 1).end()


def _seal_object(plain: dict[str, Any], freeze: bool) -> Any:
    if not freeze:
        return plain
    frozen = dict.__new__(FrozenJsonObject)
    dict.update(frozen, plain)
    return frozen


def _seal_array(plain: list[Any], freeze: bool) -> Any:
    if not freeze:
        return plain
    frozen = list.__new__(FrozenJsonArray)
    list.extend(frozen, plain)
    return frozen


def _scan(text: str, idx: int, freeze: bool) -> tuple[Any, int, bool]:
    """Parse the value at ``idx``; return it, the index after it, and whether a number was lossy.

    Containers are frozen when ``freeze``, plain otherwise. A lossy number
    (``-0.0``, an overflow to infinity) does not stop the scan: the caller
    decides, once the whole value is known, whether it survived (a later
    duplicate key may have replaced it).
    """
    ws = _WS
    open_containers: list[Any] = []
    # The pending key of each open object; None for an open array (keys are str).
    pending: list[str | None] = []
    lossy = False
    value: Any
    while True:
        char = text[idx : idx + 1]
        if char == '"':
            match = _STRING(text, idx)
            if match is not None:
                value = match.group(1)
                idx = match.end()
            else:
                value, idx = _scanstring(text, idx + 1)
        elif char == "{":
            match = _FIRST_KEY(text, idx + 1)
            if match is not None:
                open_containers.append({})
                pending.append(match.group(1))
                idx = match.end()
                continue
            idx = ws(text, idx + 1).end()
            if text.startswith("}", idx):
                value = _seal_object({}, freeze)
                idx += 1
            else:
                first_key, idx = _key(text, idx)
                open_containers.append({})
                pending.append(first_key)
                continue
        elif char == "[":
            idx = ws(text, idx + 1).end()
            if text.startswith("]", idx):
                value = _seal_array([], freeze)
                idx += 1
            else:
                open_containers.append([])
                pending.append(None)
                continue
        elif char == "n" and text.startswith("null", idx):
            value = None
            idx += 4
        elif char == "t" and text.startswith("true", idx):
            value = True
            idx += 4
        elif char == "f" and text.startswith("false", idx):
            value = False
            idx += 5
        elif char == "N" and text.startswith("NaN", idx):
            raise JSONDecodeError(CONSTANT_MESSAGES["NaN"], text, idx)
        elif char == "I" and text.startswith("Infinity", idx):
            raise JSONDecodeError(CONSTANT_MESSAGES["Infinity"], text, idx)
        elif char == "-" and text.startswith("-Infinity", idx):
            raise JSONDecodeError(CONSTANT_MESSAGES["-Infinity"], text, idx)
        else:
            match = _NUMBER(text, idx)
            if match is None:
                if (
                    char == "]"
                    and pending
                    and pending[-1] is None
                    and _TRAILING_COMMA_IN_ARRAY is not None
                ):
                    # After "[" a "]" closes the array at once: here a comma came before it.
                    raise JSONDecodeError(_TRAILING_COMMA_IN_ARRAY, text, text.rindex(",", 0, idx))
                raise JSONDecodeError("Expecting value", text, idx)
            integer, frac, exp = match.groups()
            if frac or exp:
                value = float(match.group())
                if math.isinf(value) or (value == 0.0 and integer[0] == "-"):
                    lossy = True
            else:
                # Beyond sys.get_int_max_str_digits() this raises json.loads's own ValueError.
                value = int(integer)
            idx = match.end()
        # Hand the value to the innermost open container, closing those that end here.
        while open_containers:
            container = open_containers[-1]
            member = pending[-1]
            if member is None:
                container.append(value)
                match = _NEXT_ITEM(text, idx)
                if match is not None:
                    idx = match.end()
                    break
            else:
                container[member] = value
                match = _NEXT_KEY(text, idx)
                if match is not None:
                    pending[-1] = match.group(1)
                    idx = match.end()
                    break
            if idx < len(text) and text[idx] in _WHITESPACE:
                idx = ws(text, idx).end()
            char = text[idx : idx + 1]
            if char == ",":
                comma = idx
                idx = ws(text, idx + 1).end()
                if member is not None:
                    next_key, idx = _key(text, idx, comma)
                    pending[-1] = next_key
                break
            if char != ("]" if member is None else "}"):
                raise JSONDecodeError("Expecting ',' delimiter", text, idx)
            idx += 1
            open_containers.pop()
            pending.pop()
            value = _seal_array(container, freeze) if member is None else _seal_object(container, freeze)
        else:
            return value, idx, lossy


def parse_json(text: str) -> Any:
    """Parse the JSON ``text`` into a lossless, deeply frozen JSON value.

    Guaranteed: the result equals ``snapshot_json(json.loads(text))`` (objects
    are :class:`FrozenJsonObject` with keys in first-occurrence order and the
    last value of a duplicate key, arrays :class:`FrozenJsonArray`) for every
    text where that succeeds; texts nested any depth parse (no recursion). A
    ``str`` subclass is read as its plain ``str`` value.

    Raised errors, the first met scanning from the start:
    ``json.JSONDecodeError`` with ``json.loads``'s message and position for
    malformed text (a leading byte order mark, trailing data included);
    ``json.JSONDecodeError`` at the token for ``NaN``, ``Infinity`` and
    ``-Infinity`` (``"NaN is not a JSON number"``, ...), which ``json.loads``
    accepts; ``ValueError`` (``json.loads``'s own) for an integer with more
    digits than ``sys.get_int_max_str_digits()``. Then, for a text that is
    valid JSON: :class:`LosslessJsonError` naming the path (``value.a[2]``) of
    the first number that is not lossless in the parsed value (``-0.0``, or a
    float that overflows to infinity such as ``1e400``), as
    ``snapshot_json`` reports it. ``TypeError`` naming the type when ``text``
    is not a ``str``.
    """
    if type(text) is not str:
        if not isinstance(text, str):
            raise TypeError(f"parse_json expects a str, not {type(text).__qualname__}")
        text = str.__str__(text)  # the exact str value; a subclass's overrides never run
    try:
        # A value starting at index 0 (leading whitespace, rare, takes the scanner below).
        plain, end = _STDLIB_SCAN(text, 0)
    except (StopIteration, ValueError, RecursionError):
        pass  # the scanner below says what is wrong (or parses what is too deep for the stdlib)
    else:
        if end == len(text) or _WS(text, end).end() == len(text):
            # The pure twin's snapshot (stack-safe, and the error for a lossy number).
            return _pure_snapshot()(plain)
    if text.startswith(_BOM):
        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    value, end, lossy = _scan(text, _WS(text, 0).end(), True)
    end = _WS(text, end).end()
    if end != len(text):
        raise JSONDecodeError("Extra data", text, end)
    if lossy:
        # Rare: parse again into plain containers and let the snapshot walk report
        # the first lossy number of the final value (or freeze it, when a later
        # duplicate key replaced every lossy one).
        from dsh_codegen.json._json_py import snapshot_json

        plain, _, _ = _scan(text, _WS(text, 0).end(), False)
        return snapshot_json(plain)
    return value
