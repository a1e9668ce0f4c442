"""The annotation -> schema mapping of ``@tool`` (twin-independent: runs once)."""

from __future__ import annotations

import importlib.util
import sys
import typing
from collections.abc import Mapping, Sequence
import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Optional, Required, TypedDict, Union

import annotated_types as at
import pytest
import typing_extensions
from _typed_helpers import Priority, Theme, output_schema, property_schema

from dsh_codegen.schema import assert_supported_json_schema

pytestmark = pytest.mark.once


class Point(TypedDict):
    """A point on the plane.

    Second paragraph is not part of the description.
    """

    x: int
    y: int
    label: NotRequired[str]


class Sparse(TypedDict, total=False):
    a: int
    b: Required[str]


class Base(TypedDict):
    base: str


class Derived(Base, total=False):
    extra: float


class Nested(TypedDict):
    point: Point
    tags: list[Annotated[str, "a tag"]]


class Cat(TypedDict):
    kind: Literal["cat"]
    lives: int


class Dog(TypedDict):
    kind: Literal["dog"]
    good: bool


class HasName(TypedDict):
    name: str


class HasId(TypedDict):
    id: int


class Color(enum.Enum):
    """A paint colour."""

    RED = "red"
    GREEN = "green"


@dataclass
class Span:
    """A span of lines."""

    start: int
    end: int = 10
    tags: list[str] = field(default_factory=list)
    computed: int = field(default=0, init=False)


class ExtTyped(typing_extensions.TypedDict):
    name: str
    note: typing_extensions.NotRequired[str]
    frozen: typing_extensions.ReadOnly[int]


@dataclass
class FieldLike:
    description: str


@dataclass
class Doc:  # the shape of PEP 727's typing_extensions.Doc
    documentation: str


POINT = {
    "type": "object",
    "description": "A point on the plane.",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}, "label": {"type": "string"}},
    "required": ["x", "y"],
    "additionalProperties": False,
}

