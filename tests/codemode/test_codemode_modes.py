"""Guarantees 114-127 (docs/guarantees.md): presentation modes and assembly, end to end with a running program."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _bridge_helpers import (
    ProgramRuntime,
    ToolCallError,
    async_test,
    code_registry,
    run_code,
    text,
    text_tool,
)
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    AbortController,
    PromptAssembly,
    ToolExecutionInput,
    ToolRegistry,
)

ROUTE_BACK = (
    'Error: unknown tool "echo": only `run_code` is callable directly \u2014 call `echo`'
    " from inside a `run_code` program instead"
)


def names(assembly: PromptAssembly) -> list[str]:
    return [tool["name"] for tool in assembly.tools]


def section(assembly: PromptAssembly, id: str) -> str:
    (found,) = [s for s in assembly.sections if s.id == id]
    return found.text


def direct(name: str, agent: Any = None, **arguments: Any) -> ToolExecutionInput:
    return ToolExecutionInput("direct", name, arguments, AbortController().signal, agent=agent)


async def echo_both(tools: Any, print: Any) -> Any:
    return await tools.echo({"text": "nested"})


@async_test
async def test_b114_native_mode_has_no_run_code_and_needs_no_runtime() -> None:
    registry = ToolRegistry()
    registry.register(text_tool("echo"))
    assembly = registry.assemble()
    assert names(assembly) == ["echo"] and assembly.sections == ()
    result = await registry.execute(direct(RUN_CODE_NAME, code="p", description="d"))
    assert text(result) == 'Error: unknown tool "run_code"'
    assert text(await registry.execute(direct("echo", text="x"))) == "echo:x"


@async_test
async def test_b115_code_mode_wire_is_run_code_and_the_sdk_declares_the_rest() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"), text_tool("other"))
    runtime.add("p", echo_both)
    assembly = registry.assemble()
    assert names(assembly) == [RUN_CODE_NAME]
    sdk = section(assembly, "tools:sdk")
    assert "async def echo(self" in sdk and "async def other(self" in sdk and "run_code" not in sdk.split("```")[1]
    orders = {s.id: s.order for s in assembly.sections}
    assert orders == {"tools:code-only": 99, "tools:sdk": 150}
    assert section(assembly, "tools:code-only").startswith("`run_code` is the only tool")
    result = await run_code(registry, "p")
    assert text(result) == "echo:nested"


@async_test
async def test_b116_both_mode_has_native_schemas_then_run_code_and_both_paths_run() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"), mode="both")
    runtime.add("p", echo_both)
    assembly = registry.assemble()
    assert names(assembly) == ["echo", RUN_CODE_NAME]
    assert section(assembly, "tools:code-only") == ""
    assert "class Tools(Protocol):" in section(assembly, "tools:sdk")
    assert text(await registry.execute(direct("echo", text="direct"))) == "echo:direct"
    assert text(await run_code(registry, "p")) == "echo:nested"


def test_b117_sdk_text_is_stable_and_order_independent() -> None:
    first, _, _ = code_registry(text_tool("b"), text_tool("a"))
    second, _, _ = code_registry(text_tool("a"), text_tool("b"))
    texts = {section(r.assemble(), "tools:sdk") for r in (first, second, first)}
    assert len(texts) == 1


def test_b118_runtime_checks_and_the_python_flavor() -> None:
    no_runtime = ToolRegistry(mode="code")
    with pytest.raises(ValueError, match="requires a code runtime"):
        no_runtime.assemble()
    unknown, _, _ = code_registry(text_tool("echo"), runtime=ProgramRuntime(language="cobol"))
    with pytest.raises(ValueError, match='no SDK renderer registered for runtime language "cobol"'):
        unknown.assemble()
    python, _, _ = code_registry(text_tool("echo"))
    sdk = section(python.assemble(), "tools:sdk")
    assert "class Tools(Protocol):" in sdk and "    async def echo(self, args:" in sdk
    typescript, _, _ = code_registry(text_tool("echo"), runtime=ProgramRuntime(language="typescript"))
    assert "declare const tools" in section(typescript.assemble(), "tools:sdk")


def test_b119_run_code_text_follows_the_runtime_language() -> None:
    def schema(registry: ToolRegistry) -> Any:
        definition = registry.get(RUN_CODE_NAME)
        assert definition is not None
        return definition

    python, _, _ = code_registry()
    typescript, _, _ = code_registry(runtime=ProgramRuntime(language="typescript"))
    py = schema(python)
    ts = schema(typescript)
    assert py.description.startswith("Execute a Python program")
    assert py.parameters["properties"]["code"]["description"] == "The program: the body of an async Python function."
    assert ts.description.startswith("Execute a TypeScript program")
    assert (
        ts.parameters["properties"]["code"]["description"] == "The program: the body of an async TypeScript function."
    )
    for definition in (py, ts):
        assert "`description`" in definition.description
        assert definition.parameters["required"] == ["code", "description"]
    without = ToolRegistry(mode="code")
    assert schema(without).description.startswith("Execute a TypeScript program")
    unknown, _, _ = code_registry(runtime=ProgramRuntime(language="cobol"))
    with pytest.raises(ValueError, match="no run_code schema flavor"):
        unknown.get(RUN_CODE_NAME)


@async_test
async def test_b120_restricted_tools_leave_the_sdk_and_the_bindings() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"), text_tool("secret"))
    scope = registry.scope("main")
    scope.restrict(deny=["secret"])
    seen: list[Any] = []

    async def program(tools: Any, print: Any) -> Any:
        seen.append(hasattr(tools, "secret"))
        try:
            await tools.raw("secret", {})
        except ToolCallError as exc:
            return exc.message
        return "reached"

    runtime.add("p", program)
    sdk = section(scope.assemble(), "tools:sdk")
    assert "echo" in sdk and "secret" not in sdk
    assert names(scope.assemble()) == [RUN_CODE_NAME]  # run_code outside allow/deny filtering
    result = await run_code(registry, "p", agent="main")
    assert runtime.requests[-1].tool_names == ("echo",)
    assert seen == [False]
    assert text(result) == 'unknown tool "secret"'


def test_b121_scope_and_assembly_listeners_are_authoritative() -> None:
    registry, _, _ = code_registry(text_tool("echo"))
    scope = registry.scope("main")
    scope.on_assemble(lambda assembly, next: PromptAssembly(next().tools, ()))
    assert scope.assemble().sections == ()
    assert registry.assemble().sections != ()


def test_b122_tool_order_under_code_mode() -> None:
    registry, _, _ = code_registry(text_tool("echo"))
    with pytest.raises(ValueError, match='tool_order lists unregistered tool "echo"'):
        registry.assemble(tool_order=["echo"])
    assert names(registry.assemble(tool_order=[RUN_CODE_NAME])) == [RUN_CODE_NAME]


@async_test
async def test_b123_model_direct_native_call_is_routed_back_nested_calls_pass() -> None:
    ran: list[str] = []

    async def body(args: Any, run: Any) -> Any:
        ran.append(args["text"])
        return "ok"

    registry, runtime, _ = code_registry(text_tool("echo", body))
    runtime.add("p", echo_both)
    result = await registry.execute(direct("echo", text="direct"))
    assert text(result) == ROUTE_BACK
    assert result.error.info is not None and result.error.info.code == "UNKNOWN_TOOL"  # type: ignore[union-attr]
    assert ran == []
    assert text(await run_code(registry, "p")) == "ok"
    assert ran == ["nested"]


@async_test
async def test_b124_per_agent_present_as_code_under_a_native_deployment() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"), mode="native")
    runtime.add("p", echo_both)
    coder = registry.scope("coder")
    coder.present_as("code")
    registry.scope("plain")
    assert names(coder.assemble()) == [RUN_CODE_NAME]
    assert names(registry.assemble("plain")) == ["echo"]
    assert registry.get(RUN_CODE_NAME, "plain") is None
    assert text(await registry.execute(direct("echo", agent="coder", text="x"))) == ROUTE_BACK
    assert text(await registry.execute(direct("echo", agent="plain", text="x"))) == "echo:x"
    assert text(await run_code(registry, "p", agent="coder")) == "echo:nested"
    assert text(await run_code(registry, "p", agent="plain")) == 'Error: unknown tool "run_code"'


@async_test
async def test_b125_preset_scopes_are_inherited_and_may_opt_out() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"), mode="native")
    runtime.add("p", echo_both)
    preset = registry.scope("preset")
    dispose = preset.present_as("code")
    child = registry.scope("child", parent=preset)
    opted = registry.scope("opted", parent=preset)
    opted.present_as("native")
    assert names(child.assemble()) == [RUN_CODE_NAME]
    assert text(await run_code(registry, "p", agent="child")) == "echo:nested"
    assert opted.assemble().sections == () and names(opted.assemble()) == ["echo"]
    with pytest.raises(ValueError, match="conflicts"):
        preset.present_as("both")
    with pytest.raises(ValueError, match="requires a scoped context"):
        registry.present_as("code")
    dispose()
    assert names(child.assemble()) == ["echo"]
    assert text(await run_code(registry, "p", agent="child")) == 'Error: unknown tool "run_code"'


@async_test
async def test_b126_disposing_the_code_scope_removes_run_code_and_the_sdk() -> None:
    registry, runtime, _ = code_registry(text_tool("echo"), mode="native")
    with registry.scope("coder") as coder:
        coder.present_as("code")
        assert section(coder.assemble(), "tools:sdk")
    scope = registry.scope("coder")
    assert names(scope.assemble()) == ["echo"] and scope.assemble().sections == ()


@async_test
async def test_b127_max_parallel_sub_calls_default_and_validation() -> None:
    assert ToolRegistry().max_parallel_sub_calls == 10
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="max_parallel_sub_calls must be a positive integer"):
            ToolRegistry(max_parallel_sub_calls=bad)  # type: ignore[arg-type]
    assert ToolRegistry().max_sub_calls == 1000
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="max_sub_calls must be a positive integer"):
            ToolRegistry(max_sub_calls=bad)  # type: ignore[arg-type]
    # The cap is honoured: with 1, gathered safe calls run one at a time.
    active = [0, 0]

    async def body(args: Any, run: Any) -> Any:
        active[0] += 1
        active[1] = max(active)
        await asyncio.sleep(0.001)
        active[0] -= 1
        return "ok"

    registry, runtime, _ = code_registry(text_tool("s", body, safe=True), max_parallel_sub_calls=1)

    async def program(tools: Any, print: Any) -> Any:
        return await asyncio.gather(*(tools.s({}) for _ in range(4)))

    runtime.add("p", program)
    result = await run_code(registry, "p")
    assert not result.is_error and active[1] == 1


def test_the_sdk_text_says_which_tools_run_concurrently_and_which_alone() -> None:
    def note(*tools: Any, **config: Any) -> str:
        registry, _, _ = code_registry(*tools, **config)
        (line,) = [
            line
            for line in section(registry.assemble(), "tools:sdk").splitlines()
            if "asyncio.gather" in line and "MAY overlap" not in line
        ]
        return line

    assert note(
        text_tool("read", is_concurrency_safe=True),
        text_tool("grep", safe=True),
        text_tool("fetch", is_concurrency_safe=lambda args: args.get("text") == "cached"),
        text_tool("write"),
        max_parallel_sub_calls=4,
    ) == (
        "- Concurrency here: `read` runs concurrently under `asyncio.gather` (at most 4 at a time);"
        " `grep`, `fetch` run concurrently for some arguments and alone for others;"
        " `write` runs alone: a gathered call to one waits until the calls before it have finished,"
        " and the calls after it wait for it."
    )
    assert note(text_tool("a"), text_tool("b", is_concurrency_safe=False)) == (
        "- Every tool here runs alone: calls gathered with `asyncio.gather` still run one after another,"
        " in submission order, so gather them for convenience, not speed."
    )
    assert note(text_tool("a", is_concurrency_safe=True)) == (
        "- Every tool here runs concurrently with the others under `asyncio.gather` (at most 10 at a time)."
    )
