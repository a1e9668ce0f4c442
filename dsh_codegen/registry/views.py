"""Tool-owned UI presentation: the ``card``-tagged call and result views.

A tool's ``present_call(args)`` returns a :data:`ToolCallView` and its
``present_result(args, result)`` a :data:`ToolResultView` (or ``None`` for the
generic fallback). Presenters depend only on their arguments and the durable
result (content and ``meta``), never on the canonical value, because UIs call
them during live streaming and log replay. Keys use the wire words of the
seed (``exitCode``, ``totalLines``, ``rawInput``).
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypeAlias, TypedDict

__all__ = [
    "DiffCallView",
    "DiffEntry",
    "DiffResultView",
    "GenericCallView",
    "GenericResultView",
    "ReadCallView",
    "ReadLine",
    "ReadResultView",
    "SearchFileMatches",
    "SearchMatch",
    "SearchMatchesResultView",
    "SearchPathsResultView",
    "SearchResultView",
    "TerminalCallView",
    "TerminalResultView",
    "ToolCallView",
    "ToolResultView",
    "WebFetchResultView",
    "WebCallView",
    "WebSearchResultView",
    "WebSource",
]


class GenericCallView(TypedDict):
    """Any call: a title, an action kind (e.g. ``"execute"``) and the raw input text."""

    card: Literal["generic"]
    title: NotRequired[str]
    kind: NotRequired[str]
    rawInput: NotRequired[str]


class GenericResultView(TypedDict):
    """Any result: a title and plain text content."""

    card: Literal["generic"]
    title: NotRequired[str]
    content: NotRequired[str]


class TerminalCallView(TypedDict):
    """A command about to run."""

    card: Literal["terminal"]
    title: NotRequired[str]
    command: NotRequired[str]


class TerminalResultView(TypedDict):
    """A finished command: its output, exit code or terminating signal name."""

    card: Literal["terminal"]
    title: NotRequired[str]
    output: NotRequired[str]
    exitCode: NotRequired[int]
    signal: NotRequired[str]


class DiffEntry(TypedDict):
    """One file's change; ``oldText`` absent means a new file, ``newText`` absent a deletion."""

    path: str
    oldText: NotRequired[str]
    newText: NotRequired[str]


class DiffCallView(TypedDict):
    """Proposed file changes."""

    card: Literal["diff"]
    title: NotRequired[str]
    diffs: list[DiffEntry]


class DiffResultView(TypedDict):
    """Applied file changes."""

    card: Literal["diff"]
    title: NotRequired[str]
    diffs: list[DiffEntry]


class SearchMatch(TypedDict):
    """One matching line (1-based ``line``)."""

    line: int
    text: str


class SearchFileMatches(TypedDict):
    """The matches in one file, in file order."""

    path: str
    matches: list[SearchMatch]


class SearchMatchesResultView(TypedDict):
    """A completed grep-style search, grouped by file; ``truncated``/``total`` say whether it is capped."""

    card: Literal["search"]
    shape: Literal["matches"]
    title: NotRequired[str]
    truncated: bool
    total: int
    files: list[SearchFileMatches]


class SearchPathsResultView(TypedDict):
    """A completed glob-style search: a flat list of paths."""

    card: Literal["search"]
    shape: Literal["paths"]
    title: NotRequired[str]
    truncated: bool
    total: int
    paths: list[str]


SearchResultView: TypeAlias = SearchMatchesResultView | SearchPathsResultView


class ReadLine(TypedDict):
    """One file line with its own 1-based line number."""

    number: int
    text: str


class ReadCallView(TypedDict):
    """A file read about to happen."""

    card: Literal["read"]
    title: NotRequired[str]
    path: str


class ReadResultView(TypedDict):
    """A completed file read: ``offset`` is the requested 1-based first line, kept even when ``lines`` is empty."""

    card: Literal["read"]
    title: NotRequired[str]
    path: str
    offset: int
    lines: list[ReadLine]
    totalLines: int
    lang: NotRequired[str]
    content: NotRequired[str]


class WebSource(TypedDict):
    """One search hit."""

    title: str
    url: str
    snippet: NotRequired[str]


class WebCallView(TypedDict):
    """A web retrieval about to happen (``query`` for search, ``url`` for fetch)."""

    card: Literal["web"]
    kind: Literal["search", "fetch"]
    title: NotRequired[str]
    query: NotRequired[str]
    url: NotRequired[str]


class WebSearchResultView(TypedDict):
    """A completed web search with its structured sources."""

    card: Literal["web"]
    kind: Literal["search"]
    title: NotRequired[str]
    query: str
    sources: list[WebSource]


class WebFetchResultView(TypedDict):
    """A completed fetch and its summary."""

    card: Literal["web"]
    kind: Literal["fetch"]
    title: NotRequired[str]
    url: str
    summary: NotRequired[str]
    status: NotRequired[int]


ToolCallView: TypeAlias = GenericCallView | TerminalCallView | DiffCallView | ReadCallView | WebCallView
ToolResultView: TypeAlias = (
    GenericResultView
    | TerminalResultView
    | DiffResultView
    | SearchMatchesResultView
    | SearchPathsResultView
    | ReadResultView
    | WebSearchResultView
    | WebFetchResultView
)
