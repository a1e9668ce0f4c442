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
    l_0_classes = resolve('classes')
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
    for l_1_class in (undefined(name='classes') if l_0_classes is missing else l_0_classes):
        _loop_vars = {}
        pass
        if (not t_1(environment.getattr(l_1_class, 'alias'))):
            pass
            yield str(environment.getattr(l_1_class, 'name'))
            yield ': TypeAlias = '
            yield str(environment.getattr(l_1_class, 'alias'))
            yield '\n'
        else:
            pass
            yield 'class '
            yield str(environment.getattr(l_1_class, 'name'))
            yield '(TypedDict):\n'
            for l_2_field in environment.getattr(l_1_class, 'fields'):
                _loop_vars = {}
                pass
                if (not t_1(environment.getattr(l_2_field, 'comment'))):
                    pass
                    yield '    # '
                    yield str(environment.getattr(l_2_field, 'comment'))
                    yield '\n'
                yield '    '
                yield str(environment.getattr(l_2_field, 'name'))
                yield ': '
                yield str(environment.getattr(l_2_field, 'type'))
                yield '\n'
            l_2_field = missing
            if environment.getattr(l_1_class, 'open'):
                pass
                yield '    # Additional keys beyond those declared are allowed.\n'
            elif (not environment.getattr(l_1_class, 'fields')):
                pass
                yield '    pass\n'
        yield str((undefined(name='gap') if l_0_gap is missing else l_0_gap))
        yield '\n'
    l_1_class = missing
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
debug_info = '1=25&2=29&4=33&5=35&8=37&9=39&10=42&11=44&13=51&14=53&15=56&16=59&18=62&20=67&22=70&26=73&29=77&32=80&33=83&36=86&37=89&38=95&39=98&40=104&42=109&43=115&44=118&48=121&51=124&52=127&53=130&55=133&57=138'
