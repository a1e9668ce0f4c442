# Code generated from templates/typescript/_declarations.ts.jinja by write_compiled() in dsh_codegen/codegen/_environment.py. DO NOT EDIT.
# mypy: ignore-errors
# ruff: noqa
# Compiled by Jinja 3.1.6; rendered through dsh_codegen/codegen/_template_runtime.py.
from dsh_codegen.codegen._template_runtime import ENVIRONMENT as environment, TemplateRuntimeError, Undefined, internalcode, missing
name = 'typescript/_declarations.ts.jinja'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_export = resolve('export')
    l_0_aliases = resolve('aliases')
    l_0_args_map = resolve('args_map')
    l_0_output_map = resolve('output_map')
    pass
    yield str((undefined(name='export') if l_0_export is missing else l_0_export))
    yield 'type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }\n\n'
    yield str((undefined(name='aliases') if l_0_aliases is missing else l_0_aliases))
    yield str((undefined(name='export') if l_0_export is missing else l_0_export))
    yield 'interface ToolArgsMap '
    yield str((undefined(name='args_map') if l_0_args_map is missing else l_0_args_map))
    yield '\n\n'
    yield str((undefined(name='export') if l_0_export is missing else l_0_export))
    yield 'interface ToolOutputMap '
    yield str((undefined(name='output_map') if l_0_output_map is missing else l_0_output_map))
    yield '\n\n'
    yield str((undefined(name='export') if l_0_export is missing else l_0_export))
    yield 'type ToolName = keyof ToolOutputMap\n\n'
    yield str((undefined(name='export') if l_0_export is missing else l_0_export))
    yield 'declare class ToolCallError extends Error {\n  readonly name: "ToolCallError";\n  readonly toolName: ToolName;\n}\n\n'
    yield str((undefined(name='export') if l_0_export is missing else l_0_export))
    yield 'declare const tools: {\n  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;\n}\n'

blocks = {}
debug_info = '1=15&3=17&5=22&7=26&9=28&14=30'
