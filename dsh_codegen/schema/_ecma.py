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
from typing import Final

__all__ = ["PatternError", "compile_pattern", "translate"]

# ECMA-262 WhiteSpace and LineTerminator code points (what ``\s`` matches).
_SPACE_SET: Final = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_CLASS_ESCAPES: Final = {"d": "0-9", "w": "A-Za-z0-9_", "s": _SPACE_SET}
_SIMPLE_ESCAPES: Final = frozenset("tnvfr0")
_SYNTAX: Final = frozenset("^$\\.*+?()[]{}|/-")
# What translate() looks at outside a class (everything else is copied as it is).
_SPECIAL: Final = frozenset("\\[$.({*+?}")
# What a class needs read atom by atom: escapes, its end, and the characters
# Python's class parser may read as (future) set operations when doubled or nested.
_CLASS_HAZARDS: Final = frozenset("-[&~|")
_CLASS_SPECIAL: Final = _CLASS_HAZARDS | {"\\", "]"}


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
        return f"(?P={pattern[nxt + 1 : end]})", end + 1
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

    Text that means the same in both dialects is copied a run at a time; only
    the tokens listed in the module docstring are rewritten.

    Raised errors: :class:`PatternError` with the reason when no faithful
    translation exists.
    """
    out: list[str] = []
    start = i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch not in _SPECIAL:
            i += 1
            continue
        if ch == "(":
            if pattern.startswith("(?", i):
                if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                    out.append(pattern[start:i])
                    out.append("(?P<")
                    i += 3
                    start = i
                    continue
                if not pattern.startswith(("(?:", "(?=", "(?!", "(?<=", "(?<!"), i):
                    raise PatternError(f"group syntax {pattern[i : i + 3]!r} is not ECMA-262")
            i += 1
            continue
        if ch == "{" and pattern.startswith("{,", i):
            raise PatternError("{,n} is a literal in ECMA-262 but a quantifier in Python's re")
        if ch in "*+?}{":
            if i + 1 < n and pattern[i + 1] == "+" and ch != "{":
                raise PatternError("possessive quantifiers are not ECMA-262")
            i += 1
            continue
        out.append(pattern[start:i])
        if ch == "\\":
            text, i = _escape(pattern, i, False)
        elif ch == "[":
            text, i = _char_class(pattern, i)
        elif ch == "$":
            text, i = "\\Z", i + 1  # end of input only (Python's $ also matches before a final \n)
        else:  # "."
            text, i = "[^\\n\\r\\u2028\\u2029]", i + 1
        out.append(text)
        start = i
    out.append(pattern[start:])
    return "".join(out)


def _char_class(pattern: str, i: int) -> tuple[str, int]:
    """Translate the class starting at ``pattern[i] == "["``; return (python text, next index).

    The class is read as ECMA-262 reads it, atom by atom and range by range:
    ``a-b`` is a range, but a ``-`` beside ``\\d``/``\\w``/``\\s`` (Annex B) or at
    either end is a literal. Every literal ``-``, ``[``, ``&``, ``~`` and ``|`` is
    written escaped, so Python's class parser never sees a set operation or
    a range the pattern did not mean, and the text never holds a construct
    ``re`` warns about ("Possible nested set", "Possible set difference" ...).
    """
    n = len(pattern)
    j = i + 1
    negated = j < n and pattern[j] == "^"
    if negated:
        j += 1
    if j < n and pattern[j] == "]":  # ECMA-262: [] matches nothing, [^] matches anything
        return ("[\\s\\S]" if negated else "(?!)"), j + 1
    out = ["[^" if negated else "["]
    start = j
    while j < n:
        ch = pattern[j]
        if ch not in _CLASS_SPECIAL:
            if pattern[j + 1 : j + 2] != "-":
                j += 1  # a plain character
                continue
            last = pattern[j + 2 : j + 3]
            if last not in _CLASS_SPECIAL or last == "]":
                j += 3 if last != "]" else 1  # a plain range, or a character before a final literal "-"
                continue
        elif ch == "]":
            out.append(pattern[start:j])
            out.append("]")
            return "".join(out), j + 1
        out.append(pattern[start:j])
        first, j, first_is_set = _class_atom(pattern, j)
        out.append(first)
        if j + 1 < n and pattern[j] == "-" and pattern[j + 1] != "]":
            last, j, last_is_set = _class_atom(pattern, j + 1)
            out.append("\\-" if first_is_set or last_is_set else "-")
            out.append(last)
        start = j
    raise PatternError("has an unterminated character class")


def _class_atom(pattern: str, j: int) -> tuple[str, int, bool]:
    """One class atom at ``pattern[j]``: (python text, next index, whether it is \\d, \\w or \\s)."""
    ch = pattern[j]
    if ch == "\\":
        is_set = pattern[j + 1 : j + 2] in _CLASS_ESCAPES
        text, j = _escape(pattern, j, True)
        return text, j, is_set
    return ("\\" + ch if ch in _CLASS_HAZARDS else ch), j + 1, False


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Translate and compile ``pattern`` (searched, not anchored, as JSON Schema says).

    No warnings filter is set around ``re.compile``: the only warnings ``re``
    gives for a ``str`` pattern are the set-operation ones (nested ``[`` or a
    doubled ``-&~|`` in a class, a ``-`` range ending in ``-``) and a non-ASCII
    digit group reference in ``(?(...)``; :func:`translate` escapes the first
    and refuses ``(?(`` outright, so the translated text cannot warn.

    Raised errors: :class:`PatternError` with the reason (no faithful
    translation, or not a valid regular expression).
    """
    text = translate(pattern)
    try:
        return re.compile(text, re.ASCII)
    except re.error as exc:
        raise PatternError(f"is not a valid regular expression ({exc})") from None
