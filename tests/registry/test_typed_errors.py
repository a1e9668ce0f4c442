"""Decoration-time errors of ``@tool`` (default values are checked by the validator twin: both passes)."""

from __future__ import annotations

import enum
import re
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import annotated_types as at
import pytest
from _typed_helpers import one_parameter

from dsh_codegen.registry import ToolRunContext
from dsh_codegen.registry._typed import tool


SUPPORTED = (
    "; supported: str, int, float, bool, None, list[T], tuple[T, ...], tuple[A, B], Sequence[T], dict[str, T], "
    "Mapping[str, T], Any, object, Literal[...], Enum, unions, TypedDict, dataclasses, pydantic BaseModel, "
    "Annotated[T, <description or constraints>]"
)


class Perm(enum.Flag):
    READ = 1
    WRITE = 2


class Pairs(enum.Enum):
    ORIGIN = (0, 0)


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    ONE = 1


class Node(TypedDict):
    value: int
    children: list[Node]


class Outer(TypedDict):
    inner: Inner


class Inner(TypedDict):
    back: NotRequired[Outer]


class Tagged(TypedDict):
    tags: set[str]


class A(TypedDict, total=False):
    a: int


class B(TypedDict, total=False):
    b: int


class Same1(TypedDict):
    kind: str


class Same2(TypedDict):
    kind: str


def rejected(annotation: Any, *, returns: Any = None) -> str:
    with pytest.raises(TypeError) as info:
        one_parameter(annotation, returns=returns)
    return str(info.value)


OWNER = 'tool(one_parameter.<locals>.body): parameter "x": '


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (set[str], "unsupported type set[str]" + SUPPORTED + " (at x)"),
        (bytes, "unsupported type bytes" + SUPPORTED + " (at x)"),
        (list[complex], "unsupported type complex" + SUPPORTED + " (at x[])"),
        (Tagged, "unsupported type set[str]" + SUPPORTED + " (at x.tags)"),
        (dict[str, bytes], "unsupported type bytes" + SUPPORTED + " (at x{})"),
        (dict[int, str], "unsupported type dict[int, str] (JSON object keys are str)" + SUPPORTED + " (at x)"),
        (tuple[int, bytes], "unsupported type bytes" + SUPPORTED + " (at x[1])"),
        (
            Literal[Pairs.ORIGIN],
            "Literal value <Pairs.ORIGIN: (0, 0)> (value (0, 0)) is not a JSON scalar (str, int, bool or None) (at x)",
        ),
        (Literal[Color.RED, "red"], "Literal values <Color.RED: 'red'> and 'red' are the same JSON value 'red' (at x)"),
        (Literal[Perm.READ, 1.0], "Literal value 1.0 is not a JSON scalar (str, int, bool or None) (at x)"),
        (
            Literal[Perm.READ, Level.ONE],
            "Literal values <Perm.READ: 1> and <Level.ONE: 1> are the same JSON value 1 (at x)",
        ),
        (Perm, "unsupported type Perm (a Flag combines members; use list[Enum])" + SUPPORTED + " (at x)"),
        (Pairs, "unsupported type Pairs (member value (0, 0) is not a JSON scalar)" + SUPPORTED + " (at x)"),
        (Annotated[str, at.Ge(1)], "constraint ge=1 does not apply to str (at x)"),
        (Annotated[int, at.MaxLen(3)], "constraint max_length=3 does not apply to int (at x)"),
        (
            Annotated[list[int], "x", at.Predicate(bool)],
            "constraint Predicate(bool) cannot be expressed in the tool-schema dialect (at x)",
        ),
        (Annotated[int, at.Ge(float("inf"))], "constraint ge=inf is not a finite JSON number (at x)"),
        (Annotated[int, at.MultipleOf(0)], "constraint multiple_of=0 is not a finite JSON number (at x)"),
        (Annotated[str, at.MinLen(-1)], "constraint min_length=-1 is not a non-negative int (at x)"),
        (Annotated[int | None, at.MinLen(1)], "constraint min_length=1 does not apply to int | None (at x)"),
    ],
    ids=lambda value: str(value)[:40],
)
def test_unsupported_parameter_types(annotation: Any, message: str) -> None:
    assert rejected(annotation) == OWNER + message


def test_unsupported_return_type() -> None:
    assert rejected(str, returns=frozenset[int]) == (
        "tool(one_parameter.<locals>.body): return annotation: unsupported type frozenset[int]"
        + SUPPORTED
        + " (at return)"
    )


def test_recursion_is_per_path_not_per_use() -> None:
    # The same TypedDict twice side by side is not recursion.
    class Pair(TypedDict):
        left: A
        right: A
        more: list[A]

    assert one_parameter(Pair).parameters["properties"]["x"]["required"] == ["left", "right", "more"]


