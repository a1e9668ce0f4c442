# Code generated from templates/python/sdk_module.py.jinja by write_compiled() in dsh_codegen/codegen/_environment.py. DO NOT EDIT.
# mypy: ignore-errors
# ruff: noqa
# Compiled by Jinja 3.1.6; rendered through dsh_codegen/codegen/_template_runtime.py.
from dsh_codegen.codegen._template_runtime import ENVIRONMENT as environment, TemplateRuntimeError, Undefined, internalcode, missing
name = 'python/sdk_module.py.jinja'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_header = resolve('header')
    l_0_hash_line = resolve('hash_line')
    l_0_future = resolve('future')
    pass
    yield '# '
    yield str((undefined(name='header') if l_0_header is missing else l_0_header))
    yield '\n# '
    yield str((undefined(name='hash_line') if l_0_hash_line is missing else l_0_hash_line))
    yield '\n# Formatters leave the rest as generated (black and ruff format honour the next line), so that\n# `dsh-codegen sdk --check` keeps comparing it byte for byte.\n# fmt: off\n"""Typed stubs of a tool catalog: import the ``TypedDict`` classes to annotate tool bodies."""\n'
    if (undefined(name='future') if l_0_future is missing else l_0_future):
        pass
        yield '\nfrom __future__ import annotations\n'
    yield '\n'
    template = environment.get_template('python/_declarations.py.jinja', 'python/sdk_module.py.jinja')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
    try:
        for event in gen:
            yield event
    finally: gen.close()

blocks = {}
debug_info = '1=15&2=17&7=19&12=23'
