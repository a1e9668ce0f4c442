"""Property test: every combination of policy, body and finalizer outcomes keeps the pipeline's invariants.

For any mix the call yields exactly one frozen result, observed once by
``on_result`` (the same object), ``finalize_content`` runs exactly once, the
body runs at most once and never after a denial, and a failure's content is
``Error: <message>`` unless a block, a wrapper-authored failure or the
finalizer wrote it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from _registry_helpers import call, echo_tool
from dsh_codegen.json import FrozenJsonArray
from dsh_codegen.registry import (
    AbortController,
    Accept,
    Allow,
    Block,
    Deny,
    ToolError,
    ToolExecutionResult,
    ToolFailure,
    ToolRegistry,
    ToolSuccess,
)

PRE = st.sampled_from(["none", "next", "allow", "deny", "raise"])
GUARD = st.sampled_from(["none", "abstain", "deny", "raise"])
WRAP = st.sampled_from(["none", "pass", "short-success", "short-invalid", "authored-failure", "raise"])
BODY = st.sampled_from(["ok", "raise", "lossy", "invalid", "abort-during"])
POST = st.sampled_from(["none", "next", "content", "value", "bad-value", "block", "raise"])
FINAL = st.sampled_from(["none", "keep", "replace", "raise"])


async def scenario(pre: str, guard: str, wrap: str, body: str, post: str, final: str) -> None:
    controller = AbortController()
    runs: list[str] = []
    finalized: list[ToolExecutionResult] = []

    async def execute(args: Any, run: Any) -> Any:
        runs.append("body")
        if body == "raise":
            raise RuntimeError("body failed")
        if body == "lossy":
            return {1, 2}
        if body == "invalid":
            return 7
        if body == "abort-during":
            controller.abort()
        return "value"

    def finalize(execution: Any, result: ToolExecutionResult) -> Any:
        finalized.append(result)
        if final == "replace":
            return [{"type": "text", "text": "finalized"}]
        if final == "raise":
            raise ValueError("finalizer failed")
        return None

    registry = ToolRegistry()
    registry.register(echo_tool(execute=execute, finalize_content=None if final == "none" else finalize))

    def raise_it(*_args: Any) -> Any:
        raise RuntimeError("listener failed")

    if pre != "none":
        registry.on_pre_execute(
            {
                "next": lambda e, n: n(),
                "allow": lambda e, n: Allow(),
                "deny": lambda e, n: Deny("denied"),
                "raise": raise_it,
            }[pre]
        )
    if guard != "none":
        registry.guard({"abstain": lambda e: None, "deny": lambda e: "guarded", "raise": raise_it}[guard])
    if wrap != "none":
        wrapper = {
            "pass": lambda d, n: n(),
            "short-success": lambda d, n: ToolSuccess("cached", [{"type": "text", "text": "ignored"}]),
            "short-invalid": lambda d, n: ToolSuccess(5, [{"type": "text", "text": "ignored"}]),
            "authored-failure": lambda d, n: ToolFailure(
                ToolError("authored"), [{"type": "text", "text": "authored content"}]
            ),
            "raise": raise_it,
        }[wrap]
        registry.wrap_execute(wrapper)
    if post != "none":
        registry.on_post_execute(
            {
                "next": lambda e, r, n: n(),
                "content": lambda e, r, n: Accept(content=[{"type": "text", "text": "replaced"}]),
                "value": lambda e, r, n: Accept(value="other"),
                "bad-value": lambda e, r, n: Accept(value=3),
                "block": lambda e, r, n: Block([{"type": "text", "text": "blocked"}]),
                "raise": raise_it,
            }[post]
        )
    observed: list[ToolExecutionResult] = []
    registry.on_result(lambda e, r: observed.append(r))

    result = await registry.execute(call(signal=controller.signal))

    assert observed == [result] and observed[0] is result
    assert type(result.content) is FrozenJsonArray
    assert len(finalized) == (0 if final == "none" else 1)
    assert len(runs) <= 1
    if pre in ("deny", "raise") or guard in ("deny", "raise"):
        assert runs == []
    if isinstance(result, ToolFailure):
        authored = (
            post in ("block", "content")
            or final == "replace"
            or (wrap == "authored-failure" and result.error.message == "authored")
        )
        if not authored:
            assert result.content[0]["text"] == "Error: " + result.error.message
    else:
        assert body != "abort-during" or runs == []


@settings(max_examples=250)
@given(pre=PRE, guard=GUARD, wrap=WRAP, body=BODY, post=POST, final=FINAL)
def test_every_outcome_mix_keeps_the_invariants(
    pre: str, guard: str, wrap: str, body: str, post: str, final: str
) -> None:
    asyncio.run(scenario(pre, guard, wrap, body, post, final))
