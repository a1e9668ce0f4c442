"""The same realistic signatures through ``@tool``, pydantic-ai's ``Tool`` and openai-agents' ``function_tool``.

Each case is a function and sample arguments with the verdict we expect; the
test checks that our compiled schema (validated by the twin in use: both
passes) gives that verdict, and that the peers' published schemas (validated
by ``jsonschema``, Draft 2020-12) agree, except where a written divergence
says why they differ. pydantic-ai and openai-agents are test dependencies
(the ``dev`` extra, which ``make test`` installs); in an environment without
them their side is skipped with that reason, our side still runs.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import annotated_types as at
import pytest
import typing_extensions
from _typed_helpers import LineRange, Priority, Theme, Tree

from dsh_codegen.registry._typed import tool
from dsh_codegen.schema import compile_validator

pydantic = pytest.importorskip("pydantic", reason="pydantic is not installed (it is optional)")
from pydantic import BaseModel, Field  # noqa: E402

HAS_PYDANTIC_AI = importlib.util.find_spec("pydantic_ai") is not None
HAS_AGENTS = importlib.util.find_spec("agents") is not None
NO_PEER = "is not installed (a test dependency: pip install -e '.[dev]')"


class Edit(TypedDict):
    old: str
    new: str
    count: NotRequired[int]


class Recipient(typing_extensions.TypedDict):
    email: str
    name: typing_extensions.NotRequired[str]


class User(BaseModel):
    name: str = Field(max_length=8, description="Login name.")
    age: int = Field(ge=0, le=150)


def search(query: str, limit: int = 10) -> list[str]:
    """Search the index."""
    return []


def set_theme(theme: Theme) -> str:
    """Switch the theme."""
    return theme.value


def file_task(title: str, priority: Priority) -> int:
    """File a task."""
    return 1


def read_lines(path: str, lines: LineRange) -> str:
    """Read lines of a file."""
    return ""


def create_user(user: User) -> str:
    """Create a user."""
    return user.name


def apply_edits(path: str, edits: list[Edit]) -> int:
    """Apply edits to a file."""
    return 0


def send_mail(to: Recipient, subject: str) -> bool:
    """Send a mail."""
    return True


def score(scores: dict[str, int]) -> int:
    """Sum the scores."""
    return 0


def draw_tree(tree: Tree) -> int:
    """Draw a tree."""
    return 0


def page(number: Annotated[int, at.Ge(1), at.Le(100)], tag: Annotated[str, at.MinLen(1), at.MaxLen(5)]) -> str:
    """Fetch a page."""
    return ""


def rename(slug: Annotated[str, Field(pattern=r"^[a-z]+$", description="Lower-case name.")]) -> str:
    """Rename a thing."""
    return slug


def annotate(value: int | str, note: str | None = None) -> str:
    """Annotate a value."""
    return ""


def set_mode(mode: Literal["fast", "safe"]) -> str:
    """Set the mode."""
    return mode


def dark_or_auto(theme: Literal[Theme.DARK, "auto"]) -> str:
    """Pin the theme."""
    return theme


def place(point: tuple[int, int]) -> str:
    """Place a point."""
    return ""


def average(samples: Annotated[list[float], at.MinLen(1)]) -> float:
    """Average samples."""
    return 0.0


# (function, [(arguments, expected verdict)], {index of a sample: (peer, reason)} divergences)
Divergences = dict[int, tuple[str, str]]
STRICT_ALL_REQUIRED = "openai-agents strict mode makes every property required (defaults are not optional)"
OPEN_NESTED = (
    "pydantic-ai leaves nested TypedDicts/dataclasses/models open (pydantic's extra='ignore'); ours are closed"
)
CASES: list[tuple[Callable[..., Any], list[tuple[Any, bool]], Divergences]] = [
    (
        search,
        [
            ({"query": "x"}, True),
            ({"query": "x", "limit": 3}, True),
            ({"limit": 3}, False),
            ({"query": 1}, False),
            ({"query": "x", "limt": 3}, False),
        ],
        {0: ("agents", STRICT_ALL_REQUIRED)},
    ),
    (set_theme, [({"theme": "dark"}, True), ({"theme": "blue"}, False), ({"theme": 1}, False)], {}),
    (
        file_task,
        [
            ({"title": "t", "priority": 2}, True),
            ({"title": "t", "priority": 3}, False),
            ({"title": "t", "priority": "HIGH"}, False),
        ],
        {},
    ),
    (
        read_lines,
        [
            ({"path": "p", "lines": {"start": 1}}, True),
            ({"path": "p", "lines": {"start": 1, "end": 4}}, True),
            ({"path": "p", "lines": {"end": 4}}, False),
            ({"path": "p", "lines": {"start": 1, "stop": 2}}, False),
        ],
        {0: ("agents", STRICT_ALL_REQUIRED), 3: ("pydantic_ai", OPEN_NESTED)},
    ),
    (
        create_user,
        [
            ({"user": {"name": "ann", "age": 30}}, True),
            ({"user": {"name": "annabelle", "age": 30}}, False),
            ({"user": {"name": "ann", "age": -1}}, False),
            ({"user": {"name": "ann"}}, False),
            ({"user": {"name": "ann", "age": 3, "admin": True}}, False),
        ],
        {4: ("pydantic_ai", OPEN_NESTED)},
    ),
    (
        apply_edits,
        [
            ({"path": "p", "edits": []}, True),
            ({"path": "p", "edits": [{"old": "a", "new": "b", "count": 2}]}, True),
            ({"path": "p", "edits": [{"old": "a", "new": "b"}]}, True),
            ({"path": "p", "edits": [{"old": "a"}]}, False),
            ({"path": "p", "edits": [{"old": "a", "new": "b", "x": 1}]}, False),
        ],
        # (typing.TypedDict: the peers take Edit from Python 3.12 on; before, the case is skipped)
        {2: ("agents", STRICT_ALL_REQUIRED), 4: ("pydantic_ai", OPEN_NESTED)},
    ),
    (
        send_mail,
        [
            ({"to": {"email": "a@b"}, "subject": "s"}, True),
            ({"to": {"name": "n"}, "subject": "s"}, False),
            ({"to": {"email": "a@b", "cc": "c"}, "subject": "s"}, False),
        ],
        {0: ("agents", STRICT_ALL_REQUIRED), 2: ("pydantic_ai", OPEN_NESTED)},
    ),
    (
        score,
        [
            ({"scores": {"a": 1, "b": 2}}, True),
            ({"scores": {}}, True),
            ({"scores": {"a": "1"}}, False),
            ({"scores": [1]}, False),
        ],
        {},
    ),
    (
        draw_tree,
        [
            ({"tree": {"label": "r", "children": [{"label": "a", "children": []}]}}, True),
            ({"tree": {"label": "r"}}, True),
            ({"tree": {"label": "r", "children": [{"children": []}]}}, False),
            ({"tree": {"label": "r", "children": [{"label": 1}]}}, False),
        ],
        {1: ("agents", STRICT_ALL_REQUIRED)},
    ),
    (
        page,
        [
            ({"number": 1, "tag": "a"}, True),
            ({"number": 0, "tag": "a"}, False),
            ({"number": 101, "tag": "a"}, False),
            ({"number": 5, "tag": ""}, False),
            ({"number": 5, "tag": "toolong"}, False),
        ],
        {},
    ),
    (rename, [({"slug": "abc"}, True), ({"slug": "Abc"}, False), ({"slug": ""}, False)], {}),
    (
        annotate,
        [
            ({"value": 1}, True),
            ({"value": "x", "note": None}, True),
            ({"value": "x", "note": "n"}, True),
            ({"value": 1.5}, False),
            ({"value": None}, False),
        ],
        {0: ("agents", STRICT_ALL_REQUIRED)},
    ),
    (set_mode, [({"mode": "fast"}, True), ({"mode": "slow"}, False)], {}),
    (dark_or_auto, [({"theme": "dark"}, True), ({"theme": "auto"}, True), ({"theme": "light"}, False)], {}),
    (
        place,
        [
            ({"point": [1, 2]}, True),
            ({"point": [1]}, False),
            ({"point": [1, 2, 3]}, False),
            ({"point": [1, "2"]}, False),
        ],
        {},
    ),
    (average, [({"samples": [1.5, 2]}, True), ({"samples": []}, False), ({"samples": ["a"]}, False)], {}),
]
IDS = [case[0].__name__ for case in CASES]


def _peer_verdicts(schema: Any, samples: list[tuple[Any, bool]], single: str | None = None) -> list[bool]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    # ``single``: the peer publishes a lone object parameter's schema as the root
    return [validator.is_valid(arguments if single is None else arguments[single]) for arguments, _ in samples]


def _peer_schema(build: Callable[[], Any]) -> Any:
    """The peer's schema, or a skip where pydantic (under both peers) refuses typing.TypedDict before 3.12."""
    try:
        return build()
    except pydantic.PydanticUserError as error:
        assert error.code == "typed-dict-version" and sys.version_info < (3, 12)
        pytest.skip("pydantic refuses typing.TypedDict on Python < 3.12 (@tool accepts both modules' TypedDicts)")


