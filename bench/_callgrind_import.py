"""Instruction counts for bench_adapters (run under callgrind; see bench/README.md, "Adapters").

``python -m bench._callgrind_import VARIANT N``: imports ``add`` from an in-process
``MCPServer`` (the SDK's in-memory transport; set up by ``bench_adapters.imported_add``,
the same as the timed figures), then makes N calls of it, as
VARIANT: ``seam`` (``registry.execute`` of the imported tool as imported),
``noseam`` (the same definition without its ``finalize_content``) or ``direct``
(``session.call_tool``). Per-call instructions are the difference between two
runs with different N, divided by the difference of N.
"""

from __future__ import annotations

import asyncio
import sys

from bench.bench_adapters import imported_add


async def main(variant: str, count: int) -> None:
    from dsh_codegen import AbortController, ToolExecutionInput

    async with imported_add() as (session, registry, without_seam):
        target = without_seam if variant == "noseam" else registry
        signal = AbortController().signal
        for index in range(count + 1):  # one warm-up call in every run
            if variant == "direct":
                await session.call_tool("add", {"a": index, "b": 1})
            else:
                result = await target.execute(ToolExecutionInput("c", "add", {"a": index, "b": 1}, signal))
                assert not result.is_error


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
