"""The Python JSON parser: the pure twin's ``parse_json``, and the compiled twin's for every text it hands back.

The parser reads the grammar of Python's own ``json`` module (its C scanner,
the one ``json.loads`` uses) with an explicit stack of open containers, so a
text nested 100,000 deep parses under the default recursion limit. Strings are
decoded by ``json.decoder.scanstring``, the function that scanner calls, so
string values and string errors are exactly ``json.loads``'s.

A text the standard library's decoder parses (no ``NaN`` or ``Infinity``, not
too deep for it) is parsed by it and snapshotted: the same value, in about
two thirds of the time. Everything else goes through the scanner here, which
words every error.

The compiled twin (``parse_json`` in ``_ext/_json_c.pyx``) finishes the
common text itself and hands every other one (any error, a lossy number, a
``str`` subclass) to :func:`parse_json` here, so the two twins give the same
verdict and message by construction.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from json import JSONDecodeError
from json import decoder as _decoder
from typing import Any, Final

from dsh_codegen.json._frozen import FrozenJsonArray, FrozenJsonObject

__all__ = ["parse_json"]

# JSON's four whitespace characters, as json.decoder skips them. The pattern
# matches the empty string, so a match at any index succeeds.
_WS: Final = re.compile(r"[ \t\n\r]*")
# The C scanner's number grammar (ASCII digits only: "\d" would take any Unicode digit).
_NUMBER: Final = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
# The string decoder json's own scanner calls (the C one when built): its values and errors.
_scanstring: Final[Callable[[str, int], tuple[str, int]]] = _decoder.scanstring  # type: ignore[attr-defined]
_BOM: Final = "\ufeff"
# The common shapes, each matching a subset of what the general code below
# accepts and giving the same result; anything else goes the general way.
_PLAIN_STRING = r'"([^"\\\x00-\x1f]*)"'  # no escape, no control character
_STRING: Final = re.compile(_PLAIN_STRING)
_FIRST_KEY: Final = re.compile(r"[ \t\n\r]*" + _PLAIN_STRING + r"[ \t\n\r]*:[ \t\n\r]*")
_NEXT_KEY: Final = re.compile(r"[ \t\n\r]*,[ \t\n\r]*" + _PLAIN_STRING + r"[ \t\n\r]*:[ \t\n\r]*")
_NEXT_ITEM: Final = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_WHITESPACE: Final = " \t\n\r"


def _skip_ws(text: str, idx: int) -> int:
    """The index of the first character at or after ``idx`` that is not JSON whitespace."""
    match = _WS.match(text, idx)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# The stdlib decoder (its C scanner when built) for the common case: a text it
# parses, that is not NaN or Infinity, snapshots to exactly what the scanner
# below builds. Anything it rejects (malformed, a constant, too deep, too many
# digits) goes to the scanner below, which words the error.
_STDLIB_DECODER: Final = _decoder.JSONDecoder(parse_constant=_reject_constant)


def _snapshot(plain: Any) -> Any:
    """The Python snapshot of a parsed value: stack-safe, and the error for a lossy number."""
    return _json_py.snapshot_json(plain)


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
        idx = _skip_ws(text, idx)
        if not text.startswith(":", idx):
            raise JSONDecodeError("Expecting ':' delimiter", text, idx)
    return key, _skip_ws(text, idx + 1)


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
    open_containers: list[Any] = []
    # The pending key of each open object; None for an open array (keys are str).
    pending: list[str | None] = []
    lossy = False
    value: Any
    while True:
        char = text[idx : idx + 1]
        if char == '"':
            match = _STRING.match(text, idx)
            if match is not None:
                value = match.group(1)
                idx = match.end()
            else:
                value, idx = _scanstring(text, idx + 1)
        elif char == "{":
            match = _FIRST_KEY.match(text, idx + 1)
            if match is not None:
                open_containers.append({})
                pending.append(match.group(1))
                idx = match.end()
                continue
            idx = _skip_ws(text, idx + 1)
            if text.startswith("}", idx):
                value = _seal_object({}, freeze)
                idx += 1
            else:
                first_key, idx = _key(text, idx)
                open_containers.append({})
                pending.append(first_key)
                continue
        elif char == "[":
            idx = _skip_ws(text, idx + 1)
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
            match = _NUMBER.match(text, idx)
            if match is None:
                if char == "]" and pending and pending[-1] is None and _TRAILING_COMMA_IN_ARRAY is not None:
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
                match = _NEXT_ITEM.match(text, idx)
                if match is not None:
                    idx = match.end()
                    break
            else:
                container[member] = value
                match = _NEXT_KEY.match(text, idx)
                if match is not None:
                    pending[-1] = match.group(1)
                    idx = match.end()
                    break
            if idx < len(text) and text[idx] in _WHITESPACE:
                idx = _skip_ws(text, idx)
            char = text[idx : idx + 1]
            if char == ",":
                comma = idx
                idx = _skip_ws(text, idx + 1)
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
        plain, end = _STDLIB_DECODER.scan_once(text, 0)  # type: ignore[attr-defined]
    except (StopIteration, ValueError, RecursionError):
        pass  # the scanner below says what is wrong (or parses what is too deep for the stdlib)
    else:
        if end == len(text) or _skip_ws(text, end) == len(text):
            # The Python snapshot (stack-safe, and the error for a lossy number).
            return _snapshot(plain)
    if text.startswith(_BOM):
        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    value, end, lossy = _scan(text, _skip_ws(text, 0), True)
    end = _skip_ws(text, end)
    if end != len(text):
        raise JSONDecodeError("Extra data", text, end)
    if lossy:
        # Rare: parse again into plain containers and let the snapshot walk report
        # the first lossy number of the final value (or freeze it, when a later
        # duplicate key replaced every lossy one).
        plain, _, _ = _scan(text, _skip_ws(text, 0), False)
        return _snapshot(plain)
    return value


# Imported last: _json_py imports this module for parse_json, so whichever of the two is
# imported first, parse_json exists here before _json_py reads it.
from dsh_codegen.json import _json_py  # noqa: E402
