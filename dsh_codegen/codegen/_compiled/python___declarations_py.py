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
    l_0_has_methods = resolve('has_methods')
    l_0_members = resolve('members')
    l_0_subscripts_blank = resolve('subscripts_blank')
    l_0_subscripts = resolve('subscripts')
    try:
        t_1 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
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
    yield '\nclass ToolCallError(Exception):\n    toolName: str\n'
    yield str((undefined(name='gap') if l_0_gap is missing else l_0_gap))
    yield '\n'
    yield str((undefined(name='declarations') if l_0_declarations is missing else l_0_declarations))
    yield 'class Tools(Protocol):\n'
    if (not (undefined(name='has_methods') if l_0_has_methods is missing else l_0_has_methods)):
        pass
        yield '    pass\n'
    for l_1_member in (undefined(name='members') if l_0_members is missing else l_0_members):
        _loop_vars = {}
        pass
        if environment.getattr(l_1_member, 'blank'):
            pass
            yield '\n'
        if (environment.getattr(l_1_member, 'method') and t_1(environment.getattr(l_1_member, 'doc'))):
            pass
            yield '    async def '
            yield str(environment.getattr(l_1_member, 'name'))
            yield '(self, args: '
            yield str(environment.getattr(l_1_member, 'args'))
            yield ') -> '
            yield str(environment.getattr(l_1_member, 'output'))
            yield ': ...\n'
        elif environment.getattr(l_1_member, 'method'):
            pass
            yield '    async def '
            yield str(environment.getattr(l_1_member, 'name'))
            yield '(self, args: '
            yield str(environment.getattr(l_1_member, 'args'))
            yield ') -> '
            yield str(environment.getattr(l_1_member, 'output'))
            yield ':\n        """'
            yield str(environment.getattr(l_1_member, 'doc'))
            yield '"""\n'
        else:
            pass
            yield '    # tools['
            yield str(environment.getattr(l_1_member, 'name'))
            yield '](args: '
            yield str(environment.getattr(l_1_member, 'args'))
            yield ') -> '
            yield str(environment.getattr(l_1_member, 'output'))
            yield '\n'
            if (not t_1(environment.getattr(l_1_member, 'doc'))):
                pass
                yield '    #   '
                yield str(environment.getattr(l_1_member, 'doc'))
                yield '\n'
    l_1_member = missing
    if (undefined(name='subscripts_blank') if l_0_subscripts_blank is missing else l_0_subscripts_blank):
        pass
        yield '\n'
    for l_1_item in (undefined(name='subscripts') if l_0_subscripts is missing else l_0_subscripts):
        _loop_vars = {}
        pass
        if environment.getattr(l_1_item, 'decorator'):
            pass
            yield '    '
            yield str(environment.getattr(l_1_item, 'decorator'))
            yield '\n'
        yield '    def __getitem__(self, name: '
        yield str(environment.getattr(l_1_item, 'name'))
        yield ') -> '
        yield str(environment.getattr(l_1_item, 'output'))
        yield ': ...\n'
    l_1_item = missing
    yield str((undefined(name='gap') if l_0_gap is missing else l_0_gap))
    yield '\ntools: Tools\n'

blocks = {}
debug_info = '1=25&2=29&4=33&5=35&8=37&9=39&11=41&14=44&15=47&18=50&19=53&20=59&21=62&22=68&24=73&25=79&26=82&30=85&33=88&34=91&35=94&37=97&39=102'
