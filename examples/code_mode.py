"""Code Mode on both runtimes: the model writes one program that calls the tools; every call runs the pipeline.

The registry offers one tool, ``run_code``, and puts the generated SDK in the prompt
(``registry.assemble()``). Here a fixed program stands in for what a model would write. It runs on
``PythonSubprocessRuntime`` (a fresh process per run) and, when the ``monty`` extra is installed, on
``MontyRuntime`` (pydantic-monty's sandboxed interpreter, for code you do not trust).

Run: ``python examples/code_mode.py`` (``pip install 'dsh-codegen[monty]'`` for the second runtime).
"""

from __future__ import annotations

import asyncio
from typing import Any

from dsh_codegen import AbortController, CodeRuntime, PythonSubprocessRuntime, ToolExecutionInput, ToolRegistry, tool

STOCK = {"apples": 12, "pears": 0, "plums": 7}


@tool(is_concurrency_safe=lambda args: True)
async def stock(item: str) -> int:
    """How many of an item are in stock."""
    return STOCK.get(item, 0)


@tool
async def reorder(item: str, quantity: int) -> dict[str, Any]:
    """Order more of an item."""
    return {"item": item, "ordered": quantity}


# What a model would send as run_code's `code`: independent reads in parallel, then the writes.
PROGRAM = """
import asyncio
items = ["apples", "pears", "plums"]
counts = await asyncio.gather(*[tools.stock({"item": item}) for item in items])
orders = []
for item, count in zip(items, counts):
    if count < 5:
        orders.append(await tools.reorder({"item": item, "quantity": 10}))
print("in stock:", dict(zip(items, counts)))
return {"orders": orders}
"""


async def run_on(runtime: CodeRuntime, label: str) -> None:
    registry = ToolRegistry(mode="code", code_runtime=runtime)
    registry.register(stock)
    registry.register(reorder)
    assembly = registry.assemble()  # what the model is given: run_code, and the SDK section
    assert [schema["name"] for schema in assembly.tools] == ["run_code"]
    assert any("async def reorder(self, args: ReorderArgs)" in section.text for section in assembly.sections)
    call = ToolExecutionInput("call_1", "run_code", {"code": PROGRAM, "description": "Restock."}, AbortController().signal)
    result = await registry.execute(call)
    assert not result.is_error, result.content
    print(f"--- {label}")
    print(result.content[0]["text"])


async def main() -> None:
    subprocess_runtime = PythonSubprocessRuntime()
    try:
        await run_on(subprocess_runtime, "PythonSubprocessRuntime")
    finally:
        await subprocess_runtime.aclose()
    try:
        from dsh_codegen import MontyRuntime

        monty_runtime = MontyRuntime()
    except ImportError as error:  # the extra is missing: the message says how to install it
        print(f"--- MontyRuntime skipped: {error}")
        return
    try:
        await run_on(monty_runtime, "MontyRuntime")
    finally:
        await monty_runtime.aclose()


if __name__ == "__main__":
    asyncio.run(main())
