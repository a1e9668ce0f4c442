"""The Python SDK: the ``tools:sdk`` prompt text and the committed ``.py`` file
(docs/sdk-text.md, "Python").

Plain Python writers (docs/codegen.md, "One way to render code"): the functions
below return the text of the parts of the output in the order they appear, in
black's layout (a pinned style: tests run black and libcst over every generated
file and require no change). Type text and the ``TypedDict`` classes come from
``_py_types``, names from ``_naming``, escaping from ``_literals``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dsh_codegen.codegen._catalog import ToolSchemaEntry, sorted_catalog
from dsh_codegen.codegen._literals import code_string, py_comment, py_docstring, py_file_docstring, py_file_string
from dsh_codegen.codegen._naming import ClassNamer, camel_case, is_py_method_name
from dsh_codegen.codegen._py_types import PyTypes, declarations_text
from dsh_codegen.codegen._refs import Definitions

__all__ = ["py_sdk_file", "render_py_sdk"]

_PROMPT_HEAD = """\
## Writing code for run_code

Pass `run_code` two required arguments: `code`, the body of an async Python function (top-level \
`await` and `return` both work), and `description`, a short note saying what the program does. At run \
time exactly two of the names declared below are bound: `tools` and `ToolCallError`. Everything else \
below is a STATIC STUB for reading only: the `TypedDict` classes do NOT exist at run time, so build \
arguments as plain `dict`/`list` literals — never `FooArgs(field=1)`, which raises `NameError`. Inside \
the program:
- Call tools as `await tools.name(args)` — subscript access for exotic, reserved, or underscore-leading \
names: `await tools["my-tool"](args)`. Every call resolves to the tool's typed canonical JSON value. \
Tool arguments must be lossless JSON.
- A FAILED tool call raises `ToolCallError`, whose `toolName` identifies the failed tool and whose \
message is human-readable — `try/except` it to handle and continue.
- Independent read-only calls MAY overlap under `asyncio.gather` (safe calls run concurrently; mutating \
calls run alone, in submission order). Sequence dependent work with `await`.
- Emit results with `print(...)` and/or a top-level `return <value>` (the value must be lossless JSON). \
ONLY what you print or return comes back to you — intermediate tool results never enter the \
conversation, so extract just what you need. Images in successful tool results are attached after the \
run.
"""

#: What a generated file says before its declarations (after the header lines).
_FILE_PREAMBLE = (
    "# Formatters leave the rest as generated (black and ruff format honour the next line), so that\n"
    "# `dsh-codegen sdk --check` keeps comparing it byte for byte.\n"
    "# fmt: off\n"
    '"""Typed stubs of a tool catalog: import the ``TypedDict`` classes to annotate tool bodies."""\n'
)


def render_py_sdk(catalog: Iterable[ToolSchemaEntry], *, notes: tuple[str, ...] = ()) -> str:
    """The Python ``tools:sdk`` prompt text for ``catalog`` (docs/sdk-text.md, "Python").

    Byte-identical for the same set of tools in any order; never raises for
    odd schemas (they render ``Any`` / ``dict[str, Any]``). ``notes``: what the
    runtime that will run the program says of itself (its ``sdk_notes``), one
    bullet each after the fixed ones.
    """
    bullets = "".join(f"- {note}\n" for note in notes)
    declarations = py_declarations(sorted_catalog(catalog), qualify=False).text()
    return f"{_PROMPT_HEAD}{bullets}\nThe available tools:\n\n```python\n{declarations}```\n"


def py_sdk_file(entries: list[ToolSchemaEntry], header: str, hash_line: str) -> str:
    """The ``.py`` SDK file of sorted ``entries``: header comments, ``# fmt: off``, the
    module docstring, ``from __future__ import annotations`` when definitions are
    named, then the declarations with shadowed names qualified and black's blank lines."""
    declarations = py_declarations(entries, qualify=True)
    future = "\nfrom __future__ import annotations\n" if declarations.future else ""
    return f"# {header}\n# {hash_line}\n{_FILE_PREAMBLE}{future}\n{declarations.text()}"


@dataclass(frozen=True, slots=True)
class PyDeclarations:
    """The parts of the declarations block of a Python SDK text, in the order
    :meth:`text` writes them."""

    #: ``import`` targets (``builtins``, ``typing as _typing``, ...), sorted.
    modules: list[str]
    #: The ``typing`` names used, comma-joined, in a fixed order.
    typing_names: str
    #: Every generated class and ``TypeAlias`` in emission order (nested first), each
    #: followed by ``gap`` and a newline (``_py_types.declarations_text``).
    declarations: str
    #: ``class Tools(Protocol):`` and its body.
    tools_class: str
    #: Each tool's member, in tool-name order (the type-check tests read their types).
    members: list[_PyMember]
    #: Whether definitions are named (a file then postpones annotations).
    future: bool
    #: ``""`` in the prompt, ``"\n"`` in files: one or two blank lines between top-level statements.
    gap: str

    def text(self) -> str:
        imports = "".join(f"import {module}\n" for module in self.modules)
        gap = self.gap
        return (
            f"{imports}from typing import {self.typing_names}\n"
            f"{gap}\n"
            "class ToolCallError(Exception):\n"
            "    toolName: str\n"
            "    message: str\n"
            f"{gap}\n"
            f"{self.declarations}{self.tools_class}{gap}\n"
            "tools: Tools\n"
        )


