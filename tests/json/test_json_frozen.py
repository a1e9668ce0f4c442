"""Frozen containers: every mutator raises, every reader keeps working."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject, LosslessJsonError, snapshot_json


def _obj() -> Any:
    return snapshot_json({"a": 1, "b": [1, 2, {"c": None}]})


def _arr() -> Any:
    return snapshot_json([3, 1, 2, {"k": [True]}])


OBJECT_MUTATORS: dict[str, Callable[[Any], object]] = {
    "__setitem__": lambda o: o.__setitem__("a", 2),
    "update no arguments": lambda o: o.update(),
    "__delitem__": lambda o: o.__delitem__("a"),
    "update": lambda o: o.update({"z": 1}),
    "update kwargs": lambda o: o.update(z=1),
    "pop": lambda o: o.pop("a"),
    "pop default": lambda o: o.pop("missing", None),
    "popitem": lambda o: o.popitem(),
    "clear": lambda o: o.clear(),
    "setdefault": lambda o: o.setdefault("a", 5),
    "setdefault new": lambda o: o.setdefault("new", 5),
    "__ior__": lambda o: o.__ior__({"z": 1}),
    "__init__ again": lambda o: o.__init__({"z": 1}),
}


def _set(o: Any) -> None:
    o["a"] = 2


def _del(o: Any) -> None:
    del o["a"]


def _ior(o: Any) -> None:
    o |= {"z": 1}


@pytest.mark.parametrize(
    "mutate",
    list(OBJECT_MUTATORS.values()) + [_set, _del, _ior],
    ids=list(OBJECT_MUTATORS) + ["o[k]=v", "del o[k]", "|="],
)
def test_object_mutators_raise(mutate: Callable[[Any], object]) -> None:
    obj = _obj()
    before = json.dumps(obj)
    if mutate is OBJECT_MUTATORS["__init__ again"]:
        mutate(obj)  # a no-op: contents were fixed at construction
    else:
        with pytest.raises(TypeError, match="FrozenJsonObject is frozen"):
            mutate(obj)
    assert json.dumps(obj) == before


def _aset(a: Any) -> None:
    a[0] = 9


def _aslice_set(a: Any) -> None:
    a[0:2] = [9]


def _adel(a: Any) -> None:
    del a[0]


def _aslice_del(a: Any) -> None:
    del a[:]


def _iadd(a: Any) -> None:
    a += [1]


def _imul(a: Any) -> None:
    a *= 2


ARRAY_MUTATORS: dict[str, Callable[[Any], object]] = {
    "a[i]=v": _aset,
    "a[i:j]=v": _aslice_set,
    "del a[i]": _adel,
    "del a[:]": _aslice_del,
    "+=": _iadd,
    "*=": _imul,
    "append": lambda a: a.append(1),
    "extend": lambda a: a.extend([1]),
    "insert": lambda a: a.insert(0, 1),
    "remove": lambda a: a.remove(3),
    "pop": lambda a: a.pop(),
    "pop index": lambda a: a.pop(0),
    "clear": lambda a: a.clear(),
    "sort": lambda a: a.sort(key=str),
    "reverse": lambda a: a.reverse(),
    "__iadd__": lambda a: a.__iadd__([1]),
    "__imul__": lambda a: a.__imul__(2),
}


@pytest.mark.parametrize("mutate", list(ARRAY_MUTATORS.values()), ids=list(ARRAY_MUTATORS))
def test_array_mutators_raise(mutate: Callable[[Any], object]) -> None:
    arr = _arr()
    before = json.dumps(arr)
    with pytest.raises(TypeError, match="FrozenJsonArray is frozen"):
        mutate(arr)
    assert json.dumps(arr) == before


def test_array_init_again_is_a_no_op() -> None:
    arr = _arr()
    arr.__init__([1])
    assert arr == [3, 1, 2, {"k": [True]}]


def test_nested_containers_are_frozen_too() -> None:
    obj = _obj()
    with pytest.raises(TypeError):
        obj["b"].append(3)
    with pytest.raises(TypeError):
        obj["b"][2]["c"] = 1


def test_readers_work() -> None:
    obj = _obj()
    arr = _arr()
    assert isinstance(obj, dict) and isinstance(arr, list)
    assert obj == {"a": 1, "b": [1, 2, {"c": None}]} and {"a": 1, "b": [1, 2, {"c": None}]} == obj
    assert arr == [3, 1, 2, {"k": [True]}] and [3, 1, 2, {"k": [True]}] == arr
    assert obj != {"a": 1} and arr != [3]
    assert dict(obj) == obj and type(dict(obj)) is dict
    assert list(arr) == arr and type(list(arr)) is list
    assert list(iter(obj)) == ["a", "b"] and list(reversed(arr))[0] == {"k": [True]}
    assert obj.get("a") == 1 and "a" in obj and len(obj) == 2
    assert list(obj.items())[0] == ("a", 1) and list(obj.values())[0] == 1
    assert arr.index(1) == 1 and arr.count(2) == 1 and arr[1:3] == [1, 2] and 2 in arr
    assert sorted(arr[:3]) == [1, 2, 3]
    assert json.dumps(obj) == '{"a": 1, "b": [1, 2, {"c": null}]}'
    assert json.dumps(arr, separators=(",", ":")) == '[3,1,2,{"k":[true]}]'
    assert repr(obj) == "{'a': 1, 'b': [1, 2, {'c': None}]}"
    assert repr(arr) == "[3, 1, 2, {'k': [True]}]"


def test_operators_return_plain_containers() -> None:
    obj = _obj()
    arr = _arr()
    merged = obj | {"z": 1}
    assert type(merged) is dict and merged["z"] == 1 and "z" not in obj
    merged["y"] = 2  # the result is an ordinary dict
    rmerged = {"z": 1} | obj
    assert type(rmerged) is dict and list(rmerged) == ["z", "a", "b"]
    added = arr + [9]
    assert type(added) is list and added[-1] == 9 and len(arr) == 4
    assert type(arr * 2) is list and len(arr * 2) == 8
    assert type(obj.copy()) is dict and obj.copy() == obj


def test_copy_and_deepcopy_return_the_same_frozen_value() -> None:
    obj = _obj()
    arr = _arr()
    assert copy.copy(obj) is obj and copy.deepcopy(obj) is obj
    assert copy.copy(arr) is arr and copy.deepcopy(arr) is arr
    holder = {"x": obj}
    deep = copy.deepcopy(holder)
    assert deep["x"] is obj


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_round_trip_is_frozen(protocol: int) -> None:
    obj = snapshot_json({"a": [1, {"b": (2.5, "x\ud800")}], "e": {}})
    back = pickle.loads(pickle.dumps(obj, protocol=protocol))
    assert back == obj
    assert type(back) is FrozenJsonObject
    assert type(back["a"]) is FrozenJsonArray and type(back["a"][1]) is FrozenJsonObject
    with pytest.raises(TypeError):
        back["a"].append(1)
    arr = pickle.loads(pickle.dumps(snapshot_json([[1], {}]), protocol=protocol))
    assert type(arr) is FrozenJsonArray and type(arr[0]) is FrozenJsonArray


def test_public_construction_validates_and_freezes() -> None:
    obj = FrozenJsonObject({"a": [1, (2,)]}, b={"c": 1})
    assert obj == {"a": [1, [2]], "b": {"c": 1}}
    assert type(obj) is FrozenJsonObject and type(obj["a"]) is FrozenJsonArray
    assert type(obj["a"][1]) is FrozenJsonArray and type(obj["b"]) is FrozenJsonObject
    assert FrozenJsonObject([("k", 1)]) == {"k": 1}
    assert FrozenJsonObject() == {}
    arr = FrozenJsonArray(x for x in ([1], {"a": 2}))
    assert arr == [[1], {"a": 2}] and type(arr[1]) is FrozenJsonObject
    assert FrozenJsonArray() == []
    with pytest.raises(LosslessJsonError) as info:
        FrozenJsonObject({"a": [float("nan")]})
    assert info.value.path == ("a", 0)
    with pytest.raises(LosslessJsonError):
        FrozenJsonArray([{1: 2}])
    with pytest.raises(LosslessJsonError):
        FrozenJsonObject({1: 2})


def test_frozen_classes_cannot_be_subclassed() -> None:
    with pytest.raises(TypeError, match="cannot be subclassed"):

        class Sub(FrozenJsonObject):  # type: ignore[misc]
            pass

    with pytest.raises(TypeError, match="cannot be subclassed"):

        class SubArray(FrozenJsonArray):  # type: ignore[misc]
            pass


def test_frozen_values_are_unhashable_like_their_bases() -> None:
    with pytest.raises(TypeError):
        hash(_obj())
    with pytest.raises(TypeError):
        hash(_arr())


def test_no_instance_attributes() -> None:
    with pytest.raises(AttributeError):
        _obj().extra = 1
    with pytest.raises(AttributeError):
        _arr().extra = 1
