"""Descriptions from docstrings and ``Annotated`` (twin-independent: runs once)."""

from __future__ import annotations

from typing import Annotated, TypedDict

import pytest

from dsh_codegen.registry import ToolRunContext
from dsh_codegen.registry._typed import tool

pytestmark = pytest.mark.once


class Options(TypedDict):
    """Options for the search.

    Not this paragraph.
    """

    fuzzy: bool


def test_google_style_docstring() -> None:
    async def search(
        query: str,
        limit: int = 10,
        opts: Options | None = None,
        *,
        exact: Annotated[bool, "Match exactly."] = False,
        run: ToolRunContext,
    ) -> list[str]:
        """Search the index
        for matching lines.

        Everything after the first paragraph is for humans.

        Args:
            query (str): The text to find.
            limit: How many results
                to return at most.

                Still the limit's text.
            exact: Overridden by Annotated.
            run: The run context (not a schema property).

        Returns:
            The matching lines,
            best first.

        Raises:
            query: not an argument entry.
        """
        return []

    definition = tool(search)
    assert definition.description == "Search the index for matching lines."
    properties = definition.parameters["properties"]
    assert properties["query"]["description"] == "The text to find."
    assert properties["limit"]["description"] == "How many results to return at most. Still the limit's text."
    assert properties["exact"]["description"] == "Match exactly."
    # no Args entry: the TypedDict branch keeps its own class description, the union has none
    assert "description" not in properties["opts"]
    assert properties["opts"]["anyOf"][0]["description"] == "Options for the search."
    assert definition.output is not None
    assert definition.output.schema["description"] == "The matching lines, best first."


def test_args_entry_beats_typed_dict_doc() -> None:
    async def configure(opts: Options) -> None:
        """Configure.

        Arguments:
            opts: The caller's options.
        """

    assert tool(configure).parameters["properties"]["opts"]["description"] == "The caller's options."


def test_docstring_starting_with_a_section() -> None:
    async def body(x: int) -> None:
        """
        Args:
            x: The x.
        """

    definition = tool(description="Given.")(body)
    assert definition.description == "Given."
    assert definition.parameters["properties"]["x"]["description"] == "The x."


def test_description_argument_wins_over_docstring() -> None:
    async def body(x: int) -> None:
        """From the docstring."""

    assert tool(description="From the argument.")(body).description == "From the argument."


def test_annotated_return_description_wins_over_returns_section() -> None:
    async def body() -> Annotated[int, "A count."]:
        """Count.

        Returns:
            Ignored.
        """
        return 1

    definition = tool(body)
    assert definition.output is not None
    assert definition.output.schema == {"type": "integer", "description": "A count."}


def test_star_prefixed_and_typed_entries() -> None:
    async def body(a: int, b: str) -> None:
        """Body.

        Parameters:
            a (int, optional): First.
            b: Second: with a colon inside.
        """

    properties = tool(body).parameters["properties"]
    assert properties["a"]["description"] == "First."
    assert properties["b"]["description"] == "Second: with a colon inside."
