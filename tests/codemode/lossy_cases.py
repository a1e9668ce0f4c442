"""Returned values that are not lossless JSON, and what the model reads for each (shared by the runtime tests)."""

from __future__ import annotations

LOSSY_COMPLETIONS = [
    ("{1, 2}", "result: type set is not a JSON type"),
    ("{'when': datetime.datetime(2026, 1, 2)}", "result.when: type datetime is not a JSON type"),
    ("{'a': [1, b'x']}", "result.a[1]: type bytes is not a JSON type"),
    ("[Point(1, 2)]", "result[0]: type Point is not a JSON type"),
    ("{'ok': 1, 'counts': {1: 2}}", "result.counts: object key of type int (keys must be exactly str)"),
    ("{'n': float('nan')}", "result.n: NaN is not a JSON number"),
    ("[0.5, float('-inf')]", "result[1]: -inf is not a JSON number"),
    ("{'z': -0.0}", "result.z: -0.0 does not survive a JSON round trip"),
    (
        "{'my key': collections.OrderedDict()}",
        'result["my key"]: type OrderedDict is not a JSON type (a subclass of dict; only the exact type is)',
    ),
    ("cyclic", "result[1]: the container contains itself (a cycle)"),
    ("[len]", "result[0]: type builtin_function_or_method is not a JSON type"),
    (
        "10 ** 5000",
        "result: int with more than 4300 decimal digits cannot be written as JSON (sys.get_int_max_str_digits())",
    ),
]
LOSSY_PRELUDE = (
    "import collections, dataclasses, datetime\n"
    "@dataclasses.dataclass\nclass Point:\n    x: int\n    y: int\n"
    "cyclic = [1]\ncyclic.append(cyclic)\n"
)
