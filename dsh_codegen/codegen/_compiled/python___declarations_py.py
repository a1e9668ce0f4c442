# Code generated from templates/python/_declarations.py.jinja by write_compiled() in dsh_codegen/codegen/_environment.py. DO NOT EDIT.
# mypy: ignore-errors
# ruff: noqa
# Compiled by Jinja 3.1.6; rendered through dsh_codegen/codegen/_template_runtime.py.
from dsh_codegen.codegen._template_runtime import ENVIRONMENT as environment, TemplateRuntimeError, Undefined, internalcode, missing
name = 'python/_declarations.py.jinja'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_modules = resolve('modules')
    l_0_typing_names = resolve('typing_names')
    l_0_gap = resolve('gap')
    l_0_declarations = resolve('declarations')
    l_0_tools_class = resolve('tools_class')
    pass
    for l_1_module in (undefined(name='modules') if l_0_modules is missing else l_0_modules):
        _loop_vars = {}
        pass
        yield 'import '
        yield str(l_1_module)
        yield '\n'
    l_1_module = missing
    yield 'from typing import '
    yield str((undefined(name='typing_names') if l_0_typing_names is missing else l_0_typing_names))
    yield '\n'
    yield str((undefined(name='gap') if l_0_gap is missing else l_0_gap))
    yield '\nclass ToolCallError(Exception):\n    toolName: str\n    message: str\n'
    yield str((undefined(name='gap') if l_0_gap is missing else l_0_gap))
    yield '\n'
    yield str((undefined(name='declarations') if l_0_declarations is missing else l_0_declarations))
    yield str((undefined(name='tools_class') if l_0_tools_class is missing else l_0_tools_class))
    yield str((undefined(name='gap') if l_0_gap is missing else l_0_gap))
    yield '\ntools: Tools\n'

blocks = {}
debug_info = '1=16&2=20&4=24&5=26&9=28&10=30&11=31&12=32'