TABLE: list[tuple[str, Any, Any]] = [
    ("str", str, {"type": "string"}),
    ("int", int, {"type": "integer"}),
    ("float", float, {"type": "number"}),
    ("bool", bool, {"type": "boolean"}),
    ("None", None, {"type": "null"}),
    ("NoneType", type(None), {"type": "null"}),
    ("list[int]", list[int], {"type": "array", "items": {"type": "integer"}}),
    ("typing.List[str]", typing.List[str], {"type": "array", "items": {"type": "string"}}),  # noqa: UP006
    ("tuple[str, ...]", tuple[str, ...], {"type": "array", "items": {"type": "string"}}),
    ("Sequence[bool]", Sequence[bool], {"type": "array", "items": {"type": "boolean"}}),
    ("typing.Sequence[float]", typing.Sequence[float], {"type": "array", "items": {"type": "number"}}),  # noqa: UP006
    ("bare list", list, {"type": "array"}),
    ("bare Sequence", Sequence, {"type": "array"}),
    ("list[list[int]]", list[list[int]], {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}),
    ("dict[str, Any]", dict[str, Any], {"type": "object", "additionalProperties": True}),
    ("dict[str, object]", dict[str, object], {"type": "object", "additionalProperties": True}),
    ("Mapping[str, Any]", Mapping[str, Any], {"type": "object", "additionalProperties": True}),
    ("bare dict", dict, {"type": "object", "additionalProperties": True}),
    ("bare Mapping", Mapping, {"type": "object", "additionalProperties": True}),
    ("Any", Any, {}),
    ("object", object, {}),
    ("Literal one", Literal["a"], {"type": "string", "const": "a"}),
    ("Literal strings", Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    ("Literal ints", Literal[1, 2, 3], {"type": "integer", "enum": [1, 2, 3]}),
    ("Literal bools", Literal[True, False], {"type": "boolean", "enum": [True, False]}),
    ("Literal None", Literal[None], {"type": "null"}),
    ("Literal mixed", Literal[1, "a", "b"], {"enum": [1, "a", "b"]}),
    ("Literal bool and int stay apart", Literal[1, True], {"enum": [1, True]}),
    ("Literal str or None", Literal["a", None], {"enum": ["a", None]}),
    ("Literal bool, None, int and str", Literal[False, None, 0, ""], {"enum": [False, None, 0, ""]}),
    # an enum member stands for its value (the body gets the member); the class docstring is not used
    ("Literal enum member", Literal[Color.RED], {"type": "string", "const": "red"}),
    ("Literal IntEnum members", Literal[Priority.LOW, Priority.HIGH], {"type": "integer", "enum": [1, 2]}),
    ("Literal member and str", Literal[Theme.DARK, "auto"], {"type": "string", "enum": ["dark", "auto"]}),
    ("Literal member and None", Literal[Priority.HIGH, None], {"enum": [2, None]}),
    ("int | None", int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    ("Optional[str]", Optional[str], {"anyOf": [{"type": "string"}, {"type": "null"}]}),  # noqa: UP007, UP045
    ("Union[str, bool]", Union[str, bool], {"anyOf": [{"type": "string"}, {"type": "boolean"}]}),  # noqa: UP007
    ("int | float", int | float, {"anyOf": [{"type": "integer"}, {"type": "number"}]}),
    (
        "Literal | Literal",
        Literal["a"] | Literal["b"],
        {"anyOf": [{"type": "string", "const": "a"}, {"type": "string", "const": "b"}]},
    ),
    ("str | Literal", str | Literal["x"], {"anyOf": [{"type": "string"}, {"type": "string", "const": "x"}]}),
    ("Any | None collapses", Any | None, {}),
    ("a mixed Literal in a union", Literal[1, "a"] | None, {"anyOf": [{"enum": [1, "a"]}, {"type": "null"}]}),
    ("TypedDict", Point, POINT),
    (
        "total=False with Required",
        Sparse,
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["b"],
            "additionalProperties": False,
        },
    ),
    (
        "inherited TypedDict keeps each class's totality",
        Derived,
        {
            "type": "object",
            "properties": {"base": {"type": "string"}, "extra": {"type": "number"}},
            "required": ["base"],
            "additionalProperties": False,
        },
    ),
    (
        "nested TypedDict",
        Nested,
        {
            "type": "object",
            "properties": {
                "point": POINT,
                "tags": {"type": "array", "items": {"type": "string", "description": "a tag"}},
            },
            "required": ["point", "tags"],
            "additionalProperties": False,
        },
    ),
    ("TypedDict | None", Point | None, {"anyOf": [POINT, {"type": "null"}]}),
    (
        "discriminated TypedDicts",
        Cat | Dog,
        {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"type": "string", "const": "cat"}, "lives": {"type": "integer"}},
                    "required": ["kind", "lives"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"kind": {"type": "string", "const": "dog"}, "good": {"type": "boolean"}},
                    "required": ["kind", "good"],
                    "additionalProperties": False,
                },
            ]
        },
    ),
    (
        "TypedDicts told apart by a required key",
        HasName | HasId,
        {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}},
                    "required": ["id"],
                    "additionalProperties": False,
                },
            ]
        },
    ),
    (
        "array or object",
        list[int] | dict[str, Any],
        {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "object", "additionalProperties": True}]},
    ),
    ("Annotated str", Annotated[int, "how many"], {"type": "integer", "description": "how many"}),
    ("Annotated Field-like", Annotated[str, FieldLike("a name")], {"type": "string", "description": "a name"}),
    (
        "Annotated member of a union keeps its description",
        Annotated[str, "a name"] | None,
        {"anyOf": [{"type": "string", "description": "a name"}, {"type": "null"}]},
    ),
    (
        "each member keeps its own description",
        Literal["a"] | Annotated[Literal["b"], "letters"],
        {"anyOf": [{"type": "string", "const": "a"}, {"type": "string", "const": "b", "description": "letters"}]},
    ),
    ("Annotated Doc", Annotated[str, Doc("documented")], {"type": "string", "description": "documented"}),
    ("Annotated ignores other metadata", Annotated[str, 3, "text"], {"type": "string", "description": "text"}),
    (
        "Annotated union",
        Annotated[int | None, "maybe"],
        {"description": "maybe", "anyOf": [{"type": "integer"}, {"type": "null"}]},
    ),
    ("NewType", typing.NewType("UserId", int), {"type": "integer"}),
    ("Enum", Color, {"type": "string", "enum": ["red", "green"], "description": "A paint colour."}),
    ("IntEnum", Priority, {"type": "integer", "enum": [1, 2]}),
    ("StrEnum", Theme, {"type": "string", "enum": ["light", "dark"]}),
    (
        "dataclass",
        Span,
        {
            "type": "object",
            "description": "A span of lines.",
            "properties": {
                "start": {"type": "integer"},
                "end": {"type": "integer", "default": 10},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["start"],
            "additionalProperties": False,
        },
    ),
    (
        "typing_extensions TypedDict with ReadOnly",
        ExtTyped,
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "note": {"type": "string"}, "frozen": {"type": "integer"}},
            "required": ["name", "frozen"],
            "additionalProperties": False,
        },
    ),
    ("dict[str, int]", dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (
        "Mapping[str, list[str]]",
        Mapping[str, list[str]],
        {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    ),
    (
        "tuple[int, str]",
        tuple[int, str],
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False, "minItems": 2},
    ),
    ("tuple[()]", tuple[()], {"type": "array", "items": False}),
    ("Ge and Le", Annotated[int, at.Ge(1), at.Le(9)], {"type": "integer", "minimum": 1, "maximum": 9}),
    (
        "Gt, Lt and MultipleOf",
        Annotated[float, at.Gt(0), at.Lt(1), at.MultipleOf(0.25)],
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.25},
    ),
    ("Interval", Annotated[int, at.Interval(ge=0, lt=5)], {"type": "integer", "minimum": 0, "exclusiveMaximum": 5}),
    (
        "MinLen/MaxLen on str",
        Annotated[str, at.MinLen(1), at.MaxLen(3)],
        {"type": "string", "minLength": 1, "maxLength": 3},
    ),
    (
        "Len on a list",
        Annotated[list[int], at.Len(1, 2)],
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
    ),
    (
        "MaxLen on a dict",
        Annotated[dict[str, Any], at.MaxLen(4)],
        {"type": "object", "additionalProperties": True, "maxProperties": 4},
    ),
    (
        "a length constraint on Optional goes to the member it fits",
        Annotated[str | None, at.MaxLen(3)],
        {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]},
    ),
]


