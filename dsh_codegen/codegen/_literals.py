"""Every path by which user text becomes generated code or prose.

Descriptions, names and enum/const values reach TypeScript, Python and
Markdown only through these functions (house rule 7, docs/contributing.md), so each escape rule
lives in one place and has a hostile-input test.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

import json.encoder

from dsh_codegen.codegen._jsontext import json_string

__all__ = [
    "Scalar",
    "code_string",
    "collapse",
    "escape_controls",
    "is_scalar",
    "md_code",
    "md_text",
    "py_comment",
    "py_docstring",
    "py_file_docstring",
    "py_file_literal",
    "py_file_string",
    "py_literal",
    "ts_jsdoc",
    "ts_literal",
    "ts_number",
]

Scalar = None | bool | int | float | str

# C0, DEL, C1, plus the Unicode line/paragraph separators, which some tools
# (str.splitlines, editors) treat as line breaks inside comments and strings.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SURROGATES = re.compile("[\ud800-\udfff]")
_CODE_EXTRA = re.compile("[\x7f-\x9f\u2028\u2029]")
_encode_string = json.encoder.encode_basestring


def collapse(text: object) -> str | None:
    """Whitespace runs (``str.split``) to one space, trimmed; ``None`` when empty or not a ``str``."""
    if type(text) is not str:
        return None
    collapsed = " ".join(text.split())
    return collapsed or None


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """C0/DEL/C1 controls -> literal ``\\xNN``; U+2028/9 and lone surrogates -> literal ``\\uNNNN``."""
    if text.isprintable():  # no controls, separators or surrogates: the common case
        return text
    text = _CONTROLS.sub(_escape_control, text)
    return _SURROGATES.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def ts_jsdoc(description: object) -> str | None:
    """Text for ``/** <text> */``: collapsed, controls escaped, ``*/`` -> ``*\\/``."""
    collapsed = collapse(description)
    if collapsed is None:
        return None
    return escape_controls(collapsed).replace("*/", "*\\/")


def py_comment(description: object) -> str | None:
    """Text for a ``# <text>`` comment: collapsed (one line), controls escaped."""
    collapsed = collapse(description)
    return None if collapsed is None else escape_controls(collapsed)


def py_docstring(description: object) -> str | None:
    """Text between ``\"\"\"`` quotes: as :func:`py_comment`, then ``\\`` -> ``\\\\`` and ``"`` -> ``\\"``."""
    text = py_comment(description)
    if text is None:
        return None
    return text.replace("\\", "\\\\").replace('"', '\\"')


def py_file_docstring(description: object) -> str | None:
    """:func:`py_docstring` as black writes it in a file: padded with a space when
    the text ends with a quote character (an escaped quote before the closing quotes)."""
    text = py_docstring(description)
    if text is not None and text.endswith('"'):
        return text + " "
    return text


def py_file_string(text: str) -> str:
    """:func:`code_string` with black's quote preference (files are in black's style):
    single quotes when that needs fewer backslashes (more ``"`` than ``'`` in the
    text), else double quotes."""
    quoted = code_string(text)
    if text.count("'") >= text.count('"'):
        return quoted
    # JSON escapes every '"' as '\"' and never escapes "'"; every '\"' in the body is
    # such an escape (a literal backslash is '\\', consumed left to right).
    body = quoted[1:-1].replace('\\"', '"').replace("'", "\\'")
    return f"'{body}'"


def py_file_literal(value: object) -> str | None:
    """:func:`py_literal` for files: strings as :func:`py_file_string` writes them."""
    if type(value) is str:
        return py_file_string(value)
    return py_literal(value)


def code_string(text: str) -> str:
    """A double-quoted string literal valid in JSON, TypeScript and Python.

    JSON escaping (non-ASCII raw, lone surrogates ``\\udXXX``), plus DEL, C1
    controls and U+2028/U+2029 as ``\\uXXXX`` so that no tool splits the line.
    """
    if text.isprintable():
        # No controls, DEL, C1, U+2028/9 or lone surrogates (none is printable):
        # JSON's escaping of quotes and backslashes is all there is to do.
        return _encode_string(text)
    quoted = json_string(text)
    if _CODE_EXTRA.search(quoted) is None:
        return quoted
    return _CODE_EXTRA.sub(lambda match: f"\\u{ord(match.group()):04x}", quoted)


