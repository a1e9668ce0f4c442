"""Generated annotations: the mapped schema is supported and accepts every value of the type (both twins)."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any, Literal, NotRequired, Optional, Required, TypedDict

from _typed_helpers import one_parameter
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_codegen.registry import AbortController, ToolExecutionInput, ToolRegistry, ToolSuccess
from dsh_codegen.registry._typed import tool
from dsh_codegen.schema import assert_supported_json_schema, compile_validator

_names = itertools.count()

LEAVES = st.sampled_from([str, int, float, bool, None, Any, Literal["a", "b"], Literal[1, 2], Literal["x", 3]])


def _typed_dict(fields: list[Any], total: bool, qualified: list[bool]) -> Any:
    annotations: dict[str, Any] = {}
    for index, (field, qualify) in enumerate(zip(fields, qualified)):
        annotations[f"f{index}"] = (Required if total else NotRequired)[field] if qualify else field
    return TypedDict(f"Generated{next(_names)}", annotations, total=total)  # type: ignore[operator]


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        children.map(lambda t: list[t]),  # type: ignore[valid-type]
        children.map(lambda t: tuple[t, ...]),  # type: ignore[valid-type]
        children.map(lambda t: Optional[t]),  # noqa: UP007, UP045
        st.builds(
            _typed_dict,
            st.lists(children, min_size=1, max_size=3),
            st.booleans(),
            st.lists(st.booleans(), min_size=3, max_size=3),
        ),
    )


ANNOTATIONS = st.recursive(LEAVES, _extend, max_leaves=6)
JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4))
FLOATS = st.floats(allow_nan=False, allow_infinity=False).map(lambda f: 0.0 if f == 0 else f)  # no -0.0


def values_of(annotation: Any) -> st.SearchStrategy[Any]:
    """A strategy for JSON values of ``annotation`` (test-side recursion over a small annotation)."""
    if annotation is str:
        return st.text(max_size=4)
    if annotation is int:
        return st.integers()
    if annotation is float:
        return FLOATS
    if annotation is bool:
        return st.booleans()
    if annotation is None or annotation is type(None):
        return st.none()
    if annotation is Any:
        return JSON_LEAF
    origin = getattr(annotation, "__origin__", None)
    args = getattr(annotation, "__args__", ())
    if origin is Literal:
        return st.sampled_from(args)
    if origin is list or origin is tuple:
        return st.lists(values_of(args[0]), max_size=3)
    if origin is Required or origin is NotRequired:
        return values_of(args[0])
    if args and type(None) in args:  # Optional[T]
        return st.one_of(st.none(), *(values_of(a) for a in args if a is not type(None)))
    hints = annotation.__annotations__
    required = {k: values_of(v) for k, v in hints.items() if k in _required_keys(annotation)}
    optional = {k: values_of(v) for k, v in hints.items() if k not in _required_keys(annotation)}
    return st.fixed_dictionaries(required, optional=optional)


def _required_keys(typed_dict: Any) -> frozenset[str]:
    return typed_dict.__required_keys__  # type: ignore[no-any-return]


@st.composite
def annotated_values(draw: st.DrawFn) -> tuple[Any, Any]:
    annotation = draw(ANNOTATIONS)
    return annotation, draw(values_of(annotation))


@settings(max_examples=150)
@given(annotated_values())
def test_values_of_the_type_are_accepted(case: tuple[Any, Any]) -> None:
    annotation, value = case
    received: list[Any] = []

    async def body(x: Any) -> Any:
        received.append(x)
        return x

    body.__annotations__ = {"x": annotation, "return": annotation}
    body.__doc__ = "Echo."
    definition = tool(body)
    assert_supported_json_schema(definition.parameters)
    assert compile_validator(definition.parameters).is_valid({"x": value})

    async def main() -> Any:
        registry = ToolRegistry()
        registry.register(definition)
        return await registry.execute(ToolExecutionInput("c", "body", {"x": value}, AbortController().signal))

    result = asyncio.run(main())
    assert isinstance(result, ToolSuccess), result
    assert json.dumps(received[0]) == json.dumps(value)  # tuples arrive where lists were sent
    assert json.dumps(result.value) == json.dumps(value)


@settings(max_examples=60)
@given(ANNOTATIONS)
def test_mapping_is_deterministic(annotation: Any) -> None:
    first = one_parameter(annotation).parameters
    second = one_parameter(annotation).parameters
    assert json.dumps(first) == json.dumps(second)
