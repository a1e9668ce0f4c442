"""JSON Schema -> Python type text (docs/sdk-text.md, "Python").

Two uses share one walker. Without a :class:`ClassNamer` (the public
``json_schema_to_py``) every object degrades to ``dict[str, Any]``. With one
(the SDK renderers) objects with declared fields become named ``TypedDict``
classes, collected in :attr:`PyTypes.classes` children-first: in class syntax,
or, when a key is not a Python identifier (``from``, ``my-key``), in the
functional form ``Name = TypedDict("Name", {"from": str})``, so every key is
typed either way.

The walk uses an explicit stack; a node that is its own ancestor renders
``Any``; ``list[`` nests at most :data:`MAX_LIST_NESTING` deep (the Python
parser stops near 200 brackets), beyond which the innermost type is ``Any``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh_codegen.codegen._literals import code_string, py_comment, py_file_literal, py_file_string, py_literal
from dsh_codegen.codegen._naming import CLASS_NAME_CAP, ClassNamer, are_py_field_names, camel_case
from dsh_codegen.codegen._nodes import (
    ALL_OF,
    ARRAY,
    LITERAL,
    MISSING,
    NEVER,
    OBJECT,
    RECORD,
    REF,
    SCALAR_NODE_KEYS,
    TUPLE,
    UNION,
    doc_of,
    merge_all_of,
    read_node,
)
from dsh_codegen.codegen._nodes import Node
from dsh_codegen.codegen._refs import Definitions, RefResolver

__all__ = [
    "MAX_LIST_NESTING",
    "MAX_UNION_OPERATORS",
    "SHADOWABLE",
    "PyClass",
    "PyTypes",
    "declarations_text",
    "json_schema_to_py",
]

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
    "tuple": "builtins",
    "Any": "typing",
    "Literal": "typing",
    "Never": "typing",
    "NotRequired": "typing",
    "Awaitable": "typing",
    "Callable": "typing",
    "overload": "typing",
}
_SHADOWABLE_NAMES = frozenset(SHADOWABLE)
_TYPING_NAMES = frozenset({"Any", "Literal", "Never", "NotRequired", "Awaitable", "Callable", "overload", "TypeAlias"})
_SCALARS = {"string": "str", "number": "float", "integer": "int", "boolean": "bool"}
_SCALAR_TOKENS = {**_SCALARS, "null": "None"}
_DIALECT_KINDS = frozenset({NEVER, REF, ALL_OF, TUPLE, RECORD})
_STR_ONLY = frozenset({str})
#: The names an annotation mentions (a functional class quotes an annotation naming a class
#: not declared yet: its dict is evaluated at import, unlike class-syntax annotations).
_NAME = re.compile(r"[^\W\d]\w*")


# PyClass is a plain slotted dataclass, not frozen: a render builds one per class and
# nothing changes it after, and a frozen ``__init__`` (one ``object.__setattr__`` call per
# field) costs about 3x the plain one.


@dataclass(slots=True)
class PyClass:
    """One generated declaration and its text (lines ending in a newline): a ``TypedDict``
    class, or, with ``alias`` (annotation text), a ``TypeAlias`` for a referenced definition.

    The class's text is written once, when its fields are done (``_finish_class``): records
    per field, looped over again to print them, cost about 3% of a Python file's render."""

    name: str
    text: str
    alias: str | None = None


@dataclass(slots=True)
class _Frame:
    """A schema node to render into ``out``."""

    schema: object
    base: str
    lists: int
    shadow: frozenset[str]
    out: list[str]
    #: A referenced definition's allocated name (the class takes it) and its key in the resolver.
    forced: str | None = None
    key: int = 0
    #: The node, read already (a class field's child, which ``_plain_scalar_field`` said
    #: is no plain scalar): neither asked nor read twice.
    node: Node | None = None


#: A class field whose type is still to walk: its index among the class's lines (a
#: placeholder until then), comment, key, the buffer its type is written to, required.
_PendingField = tuple[int, str | None, str, list[str], bool]


