"""ECMA-262 ``pattern`` text translated to Python ``re`` once, at compile time (cold code).

JSON Schema patterns mean what ECMA-262 (without the ``u`` flag) says; Python's
``re`` differs in ``\\d``/``\\w``/``\\b`` (Unicode in Python), ``\\s`` (another
whitespace set), ``$`` (Python also matches before a final newline), ``.``
(Python's excludes only ``\\n``) and named groups. :func:`translate` rewrites
those one token at a time and refuses what has no faithful Python form, with
the reason, so a pattern is never silently given another meaning.
"""

from __future__ import annotations

import re
import warnings
from typing import Final

__all__ = ["PatternError", "compile_pattern", "translate"]

# ECMA-262 WhiteSpace and LineTerminator code points (what ``\s`` matches).
_SPACE_SET: Final = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_CLASS_ESCAPES: Final = {"d": "0-9", "w": "A-Za-z0-9_", "s": _SPACE_SET}
_SIMPLE_ESCAPES: Final = frozenset("tnvfr0")
_SYNTAX: Final = frozenset("^$\\.*+?()[]{}|/-")
# Characters Python's class parser may read as (future) set operations when doubled or nested.
_CLASS_HAZARDS: Final = frozenset("[&~|")


class PatternError(ValueError):
    """Raised when a pattern has no faithful Python ``re`` form; the message is the reason."""


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """Translate the escape at ``pattern[i] == "\\\\"``; return (python text, next index)."""
    if i + 1 >= len(pattern):
        raise PatternError("ends with a lone backslash")
    ch = pattern[i + 1]
    nxt = i + 2
    lower = ch.lower()
    if lower in _CLASS_ESCAPES:
        members = _CLASS_ESCAPES[lower]
        if ch.islower():
            return (members if in_class else f"[{members}]"), nxt
        if in_class:
            raise PatternError(f"\\{ch} inside a character class cannot be expressed in Python's re")
        return f"[^{members}]", nxt
    if ch in "bB":
        if in_class:
            if ch == "b":
                return "\\x08", nxt  # [\b] is backspace in ECMA-262
            raise PatternError("\\B inside a character class is not valid ECMA-262")
        return "\\" + ch, nxt  # ASCII word boundary: the pattern is compiled with re.ASCII
    if ch in "pP":
        raise PatternError(f"Unicode property escapes (\\{ch}{{...}}) are not supported")
    if ch == "c":
        raise PatternError("control escapes (\\cX) are not supported")
    if ch in _SIMPLE_ESCAPES:
        if ch == "0" and nxt < len(pattern) and pattern[nxt].isdigit():
            raise PatternError("octal escapes are not supported")
        return "\\" + ch, nxt
    if ch == "x":
        digits = pattern[nxt : nxt + 2]
        if len(digits) == 2 and all(c in "0123456789abcdefABCDEF" for c in digits):
            return "\\x" + digits, nxt + 2
        raise PatternError("\\x must be followed by two hex digits")
    if ch == "u":
        digits = pattern[nxt : nxt + 4]
        if len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits):
            return "\\u" + digits, nxt + 4
        raise PatternError("\\u must be followed by four hex digits (\\u{...} needs the u flag)")
    if ch == "k" and not in_class:
        end = pattern.find(">", nxt)
        if pattern[nxt : nxt + 1] != "<" or end < 0:
            raise PatternError("\\k must name a group: \\k<name>")
        return f"(?P={pattern[nxt + 1:end]})", end + 1
    if ch.isdigit():
        if in_class:
            raise PatternError("back-references inside a character class are not supported")
        j = nxt
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        return "\\" + pattern[i + 1 : j], j
    if ch in _SYNTAX:
        return "\\" + ch, nxt
    if ch.isascii() and ch.isalnum():
        raise PatternError(f"\\{ch} is not an ECMA-262 escape")
    return re.escape(ch), nxt


def translate(pattern: str) -> str:
    """The Python ``re`` text meaning what ECMA-262 ``pattern`` means (compile with ``re.ASCII``).

    Raised errors: :class:`PatternError` with the reason when no faithful
    translation exists.
    """
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            text, i = _escape(pattern, i, False)
            out.append(text)
            continue
        if ch == "[":
            text, i = _char_class(pattern, i)
            out.append(text)
            continue
        if ch == "$":
            out.append("\\Z")  # end of input only (Python's $ also matches before a final \n)
        elif ch == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif ch == "(":
            if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                out.append("(?P<")
                i += 3
                continue
            if pattern.startswith("(?", i) and not pattern.startswith(("(?:", "(?=", "(?!", "(?<=", "(?<!"), i):
                raise PatternError(f"group syntax {pattern[i:i + 3]!r} is not ECMA-262")
            out.append("(")
        elif ch == "{" and pattern.startswith("{,", i):
            raise PatternError("{,n} is a literal in ECMA-262 but a quantifier in Python's re")
        elif ch in "*+?}" and i + 1 < n and pattern[i + 1] == "+":
            raise PatternError("possessive quantifiers are not ECMA-262")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """Translate the class starting at ``pattern[i] == "["``; return (python text, next index)."""
    n = len(pattern)
    j = i + 1
    negated = j < n and pattern[j] == "^"
    if negated:
        j += 1
    if j < n and pattern[j] == "]":  # ECMA-262: [] matches nothing, [^] matches anything
        return ("[\\s\\S]" if negated else "(?!)"), j + 1
    out = ["[^" if negated else "["]
    previous = ""
    while j < n and pattern[j] != "]":
        ch = pattern[j]
        if ch == "\\":
            text, j = _escape(pattern, j, True)
            out.append(text)
            previous = ""
            continue
        if ch in _CLASS_HAZARDS or (ch == "-" and previous == "-"):
            out.append("\\" + ch)
        else:
            out.append(ch)
        previous = ch
        j += 1
    if j >= n:
        raise PatternError("has an unterminated character class")
    out.append("]")
    return "".join(out), j + 1


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Translate and compile ``pattern`` (searched, not anchored, as JSON Schema says).

    Raised errors: :class:`PatternError` with the reason (no faithful
    translation, or not a valid regular expression).
    """
    text = translate(pattern)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile(text, re.ASCII)
    except (re.error, FutureWarning, DeprecationWarning) as exc:
        raise PatternError(f"is not a valid regular expression ({exc})") from None