# Module-level names of the Python SDK; generated classes never take them.
_PY_MODULE_NAMES = (
    "Any",
    "Literal",
    "NotRequired",
    "Protocol",
    "TypedDict",
    "ToolCallError",
    "Tools",
    "tools",
    "builtins",
    "typing",
    "Awaitable",
    "Callable",
    "Never",
    "TypeAlias",
    "overload",
)
_TYPING_ORDER = (
    "Any",
    "Awaitable",
    "Callable",
    "Literal",
    "Never",
    "NotRequired",
    "Protocol",
    "TypeAlias",
    "TypedDict",
    "overload",
)


@dataclass(slots=True)
class _PySubscript:
    """One ``Tools.__getitem__`` overload (files only): the decorator text (empty for a
    single tool, which needs none), the tool name's ``Literal`` and the callable's types."""

    decorator: str
    name: str
    args: str
    output: str


@dataclass(slots=True)
class _PyMember:
    """One tool of ``class Tools``: an ``async def`` (``method``) or the comment form;
    ``blank``: an empty line before it (files, where black's blank-line rules apply)."""

    method: bool
    name: str
    args: str
    output: str
    doc: str | None
    blank: bool = False


#: Exact types of the JSON scalars: most values popped by ``_property_names`` are one.
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_STR_ONLY = frozenset({str})


#: Values the unguarded walk of ``_property_names`` may queue before it gives up: a tree
#: (every catalog parsed from JSON) is walked without a cycle guard, and a cycle, or a
#: shared subtree that expands past this, starts over with the guard.
_TREE_VALUES = 1 << 20


def _property_names(schemas: list[object]) -> set[str]:
    """Every ``properties`` key anywhere in ``schemas`` (explicit stack, cycle-safe)."""
    names = _tree_property_names(schemas)
    return _guarded_property_names(schemas) if names is None else names


def _tree_property_names(schemas: list[object]) -> set[str] | None:
    """:func:`_property_names` for values built of exact ``dict`` and ``list`` only, with
    no cycle guard (the ``id`` set and its two lookups per container were a quarter of the
    walk): ``None`` for a subclass of either, or past ``_TREE_VALUES`` values queued.

    Breadth first, over one list that grows while it is iterated (no pop per value)."""
    names: set[str] = set()
    queue: list[Any] = list(schemas)  # exact containers and scalars (the types are checked)
    extend = queue.extend
    for node in queue:
        kind = type(node)
        # Scalars first, with one set lookup: most values are one.
        if kind in _SCALAR_TYPES:
            continue
        if kind is dict:
            try:
                if "properties" in node:
                    _add_keys(names, node["properties"])
            except Exception:  # noqa: BLE001 - hostile keys: the guarded walk skips this node
                return None
            extend(node.values())
        elif kind is list:
            extend(node)
        elif isinstance(node, (dict, list)):
            return None
        else:
            continue
        if len(queue) > _TREE_VALUES:
            return None
    return names


def _guarded_property_names(schemas: list[object]) -> set[str]:
    """:func:`_property_names` for any value: each container walked once (cycles, shared
    subtrees, subclasses whose own methods are bypassed)."""
    names: set[str] = set()
    seen: set[int] = set()
    stack = list(schemas)
    while stack:
        node = stack.pop()
        if type(node) in _SCALAR_TYPES:
            continue
        if isinstance(node, dict):
            if id(node) in seen:
                continue
            seen.add(id(node))
            try:
                _add_keys(names, dict.get(node, "properties"))
                stack.extend(dict.values(node))
            except Exception:  # noqa: BLE001 - hostile mappings are skipped, never fatal
                continue
        elif isinstance(node, list):
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(node)
    return names


def _add_keys(names: set[str], properties: object) -> None:
    """Add the ``str`` keys of ``properties`` to ``names`` if it is a ``dict``."""
    if type(properties) is dict and _STR_ONLY.issuperset(map(type, properties)):
        names.update(properties)  # the common case: every key an exact str
    elif isinstance(properties, dict):
        names.update(key for key in properties if type(key) is str)


def _alias(module: str, taken: set[str]) -> str:
    """``module``, or ``_module``, ``_module_``, ... when a class member takes the name
    (a tool method ``builtins`` would shadow the module inside ``class Tools``)."""
    alias = module
    if alias in taken:
        alias = "_" + module
        while alias in taken:
            alias += "_"
    return alias