class _Done:
    """Stack marker: a container's children are rendered (leave the cycle guard;
    for a class, write its pending fields and declare it)."""

    __slots__ = ("ident", "name", "lines", "pending", "open", "shadow", "alias", "functional")

    def __init__(self, ident: int) -> None:
        self.ident = ident
        self.shadow: frozenset[str] = frozenset()
        self.name = ""
        #: The class is written in the functional form (a key is not an identifier).
        self.functional = False
        #: The class's text so far (see ``PyTypes._class_lines``) and its pending fields.
        self.lines: list[str] = []
        self.pending: list[_PendingField] = []
        self.open = False
        #: For a referenced definition: (resolver, key, text buffer); declared as a
        #: ``TypeAlias`` unless the definition became a class.
        self.alias: tuple[RefResolver, int, list[str]] | None = None


@dataclass(slots=True)
class PyTypes:
    """A type-text builder with its class namer and what it used.

    ``qualify=True`` (files) writes a shadowed name as ``builtins.list`` /
    ``typing.Any`` inside a class that declares a member of that name.
    """

    namer: ClassNamer | None = None
    qualify: bool = False
    #: Names of referenced definitions (SDK renders; ``None``: references are expanded).
    definitions: Definitions | None = None
    #: How each qualifying module is spelled (an alias when a member takes its name).
    aliases: dict[str, str] = field(default_factory=lambda: {"builtins": "builtins", "typing": "typing"})
    classes: list[PyClass] = field(default_factory=list)
    #: Whether a referenced definition was named (a file then needs postponed annotations).
    named_definitions: bool = False
    typing_used: set[str] = field(default_factory=set)
    modules_used: set[str] = field(default_factory=set)
    #: Class and alias names handed out, and those declared so far (the difference may be
    #: named before it is declared: a recursive reference).
    allocated: set[str] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)

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
        return _SHADOWABLE_NAMES.intersection(members)

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

    def _resolver(self, root: object, base: str) -> RefResolver:
        return RefResolver(root, self.definitions, base)

    def _dict_any(self, shadow: frozenset[str]) -> str:
        return f"{self.name('dict', shadow)}[{self.name('str', shadow)}, {self.name('Any', shadow)}]"

    def _literal(self, values: Sequence[object], shadow: frozenset[str]) -> str:
        # Files are in black's style, whose quote preference differs from JSON's.
        if self.qualify and _STR_ONLY.issuperset(map(type, values)):
            texts: list[str | None] = list(map(py_file_string, values))  # type: ignore[arg-type]  # exact strs
        else:
            writer = py_file_literal if self.qualify else py_literal
            texts = [writer(value) for value in values]
        if any(text is None for text in texts):
            # Only a non-integral float makes a numeric enum a plain float (docs/data-model.md);
            # any other failure (an int too long to print) is unsupported.
            numeric = all(type(value) in (int, float) for value in values)
            floats_only = all(type(value) is float for value, text in zip(values, texts) if text is None)
            return self.name("float" if numeric and floats_only else "Any", shadow)
        return f"{self.name('Literal', shadow)}[{', '.join(texts)}]"  # type: ignore[arg-type]

    def _walk(self, schema: object, base: str, shadow: frozenset[str]) -> str:
        # Text is appended in order to per-annotation buffers and joined once,
        # so deep unions stay linear; each class field gets its own buffer.
        root: list[str] = []
        active: set[int] = set()
        refs: RefResolver | None = None
        root_name: str | None = None
        # Schemas the dialect's reading synthesizes (union branches, merged allOf parts)
        # stay alive for the walk, so their ids in ``active`` are never reused.
        alive: list[object] = []
        stack: list[_Frame | _Done | tuple[list[str], str]] = [_Frame(schema, base, 0, shadow, root)]
        while stack:
            frame = stack.pop()
            if isinstance(frame, tuple):
                frame[0].append(frame[1])
                continue
            if isinstance(frame, _Done):
                active.discard(frame.ident)
                if frame.name:
                    self._write_pending(frame)
                    self._finish_class(frame.name, frame.lines, frame.open, frame.functional)
                elif frame.alias is not None:
                    self._finish_alias(frame)
                continue
            out = frame.out
            sh = frame.shadow
            node = frame.node
            if node is None:
                scalar = _plain_scalar(frame.schema)
                if scalar is not None:
                    out.append(scalar if scalar == "None" else self.name(scalar, sh))
                    continue
            ident = id(frame.schema)
            if ident in active:
                out.append(self.name("Any", sh))
                continue
            if node is None:
                node = read_node(frame.schema)
            kind = node.kind
            if frame.forced is not None and refs is not None and not (kind == OBJECT or kind == ALL_OF):
                refs.states[frame.key] = "alias"  # not a class: a TypeAlias, declared when done
            if kind == OBJECT:  # the most common container first
                properties = node.properties
                keys = [key for key, _ in properties]
                is_class = self.namer is not None and bool(properties or node.closed or frame.forced is not None)
                if not is_class:
                    if frame.forced is not None and refs is not None:
                        refs.states[frame.key] = "alias"
                    out.append(self._dict_any(sh))
                    continue
                assert self.namer is not None
                if frame.forced is not None and refs is not None:
                    name = frame.forced
                    refs.states[frame.key] = "class"
                else:
                    name = self.namer.allocate(frame.base)
                    self.allocated.add(name)
                if frame.schema is schema:
                    root_name = name  # a "#" reference names the root class
                out.append(name)
                # Keys that cannot be fields in class syntax take the functional form, whose
                # keys are string literals (they shadow nothing).
                functional = not are_py_field_names(keys)
                inner = frozenset() if functional else self.shadow_for(keys)
                tasks: list[_Frame | tuple[list[str], str]] = []
                pending: list[_PendingField] = []
                lines = self._class_lines(name, node, inner, tasks, pending, functional)
                if not pending:
                    # Every field written: declared now (the marker would be the next pop).
                    self._finish_class(name, lines, not node.closed, functional)
                    continue
                active.add(ident)
                done = _Done(ident)
                done.name = name
                done.lines = lines
                done.pending = pending
                done.open = not node.closed
                done.shadow = inner
                done.functional = functional
                stack.append(done)
                stack.extend(reversed(tasks))
                continue
            if kind in _DIALECT_KINDS:
                if refs is None:
                    refs = self._resolver(schema, base)
                    if root_name is not None:
                        refs.names[id(schema)] = root_name
                        refs.states[id(schema)] = "class"
                alive.append(node)
                self._dialect(node, frame, ident, stack, active, refs, alive)
                continue
            if kind in _SCALARS:
                out.append(self.name(_SCALARS[kind], sh))
            elif kind == "null":
                out.append("None")
            elif kind == LITERAL:
                out.append(self._literal(node.literals, sh))
            elif kind == UNION:
                alive.append(node)
                active.add(ident)
                stack.append(_Done(ident))
                for index in range(len(node.branches), 0, -1):
                    stack.append(_Frame(node.branches[index - 1], _child_base(frame.base, index), frame.lists, sh, out))
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
            else:
                out.append(self.name("Any", sh))
        return self._capped("".join(root), shadow)

    def _dialect(
        self,
        node: Node,
        frame: _Frame,
        ident: int,
        stack: list[_Frame | _Done | tuple[list[str], str]],
        active: set[int],
        refs: RefResolver,
        alive: list[object],
    ) -> None:
        """The walk's step for references, ``allOf``, tuples, records and ``false``."""
        out = frame.out
        sh = frame.shadow
        kind = node.kind
        if kind == NEVER:
            out.append(self.name("Never", sh))
            return
        if kind == REF:
            target = refs.resolve(node.ref)
            if target is MISSING:
                out.append(self.name("Any", sh))
                return
            named = refs.name(node.ref, target)
            if named is None:
                # Outside an SDK: expand in place (a recursive reference meets itself: Any).
                active.add(ident)
                stack.append(_Done(ident))
                stack.append(_Frame(target, frame.base, frame.lists, sh, out))
                return
            name, new = named
            self.named_definitions = True
            self.allocated.add(name)
            if not new:
                # A definition still being written as a TypeAlias cannot name itself (it is
                # evaluated at import): that recursion degrades to Any.
                out.append(self.name("Any", sh) if refs.states.get(id(target)) == "alias" else name)
                return
            out.append(name)
            buffer: list[str] = []
            done = _Done(-1)
            done.alias = (refs, id(target), buffer)
            stack.append(done)
            definition = _Frame(target, name, 0, frozenset(), buffer, name, id(target))
            stack.append(definition)
            return
        if kind == RECORD:
            if frame.lists >= MAX_LIST_NESTING:
                out.append(self.name("Any", sh))
                return
            active.add(ident)
            out.append(f"{self.name('dict', sh)}[{self.name('str', sh)}, ")
            stack.append(_Done(ident))
            stack.append((out, "]"))
            stack.append(_Frame(node.items, frame.base, frame.lists + 1, sh, out))
            return
        if kind == TUPLE:
            if frame.lists >= MAX_LIST_NESTING:
                out.append(self.name("Any", sh))
                return
            prefix = list(node.branches)
            closed = node.has_items and node.items is False
            exact = closed and prefix and node.min_items >= len(prefix)
            elements = prefix if closed else prefix + [node.items if node.has_items else True]
            active.add(ident)
            stack.append(_Done(ident))
            stack.append((out, "]"))
            if not elements:
                out.append(f"{self.name('list', sh)}[")
                stack.append((out, self.name("Never", sh)))
                return
            # Python has no optional tuple elements nor a typed rest: those are lists of the union.
            out.append(f"{self.name('tuple' if exact else 'list', sh)}[")
            separator = ", " if exact else " | "
            for index in range(len(elements) - 1, -1, -1):
                stack.append(_Frame(elements[index], _child_base(frame.base, index + 1), frame.lists + 1, sh, out))
                if index:
                    stack.append((out, separator))
            return
        # allOf: its one part as it is, one merged schema (a TypedDict) where exact, else Any.
        merged = node.branches[0] if len(node.branches) == 1 else merge_all_of(node.branches, refs.resolve)
        if merged is None:
            if frame.forced is not None:
                refs.states[frame.key] = "alias"
            out.append(self.name("Any", sh))
            return
        alive.append(merged)
        active.add(ident)
        stack.append(_Done(ident))
        stack.append(_Frame(merged, frame.base, frame.lists, sh, out, frame.forced, frame.key))

    def _leaf_text(self, node: Node, shadow: frozenset[str]) -> str | None:
        """A class field's annotation when its node has no child to walk (a literal, or an
        array of a plain scalar): the walk's text for it, without its frames; else ``None``.
        Neither node can be its own ancestor, so the walk's cycle guard never applies."""
        kind = node.kind
        if kind == LITERAL:
            return self._capped(self._literal(node.literals, shadow), shadow)
        if kind == ARRAY and node.has_items:
            token = _plain_scalar(node.items)
            if token is not None:
                return f"{self.name('list', shadow)}[{token if token == 'None' else self.name(token, shadow)}]"
        return None

    def _finish_alias(self, done: _Done) -> None:
        assert done.alias is not None
        refs, key, buffer = done.alias
        if refs.states.get(key) == "class":
            return  # the definition is a TypedDict of that name already
        refs.states[key] = "done"
        self.typing_used.add("TypeAlias")
        name = refs.names[key]
        alias = self._capped("".join(buffer), frozenset())
        self.classes.append(PyClass(name, f"{name}: TypeAlias = {alias}\n", alias))
        self.declared.add(name)

    def _capped(self, text: str, shadow: frozenset[str]) -> str:
        # Counting text also counts " | " inside string literals: a false
        # positive only degrades a pathological annotation a little earlier.
        return text if text.count(" | ") <= MAX_UNION_OPERATORS else self.name("Any", shadow)

    def _class_lines(
        self,
        name: str,
        node: Node,
        shadow: frozenset[str],
        tasks: list[_Frame | tuple[list[str], str]],
        pending: list[_PendingField],
        functional: bool = False,
    ) -> list[str]:
        """The text of class ``name``, one item per field: ``class <Name>(TypedDict):`` and per
        field an optional ``    # <comment>`` line and ``    <name>: <type>``; or, ``functional``,
        ``<Name> = TypedDict(`` / ``"<Name>",`` / ``{`` and per field ``"<key>": <type>,``
        (black's exploded layout, which it keeps as it is). A field whose type needs the walk
        (``tasks`` gets its frame) has a placeholder, and an entry in ``pending``; the others
        are written here, where their types are known."""
        if functional:
            literal = self._string(name)
            lines = [f"{name} = TypedDict(\n    {literal},\n    {{\n"]
        else:
            lines = [f"class {name}(TypedDict):\n"]
        append = lines.append
        required = node.required
        for key, child in node.properties:
            plain = _plain_scalar_field(child)
            if plain is not None:
                # Most fields are plain scalars: their annotation is the token
                # itself (no buffer, no frame, no stack round trip).
                # (No scalar token is a typing name: only a shadowed one needs name().)
                scalar, comment = plain
                annotation = self.name(scalar, shadow) if scalar in shadow else scalar
            else:
                comment = py_comment(doc_of(child))
                child_node = read_node(child)
                leaf = self._leaf_text(child_node, shadow)
                if leaf is None:
                    buffer: list[str] = []
                    pending.append((len(lines), comment, key, buffer, key in required))
                    append("")
                    tasks.append(_Frame(child, name + camel_case(key), 0, shadow, buffer, node=child_node))
                    continue
                annotation = leaf
            append(self._field_line(key, annotation, comment, key in required, functional, shadow))
        return lines

    def _field_line(
        self, key: str, annotation: str, comment: str | None, required: bool, functional: bool, shadow: frozenset[str]
    ) -> str:
        """One field's text (its comment line first, when it has one)."""
        if functional:
            named = self.allocated.intersection(_NAME.findall(annotation))
            if named and not self.declared.issuperset(named):
                # It names a class declared later (a recursive reference): a string, which
                # only the type checker evaluates (a functional class's dict runs at import).
                annotation = self._string(annotation)
        if not required:
            annotation = f"{self.name('NotRequired', shadow)}[{annotation}]"
        if functional:
            line = f"        {self._string(key)}: {annotation},\n"
            return line if comment is None else f"        # {comment}\n{line}"
        line = f"    {key}: {annotation}\n"
        return line if comment is None else f"    # {comment}\n{line}"

    def _string(self, text: str) -> str:
        """A string literal: black's quote preference in files, JSON's double quotes in the prompt."""
        return py_file_string(text) if self.qualify else code_string(text)

    def _write_pending(self, done: _Done) -> None:
        """Write ``done``'s pending fields into their places, their types walked."""
        lines = done.lines
        for index, comment, key, buffer, required in done.pending:
            annotation = self._capped("".join(buffer), done.shadow)
            lines[index] = self._field_line(key, annotation, comment, required, done.functional, done.shadow)

    def _finish_class(self, name: str, lines: list[str], open_: bool, functional: bool = False) -> None:
        """Declare class ``name`` from its ``lines`` (every field written): then the
        extra-keys comment for an open class, or ``pass`` for one without fields
        (the functional form always has a field, and closes its dict and call)."""
        if functional:
            if open_:
                lines.append("        # Additional keys beyond those declared are allowed.\n")
            lines.append("    },\n)\n")
        elif open_:
            lines.append("    # Additional keys beyond those declared are allowed.\n")
        elif len(lines) == 1:
            lines.append("    pass\n")
        self.classes.append(PyClass(name, "".join(lines)))
        self.declared.add(name)


