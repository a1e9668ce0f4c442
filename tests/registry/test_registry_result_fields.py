"""The result objects keep every field as given, whether or not it is stored in the instance."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from dsh_codegen.registry import UNSET, ToolError, ToolFailure, ToolSuccess

_CONTEXT: Any = {"role": "user", "content": [{"type": "text", "text": "x"}], "source": "s"}


def test_success_defaults_read_back_and_compare_equal_to_explicit_defaults() -> None:
    short = ToolSuccess(1, ())
    full = ToolSuccess(1, (), UNSET, (), False)
    assert (short.meta, short.additional_contexts, short.concludes_turn) == (UNSET, (), False)
    assert short == full and hash(short) == hash(full)
    assert repr(short) == repr(full)
    assert dataclasses.astuple(short) == (1, (), UNSET, (), False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        short.meta = None  # type: ignore[misc]


def test_success_fields_given_are_kept_as_given() -> None:
    contexts: list[Any] = []  # an empty list is not the default tuple: kept, and unequal to it
    result = ToolSuccess("v", [], None, contexts, True)
    assert result.meta is None and result.additional_contexts is contexts and result.concludes_turn is True
    assert result != ToolSuccess("v", [], None, (), True)
    assert dataclasses.replace(result, concludes_turn=False).concludes_turn is False
    assert dataclasses.replace(result, concludes_turn=False).additional_contexts is contexts


@pytest.mark.parametrize(
    "result",
    [
        ToolSuccess({"a": 1}, [{"type": "text", "text": "t"}]),
        ToolSuccess(2, [], {"m": 1}, (_CONTEXT,), True),
        ToolFailure(ToolError("boom"), [{"type": "text", "text": "Error: boom"}]),
        ToolFailure(ToolError("boom"), [], {"m": 2}, (_CONTEXT,)),
    ],
)
def test_results_survive_copy_and_pickle_with_every_field(result: ToolSuccess | ToolFailure) -> None:
    for clone in (copy.copy(result), copy.deepcopy(result), pickle.loads(pickle.dumps(result))):
        assert type(clone) is type(result)
        assert clone == result
        assert dataclasses.astuple(clone) == dataclasses.astuple(result)


def test_failure_defaults_read_back() -> None:
    failure = ToolFailure(ToolError("e"), [])
    assert (failure.meta, failure.additional_contexts) == (UNSET, ())
    assert failure == ToolFailure(ToolError("e"), [], UNSET, ())
