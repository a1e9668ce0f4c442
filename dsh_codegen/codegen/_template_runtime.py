"""What Jinja's precompiled templates call at run time, without importing jinja2.

Jinja compiles every template ahead of time into ``dsh_codegen.codegen._compiled``
(``_environment.write_compiled``). The code it writes calls back into a few runtime
objects: ``context.resolve_or_missing`` and ``context.get_all``, ``environment.getattr``,
``environment.undefined``, ``environment.tests['none']``, ``environment.get_template``
(for ``{% include %}``) and ``template.new_context``/``root_render_func``. This module
provides exactly those, with Jinja's meaning under the settings of our one environment
(``StrictUndefined``, no autoescape, no globals a template uses), so rendering never
imports jinja2 (its import is most of a fresh process's first render). ``compiled_source``
checks at generation time that a compiled template needs nothing else; a test renders
every golden case through both this runtime and Jinja's own and compares the text.

Errors are Jinja's own classes (``jinja2.UndefinedError``, ``jinja2.TemplateNotFound``,
``jinja2.TemplateRuntimeError``): jinja2 is imported only on those paths.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

__all__ = [
    "ENVIRONMENT",
    "RUNTIME_NAMES",
    "Context",
    "PrecompiledTemplate",
    "TemplateRuntimeError",
    "Undefined",
    "compiled_module_name",
    "internalcode",
    "missing",
]

_COMPILED = "dsh_codegen.codegen._compiled"


class _Missing:
    """The marker for a name the context does not hold (Jinja's ``missing``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "missing"


missing: Any = _Missing()


def _type_text(obj: object) -> str:
    """Jinja's ``object_type_repr``: how an undefined attribute's owner is named."""
    if obj is None:
        return "None"
    if obj is Ellipsis:
        return "Ellipsis"
    cls = type(obj)
    if cls.__module__ == "builtins":
        return f"{cls.__name__} object"
    return f"{cls.__module__}.{cls.__name__} object"


class Undefined:
    """A name or attribute the context lacks, with ``StrictUndefined``'s rules: printing,
    iterating, testing for truth, comparing or reading through it raises
    ``jinja2.UndefinedError``; only ``is none`` (false) looks at it without failing."""

    __slots__ = ("_obj", "_name", "_hint")

    def __init__(self, hint: str | None = None, obj: object = missing, name: object = None, exc: object = None) -> None:
        self._hint = hint
        self._obj = obj
        self._name = name

    def _message(self) -> str:
        if self._hint is not None:
            return self._hint
        if self._obj is missing:
            return f"{self._name!r} is undefined"
        if not isinstance(self._name, str):
            return f"{_type_text(self._obj)} has no element {self._name!r}"
        return f"{_type_text(self._obj)!r} has no attribute {self._name!r}"

    def _fail(self, *args: object, **kwargs: object) -> NoReturn:
        import jinja2

        raise jinja2.UndefinedError(self._message())

    __str__ = __iter__ = __len__ = __bool__ = __contains__ = __call__ = __getitem__ = _fail
    __eq__ = __ne__ = __hash__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __add__ = __radd__ = __mul__ = __rmul__ = __mod__ = __rmod__ = _fail

    def __getattr__(self, name: str) -> NoReturn:
        self._fail()


def TemplateRuntimeError(message: str) -> Exception:  # noqa: N802 - the name Jinja's code raises
    """Jinja's ``TemplateRuntimeError`` (compiled code raises it when a test is unknown)."""
    import jinja2

    return jinja2.TemplateRuntimeError(message)


def internalcode(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Jinja marks its own frames for traceback rewriting; nothing to do here."""
    return fn


class Context:
    """The variables a template renders with (Jinja's ``Context``, without blocks or
    exports: ``compiled_source`` rejects a template that would need them)."""

    __slots__ = ("parent",)

    def __init__(self, parent: Mapping[str, Any]) -> None:
        self.parent = parent

    def resolve_or_missing(self, key: str) -> Any:
        return self.parent.get(key, missing)

    def get_all(self) -> Mapping[str, Any]:
        return self.parent


class PrecompiledTemplate:
    """One template's compiled ``root`` render function."""

    __slots__ = ("name", "root_render_func")

    def __init__(self, name: str, root_render_func: Callable[[Context], Iterator[str]]) -> None:
        self.name = name
        self.root_render_func = root_render_func

    def new_context(
        self, vars: Mapping[str, Any] | None = None, shared: bool = False, locals: Mapping[str, Any] | None = None  # noqa: A002 - Jinja's names
    ) -> Context:
        # Our environment has no globals a template reads (compiled_source checks), so a
        # shared and an unshared context see the same names; locals are never passed.
        return Context(vars if vars is not None else {})

    def render(self, **context: Any) -> str:
        return "".join(self.root_render_func(Context(context)))


def compiled_module_name(template: str) -> str:
    """The module holding ``template``'s precompiled code (``python/sdk_module.py.jinja``
    -> ``python__sdk_module_py``)."""
    stem = template.removesuffix(".jinja")
    return stem.replace("/", "__").replace(".", "_")


def _is_none(value: object) -> bool:
    return value is None


class TemplateEnvironment:
    """What compiled code calls ``environment``: lookups, tests, includes."""

    #: The tests compiled code may look up (``compiled_source`` checks).
    tests: Mapping[str, Callable[[object], bool]] = {"none": _is_none}
    undefined = Undefined
    concat = staticmethod("".join)

    def __init__(self) -> None:
        self._templates: dict[str, PrecompiledTemplate] = {}

    def getattr(self, obj: Any, attribute: str) -> Any:
        """``obj.attribute``, else ``obj[attribute]``, else undefined (Jinja's rule)."""
        try:
            return getattr(obj, attribute)
        except AttributeError:
            pass
        try:
            return obj[attribute]
        except (TypeError, LookupError, AttributeError):
            return Undefined(obj=obj, name=attribute)

    def find_template(self, name: str) -> PrecompiledTemplate | None:
        """The precompiled template ``name``, or ``None`` when none is shipped."""
        template = self._templates.get(name)
        if template is None:
            try:
                module = importlib.import_module(f"{_COMPILED}.{compiled_module_name(name)}")
            except ModuleNotFoundError:
                return None
            template = PrecompiledTemplate(name, module.root)
            self._templates[name] = template
        return template

    def get_template(self, name: str, parent: str | None = None) -> PrecompiledTemplate:
        """The precompiled template ``name`` (an include); ``jinja2.TemplateNotFound`` when none is shipped."""
        template = self.find_template(name)
        if template is None:
            import jinja2

            raise jinja2.TemplateNotFound(name)
        return template


#: The environment every precompiled module binds as ``environment``.
ENVIRONMENT = TemplateEnvironment()

#: The names compiled code may take from the runtime (``compiled_source`` imports these
#: from here instead of ``jinja2.runtime``).
RUNTIME_NAMES = ("TemplateRuntimeError", "Undefined", "internalcode", "missing")
