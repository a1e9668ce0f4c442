# Code generated from templates/typescript/sdk_prompt.md.jinja by write_compiled() in dsh_codegen/codegen/_environment.py. DO NOT EDIT.
# mypy: ignore-errors
# ruff: noqa
# Compiled by Jinja 3.1.6; rendered through dsh_codegen/codegen/_template_runtime.py.
from dsh_codegen.codegen._template_runtime import ENVIRONMENT as environment, TemplateRuntimeError, Undefined, internalcode, missing
name = 'typescript/sdk_prompt.md.jinja'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_notes = resolve('notes')
    pass
    yield '## Writing code for run_code\n\nPass `run_code` two required arguments: `code`, the body of an async TypeScript function (erasable syntax only — no `enum` or namespaces; type annotations are advisory, the code runs type-stripped), and `description`, a short note saying what the program does. Inside the program:\n- Call tools as `await tools.name(args)` — quoted access for exotic names: `tools["my-tool"](args)`. Every call resolves to the tool\'s typed canonical JSON value. Tool arguments must be lossless JSON.\n- A FAILED tool call rejects with `ToolCallError`, whose `toolName` identifies the failed tool and whose `message` is human-readable — `try/catch` it to handle and continue.\n- Independent read-only calls MAY overlap under `Promise.all` (safe calls run concurrently; mutating calls run alone, in submission order). Sequence dependent work with `await`.\n- Emit results with `return` and/or `console.log(...)`. ONLY what you print or return comes back to you — intermediate tool results never enter the conversation, so extract just what you need. Images in successful tool results are attached after the run.\n'
    for l_1_note in (undefined(name='notes') if l_0_notes is missing else l_0_notes):
        _loop_vars = {}
        pass
        yield '- '
        yield str(l_1_note)
        yield '\n'
    l_1_note = missing
    yield '\nThe available tools:\n\n```ts\n'
    template = environment.get_template('typescript/_declarations.ts.jinja', 'typescript/sdk_prompt.md.jinja')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    yield '```\n'

blocks = {}
debug_info = '8=13&9=17&15=21'
