"""The Code Mode corpus: programs written the way models write them, and the tools they call.

Each program runs on both runtimes through a real ``ToolRegistry`` (``run_code``
with the full pipeline); ``test_corpus.py`` holds what the model reads back.
"""

from __future__ import annotations

from typing import Any

from dsh_codegen.json import render_json_pretty
from dsh_codegen.registry import ToolDefinition, ToolOutput, ToolRegistry, define_tool

FILES = {
    "notes/todo.txt": "buy milk\ncall Ann\nfix the bike",
    "notes/ideas.txt": "a tool that writes tools",
    "config.json": '{"retries": 3, "verbose": false}',
}


class World:
    """The tools' state for one program: the notes written so far."""

    def __init__(self) -> None:
        self.notes: list[dict[str, Any]] = []


def _render(args: Any, value: Any) -> list[dict[str, str]]:
    return [{"type": "text", "text": render_json_pretty(value)}]


def corpus_tools(world: World) -> list[ToolDefinition]:
    async def read_file(args: Any, run: Any) -> Any:
        text = FILES.get(args["path"])
        if text is None:
            raise FileNotFoundError(f"no such file: {args['path']}")
        lines = text.split("\n")[: args.get("limit", 1000)]
        return {"text": "\n".join(lines), "lines": len(lines)}

    async def write_note(args: Any, run: Any) -> Any:
        world.notes.append(dict(args))
        return {"saved": args["title"], "count": len(world.notes)}

    async def search(args: Any, run: Any) -> Any:
        count = args.get("max_results", 2)
        return [{"title": f"{args['query']} #{n}", "url": f"https://example.org/{n}"} for n in range(1, count + 1)]

    async def get_weather(args: Any, run: Any) -> Any:
        return {"city": args["city"], "temp_c": len(args["city"]) * 3}

    return [
        define_tool(
            name="read_file",
            description="Read a text file.",
            parameters={
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"],
                "additionalProperties": False,
            },
            output=ToolOutput(
                render=_render,
                schema={
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "lines": {"type": "integer"}},
                    "required": ["text", "lines"],
                },
            ),
            execute=read_file,
            is_concurrency_safe=lambda args: True,
        ),
        define_tool(
            name="write_note",
            description="Save a note.",
            parameters={
                "type": "object",
                "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
                "required": ["title", "body"],
                "additionalProperties": False,
            },
            output=ToolOutput(
                render=_render,
                schema={"type": "object", "properties": {"saved": {"type": "string"}, "count": {"type": "integer"}}},
            ),
            execute=write_note,
        ),
        define_tool(
            name="search",
            description="Search the web.",
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
                "required": ["query"],
                "additionalProperties": False,
            },
            output=ToolOutput(render=_render, schema={"type": "array", "items": {"type": "object"}}),
            execute=search,
            is_concurrency_safe=lambda args: True,
        ),
        define_tool(
            name="get_weather",
            description="Current weather for a city.",
            parameters={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
            output=ToolOutput(render=_render, schema={"type": "object"}),
            execute=get_weather,
            is_concurrency_safe=lambda args: True,
        ),
    ]


def corpus_registry(runtime: Any, world: World) -> ToolRegistry:
    registry = ToolRegistry(mode="code", code_runtime=runtime, max_sub_calls=60)
    for definition in corpus_tools(world):
        registry.register(definition)
    return registry


#: Programs that never end, run on runtimes with a short wall-clock budget (``SHORT_WALL_S``).
ENDLESS: list[tuple[str, str]] = [
    ("endless-loop", "n = 0\nwhile True:\n    n += 1"),
    ("endless-loop-after-a-call", ('await tools.write_note({"title": "start", "body": "b"})\nwhile True:\n    pass')),
]
# 1.5 s: the slowest runtime (a command starting `python -m` and importing the package) must reach
# the first call within the budget on a loaded machine.
SHORT_WALL_S = 1.5

