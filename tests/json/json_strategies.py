"""Hypothesis strategies for JSON values, lossless and not (shared by the json tests)."""

from __future__ import annotations

import collections
import decimal
import math
from typing import Any

from hypothesis import strategies as st

__all__ = ["lossless_values", "any_values", "surrogate_free"]

# Text including lone surrogates, controls, quotes, backslashes and astral characters.
texts = st.text(
    alphabet=st.one_of(
        st.characters(codec=None),
        st.sampled_from(['"', "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "\ud800", "\udfff", "é", "日", "😀"]),
    ),
    max_size=12,
)

finite_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda x: not (x == 0.0 and math.copysign(1.0, x) < 0.0)
)

lossless_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    finite_floats,
    texts,
)

lossless_values: st.SearchStrategy[Any] = st.recursive(
    lossless_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(texts, children, max_size=5),
    ),
    max_leaves=40,
)


class _Opaque:
    def __repr__(self) -> str:
        return "_Opaque()"


# Ints beyond the digit limit are tested by example only: hypothesis could not
# print a failing example holding one.
_bad_scalars = st.sampled_from(
    [float("nan"), float("inf"), float("-inf"), -0.0, b"x", {1, 2}, decimal.Decimal(1), _Opaque()]
)

_any_scalars = st.one_of(lossless_scalars, lossless_scalars, _bad_scalars)
_any_keys = st.one_of(texts, texts, texts, st.integers(0, 3), st.none(), st.booleans())

any_values: st.SearchStrategy[Any] = st.recursive(
    _any_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_any_keys, children, max_size=5),
        st.dictionaries(texts, children, max_size=3).map(collections.OrderedDict),
    ),
    max_leaves=30,
)


def surrogate_free(value: Any) -> bool:
    """Whether no string (key or value) in ``value`` holds a surrogate code point."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= ch <= "\udfff" for ch in item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return True
