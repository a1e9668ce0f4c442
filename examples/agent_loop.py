"""An agent loop with a scripted model: the model asks for tools, the registry runs them, the results go back.

A real application puts a model client where ``ScriptedModel`` is; everything else is what it would
run. Each model turn's tool calls go through ``execute_tool_calls``: validated, policed, run (safe
calls in parallel), and committed in the model's order, every outcome a frozen result with content
the model can read, errors included.

Run: ``python examples/agent_loop.py`` (needs only ``pip install dsh-codegen``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from dsh_codegen import (
    AbortController,
    Deny,
    MemorySessionLog,
    ToolCall,
    ToolRegistry,
    execute_tool_calls,
    tool,
)

TEMPERATURES = {"Bern": 21.5, "Oslo": 12.0}


@tool(is_concurrency_safe=lambda args: True)
async def get_weather(city: str) -> dict[str, Any]:
    """The current weather in a city.

    Args:
        city: The city's name, in English.
    """
    await asyncio.sleep(0.01)  # a real tool would ask a weather service
    if city not in TEMPERATURES:
        raise LookupError(f"no weather station in {city}")
    return {"city": city, "celsius": TEMPERATURES[city]}


@tool
async def send_email(to: str, subject: str) -> str:
    """Send an email."""
    return f"sent to {to}"


class ScriptedModel:
    """Stands in for a language model: a fixed script of turns, each tool calls or a final answer."""

    def __init__(self) -> None:
        self.turns: list[list[ToolCall] | str] = [
            [
                ToolCall("call_1", "get_weather", '{"city": "Bern"}'),
                ToolCall("call_2", "get_weather", '{"city": "Oslo"}'),
                ToolCall("call_3", "get_weather", '{"city": "Atlantis"}'),
                ToolCall("call_4", "send_email", '{"to": "boss@example.com", "subject": "the weather"}'),
            ],
            "Bern is warmer (21.5 °C) than Oslo (12.0 °C); Atlantis has no weather station.",
        ]

    def respond(self, messages: list[dict[str, Any]]) -> list[ToolCall] | str:
        return self.turns[sum(1 for message in messages if message["role"] == "assistant")]


async def main() -> None:
    registry = ToolRegistry()
    registry.register(get_weather)
    registry.register(send_email)
    # A policy: no email leaves without a human; the model reads the reason.
    registry.on_pre_execute(
        lambda execution, next: Deny("emails need a human's approval") if execution.name == "send_email" else next()
    )
    log = MemorySessionLog()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Where is it warmer, Bern or Oslo?"}]
    model = ScriptedModel()
    signal = AbortController().signal
    while True:
        reply = model.respond(messages)
        if isinstance(reply, str):
            messages.append({"role": "assistant", "content": reply})
            break
        messages.append({"role": "assistant", "tool_calls": [call.call_id for call in reply]})
        results = await execute_tool_calls(registry, reply, signal=signal, log=log)
        for call, result in zip(reply, results):
            text = "".join(block["text"] for block in result.content if block["type"] == "text")
            messages.append({"role": "tool", "tool_call_id": call.call_id, "content": text})
            print(f"{call.name}({call.arguments}) -> {text}")
    print("answer:", messages[-1]["content"])
    print("events logged:", len(log.events))


if __name__ == "__main__":
    asyncio.run(main())
