"""What the body receives and returns for the wide annotations (enums, dataclasses, models, tuples, recursion)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypedDict

import annotated_types as at
import pytest
from _typed_helpers import LineRange, Priority, Theme, Tree, async_test, error_code, run_tool, text

from dsh_codegen.json import FrozenJsonObject
from dsh_codegen.registry import ToolRegistry, ToolSuccess
from dsh_codegen.registry._typed import tool
from dsh_codegen.schema import assert_supported_json_schema

pydantic = pytest.importorskip("pydantic", reason="pydantic is not installed (it is optional)")
from pydantic import BaseModel, Field  # noqa: E402


class User(BaseModel):
    name: str = Field(max_length=8)
    theme: Theme = Theme.LIGHT


class Category(BaseModel):
    name: str
    parent: Category | None = None


class Bag(TypedDict):
    pair: tuple[int, str]
    level: Priority


class Loose(BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    kind: str = Field(alias="type", description="What it is.")
    size: Annotated[int, Field(gt=0)] = 1


@dataclasses.dataclass
class Bad:
    n: Annotated[int, at.Le(3)] = 5


seen: list[dict[str, Any]] = []


@tool
async def wide(
    theme: Theme,
    priority: Priority,
    lines: LineRange,
    tree: Tree,
    user: User,
    bag: Bag,
    scores: dict[str, Priority],
    either: LineRange | Annotated[int, at.Ge(0)],
    plain: dict[str, int] | None = None,
) -> str:
    """Receive everything."""
    seen.append(dict(locals()))
    return "ok"


ARGS: dict[str, Any] = {
    "theme": "dark",
    "priority": 2,
    "lines": {"start": 3},
    "tree": {"label": "r", "children": [{"label": "a", "children": [{"label": "b"}]}]},
    "user": {"name": "ann"},
    "bag": {"pair": [1, "x"], "level": 1},
    "scores": {"a": 1, "b": 2},
    "either": {"start": 1, "end": 2},
    "plain": {"k": 1},
}


@async_test
async def test_the_body_gets_instances() -> None:
    seen.clear()
    result = await run_tool(wide, ARGS)
    assert isinstance(result, ToolSuccess), result
    got = seen[-1]
    assert got["theme"] is Theme.DARK and got["priority"] is Priority.HIGH
    assert got["lines"] == LineRange(3, -1)
    assert got["tree"] == Tree("r", [Tree("a", [Tree("b")])])
    assert isinstance(got["user"], User) and got["user"].theme is Theme.LIGHT and got["user"].name == "ann"
    assert got["bag"] == {"pair": (1, "x"), "level": Priority.LOW} and got["bag"]["level"] is Priority.LOW
    assert got["scores"] == {"a": Priority.LOW, "b": Priority.HIGH}
    assert got["either"] == LineRange(1, 2)
    assert type(got["plain"]) is FrozenJsonObject  # nothing to convert: the frozen snapshot itself


@async_test
async def test_a_union_picks_the_first_branch_that_accepts() -> None:
    seen.clear()
    result = await run_tool(wide, ARGS | {"either": 7})
    assert isinstance(result, ToolSuccess), result
    assert seen[-1]["either"] == 7


@async_test
async def test_policies_see_the_frozen_json_not_instances() -> None:
    registry = ToolRegistry()
    registry.register(wide)
    observed: list[Any] = []
    registry.guard(lambda execution: observed.append(execution.arguments))
    from dsh_codegen.registry import AbortController, ToolExecutionInput

    await registry.execute(
        ToolExecutionInput(call_id="c", name="wide", arguments=ARGS, signal=AbortController().signal)
    )
    assert observed and observed[0] == ARGS
    assert type(observed[0]["lines"]) is FrozenJsonObject


@async_test
async def test_invalid_nested_values_are_refused_before_the_body() -> None:
    seen.clear()
    bad_enum = await run_tool(wide, ARGS | {"theme": "blue"})
    assert error_code(bad_enum) == "INVALID_ARGS"
    too_long = await run_tool(wide, ARGS | {"user": {"name": "far too long"}})
    assert error_code(too_long) == "INVALID_ARGS"
    deep = await run_tool(wide, ARGS | {"tree": {"label": "r", "children": [{"children": []}]}})
    assert text(deep) == 'Error: invalid arguments: missing required property "tree.children[0].label"'
    assert seen == []


def test_recursive_classes_go_through_defs() -> None:
    @tool
    async def nest(category: Category, tree: Tree) -> Tree:
        """Nest."""
        return tree

    params = nest.parameters
    assert params["properties"]["category"] == {"$ref": "#/$defs/Category"}
    assert params["$defs"]["Category"]["properties"]["parent"] == {
        "anyOf": [{"$ref": "#/$defs/Category"}, {"type": "null"}],
        "default": None,
    }
    assert params["$defs"]["Tree"]["properties"]["children"] == {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
    assert_supported_json_schema(params)
    assert nest.output is not None
    assert nest.output.schema["$ref"] == "#/$defs/Tree" and "Tree" in nest.output.schema["$defs"]


@async_test
async def test_recursive_model_and_output_encoding() -> None:
    @tool
    def lineage(category: Category) -> list[Category]:
        """The chain of parents."""
        chain = [category]
        while chain[-1].parent is not None:
            chain.append(chain[-1].parent)
        return chain

    result = await run_tool(lineage, {"category": {"name": "c", "parent": {"name": "b", "parent": {"name": "a"}}}})
    assert isinstance(result, ToolSuccess), result
    assert [item["name"] for item in result.value] == ["c", "b", "a"]
    assert result.value[2] == {"name": "a", "parent": None}


@async_test
async def test_returned_dataclasses_and_enums_are_encoded() -> None:
    @tool
    async def shape(n: int) -> dict[str, LineRange | Theme]:
        """Shape."""
        return {"range": LineRange(n), "theme": Theme.DARK}

    result = await run_tool(shape, {"n": 2})
    assert isinstance(result, ToolSuccess), result
    assert result.value == {"range": {"start": 2, "end": -1}, "theme": "dark"}

    @tool
    async def wrong(n: int) -> LineRange:
        """Wrong."""
        return Theme.DARK  # type: ignore[return-value]

    assert error_code(await run_tool(wrong, {"n": 1})) == "INVALID_TOOL_OUTPUT"


def test_model_fields_map_aliases_defaults_and_extra() -> None:
    @tool
    async def take(loose: Loose) -> None:
        """Take."""

    assert take.parameters["properties"]["loose"] == {
        "type": "object",
        "properties": {
            "type": {"type": "string", "description": "What it is."},
            "size": {"type": "integer", "exclusiveMinimum": 0, "default": 1},
        },
        "required": ["type"],
        "additionalProperties": True,
    }


def test_pydantic_field_constraints_on_parameters() -> None:
    @tool
    async def rename(
        slug: Annotated[str, Field(pattern=r"^[a-z]+$", min_length=2, max_length=9, description="The name.")],
        ratio: Annotated[float, Field(ge=0, le=1, multiple_of=0.5)] = 0.5,
    ) -> None:
        """Rename."""

    assert rename.parameters["properties"] == {
        "slug": {"type": "string", "description": "The name.", "minLength": 2, "maxLength": 9, "pattern": "^[a-z]+$"},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.5, "default": 0.5},
    }


def test_a_default_outside_the_constraints_is_refused() -> None:
    async def body(n: Annotated[int, at.Ge(1)] = 0) -> None:
        """Body."""

    with pytest.raises(TypeError, match=r'tool\(.*body\): parameter "n": the default 0 does not match the type'):
        tool(body)

    async def nested(bad: Bad) -> None:
        """Nested."""

    with pytest.raises(TypeError, match=r'parameter "bad": the default 5 does not match the type .* \(at bad\.n\)'):
        tool(nested)


def _same_name_classes() -> tuple[type, type]:
    @dataclasses.dataclass
    class Node:
        value: int
        next: Node | None = None

    first = Node

    @dataclasses.dataclass
    class Node:  # type: ignore[no-redef]
        label: str
        kids: list[Node] = dataclasses.field(default_factory=list)

    return first, Node


def test_recursive_classes_sharing_a_name_get_distinct_defs() -> None:
    first, second = _same_name_classes()

    async def body(a: Any, b: Any) -> None:
        """Two lists."""

    body.__annotations__ = {"a": first, "b": second, "return": None}
    # the classes' own string annotations name "Node": resolve each in its own namespace
    first.__annotations__ = {"value": int, "next": first | None}
    second.__annotations__ = {"label": str, "kids": list[second]}  # type: ignore[valid-type]
    params = tool(body).parameters
    assert params["properties"] == {"a": {"$ref": "#/$defs/Node"}, "b": {"$ref": "#/$defs/Node2"}}
    assert params["$defs"]["Node2"]["properties"]["kids"] == {"type": "array", "items": {"$ref": "#/$defs/Node2"}}
    assert params["$defs"]["Node"]["properties"]["next"]["anyOf"][0] == {"$ref": "#/$defs/Node"}