def test_body_must_return_its_value() -> None:
    def gen(x: int) -> Any:
        yield x

    async def agen(x: int) -> Any:
        yield x

    with pytest.raises(
        TypeError,
        match=re.escape(
            "tool(test_body_must_return_its_value.<locals>.gen): the tool body must return its value, not yield it (got a generator function)"
        ),
    ):
        tool(gen)
    with pytest.raises(
        TypeError,
        match=re.escape("the tool body must return its value, not yield it (got an async generator function)"),
    ):
        tool(agen)


def test_parameters_must_be_keyword_passable() -> None:
    async def star(*args: int) -> None:
        """S."""

    async def kw(**kwargs: int) -> None:
        """K."""

    async def positional(x: int, /) -> None:
        """P."""

    tail = "; tool parameters must be passable by keyword (no *args, **kwargs or positional-only)"
    with pytest.raises(TypeError) as info:
        tool(star)
    assert (
        str(info.value)
        == 'tool(test_parameters_must_be_keyword_passable.<locals>.star): parameter "args" is variadic positional'
        + tail
    )
    with pytest.raises(TypeError, match=re.escape('parameter "kwargs" is variadic keyword' + tail)):
        tool(kw)
    with pytest.raises(TypeError, match=re.escape('parameter "x" is positional-only' + tail)):
        tool(positional)


def test_missing_annotations() -> None:
    async def bare(x) -> None:  # type: ignore[no-untyped-def]
        """B."""

    async def no_return(x: int):  # type: ignore[no-untyped-def]
        """N."""

    with pytest.raises(TypeError, match=re.escape('parameter "x" has no type annotation (use Any for any JSON)')):
        tool(bare)
    with pytest.raises(TypeError) as info:
        tool(no_return)
    assert str(info.value) == (
        "tool(test_missing_annotations.<locals>.no_return): missing return annotation "
        "(the output schema comes from it; use -> Any for any JSON)"
    )


def test_run_parameter_annotation() -> None:
    async def good(run: ToolRunContext) -> None:
        """G."""

    async def unannotated(run, x: int = 1) -> None:  # type: ignore[no-untyped-def]
        """U."""

    async def wrong(run: int) -> None:
        """W."""

    assert good.__name__ and tool(good).parameters == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert list(tool(unannotated).parameters["properties"]) == ["x"]
    with pytest.raises(TypeError) as info:
        tool(wrong)
    assert str(info.value) == (
        'tool(test_run_parameter_annotation.<locals>.wrong): parameter "run" receives the run context: '
        "annotate it ToolRunContext or leave it unannotated (got int)"
    )


def test_unresolvable_annotation() -> None:
    async def body(x: Missing) -> None:  # type: ignore[name-defined]  # noqa: F821
        """B."""

    with pytest.raises(
        TypeError,
        match=re.escape(
            "tool(test_unresolvable_annotation.<locals>.body): cannot resolve the annotations: name 'Missing' is not defined"
        ),
    ):
        tool(body)


def test_description_required() -> None:
    async def silent(x: int) -> None:
        pass

    with pytest.raises(ValueError) as info:
        tool(silent)
    assert str(info.value) == (
        "tool(test_description_required.<locals>.silent): no description: pass description= or give the function a docstring"
    )
    assert tool(description="Given.")(silent).description == "Given."


def test_docstring_errors() -> None:
    async def unknown(x: int) -> None:
        """U.

        Args:
            x: fine.
            y: not a parameter.
            z: neither.
        """

    async def malformed(x: int) -> None:
        """M.

        Args:
            this line has no colon
        """

    with pytest.raises(ValueError) as info:
        tool(unknown)
    assert (
        str(info.value)
        == "tool(test_docstring_errors.<locals>.unknown): docstring Args: documents y, z, not parameters of the function"
    )
    with pytest.raises(ValueError) as info:
        tool(malformed)
    assert str(info.value) == (
        "tool(test_docstring_errors.<locals>.malformed): docstring Args: line 'this line has no colon' is not 'name: description'"
    )


def test_define_tool_checks_still_apply() -> None:
    async def run_code(x: int) -> None:
        """R."""

    async def body(x: int) -> None:
        """B."""

    with pytest.raises(ValueError, match="reserved"):
        tool(run_code)
    with pytest.raises(ValueError, match=re.escape("define_tool(body): timeout_ms must be a positive finite number")):
        tool(timeout_ms=0)(body)
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        tool(name="")(body)

    async def classify(args: Any) -> bool:
        return True

    with pytest.raises(TypeError, match=re.escape("define_tool(body): is_concurrency_safe must be synchronous")):
        tool(is_concurrency_safe=classify)(body)


def test_json_default_must_match_the_type() -> None:
    async def body(limit: int = "ten", flag: bool | None = None) -> None:  # type: ignore[assignment]
        """B."""

    async def implicit_optional(limit: int = None) -> None:  # type: ignore[assignment]
        """I."""

    with pytest.raises(TypeError) as info:
        tool(body)
    assert str(info.value) == (
        'tool(test_json_default_must_match_the_type.<locals>.body): parameter "limit": '
        "the default 'ten' does not match the type int"
    )
    with pytest.raises(TypeError, match=re.escape('parameter "limit": the default None does not match the type int')):
        tool(implicit_optional)
