"""Guarantees 14-23 (docs/guarantees.md): scopes, shadowing, restrictions, scoped listeners."""

from __future__ import annotations

from typing import Any

import pytest

from _registry_helpers import async_test, call, echo_tool, error_code, registry_with, text
from dsh_codegen.registry import Allow, ToolExecution, ToolRegistry


def names(schemas: list[dict[str, Any]]) -> list[str]:
    return [s["name"] for s in schemas]


@async_test
async def test_b14_scoped_tool_is_visible_only_to_its_scope() -> None:
    registry = ToolRegistry()
    alpha = registry.scope("alpha")
    registry.scope("beta")
    alpha.register(echo_tool("secret"))
    ok = await registry.execute(call("secret", agent="alpha"))
    assert text(ok) == "echo:hi"
    for agent in ("beta", None, "unknown-agent"):
        result = await registry.execute(call("secret", agent=agent))
        assert text(result) == 'Error: unknown tool "secret"'
        assert error_code(result) == "UNKNOWN_TOOL"
    assert names(registry.schemas()) == []
    assert names(registry.schemas("beta")) == []


@pytest.mark.parametrize("scoped_first", [True, False])
@async_test
async def test_b15_scoped_registration_shadows_a_global(scoped_first: bool) -> None:
    registry = ToolRegistry()
    scope = registry.scope("a")

    async def local(args: Any, run: Any) -> str:
        return "local:" + args["text"]

    if scoped_first:
        scope.register(echo_tool(execute=local))
        registry.register(echo_tool())
    else:
        registry.register(echo_tool())
        scope.register(echo_tool(execute=local))
    assert names(scope.schemas()) == ["echo"]
    assert text(await registry.execute(call(agent="a"))) == "local:hi"
    assert text(await registry.execute(call())) == "echo:hi"


def test_b16_allow_hides_unlisted_inherited_tools_only() -> None:
    registry = registry_with(echo_tool("read"), echo_tool("write"), echo_tool("exec"))
    scope = registry.scope("a")
    scope.register(echo_tool("report"))
    scope.restrict(allow=["read"])
    assert names(scope.schemas()) == ["read", "report"]
    assert names(registry.schemas()) == ["read", "write", "exec"]


def test_b17_deny_admits_later_globals_allow_excludes_them() -> None:
    registry = registry_with(echo_tool("read"), echo_tool("write"))
    denying = registry.scope("denying")
    allowing = registry.scope("allowing")
    denying.restrict(deny=["write"])
    allowing.restrict(allow=["read"])
    registry.register(echo_tool("later"))
    assert names(denying.schemas()) == ["read", "later"]
    assert names(allowing.schemas()) == ["read"]


def test_b18_restrictions_intersect_and_dispose_independently() -> None:
    registry = registry_with(echo_tool("a"), echo_tool("b"), echo_tool("c"))
    scope = registry.scope("s")
    first = scope.restrict(allow=["a", "b"])
    second = scope.restrict(deny=["a"])
    assert names(scope.schemas()) == ["b"]
    first()
    assert names(scope.schemas()) == ["b", "c"]
    second()
    assert names(scope.schemas()) == ["a", "b", "c"]
    second()  # idempotent, lifts nothing else
    third = scope.restrict(allow=["c"])
    assert names(scope.schemas()) == ["c"]
    third()


def test_b19_restriction_names_are_snapshotted() -> None:
    registry = registry_with(echo_tool("a"), echo_tool("b"))
    scope = registry.scope("s")
    allow = ["a"]
    scope.restrict(allow=allow)
    allow.append("b")
    assert names(scope.schemas()) == ["a"]


