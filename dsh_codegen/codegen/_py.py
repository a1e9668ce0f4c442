"""JSON Schema -> Python type text (CONTRACT.md §6 "Type mapping").

Two uses share one walker. Without a :class:`ClassNamer` (the public
``json_schema_to_py``) every object degrades to ``dict[str, Any]``. With one
(the SDK renderers) objects with declarable fields become named ``TypedDict``
classes, collected in :attr:`PyTypes.classes` children-first.

The walk uses an explicit stack; a node that is its own ancestor renders
``Any``; ``list[`` nests at most :data:`MAX_LIST_NESTING` deep (the Python
parser stops near 200 brackets), beyond which the innermost type is ``Any``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh_codegen.codegen._literals import py_comment, py_literal
from dsh_codegen.codegen._naming import ClassNamer, camel_case, is_py_field_name
from dsh_codegen.codegen._nodes import ARRAY, LITERAL, OBJECT, SCALAR_NODE_KEYS, UNION, description_of, read_node

__all__ = ["MAX_LIST_NESTING", "MAX_UNION_OPERATORS", "SHADOWABLE", "PyClass", "PyField", "PyTypes", "json_schema_to_py"]

MAX_LIST_NESTING = 180
#: Most `` | `` in one annotation: CPython compiles ``A | B | ...`` as a nested
#: expression and fails near 3,000 operands, so longer unions render ``Any``.
MAX_UNION_OPERATORS = 1000

#: Names an annotation may use, and the module that qualifies each when a
#: class member of the same name would shadow it (render_sdk_module only).
SHADOWABLE: dict[str, str] = {
    "str": "builtins",
    "int": "builtins",
    "float": "builtins",
    "bool": "builtins",
    "list": "builtins",
    "dict": "builtins",
    "Any": "typing",
    "Literal": "typing",
    "NotRequired": "typing",
}
_TYPING_NAMES = frozenset({"Any", "Literal", "NotRequired"})
_SCALARS = {"string": "str", "number": "float", "integer": "int", "boolean": "bool"}
_SCALAR_TOKENS = {**_SCALARS, "null": "None"}


@dataclass(frozen=True, slots=True)
class PyField:
    """One ``TypedDict`` field: its comment text (escaped), name and annotation."""

    comment: str | None
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class PyClass:
    """One generated ``TypedDict``: ``open`` adds the extra-keys comment, no fields means ``pass``."""

    name: str
    fields: tuple[PyField, ...]
    open: bool


@dataclass(slots=True)
class _Frame:
    """A schema node to render into ``out``."""

    schema: object
    base: str
    lists: int
    shadow: frozenset[str]
    out: list[str]


class _Done:
    """Stack marker: a container's children are rendered (leave the cycle guard;
    for a class, collect its fields)."""

    __slots__ = ("ident", "name", "fields", "open", "shadow")

    def __init__(self, ident: int) -> None:
        self.ident = ident
        self.shadow: frozenset[str] = frozenset()
        self.name = ""
        self.fields: list[tuple[str | None, str, list[str], bool]] = []
        self.open = False


@dataclass(slots=True)
class PyTypes:
    """A type-text builder with its class namer and what it used.

    ``qualify=True`` (files) writes a shadowed name as ``builtins.list`` /
    ``typing.Any`` inside a class that declares a member of that name.
    """

    namer: ClassNamer | None = None
    qualify: bool = False
    #: How each qualifying module is spelled (an alias when a member takes its name).
    aliases: dict[str, str] = field(default_factory=lambda: {"builtins": "builtins", "typing": "typing"})
    classes: list[PyClass] = field(default_factory=list)
    typing_used: set[str] = field(default_factory=set)
    modules_used: set[str] = field(default_factory=set)

    def name(self, token: str, shadow: frozenset[str]) -> str:
        """``token`` as written in an annotation, recording the import it needs."""
        if token in shadow:
            module = SHADOWABLE[token]
            self.modules_used.add(module)
            return f"{self.aliases[module]}.{token}"
        if token in _TYPING_NAMES:
            self.typing_used.add(token)
        return token

    def shadow_for(self, members: list[str]) -> frozenset[str]:
        """The shadowable names among a class body's ``members`` (empty unless qualifying)."""
        if not self.qualify:
            return frozenset()
        return frozenset(name for name in members if name in SHADOWABLE)

    def type_text(self, schema: object, base: str, shadow: frozenset[str] = frozenset()) -> str:
        """Annotation text for ``schema``; never raises (a failure renders ``Any``)."""
        mark = len(self.classes)
        try:
            return self._walk(schema, base, shadow)
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - prompt rendering must not fail on odd input
            del self.classes[mark:]
            return self.name("Any", shadow)

    def _dict_any(self, shadow: frozenset[str]) -> str:
        return f"{self.name('dict', shadow)}[{self.name('str', shadow)}, {self.name('Any', shadow)}]"

    def _literal(self, values: Sequence[object], shadow: frozenset[str]) -> str:
        texts = [py_literal(value) for value in values]
        if any(text is None for text in texts):
            # Only a non-integral float makes a numeric enum a plain float (DESIGN.md);
            # any other failure (an int too long to print) is unsupported.
            numeric = all(type(value) in (int, float) for value in values)
            floats_only = all(type(value) is float for value, text in zip(values, texts) if text is None)
            return self.name("float" if numeric and floats_only else "Any", shadow)
        return f"{self.name('Literal', shadow)}[{', '.join(texts)}]"  # type: ignore[arg-type]

    def _declarable(self, properties: Sequence[tuple[str, object]]) -> bool:
        return all(is_py_field_name(key) for key, _ in properties)

    def _walk(self, schema: object, base: str, shadow: frozenset[str]) -> str:
        # Text is appended in order to per-annotation buffers and joined once,
        # so deep unions stay linear; each class field gets its own buffer.
        root: list[str] = []
        active: set[int] = set()
        stack: list[_Frame | _Done | tuple[list[str], str]] = [_Frame(schema, base, 0, shadow, root)]
        while stack:
            frame = stack.pop()
            if isinstance(frame, tuple):
                frame[0].append(frame[1])
                continue
            if isinstance(frame, _Done):
                active.discard(frame.ident)
                if frame.name:
                    self._finish_class(frame)
                continue
            out = frame.out
            sh = frame.shadow
            scalar = _plain_scalar(frame.schema)
            if scalar is not None:
                out.append(scalar if scalar == "None" else self.name(scalar, sh))
                continue
            ident = id(frame.schema)
            if ident in active:
                out.append(self.name("Any", sh))
                continue
            node = read_node(frame.schema)
            kind = node.kind
            if kind in _SCALARS:
                out.append(self.name(_SCALARS[kind], sh))
            elif kind == "null":
                out.append("None")
            elif kind == LITERAL:
                out.append(self._literal(node.literals, sh))
            elif kind == UNION:
                active.add(ident)
                stack.append(_Done(ident))
                for index in range(len(node.branches), 0, -1):
                    stack.append(_Frame(node.branches[index - 1], f"{frame.base}{index}", frame.lists, sh, out))
                    if index > 1:
                        stack.append((out, " | "))
            elif kind == ARRAY:
                if frame.lists >= MAX_LIST_NESTING:
                    out.append(self.name("Any", sh))
                elif not node.has_items:
                    out.append(f"{self.name('list', sh)}[{self.name('Any', sh)}]")
                else:
                    active.add(ident)
                    out.append(self.name("list", sh) + "[")
                    stack.append(_Done(ident))
                    stack.append((out, "]"))
                    stack.append(_Frame(node.items, frame.base, frame.lists + 1, sh, out))
            elif kind == OBJECT:
                is_class = (
                    self.namer is not None
                    and (node.properties or node.closed)
                    and self._declarable(node.properties)
                )
                if not is_class:
                    out.append(self._dict_any(sh))
                    continue
                assert self.namer is not None
                active.add(ident)
                done = _Done(ident)
                done.name = self.namer.allocate(frame.base)
                done.open = not node.closed
                out.append(done.name)
                inner = self.shadow_for([key for key, _ in node.properties])
                done.shadow = inner
                stack.append(done)
                tasks: list[_Frame | tuple[list[str], str]] = []
                for key, child in node.properties:
                    buffer: list[str] = []
                    done.fields.append((py_comment(description_of(child)), key, buffer, key in node.required))
                    scalar = _plain_scalar(child)
                    if scalar is not None:
                        # Most fields are plain scalars: no frame, no stack round trip.
                        buffer.append(scalar if scalar == "None" else self.name(scalar, inner))
                        continue
                    tasks.append(_Frame(child, done.name + camel_case(key), 0, inner, buffer))
                stack.extend(reversed(tasks))
            else:
                out.append(self.name("Any", sh))
        return self._capped("".join(root), shadow)

    def _capped(self, text: str, shadow: frozenset[str]) -> str:
        # Counting text also counts " | " inside string literals: a false
        # positive only degrades a pathological annotation a little earlier.
        return text if text.count(" | ") <= MAX_UNION_OPERATORS else self.name("Any", shadow)

    def _finish_class(self, done: _Done) -> None:
        fields = []
        for comment, key, buffer, required in done.fields:
            annotation = self._capped("".join(buffer), done.shadow)
            if not required:
                annotation = f"{self.name('NotRequired', done.shadow)}[{annotation}]"
            fields.append(PyField(comment, key, annotation))
        self.classes.append(PyClass(done.name, tuple(fields), done.open))


def _plain_scalar(schema: object) -> str | None:
    """The annotation token of a plain scalar node (``{"type": "string", ...annotations}``:
    ``str``, ``float``, ``int``, ``bool`` or ``None``), else ``None``. The same as
    reading it with ``read_node``, without building a node; never raises (a hostile
    key gives ``None`` and ``read_node`` degrades the node)."""
    if type(schema) is dict:
        try:
            declared = schema.get("type")
            if type(declared) is str and declared in _SCALAR_TOKENS and SCALAR_NODE_KEYS.issuperset(schema):
                return _SCALAR_TOKENS[declared]
        except Exception:  # noqa: BLE001 - hostile keys degrade in read_node
            return None
    return None


def json_schema_to_py(schema: object) -> str:
    """Python annotation text for ``schema``, outside any SDK; never raises.

    Objects always render ``dict[str, Any]`` (a ``TypedDict`` needs the
    naming context of an SDK render); unsupported or malformed parts, cycles
    and ``{}`` render ``Any``.
    """
    return PyTypes().type_text(schema, "Value")
