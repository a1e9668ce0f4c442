"""Guarantees 101, 112-113 (docs/guarantees.md), plus presentation, catalog and native assembly."""

from __future__ import annotations

from typing import Any

import pytest

from _registry_helpers import async_test, call, echo_tool, raw_tool, registry_with, text
from dsh_codegen.codegen import ToolSchemaEntry
from dsh_codegen.registry import (
    RUN_CODE_NAME,
    PromptAssembly,
    ToolRegistry,
    ToolSuccess,
)

NO_RUNTIME = (
    'dsh_codegen: mode "code" requires a code runtime \u2014 pass'
    ' code_runtime=PythonSubprocessRuntime() (or another CodeRuntime) or set mode="native"'
)


def test_b101_presenters_and_classifier_validate_softly() -> None:
    def present_call(args: Any) -> Any:
        return {"card": "generic", "title": args["text"]}

    def present_result(args: Any, result: Any) -> Any:
        return {"card": "generic", "content": args["text"] + "!"}

    tool = echo_tool(
        present_call=present_call,
        present_result=present_result,
        is_concurrency_safe=lambda args: args["text"] == "safe",
    )
    result = ToolSuccess("v", [{"type": "text", "text": "v"}])
    assert tool.call_view({"text": "t"}) == {"card": "generic", "title": "t"}
    assert tool.result_view({"text": "t"}, result) == {"card": "generic", "content": "t!"}
    for malformed in ({}, {"text": 5}, None, "text", [1], {"text": print}):
        assert tool.call_view(malformed) is None
        assert tool.result_view(malformed, result) is None
    registry = registry_with(tool)
    assert registry.execution_mode(call(arguments={"text": "safe"})) == "parallel"
    for malformed in ({}, {"text": 5}, None, {"text": print}):
        assert registry.execution_mode(call(arguments=malformed)) == "exclusive"

    def raising(args: Any) -> Any:
        raise RuntimeError("presenter broke")

    def raising_result(args: Any, result: Any) -> Any:
        raise RuntimeError("presenter broke")

    broken = echo_tool(present_call=raising, present_result=raising_result)
    assert broken.call_view({"text": "t"}) is None
    assert broken.result_view({"text": "t"}, result) is None
    assert echo_tool().call_view({"text": "t"}) is None
    assert echo_tool().result_view({"text": "t"}, result) is None


@pytest.mark.parametrize(
    ("verdict", "mode"),
    [
        (True, "parallel"),
        (False, "exclusive"),
        (1, "exclusive"),
        ("yes", "exclusive"),
        (None, "exclusive"),
    ],
)
def test_b112_only_exact_true_is_parallel(verdict: Any, mode: str) -> None:
    registry = registry_with(echo_tool(is_concurrency_safe=lambda args: verdict))
    assert registry.execution_mode(call()) == mode


def test_b112_other_exclusive_cases() -> None:
    def raising(args: Any) -> Any:
        raise RuntimeError("classifier broke")

    registry = registry_with(echo_tool(), echo_tool("raising", is_concurrency_safe=raising))
    assert registry.execution_mode(call()) == "exclusive"  # undeclared
    assert registry.execution_mode(call("unknown")) == "exclusive"
    assert registry.execution_mode(call("raising")) == "exclusive"


def test_b113_raw_arguments_scoped_view_and_collapse() -> None:
    seen: list[Any] = []

    def classify(args: Any) -> bool:
        seen.append(args)
        return True

    registry = ToolRegistry()
    registry.register(raw_tool("raw", is_concurrency_safe=classify))
    raw_args = {"anything": [1, 2]}
    assert registry.execution_mode(call("raw", raw_args)) == "parallel"
    assert seen == [raw_args] and seen[0] is raw_args

    # Classification uses the caller's scoped view.
    scope = registry.scope("a")
    scope.register(echo_tool("local", is_concurrency_safe=lambda args: True))
    hidden = registry.scope("b")
    hidden.restrict(deny=["raw"])
    assert registry.execution_mode(call("local", agent="a")) == "parallel"
    assert registry.execution_mode(call("local")) == "exclusive"
    assert registry.execution_mode(call("raw", {}, agent="b")) == "exclusive"

    # A code-collapsed native call is exclusive; a nested one is classified normally.
    code = registry_with(echo_tool(is_concurrency_safe=lambda args: True), mode="code")
    assert code.execution_mode(call()) == "exclusive"
    parent_token: list[Any] = []
    assert parent_token == []


@async_test
async def test_code_collapse_allows_nested_calls() -> None:
    registry = registry_with(echo_tool(is_concurrency_safe=lambda args: True), mode="code")
    tokens: list[Any] = []
    registry.on_pre_execute(lambda e, n: tokens.append(e.token) or n())
    await registry.execute(call(RUN_CODE_NAME, {"code": "x", "description": "d"}))
    nested = call(parent=tokens[0])
    assert registry.execution_mode(nested) == "parallel"
    assert text(await registry.execute(nested)) == "echo:hi"