def py_declarations(entries: list[ToolSchemaEntry], qualify: bool) -> PyDeclarations:
    """The declarations of sorted ``entries``: unqualified for the prompt, qualified (shadowed
    names spelled ``builtins.list``, typed subscripts, black's blank lines) for files."""
    namer = ClassNamer(_PY_MODULE_NAMES)
    # A generated class must not share a name with a member of any class body
    # (a field or a tool method), which would shadow it in annotations.
    members_anywhere = {entry.name for entry in entries}
    members_anywhere |= _property_names([s for entry in entries for s in (entry.parameters, entry.output_schema)])
    namer.reserve(members_anywhere)
    types = PyTypes(
        namer,
        qualify,
        aliases={module: _alias(module, members_anywhere) for module in ("builtins", "typing")},
        definitions=Definitions(namer),
    )
    method_names = [entry.name for entry in entries if is_py_method_name(entry.name)]
    shadow = types.shadow_for(method_names)
    members = []
    subscripts = []
    # Files give every tool typed subscript access: tools["get-sum"](args) type-checks;
    # more than one tool makes each subscript an overload.
    decorator = "@" + types.name("overload", shadow) if qualify and len(entries) > 1 else ""
    if qualify and entries:
        # The same three names in every tool's subscript.
        literal_name, callable_name, awaitable_name = (
            types.name(name, shadow) for name in ("Literal", "Callable", "Awaitable")
        )
    docstring = py_file_docstring if qualify else py_docstring
    for entry in entries:
        stem = camel_case(entry.name)
        args = types.type_text(entry.parameters, f"{stem}Args", shadow)
        if entry.output_schema is None:
            output = types.name("Any", shadow)
        else:
            output = types.type_text(entry.output_schema, f"{stem}Output", shadow)
        if is_py_method_name(entry.name):
            members.append(_PyMember(True, entry.name, args, output, docstring(entry.description)))
        else:
            members.append(_PyMember(False, code_string(entry.name), args, output, py_comment(entry.description)))
        if qualify:
            literal = f"{literal_name}[{py_file_string(entry.name)}]"
            signature = f"{callable_name}[[{args}], {awaitable_name}[{output}]]"
            subscripts.append(_PySubscript(decorator, literal, "", signature))
    if qualify:
        _black_blank_lines(members)
    used = set(types.typing_used) | {"Protocol"}
    if any(not declared.alias for declared in types.classes):
        used.add("TypedDict")
    # Blank lines between top-level statements: one in the prompt (docs/sdk-text.md),
    # two in files (black's style).
    gap = "\n" if qualify else ""
    return PyDeclarations(
        modules=[
            module if types.aliases[module] == module else f"{module} as {types.aliases[module]}"
            for module in sorted(types.modules_used)
        ],
        typing_names=", ".join(name for name in _TYPING_ORDER if name in used),
        declarations=declarations_text(types.classes, gap),
        tools_class=_tools_class_text(members, subscripts),
        members=members,
        future=types.named_definitions,
        gap=gap,
    )


def _tools_class_text(members: list[_PyMember], subscripts: list[_PySubscript]) -> str:
    """``class Tools(Protocol):`` and its body, one line per member (a method stub, a
    method with its docstring, or the comment form of a subscript-only tool), then the
    ``__getitem__`` overloads; ``pass`` when the body has no statement."""
    parts = ["class Tools(Protocol):\n"]
    append = parts.append
    if not subscripts and not any(member.method for member in members):
        append("    pass\n")
    for member in members:
        if member.blank:
            append("\n")
        if member.method:
            signature = f"    async def {member.name}(self, args: {member.args}) -> {member.output}:"
            if member.doc is None:
                append(f"{signature} ...\n")
            else:
                append(f'{signature}\n        """{member.doc}"""\n')
        else:
            append(f"    # tools[{member.name}](args: {member.args}) -> {member.output}\n")
            if member.doc is not None:
                append(f"    #   {member.doc}\n")
    if subscripts and members and _ends_with_docstring(members):
        append("\n")
    for item in subscripts:
        if item.decorator:
            append(f"    {item.decorator}\n")
        append(f"    def __getitem__(self, name: {item.name}) -> {item.output}: ...\n")
    return "".join(parts)


def _ends_with_docstring(members: list[_PyMember]) -> bool:
    """Whether the last of ``members`` is a method with a docstring body."""
    # A trailing comment block took its blank line already (it belongs to what follows).
    return members[-1].method and members[-1].doc is not None


def _black_blank_lines(members: list[_PyMember]) -> None:
    """Mark the members black puts an empty line before (black's rules for a class body
    of one-line stubs, docstring-bodied methods and comment blocks): after a method with
    a docstring, always; after a stub method, only before a comment block (comments
    belong to the statement after them, so a comment block's first line takes the gap)."""
    previous: _PyMember | None = None  # the last method statement
    in_comments = False
    for member in members:
        if previous is not None and not in_comments:
            member.blank = previous.doc is not None or not member.method
        if member.method:
            previous = member
            in_comments = False
        else:
            in_comments = True
