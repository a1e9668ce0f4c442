"""Guarantees 24-40 (docs/guarantees.md): pipeline order, decisions, approval, guards, tokens, arguments."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _registry_helpers import (
    async_test,
    call,
    echo_tool,
    error_code,
    raw_tool,
    registry_with,
    text,
)
from dsh_codegen.json import FrozenJsonObject
from dsh_codegen.registry import (
    PIPELINE_STAGES,
    AbortController,
    Accept,
    Allow,
    ApprovalRequest,
    Ask,
    Deny,
    HarnessError,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionResult,
    ToolFailure,
    ToolRegistry,
)


class Approval:
    """A scripted approval service recording its requests."""

    def __init__(self, answer: Any, gate: asyncio.Event | None = None) -> None:
        self.answer = answer
        self.gate = gate
        self.requests: list[ApprovalRequest] = []

    async def request(self, request: ApprovalRequest) -> Any:
        self.requests.append(request)
        if self.gate is not None:
            await self.gate.wait()
        return self.answer


def test_b24_stages_are_declared_in_call_order() -> None:
    assert PIPELINE_STAGES == (
        "create_execution",
        "entry_outcome",
        "run_policy",
        "run_dispatch",
        "run_post_execute",
        "settle_cancellation",
        "run_finalize",
        "notify_result",
    )


@async_test
async def test_b24_pipeline_order() -> None:
    order: list[str] = []

    async def body(args: Any, run: Any) -> str:
        order.append("body")
        return "x"

    registry = registry_with(echo_tool(execute=body))

    async def pre(execution: ToolExecution, next: Any) -> Any:
        order.append("pre:before")
        decision = await next()
        order.append("pre:after")
        return decision

    async def wrap(dispatch: Any, next: Any) -> Any:
        order.append("execute:before")
        result = await next()
        order.append("execute:after")
        return result

    async def post(execution: ToolExecution, result: Any, next: Any) -> Any:
        order.append("post")
        return await next()

    registry.on_pre_execute(pre)
    registry.wrap_execute(wrap)
    registry.on_post_execute(post)
    registry.guard(lambda e: order.append("guard") or None)  # type: ignore[func-returns-value]
    registry.on_result(lambda e, r: order.append("result"))
    await registry.execute(call())
    assert order == [
        "pre:before",
        "pre:after",
        "guard",
        "execute:before",
        "body",
        "execute:after",
        "post",
        "result",
    ]


@async_test
async def test_b25_deny_skips_dispatch_but_reaches_post_execute() -> None:
    ran: list[str] = []
    seen: list[ToolExecutionResult] = []

    async def body(args: Any, run: Any) -> str:
        ran.append("body")
        return "x"

    registry = registry_with(echo_tool(execute=body))
    registry.on_pre_execute(lambda e, n: Deny("not today"))
    registry.wrap_execute(lambda d, n: ran.append("wrap") or n())

    def post(execution: ToolExecution, result: ToolExecutionResult, next: Any) -> Any:
        seen.append(result)
        with pytest.raises(TypeError):
            result.content.append({"type": "text", "text": "x"})  # type: ignore[attr-defined]
        return next()

    registry.on_post_execute(post)
    result = await registry.execute(call())
    assert text(result) == "Error: not today"
    assert isinstance(result, ToolFailure) and result.error.info is None
    assert ran == []
    assert len(seen) == 1 and seen[0] is result


@async_test
async def test_b26_ask_without_approval_service_denies() -> None:
    registry = registry_with(echo_tool())
    dispose = registry.on_pre_execute(lambda e, n: Ask("needs a human"))
    assert text(await registry.execute(call())) == "Error: needs a human"
    dispose()
    registry.on_pre_execute(lambda e, n: Ask())
    assert text(await registry.execute(call())) == 'Error: tool "echo" requires approval (not yet supported)'


@async_test
async def test_b27_approval_answers() -> None:
    signal = AbortController().signal
    approval = Approval("allowed-once")
    registry = registry_with(echo_tool(), approval=approval)
    registry.on_pre_execute(lambda e, n: Ask("why"))
    result = await registry.execute(call(agent="agent-1", signal=signal, call_id="k"))
    assert text(result) == "echo:hi"
    assert approval.requests == [ApprovalRequest("agent-1", "echo", "k", "why", signal)]
    assert approval.requests[0].signal is signal
    expected = {
        "rejected": 'Error: the user rejected tool "echo"',
        "cancelled": 'Error: approval for tool "echo" was cancelled',
        "unavailable": 'Error: tool "echo" requires approval, but no approval channel is available',
    }
    for answer, message in expected.items():
        approval.answer = answer
        assert text(await registry.execute(call(agent="agent-1"))) == message
    approval.requests.clear()
    result = await registry.execute(call())
    assert text(result) == ('Error: tool "echo" requires approval, but the call has no agent to route it through')
    assert approval.requests == []


@async_test
async def test_b28_caller_cancel_while_approval_pending() -> None:
    ran: list[str] = []

    async def body(args: Any, run: Any) -> str:
        ran.append("body")
        return "x"

    gate = asyncio.Event()
    approval = Approval("cancelled", gate)
    registry = registry_with(echo_tool(execute=body), approval=approval)
    registry.on_pre_execute(lambda e, n: Ask())
    controller = AbortController()
    task = asyncio.ensure_future(registry.execute(call(agent="a", signal=controller.signal)))
    while not approval.requests:
        await asyncio.sleep(0)
    controller.abort()
    gate.set()
    result = await task
    assert text(result) == "Error: tool call aborted before dispatch"
    assert error_code(result) == "ABORTED_BEFORE_DISPATCH"
    assert ran == []


@async_test
async def test_b29_non_conforming_approval_answer_is_an_error_result() -> None:
    registry = registry_with(echo_tool(), approval=Approval("maybe"))
    registry.on_pre_execute(lambda e, n: Ask())
    result = await registry.execute(call(agent="a"))
    assert result.is_error
    assert text(result) == "Error: approval for tool \"echo\" returned an unsupported answer: 'maybe'"


@async_test
async def test_b30_guards_run_after_the_waterfall_and_cannot_be_overridden() -> None:
    order: list[str] = []
    registry = registry_with(echo_tool())
    registry.guard(lambda e: order.append("guard") or "guarded")  # type: ignore[func-returns-value]
    registry.on_pre_execute(lambda e, n: order.append("pre") or n())
    registry.on_pre_execute(lambda e, n: order.append("force-allow") or Allow(), prepend=True)
    result = await registry.execute(call())
    assert text(result) == "Error: guarded"
    assert order == ["force-allow", "guard"]


@async_test
async def test_b31_guards_compose_monotonically() -> None:
    ran: list[str] = []

    async def body(args: Any, run: Any) -> str:
        ran.append("body")
        return "x"

    registry = registry_with(echo_tool(execute=body))
    registry.guard(lambda e: None)
    registry.guard(lambda e: "second says no")
    registry.guard(lambda e: "third says no")
    result = await registry.execute(call())
    assert text(result) == "Error: second says no"
    assert ran == []


@async_test
async def test_b32_guards_receive_the_frozen_execution() -> None:
    seen: list[ToolExecution] = []
    registry = registry_with(echo_tool())
    registry.guard(lambda e: seen.append(e) or None)  # type: ignore[func-returns-value]
    await registry.execute(call(arguments={"text": "hi", "nested": {"a": [1]}}))
    [execution] = seen
    assert isinstance(execution.arguments, FrozenJsonObject)
    with pytest.raises(TypeError):
        execution.arguments["text"] = "changed"
    with pytest.raises(TypeError):
        execution.arguments["nested"]["a"].append(2)
    with pytest.raises(AttributeError):
        execution.name = "other"  # type: ignore[misc]


@async_test
async def test_b33_guard_added_during_evaluation_runs_in_the_same_pass() -> None:
    registry = registry_with(echo_tool())
    added: list[bool] = []

    def installer(execution: ToolExecution) -> None:
        if not added:
            added.append(True)
            registry.guard(lambda e: "late guard")
        return None

    registry.guard(installer)
    assert text(await registry.execute(call())) == "Error: late guard"

    # A scoped guard replacing itself takes effect on the next call.
    other = registry_with(echo_tool())
    scope = other.scope("a")
    calls: list[str] = []

    def replacing(execution: ToolExecution) -> None:
        calls.append("first")
        dispose_first()
        scope.guard(lambda e: "replacement")
        return None

    dispose_first = scope.guard(replacing)
    assert text(await other.execute(call(agent="a"))) == "echo:hi"
    assert text(await other.execute(call(agent="a"))) == "Error: replacement"
    assert calls == ["first"]


@async_test
async def test_b34_scoped_guards_apply_only_to_their_agent() -> None:
    registry = registry_with(echo_tool())
    scope = registry.scope("a")
    registry.scope("b")
    scope.guard(lambda e: "a is blocked")
    assert text(await registry.execute(call(agent="a"))) == "Error: a is blocked"
    assert text(await registry.execute(call(agent="b"))) == "echo:hi"
    assert text(await registry.execute(call())) == "echo:hi"
    scope.dispose()
    assert text(await registry.execute(call(agent="a"))) == "echo:hi"


@async_test
async def test_b35_one_token_per_call_shared_by_every_phase() -> None:
    tokens: list[tuple[str, Any]] = []

    async def body(args: Any, run: Any) -> str:
        tokens.append(("body", run.token))
        return "x"

    registry = registry_with(echo_tool(execute=body))
    registry.on_pre_execute(lambda e, n: tokens.append(("pre", e.token)) or n())
    registry.guard(lambda e: tokens.append(("guard", e.token)) or None)  # type: ignore[func-returns-value]
    registry.wrap_execute(lambda d, n: tokens.append(("wrap", d.token)) or n())
    registry.on_post_execute(lambda e, r, n: tokens.append(("post", e.token)) or n())
    registry.on_result(lambda e, r: tokens.append(("result", e.token)))
    await registry.execute(call())
    first = {token for _, token in tokens}
    assert len(first) == 1 and len(tokens) == 6
    tokens.clear()
    await registry.execute(call())
    second = {token for _, token in tokens}
    assert len(second) == 1 and second != first
    [token] = second
    assert token == token and token != next(iter(first))
    import pickle

    with pytest.raises(TypeError):
        pickle.dumps(token)


@async_test
async def test_b36_body_gets_a_detached_frozen_copy() -> None:
    seen: list[Any] = []

    async def body(args: Any, run: Any) -> str:
        seen.append(args)
        with pytest.raises(TypeError):
            args["text"] = "mutated"
        return args["text"]

    registry = registry_with(echo_tool(execute=body))
    original = {"text": "hi", "extra": {"list": [1, 2]}}
    # A pre-execute listener mutating the caller's object after entry changes nothing.
    registry.on_pre_execute(lambda e, n: original.update(text="late") or n())  # type: ignore[func-returns-value]
    result = await registry.execute(call(arguments=original))
    assert text(result) == "hi"
    assert type(original) is dict and original["text"] == "late"
    original["extra"]["list"].append(3)  # still a plain, mutable object
    assert seen[0]["extra"]["list"] == [1, 2]
    assert seen[0] is not original


class Opaque:
    pass


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ({"f": print}, 'at "arguments.f", type builtin_function_or_method is not a JSON type'),
        ({"s": {1, 2}}, 'at "arguments.s", type set is not a JSON type'),
        ({"o": Opaque()}, 'at "arguments.o", type Opaque is not a JSON type'),
        ({1: "x"}, 'at "arguments", object key of type int (keys must be exactly str)'),
        ({"n": float("nan")}, 'at "arguments.n", NaN is not a JSON number'),
        # What json.loads makes of the valid JSON text {"m": "\ud800"}: UTF-8 cannot carry it.
        ({"m": "\ud800"}, 'at "arguments.m", string holding a lone surrogate (U+D800), which UTF-8 cannot carry'),
        ({"k\udfff": 1}, 'at "arguments", object key holding a lone surrogate (U+DFFF), which UTF-8 cannot carry'),
    ],
)
@async_test
async def test_b37_lossy_arguments_fail_before_any_policy(arguments: Any, where: str) -> None:
    phases: list[str] = []
    observed: list[tuple[ToolExecution, ToolExecutionResult]] = []
    registry = registry_with(raw_tool("raw"))
    registry.on_pre_execute(lambda e, n: phases.append("pre") or n())
    registry.guard(lambda e: phases.append("guard") or None)  # type: ignore[func-returns-value]
    registry.wrap_execute(lambda d, n: phases.append("wrap") or n())
    registry.on_post_execute(lambda e, r, n: phases.append("post") or n())
    registry.on_result(lambda e, r: observed.append((e, r)))
    result = await registry.execute(call("raw", arguments))
    assert text(result) == f"Error: tool execution arguments must be losslessly JSON-serializable: {where}"
    assert isinstance(result, ToolFailure) and result.error.info is None
    assert phases == []
    assert len(observed) == 1
    assert observed[0][0].arguments is None
    assert observed[0][1] is result


class DriftingInput:
    """Duck-typed call description whose fields change after the first read."""

    def __init__(self) -> None:
        self.reads: dict[str, int] = {}
        self.first_signal = AbortController().signal

    def _read(self, field: str, first: Any, later: Any) -> Any:
        count = self.reads.get(field, 0)
        self.reads[field] = count + 1
        return first if count == 0 else later

    @property
    def call_id(self) -> Any:
        return self._read("call_id", "first-id", "later-id")

    @property
    def name(self) -> Any:
        return self._read("name", "echo", "other")

    @property
    def arguments(self) -> Any:
        return self._read("arguments", {"text": "first"}, {"text": "later"})

    @property
    def signal(self) -> Any:
        return self._read("signal", self.first_signal, AbortController().signal)

    @property
    def agent(self) -> Any:
        return self._read("agent", None, "drifted")

    @property
    def parent(self) -> Any:
        return self._read("parent", None, object())

    @property
    def root_call_id(self) -> Any:
        return self._read("root_call_id", None, "drifted")


@async_test
async def test_b38_every_input_field_is_read_once() -> None:
    registry = registry_with(echo_tool(), echo_tool("other"))
    views: list[tuple[Any, ...]] = []

    def record(execution: Any) -> None:
        views.append(
            (
                execution.call_id,
                execution.name,
                execution.arguments["text"],
                execution.signal,
                execution.agent,
                execution.parent,
            )
        )

    registry.on_pre_execute(lambda e, n: record(e) or n())  # type: ignore[func-returns-value]
    registry.wrap_execute(lambda d, n: record(d) or n())  # type: ignore[func-returns-value]
    registry.on_post_execute(lambda e, r, n: record(e) or n())  # type: ignore[func-returns-value]
    registry.on_result(lambda e, r: record(e))
    drifting = DriftingInput()
    result = await registry.execute(drifting)  # type: ignore[arg-type]
    assert text(result) == "echo:first"
    assert set(drifting.reads.values()) == {1}
    assert len(drifting.reads) == 7
    assert len(views) == 4
    assert all(view == ("first-id", "echo", "first", drifting.first_signal, None, None) for view in views)


@async_test
async def test_b39_listener_failures_become_error_results() -> None:
    class PolicyError(HarnessError):
        pass

    registry = registry_with(echo_tool())
    post_seen: list[str] = []
    registry.on_post_execute(lambda e, r, n: post_seen.append(text(r)) or n())

    def pre_raises(execution: ToolExecution, next: Any) -> Any:
        raise PolicyError("policy broke", "POLICY")

    dispose = registry.on_pre_execute(pre_raises)
    result = await registry.execute(call())
    assert text(result) == "Error: policy broke"
    assert isinstance(result, ToolFailure)
    assert result.error.info == ToolErrorInfo("PolicyError", "POLICY")
    assert post_seen == []  # a raising pre-execute listener skips post-execute
    dispose()

    async def wrap_raises(dispatch: Any, next: Any) -> Any:
        raise ValueError("wrapper broke")

    dispose = registry.wrap_execute(wrap_raises)
    result = await registry.execute(call())
    assert text(result) == "Error: wrapper broke"
    assert isinstance(result, ToolFailure) and result.error.info is None
    assert post_seen == []
    dispose()

    async def post_raises(execution: ToolExecution, result: Any, next: Any) -> Any:
        raise RuntimeError("post broke")

    registry.on_post_execute(post_raises)
    result = await registry.execute(call())
    assert result.is_error
    assert text(result) == "Error: post broke"


@async_test
async def test_b40_unknown_and_thrown_tools() -> None:
    async def explode(args: Any, run: Any) -> Any:
        raise RuntimeError("exploded")

    registry = registry_with(echo_tool("boom", execute=explode))
    post_seen: list[str] = []
    registry.on_post_execute(lambda e, r, n: post_seen.append(text(r)) or n())
    unknown = await registry.execute(call("nope"))
    assert text(unknown) == 'Error: unknown tool "nope"'
    assert isinstance(unknown, ToolFailure)
    assert unknown.error.info == ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL")
    thrown = await registry.execute(call("boom"))
    assert text(thrown) == "Error: exploded"
    assert isinstance(thrown, ToolFailure) and thrown.error.info is None
    assert post_seen == ['Error: unknown tool "nope"', "Error: exploded"]
    assert Accept() == Accept() and ToolRegistry().schemas() == []


@async_test
async def test_pre_execute_next_may_be_called_once() -> None:
    registry = registry_with(echo_tool())

    async def twice(execution: ToolExecution, next: Any) -> Any:
        await next()
        return await next()

    registry.on_pre_execute(twice)
    result = await registry.execute(call())
    assert text(result) == "Error: tools/pre-execute: next() was already called"


@async_test
async def test_bad_listener_returns_and_bad_registrations() -> None:
    registry = registry_with(echo_tool())
    dispose = registry.on_pre_execute(lambda e, n: None)
    result = await registry.execute(call())
    assert text(result) == (
        "Error: tools/pre-execute listener returned NoneType; expected Allow(), Deny(reason) or Ask(reason)"
    )
    dispose()
    dispose = registry.guard(lambda e: 42)  # type: ignore[arg-type,return-value]
    assert text(await registry.execute(call())) == "Error: guard returned int; expected a reason string or None"
    dispose()
    dispose = registry.wrap_execute(lambda d, n: "not a result")
    assert text(await registry.execute(call())) == (
        "Error: tools/execute wrapper returned str; expected a ToolSuccess or ToolFailure"
    )
    dispose()

    async def async_guard(execution: Any) -> None:
        return None

    with pytest.raises(TypeError, match="must be synchronous"):
        registry.guard(async_guard)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be callable"):
        registry.on_result("nope")  # type: ignore[arg-type]
    scope = registry.scope("a")
    scope.dispose()
    with pytest.raises(ValueError, match="disposed"):
        scope.register(echo_tool("x"))
    with pytest.raises(ValueError, match="disposed"):
        scope.on_result(lambda e, r: None)


@async_test
async def test_defer_context_checks_its_argument() -> None:
    problems: list[str] = []

    async def body(args: Any, run: Any) -> str:
        for bad in (
            {"role": "assistant", "content": [], "source": "s"},
            {"role": "user", "content": [{"type": "text", "text": print}], "source": "s"},
        ):
            try:
                run.defer_context(bad)
            except ValueError as exc:
                problems.append(type(exc).__name__)
        return "x"

    registry = registry_with(echo_tool(execute=body))
    result = await registry.execute(call())
    assert text(result) == "x"
    assert problems == ["ValueError", "LosslessJsonError"]
    assert result.additional_contexts == ()


class RaisingInput:
    """Duck-typed call description: one field raises on read, the others are fine."""

    def __init__(self, raising: str) -> None:
        self.raising = raising
        self.signal_value = AbortController().signal
        self.reads: list[str] = []

    def __getattr__(self, field: str) -> Any:
        values = {
            "call_id": "c1",
            "name": "echo",
            "arguments": {"text": "hi"},
            "signal": self.signal_value,
            "agent": None,
            "parent": None,
            "root_call_id": None,
        }
        if field not in values:
            raise AttributeError(field)
        self.reads.append(field)
        if field == self.raising:
            raise RuntimeError(f"{field} getter failed")
        return values[field]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("arguments", "ToolExecutionInput.arguments could not be read: arguments getter failed"),
        ("call_id", "ToolExecutionInput.call_id could not be read: call_id getter failed"),
        ("name", "ToolExecutionInput.name could not be read: name getter failed"),
        ("signal", "ToolExecutionInput.signal could not be read: signal getter failed"),
        ("agent", "ToolExecutionInput.agent could not be read: agent getter failed"),
    ],
)
@async_test
async def test_b37_a_field_raising_on_read_is_one_failure_before_any_policy(field: str, message: str) -> None:
    ran: list[str] = []

    async def body(args: Any, run: Any) -> Any:
        ran.append("body")
        return "x"

    registry = registry_with(echo_tool(execute=body))
    observed: list[tuple[Any, Any]] = []
    registry.on_pre_execute(lambda execution, next: ran.append("pre") or next())
    registry.guard(lambda execution: ran.append("guard") or None)
    registry.on_post_execute(lambda execution, result, next: ran.append("post") or next())
    registry.on_result(lambda execution, result: observed.append((execution, result)))
    source = RaisingInput(field)
    result = await registry.execute(source)  # type: ignore[arg-type]
    assert isinstance(result, ToolFailure) and result.error.info is None
    assert result.error.message == message
    assert text(result) == f"Error: {message}"
    assert ran == []
    assert len(observed) == 1 and observed[0][1] is result
    assert observed[0][0].arguments is None
    assert sorted(source.reads) == sorted(
        ["call_id", "name", "arguments", "signal", "agent", "parent", "root_call_id"]
    )  # every field read exactly once, the raising one included


@async_test
async def test_a_lone_surrogate_in_parsed_arguments_fails_its_call_before_any_body() -> None:
    # parse_json (what the loop helper uses) keeps the lone surrogate of valid JSON text;
    # entry refuses it, with the path, before a body could hand it to a UTF-8 transport.
    from dsh_codegen.json import parse_json

    ran: list[Any] = []

    async def body(args: Any, run: Any) -> Any:
        ran.append(args)
        return "x"

    registry = registry_with(raw_tool("raw", execute=body))
    result = await registry.execute(call("raw", parse_json('{"ok": "fine", "message": "\\ud800"}')))
    assert text(result) == (
        'Error: tool execution arguments must be losslessly JSON-serializable: at "arguments.message", '
        "string holding a lone surrogate (U+D800), which UTF-8 cannot carry"
    )
    assert ran == []
    # A surrogate pair in the text is one character: fine.
    assert text(await registry.execute(call("raw", parse_json('{"ok": "fine \\ud83d\\ude00"}')))) == "x"
    assert ran == [{"ok": "fine 😀"}]