@async_test
async def test_run_code_without_a_runtime_fails_with_the_contract_message() -> None:
    registry = registry_with(echo_tool(), mode="code")
    result = await registry.execute(call(RUN_CODE_NAME, {"code": "return 1", "description": "one"}))
    assert result.is_error
    assert text(result) == "Error: " + NO_RUNTIME
    blank = await registry.execute(call(RUN_CODE_NAME, {"code": "return 1", "description": "  "}))
    assert text(blank) == "Error: invalid description: expected a non-empty string"
    native = registry_with(echo_tool())
    unknown = await native.execute(call(RUN_CODE_NAME, {"code": "x", "description": "d"}))
    assert text(unknown) == 'Error: unknown tool "run_code"'


def test_present_as_rules() -> None:
    registry = registry_with(echo_tool())
    with pytest.raises(ValueError) as info:
        registry.present_as("code")
    assert str(info.value).startswith("present_as() requires a scoped context")
    scope = registry.scope("a")
    dispose = scope.present_as("code")
    with pytest.raises(ValueError) as info:
        scope.present_as("both")
    assert str(info.value) == (
        'present_as("both") conflicts with "code" already declared for this scope;'
        " one composition selects one presentation"
    )
    with pytest.raises(ValueError):
        registry.scope("b").present_as("sideways")  # type: ignore[arg-type]
    assert registry.get(RUN_CODE_NAME, "a") is not None
    assert registry.get(RUN_CODE_NAME, "b") is None
    assert registry.get(RUN_CODE_NAME) is None
    # The catalog is unchanged; schemas list the transport last.
    assert [s["name"] for s in scope.schemas()] == ["echo", RUN_CODE_NAME]
    child = registry.scope("child", parent=scope)
    assert registry.get(RUN_CODE_NAME, child) is not None
    child.present_as("native")
    assert registry.get(RUN_CODE_NAME, child) is None
    dispose()
    assert registry.get(RUN_CODE_NAME, "a") is None


def test_registry_configuration_errors() -> None:
    with pytest.raises(ValueError) as info:
        ToolRegistry(max_parallel_sub_calls=0)
    assert str(info.value) == "max_parallel_sub_calls must be a positive integer"
    with pytest.raises(ValueError):
        ToolRegistry(max_parallel_sub_calls=True)
    with pytest.raises(ValueError):
        ToolRegistry(mode="hybrid")  # type: ignore[arg-type]
    assert ToolRegistry().max_parallel_sub_calls == 10
    registry = ToolRegistry()
    registry.scope("a")
    with pytest.raises(ValueError):
        registry.scope("a")


def test_catalog_lists_visible_tools_with_output_schemas() -> None:
    registry = registry_with(echo_tool(), raw_tool("raw", output_schema={"type": "integer"}), mode="both")
    catalog = registry.catalog()
    assert catalog == [
        ToolSchemaEntry(
            "echo",
            "The echo tool.",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            {"type": "string"},
        ),
        ToolSchemaEntry("raw", "The raw raw tool.", {"type": "object"}, {"type": "integer"}),
    ]
    scope = registry.scope("a")
    scope.restrict(allow=["raw"])
    assert [entry.name for entry in scope.catalog()] == ["raw"]


def test_native_assembly_tool_order_and_listener_authority() -> None:
    registry = registry_with(echo_tool("a"), echo_tool("b"), echo_tool("c"))
    assembly = registry.assemble()
    assert [t["name"] for t in assembly.tools] == ["a", "b", "c"]
    assert assembly.sections == ()
    ordered = registry.assemble(tool_order=["c", "a"])
    assert [t["name"] for t in ordered.tools] == ["c", "a", "b"]
    repeated = registry.assemble(tool_order=["c", "a", "c"])  # the first mention places a tool
    assert [t["name"] for t in repeated.tools] == ["c", "a", "b"]
    with pytest.raises(ValueError) as info:
        registry.assemble(tool_order=["zzz"])
    assert str(info.value) == 'tool_order lists unregistered tool "zzz"'
    with pytest.raises(ValueError):
        registry.assemble(tool_order=[RUN_CODE_NAME])  # not contributed under native

    def drop_b(assembly: PromptAssembly, next: Any) -> PromptAssembly:
        downstream = next()
        return PromptAssembly(tuple(t for t in downstream.tools if t["name"] != "b"), downstream.sections)

    dispose = registry.on_assemble(drop_b)
    assert [t["name"] for t in registry.assemble().tools] == ["a", "c"]
    dispose()
    assert [t["name"] for t in registry.assemble().tools] == ["a", "b", "c"]


