"""The TypeScript SDK: the ``tools:sdk`` prompt text and the committed ``.ts`` file
(docs/sdk-text.md, "TypeScript").

Plain Python writers (docs/codegen.md, "One way to render code"): each function
below returns the text of one part of the output, in the order it appears. Type
text comes from ``_ts_types``, names from ``_naming``, escaping from ``_literals``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dsh_codegen.codegen._catalog import ToolSchemaEntry, sorted_catalog
from dsh_codegen.codegen._naming import ClassNamer, camel_case
from dsh_codegen.codegen._refs import TS_UNGUARDED, Definitions, RefResolver, reaches_itself
from dsh_codegen.codegen._ts_types import member_head, schema_to_ts

__all__ = ["render_ts_sdk", "ts_sdk_file"]

# Names a TypeScript alias of a definition must not take: the SDK's own declarations
# and the global types a declaration could mean.
_TS_RESERVED = (
    "JsonValue",
    "ToolArgsMap",
    "ToolOutputMap",
    "ToolName",
    "ToolCallError",
    "Array",
    "ArrayBuffer",
    "Awaited",
    "BigInt",
    "Boolean",
    "Capitalize",
    "ConstructorParameters",
    "DataView",
    "Date",
    "Error",
    "Exclude",
    "Extract",
    "Function",
    "InstanceType",
    "Iterable",
    "Iterator",
    "Lowercase",
    "Map",
    "NoInfer",
    "NonNullable",
    "Number",
    "Object",
    "Omit",
    "Parameters",
    "Partial",
    "Pick",
    "Promise",
    "PromiseLike",
    "Readonly",
    "ReadonlyArray",
    "Record",
    "RegExp",
    "Required",
    "ReturnType",
    "Set",
    "String",
    "Symbol",
    "ThisType",
    "Uncapitalize",
    "Uppercase",
    "WeakMap",
    "WeakSet",
)

_PROMPT_HEAD = """\
## Writing code for run_code

Pass `run_code` two required arguments: `code`, the body of an async TypeScript function (erasable \
syntax only — no `enum` or namespaces; type annotations are advisory, the code runs type-stripped), \
and `description`, a short note saying what the program does. Inside the program:
- Call tools as `await tools.name(args)` — quoted access for exotic names: `tools["my-tool"](args)`. \
Every call resolves to the tool's typed canonical JSON value. Tool arguments must be lossless JSON.
- A FAILED tool call rejects with `ToolCallError`, whose `toolName` identifies the failed tool and \
whose `message` is human-readable — `try/catch` it to handle and continue.
- Independent read-only calls MAY overlap under `Promise.all` (safe calls run concurrently; mutating \
calls run alone, in submission order). Sequence dependent work with `await`.
- Emit results with `return` and/or `console.log(...)`. ONLY what you print or return comes back to \
you — intermediate tool results never enter the conversation, so extract just what you need. Images \
in successful tool results are attached after the run.
"""


def render_ts_sdk(catalog: Iterable[ToolSchemaEntry], *, notes: tuple[str, ...] = ()) -> str:
    """The TypeScript ``tools:sdk`` prompt text for ``catalog`` (docs/sdk-text.md, "TypeScript").

    Byte-identical for the same set of tools in any order; never raises for
    odd schemas (they render ``unknown``). Ends with the closing fence and a
    newline. ``notes``: what the runtime that will run the program says of
    itself (its ``sdk_notes``), one bullet each after the fixed ones.
    """
    bullets = "".join(f"- {note}\n" for note in notes)
    declarations = _declarations(sorted_catalog(catalog), export="")
    return f"{_PROMPT_HEAD}{bullets}\nThe available tools:\n\n```ts\n{declarations}```\n"


def ts_sdk_file(entries: list[ToolSchemaEntry], header: str, hash_line: str) -> str:
    """The ``.ts`` SDK file of sorted ``entries``: the two header comments, then the
    prompt's declarations, exported (usable as ``.ts`` or ``.d.ts``)."""
    return f"// {header}\n// {hash_line}\n\n{_declarations(entries, export='export ')}"


def _declarations(entries: list[ToolSchemaEntry], export: str) -> str:
    """The declarations every TypeScript SDK text holds, each ``export``-prefixed:
    ``JsonValue``, the aliases of referenced definitions, ``ToolArgsMap`` and
    ``ToolOutputMap`` (one member per tool, in tool-name order), ``ToolName``,
    ``ToolCallError`` and ``tools``."""
    args_rows = []
    output_rows = []
    definitions = Definitions(ClassNamer(_TS_RESERVED))
    for entry in entries:
        name = entry.name
        stem = camel_case(name)
        refs = RefResolver(entry.parameters, definitions, f"{stem}Args")
        args_rows.append((name, entry.description, schema_to_ts(entry.parameters, 1, refs)))
        if entry.output_schema is None:
            output = "JsonValue"
        else:
            output = schema_to_ts(
                entry.output_schema, 1, RefResolver(entry.output_schema, definitions, f"{stem}Output")
            )
        output_rows.append((name, None, output))
    # Every referenced definition is a type alias (naming one may name more).
    aliases = []
    queue = definitions.queue
    index = 0
    while index < len(queue):
        alias, target, refs = queue[index]
        index += 1
        # tsc rejects an alias that is itself through unions alone (`type A = A | B`).
        text = "unknown" if reaches_itself(target, refs, through=TS_UNGUARDED) else schema_to_ts(target, 0, refs)
        aliases.append(f"{export}type {alias} = {text}\n\n")
    return (
        f"{export}type JsonValue = null | boolean | number | string | JsonValue[] | {{ [key: string]: JsonValue }}\n"
        "\n"
        f"{''.join(aliases)}"
        f"{export}interface ToolArgsMap {_interface_body(args_rows)}\n"
        "\n"
        f"{export}interface ToolOutputMap {_interface_body(output_rows)}\n"
        "\n"
        f"{export}type ToolName = keyof ToolOutputMap\n"
        "\n"
        f"{export}declare class ToolCallError extends Error {{\n"
        '  readonly name: "ToolCallError";\n'
        "  readonly toolName: ToolName;\n"
        "}\n"
        "\n"
        f"{export}declare const tools: {{\n"
        "  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;\n"
        "}\n"
    )


def _interface_body(rows: Sequence[tuple[str, str | None, str]]) -> str:
    """The braces of an interface whose members are ``rows`` of (key, description, type
    text at indent 1), in order: ``{}`` when there are none, else one member per row laid
    out as the members of an object type are (an optional JSDoc line, ``  <key>: <type>;``)."""
    if not rows:
        return "{}"
    return "{\n" + "".join(f"{member_head(key, description, 1)}{text};\n" for key, description, text in rows) + "}"