def test_b20_restrict_errors() -> None:
    registry = registry_with(echo_tool("zeta"), echo_tool("alpha"))
    with pytest.raises(ValueError) as info:
        registry.restrict(allow=["alpha"])
    assert str(info.value).startswith("restrict() requires a scoped context")
    scope = registry.scope("s")
    scope.register(echo_tool("own"))
    with pytest.raises(ValueError) as info:
        scope.restrict()
    assert str(info.value).startswith("restrict() without allow= or deny= names is a no-op")
    with pytest.raises(ValueError) as info:
        scope.restrict(deny=[])
    assert str(info.value).startswith("restrict() without allow= or deny= names is a no-op")
    with pytest.raises(ValueError) as info:
        scope.restrict(deny=["own"])
    assert str(info.value) == 'restrict() names unknown global tool "own"; known global tools: alpha, zeta'
    with pytest.raises(ValueError) as info:
        scope.restrict(allow=["x", "alpha"], deny=["y"])
    assert str(info.value) == 'restrict() names unknown global tools "x", "y"; known global tools: alpha, zeta'
    with pytest.raises(ValueError) as info:  # a one-shot iterable is read once and fully checked
        scope.restrict(allow=iter(["x", "alpha"]), deny=(name for name in ["y"]))
    assert str(info.value) == 'restrict() names unknown global tools "x", "y"; known global tools: alpha, zeta'
    lonely = ToolRegistry().scope("s")
    with pytest.raises(ValueError) as info:
        lonely.restrict(allow=["x"])
    assert str(info.value) == 'restrict() names unknown global tool "x"; known global tools: (none)'
    assert names(scope.schemas()) == ["zeta", "alpha", "own"]


def test_b21_restrictions_reach_through_the_scope_chain() -> None:
    registry = registry_with(echo_tool("g1"), echo_tool("g2"))
    parent = registry.scope("parent")
    parent.register(echo_tool("p1"))
    parent.register(echo_tool("p2"))
    child = registry.scope("child", parent=parent)
    child.register(echo_tool("c1"))
    # A child's mask filters tools inherited from its ancestor scope too.
    child.restrict(deny=["p2"])
    assert names(child.schemas()) == ["g1", "g2", "p1", "c1"]
    # An ancestor's mask applies to every nested scope.
    parent.restrict(deny=["g1"])
    assert names(parent.schemas()) == ["g2", "p1", "p2"]
    assert names(child.schemas()) == ["g2", "p1", "c1"]


@async_test
async def test_b22_disposing_a_scope_leaves_no_residue() -> None:
    registry = registry_with(echo_tool("g"))
    seen: list[str] = []
    scope = registry.scope("a")
    with scope:
        scope.register(echo_tool("mine"))
        scope.guard(lambda e: "scoped guard")
        scope.on_pre_execute(lambda e, n: seen.append("pre") or n())
        scope.on_result(lambda e, r: seen.append("result"))
        scope.restrict(deny=["g"])
        child = registry.scope("child", parent=scope)
        child.register(echo_tool("kid"))
    assert scope.disposed and child.disposed
    assert registry.get("mine", scope) is None
    assert registry.get("kid", "child") is None
    result = await registry.execute(call("g", agent="a"))
    assert text(result) == "echo:hi"
    assert seen == []
    # The agent key is free again and the new scope starts empty.
    again = registry.scope("a")
    assert names(again.schemas()) == ["g"]


@async_test
async def test_b23_scoped_pre_execute_sees_only_its_agents_calls() -> None:
    registry = registry_with(echo_tool())
    registry.scope("other")
    scope = registry.scope("a")
    seen: list[Any] = []

    def listener(execution: ToolExecution, next: Any) -> Any:
        seen.append(execution.agent)
        return next()

    scope.on_pre_execute(listener)
    await registry.execute(call(agent="a"))
    await registry.execute(call(agent="other"))
    await registry.execute(call())
    assert seen == ["a"]
    assert Allow() == Allow()


def test_scope_bookkeeping_stays_small_under_churn() -> None:
    registry = ToolRegistry()
    scope = registry.scope("a")
    for _ in range(1000):
        scope.on_result(lambda e, r: None)()
    keep = scope.on_result(lambda e, r: None)
    assert len(scope._disposers) < 100
    scope.dispose()
    assert keep.disposed