@pytest.mark.parametrize(("annotation", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_parameter_mapping(annotation: Any, expected: Any) -> None:
    schema = property_schema(annotation)
    assert schema == expected
    assert_supported_json_schema(schema)


@pytest.mark.parametrize(("annotation", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_output_mapping(annotation: Any, expected: Any) -> None:
    assert output_schema(annotation) == expected


def test_parameter_object_shape() -> None:
    async def body(a: int, b: str = "x", *, c: bool, d: float | None = None) -> None:
        """Shape."""

    from dsh_codegen.registry._typed import tool

    definition = tool(body)
    assert definition.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "string", "default": "x"},
            "c": {"type": "boolean"},
            "d": {"default": None, "anyOf": [{"type": "number"}, {"type": "null"}]},
        },
        "required": ["a", "c"],
        "additionalProperties": False,  # the root is closed, as both peers close it
    }
    assert list(definition.parameters["properties"]) == ["a", "b", "c", "d"]


def test_no_parameters() -> None:
    async def ping() -> str:
        """Ping."""
        return "pong"

    from dsh_codegen.registry._typed import tool

    assert tool(ping).parameters == {"type": "object", "properties": {}, "additionalProperties": False}


def test_defaults_recorded_only_when_lossless() -> None:
    from dsh_codegen.registry._typed import tool

    marker = object()

    async def body(
        items: list[int] = [1, 2],  # noqa: B006
        pair: Sequence[int] = (1, 2),
        nan: float = float("nan"),
        anything: Any = marker,
    ) -> None:
        """Defaults."""

    properties = tool(body).parameters["properties"]
    assert properties["items"] == {"type": "array", "items": {"type": "integer"}, "default": [1, 2]}
    assert properties["pair"]["default"] == [1, 2]
    assert "default" not in properties["nan"]
    assert "default" not in properties["anything"]
    assert body.__defaults__ is not None and body.__defaults__[0] == [1, 2]


def test_definition_defaults_and_overrides() -> None:
    from dsh_codegen.registry._typed import tool

    async def read_file(path: str) -> str:
        """Read a file.

        Long text.
        """
        return path

    definition = tool(read_file)
    assert definition.name == "read_file"
    assert definition.description == "Read a file."
    assert definition.validates_arguments is True
    renamed = tool(name="read", description="Reads.", timeout_ms=250)(read_file)
    assert (renamed.name, renamed.description, renamed.timeout_ms) == ("read", "Reads.", 250)


POSTPONED = """
from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, Required, TypedDict

from dsh_codegen.registry._typed import tool

if TYPE_CHECKING:
    from dsh_codegen.registry import ToolRunContext


class Opt(TypedDict):
    a: int
    b: NotRequired[str]


class Loose(TypedDict, total=False):
    c: Required[int]
    d: str


@tool
async def f(o: Opt, l: Loose, run: ToolRunContext) -> Opt:
    \"\"\"F.\"\"\"
    return o
"""


def test_postponed_annotations_resolve(tmp_path: Path) -> None:
    # Python 3.11 misses string Required/NotRequired in __required_keys__, and
    # ToolRunContext imported only for type checking must still be recognized.
    source = tmp_path / "typed_postponed_probe.py"
    source.write_text(POSTPONED)
    spec = importlib.util.spec_from_file_location("typed_postponed_probe", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    properties = module.f.parameters["properties"]
    assert properties["o"]["required"] == ["a"]
    assert properties["l"]["required"] == ["c"]
    assert list(properties) == ["o", "l"]
