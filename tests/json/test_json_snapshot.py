"""snapshot_json and is_json_value against the active twin (the suite runs twice)."""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import json
import sys
from typing import Any, NamedTuple

import pytest

from dsh_codegen.json import (
    FrozenJsonArray,
    FrozenJsonObject,
    LosslessJsonError,
    dump_canonical_json,
    is_json_value,
    render_json_pretty,
    snapshot_json,
)


class Color(enum.IntEnum):
    RED = 1


class Key(str):
    pass


class Point(NamedTuple):
    x: int


class Hostile:
    """Every dunder that a careless walker might call raises."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__")

    def __hash__(self) -> int:
        raise RuntimeError("__hash__")

    def __str__(self) -> str:
        raise RuntimeError("__str__")

    def __repr__(self) -> str:
        raise RuntimeError("__repr__")

    def __iter__(self) -> Any:
        raise RuntimeError("__iter__")

    def __len__(self) -> int:
        raise RuntimeError("__len__")


class HostileKey(str):
    armed = False

    def __hash__(self) -> int:
        if HostileKey.armed:
            raise RuntimeError("__hash__")
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__")


def _deep_array(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth - 1):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


def _deep_object(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth - 1):
        child: dict[str, Any] = {}
        node["k"] = child
        node = child
    return root


def _deep_mix(depth: int) -> Any:
    value: Any = 1
    for level in range(depth):
        value = {"a": value} if level % 2 else (value,) if level % 3 == 0 else [0, value]
    return value


def _assert_deeply_frozen(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is FrozenJsonObject:
            stack.extend(item.values())
        elif type(item) is FrozenJsonArray:
            stack.extend(item)
        else:
            assert type(item) in (str, int, float, bool, type(None)), type(item)


def _assert_plain(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            assert type(item) is dict
            stack.extend(item.values())
        elif isinstance(item, list):
            assert type(item) is list
            stack.extend(item)


SAMPLE: dict[str, Any] = {
    "null": None,
    "t": True,
    "f": False,
    "int": -12,
    "big": 10**40,
    "float": 2.0,
    "tiny": 5e-324,
    "text": "héllo \ud800 \n",
    "list": [1, [2, (3, {"x": []})]],
    "tuple": (1, "a"),
    "empty": {},
    "__proto__": {"kept": "as an ordinary key"},
}


def test_snapshot_is_an_equal_frozen_detached_copy() -> None:
    snap = snapshot_json(SAMPLE)
    assert snap == json.loads(json.dumps(SAMPLE))
    assert type(snap) is FrozenJsonObject
    assert type(snap["tuple"]) is FrozenJsonArray
    assert snap["__proto__"] == {"kept": "as an ordinary key"}
    _assert_deeply_frozen(snap)
    assert snap is not SAMPLE and snap["list"] is not SAMPLE["list"]
    assert list(snap) == list(SAMPLE)  # key order kept


def test_snapshot_without_freeze_is_plain_and_mutable() -> None:
    snap = snapshot_json(SAMPLE, freeze=False)
    _assert_plain(snap)
    assert type(snap["tuple"]) is list
    snap["list"].append(5)
    assert SAMPLE["list"] == [1, [2, (3, {"x": []})]]


def test_snapshot_is_detached_from_later_mutation() -> None:
    source: dict[str, Any] = {"a": [1, {"b": 2}]}
    snap = snapshot_json(source)
    source["a"][1]["b"] = 3
    source["a"].append(4)
    assert snap == {"a": [1, {"b": 2}]}


@pytest.mark.parametrize("scalar", [None, True, False, 0, -1, 2**63, 1.5, "", "x", "\udfff"])
def test_scalars_are_returned_as_they_are(scalar: Any) -> None:
    assert snapshot_json(scalar) is scalar
    assert is_json_value(scalar)


def test_shared_references_are_copied_independently() -> None:
    shared = [1, {"x": 2}]
    source = {"a": shared, "b": shared, "c": [shared, shared]}
    snap = snapshot_json(source, freeze=False)
    assert snap == {"a": shared, "b": shared, "c": [shared, shared]}
    assert snap["a"] is not snap["b"]
    snap["a"].append(3)
    assert snap["b"] == [1, {"x": 2}] and shared == [1, {"x": 2}]
    assert snapshot_json(source) == snap | {"a": [1, {"x": 2}]}


def test_frozen_input_is_reused() -> None:
    frozen = snapshot_json({"a": [1, 2]})
    assert snapshot_json(frozen) is frozen
    outer = snapshot_json({"inner": frozen, "list": [frozen]})
    assert outer["inner"] is frozen and outer["list"][0] is frozen


def test_frozen_input_is_copied_when_not_freezing_or_checking_safe_integers() -> None:
    frozen = snapshot_json({"a": [1, 2**60]})
    plain = snapshot_json(frozen, freeze=False)
    assert type(plain) is dict and type(plain["a"]) is list
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json(frozen, safe_integers=True)
    assert info.value.path == ("a", 1)


REJECTIONS: list[tuple[str, Any, tuple[str | int, ...], str]] = [
    ("nan", {"items": [0, 1, 2, float("nan")]}, ("items", 3), "NaN is not a JSON number"),
    ("inf", [float("inf")], (0,), "inf is not a JSON number"),
    ("-inf", {"a": {"b": float("-inf")}}, ("a", "b"), "-inf is not a JSON number"),
    ("-0.0", {"x": -0.0}, ("x",), "-0.0 does not survive a JSON round trip"),
    ("int key", {"o": {1: "one"}}, ("o",), "object key of type int (keys must be exactly str)"),
    ("None key", {None: 1}, (), "object key of type NoneType (keys must be exactly str)"),
    ("str subclass key", {Key("k"): 1}, (), "object key of type Key (keys must be exactly str)"),
    ("set", {"s": {1}}, ("s",), "type set is not a JSON type"),
    ("bytes", [b"x"], (0,), "type bytes is not a JSON type"),
    ("decimal", [decimal.Decimal("1.5")], (0,), "type Decimal is not a JSON type"),
    ("datetime", [datetime.date(2020, 1, 1)], (0,), "type date is not a JSON type"),
    ("object", {"o": object()}, ("o",), "type object is not a JSON type"),
    ("function", [len], (0,), "type builtin_function_or_method is not a JSON type"),
    ("enum", [Color.RED], (0,), "type Color is not a JSON type (a subclass of int; only the exact type is)"),
    ("str subclass", [Key("v")], (0,), "type Key is not a JSON type (a subclass of str; only the exact type is)"),
    (
        "OrderedDict",
        {"d": collections.OrderedDict(a=1)},
        ("d",),
        "type OrderedDict is not a JSON type (a subclass of dict; only the exact type is)",
    ),
    (
        "namedtuple",
        [Point(1)],
        (0,),
        "type Point is not a JSON type (a subclass of tuple; only the exact type is)",
    ),
    ("hostile", {"h": Hostile()}, ("h",), "type Hostile is not a JSON type"),
    ("odd key path", {"a b": {"ü": [float("nan")]}}, ("a b", "ü", 0), "NaN is not a JSON number"),
]


@pytest.mark.parametrize(("value", "path", "reason"), [r[1:] for r in REJECTIONS], ids=[r[0] for r in REJECTIONS])
def test_rejections_name_the_path_and_the_reason(value: Any, path: tuple[str | int, ...], reason: str) -> None:
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json(value)
    error = info.value
    assert isinstance(error, ValueError)
    assert error.path == path
    assert error.reason == reason
    assert str(error) == f"{json.dumps(error.path_text, ensure_ascii=False)} is not lossless JSON: {reason}"
    assert not is_json_value(value)


def test_path_text_follows_the_shared_path_renderer() -> None:
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json({"items": [0, 1, 2, {"a-b": {"$ok": {"": float("nan")}}}]})
    assert info.value.path_text == 'value.items[3]["a-b"].$ok[""]'
    assert str(info.value) == '"value.items[3][\\"a-b\\"].$ok[\\"\\"]" is not lossless JSON: NaN is not a JSON number'


def test_root_errors_have_an_empty_path() -> None:
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json(float("nan"))
    assert info.value.path == () and info.value.path_text == "value"
    assert str(info.value) == '"value" is not lossless JSON: NaN is not a JSON number'


def test_first_error_in_walk_order_wins() -> None:
    # Depth first, members in order, a member's key before its value.
    value = {"a": [1, {"b": set()}], "c": float("nan"), 3: 4}
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json(value)
    assert info.value.path == ("a", 1, "b")
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json({"a": 1, 2: float("nan")})
    assert info.value.reason.startswith("object key of type int")


def test_cycles_are_rejected() -> None:
    array: list[Any] = [1]
    array.append(array)
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json({"a": array})
    assert info.value.path == ("a", 1)
    assert info.value.reason == "the container contains itself (a cycle)"
    obj: dict[str, Any] = {}
    obj["self"] = {"again": [obj]}
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json(obj)
    assert info.value.path == ("self", "again", 0)
    assert not is_json_value(obj) and not is_json_value(array)


def test_deep_cycle_is_rejected() -> None:
    root = _deep_array(1000)
    node = root
    while node:
        node = node[0]
    node.append(root)
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json(root)
    assert info.value.path == (0,) * 1000
    assert not is_json_value(root)


def test_cycle_far_below_the_root_is_rejected() -> None:
    # The compiled twin checks the first frames directly and deeper ones in a set.
    root = _deep_array(1000)
    target = root
    for _ in range(500):
        target = target[0]
    node = target
    while node:
        node = node[0]
    node.append(target)
    for check in (snapshot_json, render_json_pretty, dump_canonical_json):
        with pytest.raises(LosslessJsonError) as info:
            check(root)
        assert info.value.path == (0,) * 1000
        assert info.value.reason == "the container contains itself (a cycle)"
    assert not is_json_value(root)
    node.pop()
    assert is_json_value(root)


def test_int_digit_limit() -> None:
    limit = sys.get_int_max_str_digits()
    assert limit > 0
    fits = 10 ** (limit - 1)  # exactly `limit` digits
    assert snapshot_json([fits])[0] == fits
    assert snapshot_json(-fits) == -fits
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json({"n": 10**limit})
    assert info.value.path == ("n",)
    assert info.value.reason == (
        f"int with more than {limit} decimal digits cannot be written as JSON (sys.get_int_max_str_digits())"
    )
    assert not is_json_value(-(10**limit))
    assert not is_json_value(1 << 100_000)


def test_safe_integers() -> None:
    edge = 2**53 - 1
    assert snapshot_json([edge, -edge], safe_integers=True) == [edge, -edge]
    for bad in (edge + 1, -edge - 1, 10**30):
        with pytest.raises(LosslessJsonError) as info:
            snapshot_json({"n": [bad]}, safe_integers=True)
        assert info.value.path == ("n", 0)
        assert info.value.reason == "int beyond ±(2**53-1) with safe_integers=True"
        assert not is_json_value(bad, safe_integers=True)
        assert is_json_value(bad)
    assert snapshot_json(1e300, safe_integers=True) == 1e300  # floats are not ints


def test_bool_is_kept_as_bool() -> None:
    snap = snapshot_json([True, False, 1, 0])
    assert [type(x) for x in snap] == [bool, bool, int, int]


def test_is_json_value_never_raises_on_hostile_input() -> None:
    hostile_key_dict = {HostileKey("k"): 1}
    HostileKey.armed = True
    try:
        cases: list[Any] = [Hostile(), [Hostile()], {"h": Hostile()}, hostile_key_dict, [hostile_key_dict]]
        for case in cases:
            assert is_json_value(case) is False
        with pytest.raises(LosslessJsonError) as info:
            snapshot_json([hostile_key_dict])
        assert info.value.reason == "object key of type HostileKey (keys must be exactly str)"
    finally:
        HostileKey.armed = False
    big = 1 << 200_000
    assert is_json_value(big) is False


@pytest.mark.parametrize("builder", [_deep_array, _deep_object, _deep_mix], ids=["array", "object", "mix"])
def test_100000_deep_values(builder: Any) -> None:
    value = builder(100_000)
    assert sys.getrecursionlimit() < 100_000
    assert is_json_value(value)
    snap = snapshot_json(value)
    plain = snapshot_json(value, freeze=False)
    # Walk both copies iteratively: same shape, frozen vs plain.
    stack = [(snap, plain, value)]
    depth = 0
    while stack:
        frozen_node, plain_node, source_node = stack.pop()
        depth += 1
        if isinstance(source_node, dict):
            assert type(frozen_node) is FrozenJsonObject and type(plain_node) is dict
            assert list(frozen_node) == list(source_node) == list(plain_node)
            stack.extend((frozen_node[k], plain_node[k], source_node[k]) for k in source_node)
        elif isinstance(source_node, (list, tuple)):
            assert type(frozen_node) is FrozenJsonArray and type(plain_node) is list
            assert len(frozen_node) == len(source_node) == len(plain_node)
            stack.extend(zip(frozen_node, plain_node, source_node))
        else:
            assert frozen_node == plain_node == source_node
    assert depth >= 100_000


def test_deep_error_path_is_complete() -> None:
    value = _deep_object(100_000)
    node = value
    while node:
        node = node["k"]
    node["bad"] = float("nan")
    with pytest.raises(LosslessJsonError) as info:
        snapshot_json(value)
    assert info.value.path == ("k",) * 99_999 + ("bad",)
    assert not is_json_value(value)


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        snapshot_json({}, False)  # type: ignore[call-arg]


class CollidingKey(str):
    """A str subclass whose hash collides with "b" and whose __eq__ can be armed."""

    armed = False

    def __hash__(self) -> int:
        return hash("b")

    def __eq__(self, other: object) -> bool:
        if CollidingKey.armed:
            raise RuntimeError("__eq__ ran")
        return str.__eq__(self, other)

    __ne__ = str.__ne__


def test_no_user_code_runs_for_a_colliding_subclass_key() -> None:
    value = {"b": 1, CollidingKey("a"): 2, "c": [3]}
    CollidingKey.armed = True
    try:
        assert not is_json_value(value)
        for freeze in (True, False):
            with pytest.raises(LosslessJsonError) as info:
                snapshot_json({"outer": value}, freeze=freeze)
            assert info.value.path == ("outer",)
            assert info.value.reason == "object key of type CollidingKey (keys must be exactly str)"
    finally:
        CollidingKey.armed = False


def test_the_selector_exports_the_active_twin() -> None:
    import importlib

    import dsh_codegen
    import dsh_codegen.json as layer
    from dsh_codegen.json import _errors, _json, _json_py, _paths

    twin = importlib.import_module("dsh_codegen._json_c") if dsh_codegen.backend() == "compiled" else _json_py
    for name in _json.__all__:
        assert getattr(layer, name) is getattr(twin, name), name
    assert sorted(_json.__all__) == sorted([*_json_py.__all__, "snapshot_content"])
    # The layer's other names have no twin: the path text and the walk budget, one module each.
    assert layer.format_path is _paths.format_path and layer.quote_path is _paths.quote_path
    assert layer.DEFAULT_MAX_NODES is _errors.DEFAULT_MAX_NODES
    assert sorted(layer.__all__) == sorted([*_json.__all__, "format_path", "quote_path", "DEFAULT_MAX_NODES"])


def test_a_finalizer_changing_the_value_mid_snapshot_never_leaves_a_mutable_container() -> None:
    # Copying allocates, an allocation may run the collector, and a finalizer may then
    # change the value being copied: the copy must still be frozen all the way down.
    import gc

    from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, snapshot_json

    def frozen_all_the_way(value: object) -> bool:
        if isinstance(value, dict):
            return type(value) is FrozenJsonObject and all(frozen_all_the_way(v) for v in value.values())
        if isinstance(value, list):
            return type(value) is FrozenJsonArray and all(frozen_all_the_way(v) for v in value)
        return True

    class Meddler:
        def __init__(self, target: list[dict[str, object]]) -> None:
            self.target = target
            self.cycle = self

        def __del__(self) -> None:
            self.target[0]["nested"] = [1, 2]
            self.target.append({"late": [3]})

    thresholds = gc.get_threshold()
    try:
        for _ in range(200):
            value: list[dict[str, object]] = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
            Meddler(value)  # garbage in a cycle: only the collector frees it, running __del__
            gc.set_threshold(1)
            copy = snapshot_json(value)
            gc.set_threshold(*thresholds)
            assert frozen_all_the_way(copy), copy
    finally:
        gc.set_threshold(*thresholds)