def _expected(samples: list[tuple[Any, bool]], divergences: Divergences, peer: str) -> list[bool]:
    return [verdict != (divergences.get(i, ("", ""))[0] == peer) for i, (_, verdict) in enumerate(samples)]


@pytest.mark.parametrize(("fn", "samples", "divergences"), CASES, ids=IDS)
def test_ours(fn: Callable[..., Any], samples: list[tuple[Any, bool]], divergences: Divergences) -> None:
    validator = compile_validator(tool(fn).parameters)
    assert [validator.is_valid(arguments) for arguments, _ in samples] == [verdict for _, verdict in samples]


@pytest.mark.once
@pytest.mark.skipif(not HAS_PYDANTIC_AI, reason="pydantic-ai " + NO_PEER)
@pytest.mark.parametrize(("fn", "samples", "divergences"), CASES, ids=IDS)
def test_pydantic_ai(fn: Callable[..., Any], samples: list[tuple[Any, bool]], divergences: Divergences) -> None:
    from pydantic_ai import Tool

    function_schema = _peer_schema(lambda: Tool(fn).function_schema)
    schema = function_schema.json_schema
    single = function_schema.single_arg_name
    if single is None:
        assert schema.get("additionalProperties") is False  # pydantic-ai closes the root too
    assert _peer_verdicts(schema, samples, single) == _expected(samples, divergences, "pydantic_ai")


@pytest.mark.once
@pytest.mark.skipif(not HAS_AGENTS, reason="openai-agents " + NO_PEER)
@pytest.mark.parametrize(("fn", "samples", "divergences"), CASES, ids=IDS)
def test_openai_agents(fn: Callable[..., Any], samples: list[tuple[Any, bool]], divergences: Divergences) -> None:
    from agents import function_tool
    from agents.exceptions import UserError

    try:
        schema = _peer_schema(lambda: function_tool(fn).params_json_schema)  # strict mode, the default
    except UserError:
        # strict mode refuses additionalProperties schemas (dict[str, T]); the non-strict schema is the comparison
        assert fn is score
        schema = function_tool(fn, strict_mode=False).params_json_schema
    assert _peer_verdicts(schema, samples) == _expected(samples, divergences, "agents")
