# Code generated from templates/markdown/catalog.md.jinja by write_compiled() in dsh_codegen/codegen/_environment.py. DO NOT EDIT.
# mypy: ignore-errors
# ruff: noqa
# Compiled by Jinja 3.1.6; rendered through dsh_codegen/codegen/_template_runtime.py.
from dsh_codegen.codegen._template_runtime import ENVIRONMENT as environment, TemplateRuntimeError, Undefined, internalcode, missing
name = 'markdown/catalog.md.jinja'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_count = resolve('count')
    l_0_tools = resolve('tools')
    try:
        t_1 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
    pass
    yield '# Tool catalog\n\n'
    yield str((undefined(name='count') if l_0_count is missing else l_0_count))
    yield '\n'
    for l_1_tool in (undefined(name='tools') if l_0_tools is missing else l_0_tools):
        _loop_vars = {}
        pass
        yield '\n## '
        yield str(environment.getattr(l_1_tool, 'heading'))
        yield '\n\n'
        if environment.getattr(l_1_tool, 'description'):
            pass
            yield str(environment.getattr(l_1_tool, 'description'))
            yield '\n\n'
        yield 'Parameters:\n\n```json\n'
        yield str(environment.getattr(l_1_tool, 'parameters'))
        yield '\n```\n\n'
        if t_1(environment.getattr(l_1_tool, 'output')):
            pass
            yield 'Output: any JSON value.\n'
        else:
            pass
            yield 'Output:\n\n```json\n'
            yield str(environment.getattr(l_1_tool, 'output'))
            yield '\n```\n'
    l_1_tool = missing

blocks = {}
debug_info = '3=20&4=22&6=26&8=28&9=30&15=33&18=35&24=41'
