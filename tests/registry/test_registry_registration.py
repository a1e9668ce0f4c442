"""Guarantees 1-13 (docs/guarantees.md): registration and schema projection."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dsh_codegen.registry import (
    RUN_CODE_NAME,
    ToolChange,
    ToolDefinition,
    ToolOutput,
    ToolRegistry,
    define_tool,
)
from dsh_codegen.schema import JsonSchemaError
from _registry_helpers import (
    async_test,
    call,
    echo_body,
    echo_tool,
    raw_tool,
    registry_with,
    render_text,
    text,
)

RESERVED = (
    'tool name "run_code" is reserved for the Code Mode presentation transport and cannot be registered or shadowed'
)


def test_b01_schemas_are_an_allowlist_projection() -> None:
    tool = echo_tool(
        finalize_content=lambda e, r: None,
        timeout_ms=100,
        is_concurrency_safe=lambda a: True,
        present_call=lambda a: None,
        present_result=lambda a, r: None,
    )
    registry = registry_with(tool)
    [schema] = registry.schemas()
    assert set(schema) == {"name", "description", "parameters"}
    assert schema == {
        "name": "echo",
        "description": "The echo tool.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    }


def test_b02_schemas_are_deep_copies() -> None:
    registry = registry_with(echo_tool())
    first = registry.schemas()
    first[0]["parameters"]["properties"]["text"]["type"] = "number"
    first[0]["name"] = "changed"
    first.append({"name": "extra"})
    second = registry.schemas()
    assert len(second) == 1
    assert second[0]["name"] == "echo"
    assert second[0]["parameters"]["properties"]["text"]["type"] == "string"
    assert second[0]["parameters"] is not first[0]["parameters"]


def test_b03_schemas_order_scope_view_and_run_code_last() -> None:
    registry = registry_with(echo_tool("b"), echo_tool("a"), mode="both")
    scope = registry.scope("agent")
    scope.register(echo_tool("z"))
    scope.register(echo_tool("c"))
    registry.register(echo_tool("late"))
    assert [s["name"] for s in registry.schemas()] == ["b", "a", "late", RUN_CODE_NAME]
    assert [s["name"] for s in scope.schemas()] == ["b", "a", "late", "z", "c", RUN_CODE_NAME]
    native = registry_with(echo_tool("b"))
    assert [s["name"] for s in native.schemas()] == ["b"]


def test_b04_missing_output_is_rejected() -> None:
    registry = ToolRegistry()
    bare = ToolDefinition(name="bare", description="d", parameters={"type": "object"}, output=None, execute=echo_body)
    message = 'tool "bare" must declare output { schema, render, presentation_meta? }'
    with pytest.raises(TypeError) as info:
        registry.register(bare)
    assert str(info.value) == message
    with pytest.raises(TypeError) as info:
        define_tool(
            name="bare",
            description="d",
            parameters={},
            output=None,  # type: ignore[arg-type]
            execute=echo_body,
        )
    assert str(info.value) == message
    assert registry.schemas() == []


def test_b05_unsupported_output_schema_is_rejected_at_registration() -> None:
    registry = ToolRegistry()
    bad = raw_tool("bad", output_schema={"type": "string", "not": {"pattern": "x"}})
    with pytest.raises(JsonSchemaError) as info:
        registry.register(bad)
    assert "schema.not is not supported" in str(info.value)
    assert registry.get("bad") is None
    with pytest.raises(JsonSchemaError):
        define_tool(
            name="bad",
            description="d",
            parameters={},
            output=ToolOutput(schema={"type": "strin"}, render=render_text),  # type: ignore[typeddict-item]
            execute=echo_body,
        )


@pytest.mark.parametrize("timeout", [0, -1, -0.5, math.inf, -math.inf, math.nan, True, "10"])
def test_b06_bad_timeout_is_rejected_in_register_and_define_tool(timeout: Any) -> None:
    registry = ToolRegistry()
    with pytest.raises(ValueError) as info:
        registry.register(raw_tool("slow", timeout_ms=timeout))
    assert str(info.value) == 'tool "slow" timeout_ms must be a positive finite number'
    with pytest.raises(ValueError) as info:
        echo_tool("slow", timeout_ms=timeout)
    assert str(info.value) == "define_tool(slow): timeout_ms must be a positive finite number"
    registry.register(raw_tool("fine", timeout_ms=0.5))
    assert registry.get("fine") is not None


def test_b07_duplicate_names_in_one_layer_are_rejected() -> None:
    registry = registry_with(echo_tool())
    with pytest.raises(ValueError) as info:
        registry.register(echo_tool())
    assert str(info.value) == (
        'tool "echo" is already registered (for a per-agent variant, register through'
        " that agent's scope, registry.scope(agent), instead)"
    )
    scope = registry.scope("a")
    scope.register(echo_tool())  # shadowing a global is fine
    with pytest.raises(ValueError) as info:
        scope.register(echo_tool())
    assert str(info.value) == 'tool "echo" is already registered in this scope'


def test_b08_disposers_unregister_and_scope_disposal_unregisters() -> None:
    registry = ToolRegistry()
    dispose = registry.register(echo_tool())
    assert registry.get("echo") is not None
    dispose()
    dispose()  # idempotent
    assert registry.get("echo") is None
    registry.register(echo_tool())  # the name is free again
    scope = registry.scope("a")
    scope.register(echo_tool("mine"))
    assert registry.get("mine", "a") is not None
    scope.dispose()
    assert registry.get("mine", "a") is None
    assert registry.get("mine", scope) is None


def test_b09_a_raising_change_listener_rolls_the_registration_back() -> None:
    registry = ToolRegistry()
    seen: list[ToolChange] = []

    def explode(change: ToolChange) -> None:
        seen.append(change)
        if change.kind == "register":
            raise RuntimeError("listener failed")

    dispose = registry.on_change(explode)
    with pytest.raises(RuntimeError, match="listener failed"):
        registry.register(echo_tool())
    assert registry.get("echo") is None
    assert registry.schemas() == []
    dispose()
    registry.register(echo_tool())
    assert registry.get("echo") is not None
    assert seen == [ToolChange("register", "echo", None)]


def test_b10_run_code_is_reserved_everywhere() -> None:
    for mode in ("native", "code", "both"):
        registry = ToolRegistry(mode=mode)  # type: ignore[arg-type]
        with pytest.raises(ValueError) as info:
            registry.register(raw_tool(RUN_CODE_NAME))
        assert str(info.value) == RESERVED
        scope = registry.scope("a")
        with pytest.raises(ValueError) as info:
            scope.register(raw_tool(RUN_CODE_NAME))
        assert str(info.value) == RESERVED
        registry.register(echo_tool())
        with pytest.raises(ValueError) as info:
            scope.restrict(deny=[RUN_CODE_NAME])
        assert str(info.value) == (
            'restrict() cannot name reserved Code Mode presentation transport "run_code";'
            " restrict end-capability tools instead"
        )
    with pytest.raises(ValueError) as info:
        echo_tool(RUN_CODE_NAME)
    assert str(info.value) == RESERVED


def test_b11_get_resolves_as_the_scope_sees_it() -> None:
    registry = ToolRegistry()
    global_echo = echo_tool()
    registry.register(global_echo)
    registry.register(echo_tool("other"))
    scope = registry.scope("a")
    local_echo = echo_tool()
    scope.register(local_echo)
    scope.restrict(deny=["other"])
    assert registry.get("echo") is global_echo
    assert registry.get("echo", "a") is local_echo
    assert registry.get("echo", scope) is local_echo
    assert scope.get("echo") is local_echo
    assert registry.get("other") is not None
    assert registry.get("other", "a") is None
    assert registry.get("missing") is None
    assert registry.get("echo", "no-such-agent") is global_echo
    assert registry.get(RUN_CODE_NAME) is None


def test_b12_lossy_raw_parameters_fail_schema_projection() -> None:
    registry = ToolRegistry()
    registry.register(
        raw_tool(
            "lossy",
            parameters={
                "type": "object",
                "properties": {"n": {"type": "number", "default": math.nan}},
            },
        )
    )
    with pytest.raises(ValueError) as info:
        registry.schemas()
    assert str(info.value) == 'tool "lossy" parameters must be lossless JSON before schema projection'


def _deep_array_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def _deep_value(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@async_test
async def test_b13_deep_schemas_project_and_render_without_recursion() -> None:
    depth = 100_000
    deep = _deep_array_schema(depth)

    async def body(args: Any, run: Any) -> Any:
        return _deep_value(depth)

    registry = ToolRegistry()
    registry.register(
        raw_tool(
            "deep",
            parameters={"type": "object", "properties": {"x": deep}},
            output_schema=deep,
            execute=body,
            render=lambda a, v: [{"type": "text", "text": "deep"}],
        )
    )
    [schema] = registry.schemas()
    node = schema["parameters"]["properties"]["x"]
    for _ in range(depth):
        node = node["items"]
    assert node == {"type": "string"}
    result = await registry.execute(call("deep", {}))
    assert not result.is_error, result
    assert text(result) == "deep"
    value = result.value
    for _ in range(depth):
        value = value[0]
    assert value == "leaf"