#: (id, program). The programs are the model's own words: no test scaffolding inside.
PROGRAMS: list[tuple[str, str]] = [
    ("happy-read", 'r = await tools.read_file({"path": "notes/todo.txt"})\nreturn r["text"]'),
    (
        "happy-print-and-return",
        (
            'todo = await tools.read_file({"path": "notes/todo.txt"})\n'
            "print(f\"{todo['lines']} items\")\n"
            'return {"first": todo["text"].split("\\n")[0], "lines": todo["lines"]}'
        ),
    ),
    (
        "sequential-loop",
        (
            "total = 0\n"
            'for path in ["notes/todo.txt", "notes/ideas.txt", "config.json"]:\n'
            '    r = await tools.read_file({"path": path, "limit": 2})\n'
            '    total += r["lines"]\n'
            '    print(path, r["lines"])\n'
            "return total"
        ),
    ),
    (
        "gather-50",
        (
            "import asyncio\n"
            'results = await asyncio.gather(*[tools.search({"query": f"q{i}", "max_results": 1}) for i in range(50)])\n'
            'return {"calls": len(results), "last": results[-1][0]["title"]}'
        ),
    ),
    (
        "gather-weather",
        (
            "import asyncio\n"
            'cities = ["Oslo", "Lima", "Cairo"]\n'
            'reports = await asyncio.gather(*(tools.get_weather({"city": c}) for c in cities))\n'
            "for r in reports:\n"
            "    print(f\"{r['city']}: {r['temp_c']}C\")"
        ),
    ),
    (
        "forgotten-await-fire-and-forget",
        (
            'tools.write_note({"title": "a", "body": "first"})\n'
            'tools.write_note({"title": "b", "body": "second"})\n'
            'return {"saved": 2}'
        ),
    ),
    ("forgotten-await-use", 'r = tools.read_file({"path": "config.json"})\nprint(r["text"])'),
    ("keyword-arguments", 'r = await tools.read_file(path="config.json")\nreturn r'),
    ("wrong-key-name", 'r = await tools.read_file({"file_path": "config.json"})\nreturn r["text"]'),
    ("wrong-value-type", 'r = await tools.read_file({"path": "notes/todo.txt", "limit": "2"})\nreturn r'),
    ("unknown-tool", 'r = await tools.read_files({"path": "config.json"})'),
    ("missing-file-uncaught", 'print("reading")\nr = await tools.read_file({"path": "nope.txt"})\nreturn r'),
    (
        "catch-and-continue",
        (
            "found = {}\n"
            'for path in ["notes/todo.txt", "missing.txt", "config.json"]:\n'
            "    try:\n"
            '        found[path] = (await tools.read_file({"path": path}))["lines"]\n'
            "    except ToolCallError as e:\n"
            '        print(f"skipped {path}: {e.toolName} said {e.message}")\n'
            "return found"
        ),
    ),
    (
        "except-exception",
        (
            "try:\n"
            '    await tools.write_note({"title": "t"})\n'
            "except Exception as e:\n"
            '    print("failed:", e)\n'
            "    return type(e).__name__"
        ),
    ),
    ("non-json-set", 'r = await tools.search({"query": "x", "max_results": 3})\nreturn {r[0]["title"], r[1]["title"]}'),
    ("non-json-datetime", 'import datetime\nreturn {"when": datetime.datetime(2026, 12, 6, 9, 30), "ok": True}'),
    ("non-json-bytes", 'return {"data": b"\\x00\\x01"}'),
    ("non-json-function", 'def helper():\n    return 1\nreturn {"fn": helper}'),
    ("non-json-cycle", 'node = {"name": "root", "children": []}\nnode["children"].append(node)\nreturn node'),
    ("nested-result", 'r = await tools.read_file({"path": "config.json"})\nimport json\nreturn json.loads(r["text"])'),
    ("no-output", "x = 1 + 1"),
    ("huge-print", 'print("x" * 3_000_000)'),
    ("many-prints", 'for i in range(12_000):\n    print(f"line {i}: " + "." * 90)'),
    ("stderr-print", 'import sys\nprint("warning: slow", file=sys.stderr)\nprint("done")'),
    ("import-os", 'import os\nreturn sorted(os.listdir("."))'),
    (
        "import-subprocess",
        ('import subprocess\nreturn subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout'),
    ),
    ("allocate-2gb", 'data = "x" * (2 * 1024 ** 3)\nreturn len(data)'),
    ("sys-exit-0", 'import sys\nprint("all good")\nsys.exit(0)'),
    ("sys-exit-1", 'import sys\nprint("giving up")\nsys.exit(1)'),
    ("syntax-error", 'r = await tools.read_file({"path": "config.json"}\nreturn r'),
    ("indentation-error", "for i in range(3):\nprint(i)"),
    (
        "create-task",
        (
            "import asyncio\n"
            'tasks = [asyncio.create_task(tools.search({"query": q, "max_results": 1})) for q in ["a", "b"]]\n'
            "done = await asyncio.gather(*tasks)\n"
            'return [d[0]["title"] for d in done]'
        ),
    ),
    (
        "asyncio-run-main",
        (
            "import asyncio\n"
            "async def main():\n"
            '    r = await tools.get_weather({"city": "Rome"})\n'
            '    return r["temp_c"]\n'
            "result = asyncio.run(main())\n"
            'print("temp", result)'
        ),
    ),
    (
        "task-group",
        (
            "import asyncio\n"
            "async with asyncio.TaskGroup() as tg:\n"
            '    a = tg.create_task(tools.get_weather({"city": "Oslo"}))\n'
            "return a.result()"
        ),
    ),
    ("class-inheritance", 'class NotFound(Exception):\n    pass\nraise NotFound("gone")'),
    (
        "call-budget",
        (
            "ok = 0\n"
            "for i in range(65):\n"
            "    try:\n"
            '        await tools.get_weather({"city": "Oslo"})\n'
            "        ok += 1\n"
            "    except ToolCallError as e:\n"
            "        last = e.message\n"
            "print(ok)\n"
            "return last"
        ),
    ),
    ("recursion", "def depth(n):\n    return depth(n + 1)\nreturn depth(0)"),
    ("key-error-in-result", 'r = await tools.get_weather({"city": "Oslo"})\nreturn r["humidity"]'),
]