def test_code_assembly_needs_a_runtime() -> None:
    registry = registry_with(echo_tool(), mode="code")
    with pytest.raises(ValueError) as info:
        registry.assemble()
    assert str(info.value) == NO_RUNTIME

    class Runtime:
        language = "python"

        async def run(self, request: Any) -> Any:
            raise NotImplementedError

    with_runtime = registry_with(echo_tool(), mode="code", code_runtime=Runtime())
    assembly = with_runtime.assemble(tool_order=[RUN_CODE_NAME])
    assert [t["name"] for t in assembly.tools] == [RUN_CODE_NAME]
    assert [(s.id, s.order) for s in assembly.sections] == [
        ("tools:code-only", 99),
        ("tools:sdk", 150),
    ]
    assert "class Tools(Protocol):" in assembly.sections[1].text
    with pytest.raises(ValueError) as info:
        with_runtime.assemble(tool_order=["echo"])
    assert str(info.value) == 'tool_order lists unregistered tool "echo"'
    Runtime.language = "cobol"
    with pytest.raises(ValueError) as info:
        registry_with(echo_tool(), mode="both", code_runtime=Runtime()).assemble()
    assert str(info.value) == (
        'dsh_codegen: no SDK renderer registered for runtime language "cobol" (known: "typescript", "python")'
    )


@async_test
async def test_run_code_with_an_unknown_runtime_language_is_a_result_not_a_raise() -> None:
    class Runtime:
        language = "cobol"

        async def run(self, request: Any) -> Any:
            raise NotImplementedError

    registry = registry_with(echo_tool(), mode="both", code_runtime=Runtime())
    result = await registry.execute(call(RUN_CODE_NAME, {"code": "x", "description": "d"}))
    assert text(result) == (
        'Error: dsh_codegen: no run_code schema flavor registered for runtime language "cobol"'
        ' (known: "typescript", "python")'
    )
    with pytest.raises(ValueError):
        registry.schemas()


def test_run_code_transport_shape() -> None:
    registry = registry_with(echo_tool(), mode="both")
    run_code = registry.get(RUN_CODE_NAME)
    assert run_code is not None
    assert run_code.call_view({"code": "return 1", "description": "One"}) == {
        "card": "generic",
        "title": "One",
        "kind": "execute",
        "rawInput": "return 1",
    }
    assert run_code.call_view({"code": "return 1"}) is None  # soft validation
    assert run_code.present_result is None
    [*_, schema] = registry.schemas()
    assert schema["name"] == RUN_CODE_NAME
    assert schema["parameters"]["required"] == ["code", "description"]
    assert "TypeScript" in schema["description"]
    render = run_code.output.render  # type: ignore[union-attr]
    assert render({}, {"logs": []}) == [{"type": "text", "text": "(run_code completed with no output)"}]
    assert render({}, {"logs": ["printed"], "result": "returned"}) == [{"type": "text", "text": "printed\nreturned"}]
    assert render({}, {"logs": [], "result": {"n": 42, "ok": True}}) == [
        {"type": "text", "text": '{\n  "n": 42,\n  "ok": true\n}'}
    ]
    assert render({}, {"logs": [], "result": None}) == [{"type": "text", "text": "null"}]


def test_scope_assembly_catalog_and_change_notifications() -> None:
    registry = registry_with(echo_tool("g"))
    changes: list[tuple[str, Any, Any]] = []
    registry.on_change(lambda c: changes.append((c.kind, c.name, c.agent)))
    scope = registry.scope("a")
    dispose_tool = scope.register(echo_tool("own"))
    dispose_mask = scope.restrict(deny=["g"])
    dispose_mode = scope.present_as("native")
    assert [t["name"] for t in scope.assemble().tools] == ["own"]
    assert [e.name for e in scope.catalog()] == ["own"]
    seen: list[str] = []
    scope.on_assemble(lambda assembly, next: seen.append("scoped") or next())
    registry.assemble()
    assert seen == []
    scope.assemble()
    assert seen == ["scoped"]
    dispose_mode()
    dispose_mask()
    dispose_tool()
    assert changes == [
        ("register", "own", "a"),
        ("restrict", None, "a"),
        ("present_as", None, "a"),
        ("present_as", None, "a"),
        ("restrict", None, "a"),
        ("unregister", "own", "a"),
    ]


@pytest.mark.parametrize("language", ["python", "typescript"])
def test_the_sdk_text_carries_the_runtime_s_own_notes(language: str) -> None:
    # The prompt is rendered for the runtime that will run the program: what it says of itself
    # (``sdk_notes``) is one more bullet each, after the fixed ones and before the tools.
    class Runtime:
        def __init__(self, notes: object = None) -> None:
            self.language = language
            if notes is not None:
                self.sdk_notes = notes

        async def run(self, request: Any) -> Any:
            raise NotImplementedError

    def sdk(runtime: Runtime) -> str:
        return registry_with(echo_tool(), mode="code", code_runtime=runtime).assemble().sections[1].text

    plain = sdk(Runtime())
    noted = sdk(Runtime(("No files here.", "Its `asyncio` has `gather` only.")))
    fixed = "Images in successful tool results are attached after the run.\n"
    assert noted == plain.replace(fixed, fixed + "- No files here.\n- Its `asyncio` has `gather` only.\n")
    assert sdk(Runtime(())) == plain
    for wrong in (["a list"], ("ok", 3), "a string"):
        with pytest.raises(TypeError) as info:
            sdk(Runtime(wrong))
        assert str(info.value).startswith("code runtime sdk_notes must be a tuple of str, not ")