def is_scalar(value: object) -> bool:
    """True for a lossless JSON scalar (exact types; finite; not ``-0.0``)."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return True
    if kind is int:
        return True
    if kind is float:
        number: float = value  # type: ignore[assignment]
        return math.isfinite(number) and not (number == 0.0 and math.copysign(1.0, number) < 0)
    return False


def ts_number(value: int | float) -> str:
    """JavaScript's ``Number.prototype.toString`` text (``2``, ``1.5``, ``1e-7``, ``1e+21``).

    Python ints are written with all their digits (a TypeScript numeric
    literal type may be any length).
    """
    if type(value) is int:
        return int.__repr__(value)
    number = float(value)
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    # repr gives the shortest round-trip digits, as ECMAScript requires.
    digits_tuple = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple.digits))
    exponent = int(digits_tuple.exponent)
    k = len(digits)
    n = k + exponent  # value = 0.d1d2...dk * 10**n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        power = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        text = f"{mantissa}e{'+' if power >= 0 else '-'}{abs(power)}"
    return sign + text


def _word_or_string(value: object, words: tuple[str, str, str]) -> str | None:
    """``words`` (null, true, false) for ``None`` and booleans, a code string for a
    ``str``; ``None`` for anything else (numbers are the caller's)."""
    if value is None:
        return words[0]
    if type(value) is bool:
        return words[1] if value else words[2]
    if type(value) is str:
        return code_string(value)
    return None


def ts_literal(value: object) -> str | None:
    """A TypeScript literal type for a JSON scalar, ``None`` if not one."""
    if not is_scalar(value):
        return None
    text = _word_or_string(value, ("null", "true", "false"))
    if text is not None:
        return text
    try:
        return ts_number(value)  # type: ignore[arg-type]
    except ValueError:  # an int too long for str() (the int-to-str limit)
        return None


def py_literal(value: object) -> str | None:
    """Text inside ``Literal[...]`` for a JSON scalar, ``None`` if it cannot be one.

    Integral floats become ints (``2.0`` -> ``2``); a non-integral float cannot
    be a ``Literal`` (docs/data-model.md, "Numbers and equality"), so it returns ``None``.
    """
    if not is_scalar(value):
        return None
    text = _word_or_string(value, ("None", "True", "False"))
    if text is not None:
        return text
    if type(value) is float:
        if not value.is_integer():
            return None
        value = int(value)
    try:
        return int.__repr__(value)
    except ValueError:
        return None


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~!])")
_MD_BLOCK_START = re.compile(r"^(\d*)([-+=.)])")


def md_text(description: object) -> str:
    """One Markdown paragraph of plain text: collapsed, controls escaped, inline markup inert.

    Backslash-escapes the characters CommonMark gives meaning inline and a
    leading block marker (``-``, ``+``, ``=``, ``1.``), so a description cannot
    open a heading, list, HTML tag, link or code span.
    """
    collapsed = collapse(description)
    if collapsed is None:
        return ""
    text = _MD_SPECIAL.sub(r"\\\1", escape_controls(collapsed))
    return _MD_BLOCK_START.sub(r"\1\\\2", text, count=1)


def md_code(text: str) -> str:
    """An inline code span showing ``text`` JSON-quoted when it is not plain.

    Plain names (letters, digits, ``_.:/-``) appear as-is; anything else is
    shown as a JSON string so controls and newlines stay visible. The fence is
    one backtick longer than the longest backtick run inside.
    """
    shown = text if re.fullmatch(r"[A-Za-z0-9_.:/\-]+", text) else code_string(text)
    longest = max((len(run) for run in re.findall("`+", shown)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"