def declarations_text(classes: Sequence[PyClass], gap: str) -> str:
    """The declarations of ``classes`` in order (each class's text, see :class:`PyClass`),
    each followed by ``gap`` and a newline.

    One string for the whole section, as ``_ts.interface_body`` does for the TypeScript
    maps: the template loop over classes and fields (an attribute lookup and an output
    step per value printed) cost about a sixth of a Python file's render.
    """
    end = gap + "\n"
    return "".join([declared.text + end for declared in classes])


def _child_base(base: str, index: int) -> str:
    """``base`` + ``index``: a branch's class-name base. Names are cut at
    ``CLASS_NAME_CAP`` anyway, so a long base stays as it is (deep unions stay linear)."""
    return base if len(base) >= CLASS_NAME_CAP else f"{base}{index}"


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


def _plain_scalar_field(schema: object) -> tuple[str, str | None] | None:
    """:func:`_plain_scalar`'s token and the field's comment text, ``py_comment(doc_of(schema))``,
    in one call: a plain scalar's keys add no notes to a doc (``SCALAR_NODE_KEYS`` are all
    in ``_nodes._NO_NOTES``), so its doc is its ``description`` (most fields have none)."""
    if type(schema) is dict:
        try:
            declared = schema.get("type")
            if not (type(declared) is str and declared in _SCALAR_TOKENS and SCALAR_NODE_KEYS.issuperset(schema)):
                return None
        except Exception:  # noqa: BLE001 - hostile keys degrade in read_node
            return None
        try:
            description = schema.get("description")
        except Exception:  # noqa: BLE001 - as doc_of: hostile keys give no doc
            description = None
        return _SCALAR_TOKENS[declared], (py_comment(description) if type(description) is str else None)
    return None


def json_schema_to_py(schema: object) -> str:
    """Python annotation text for ``schema``, outside any SDK; never raises.

    Objects always render ``dict[str, Any]`` (a ``TypedDict`` needs the
    naming context of an SDK render); unsupported or malformed parts, cycles
    and ``{}`` render ``Any``.
    """
    return PyTypes().type_text(schema, "Value")
