"""The ``tools:sdk`` prompt texts (docs/sdk-text.md) and committed SDK files.

Everything a template prints is computed here: tools sorted by name, keys
and class names chosen by ``_naming``, text escaped by ``_literals``, type
text by ``_ts`` / ``_py``. Templates only lay it out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dsh_codegen._version import __version__
from dsh_codegen.codegen._catalog import ToolSchemaEntry, catalog_sha256, sorted_catalog
from dsh_codegen.codegen._environment import render_template
from dsh_codegen.codegen._literals import code_string, py_comment, py_docstring, py_file_docstring, py_file_string
from dsh_codegen.codegen._naming import ClassNamer, camel_case, is_py_method_name
from dsh_codegen.codegen._refs import TS_UNGUARDED, Definitions, RefResolver, reaches_itself

__all__ = ["render_py_sdk", "render_sdk_module", "render_ts_sdk"]

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
# Names a TypeScript alias of a definition must not take: the SDK's own declarations
# and the global types a declaration could mean.
_TS_RESERVED = (
    "JsonValue",
    "ToolArgsMap",
    "ToolOutputMap",
    "ToolName",
    "ToolCallError",
    "Array",
    "ArrayBuffer",
    "Awaited",
    "BigInt",
    "Boolean",
    "Capitalize",
    "ConstructorParameters",
    "DataView",
    "Date",
    "Error",
    "Exclude",
    "Extract",
    "Function",
    "InstanceType",
    "Iterable",
    "Iterator",
    "Lowercase",
    "Map",
    "NoInfer",
    "NonNullable",
    "Number",
    "Object",
    "Omit",
    "Parameters",
    "Partial",
    "Pick",
    "Promise",
    "PromiseLike",
    "Readonly",
    "ReadonlyArray",
    "Record",
    "RegExp",
    "Required",
    "ReturnType",
    "Set",
    "String",
    "Symbol",
    "ThisType",
    "Uncapitalize",
    "Uppercase",
    "WeakMap",
    "WeakSet",
)


# Template contexts are attribute records, not dicts: Jinja looks ``member.doc``
# up with ``getattr`` first, and a dict would raise (and catch) an
# AttributeError on every lookup. They are not frozen (a frozen dataclass's
# ``__init__`` costs about 3x a plain one's); only ``_black_blank_lines`` sets a
# field after construction (``_PyMember.blank``), before the template reads it.


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


def _ts_context(catalog: Iterable[ToolSchemaEntry], export: str) -> dict[str, object]:
    from dsh_codegen.codegen._ts_types import schema_to_ts  # only TypeScript renders load the TypeScript type walker

    entries = sorted_catalog(catalog)
    args_rows = []
    output_rows = []
    definitions = Definitions(ClassNamer(_TS_RESERVED))
    for entry in entries:
        name = entry.name
        stem = camel_case(name)
        refs = RefResolver(entry.parameters, definitions, f"{stem}Args")
        args_rows.append((name, entry.description, schema_to_ts(entry.parameters, 1, refs)))
        if entry.output_schema is None:
            output = "JsonValue"
        else:
            output = schema_to_ts(entry.output_schema, 1, RefResolver(entry.output_schema, definitions, f"{stem}Output"))
        output_rows.append((name, None, output))
    # Every referenced definition is a type alias (naming one may name more).
    aliases = []
    queue = definitions.queue
    index = 0
    while index < len(queue):
        alias, target, refs = queue[index]
        index += 1
        # tsc rejects an alias that is itself through unions alone (`type A = A | B`).
        text = "unknown" if reaches_itself(target, refs, through=TS_UNGUARDED) else schema_to_ts(target, 0, refs)
        aliases.append(f"{export}type {alias} = {text}\n\n")
    return {
        "export": export,
        "aliases": "".join(aliases),
        "args_map": _interface_body(args_rows),
        "output_map": _interface_body(output_rows),
    }


def _interface_body(rows: Sequence[tuple[str, str | None, str]]) -> str:
    """The braces of an interface whose members are ``rows`` of (key, description, type
    text at indent 1), in order: ``{}`` when there are none, else one member per row laid
    out as the members of an object type are (an optional JSDoc line, ``  <key>: <type>;``)."""
    from dsh_codegen.codegen._ts_types import member_head

    if not rows:
        return "{}"
    return "{\n" + "".join(f"{member_head(key, description, 1)}{text};\n" for key, description, text in rows) + "}"


def render_ts_sdk(catalog: Iterable[ToolSchemaEntry], *, notes: tuple[str, ...] = ()) -> str:
    """The TypeScript ``tools:sdk`` prompt text for ``catalog`` (docs/sdk-text.md, "TypeScript").

    Byte-identical for the same set of tools in any order; never raises for
    odd schemas (they render ``unknown``). Ends with the closing fence and a
    newline. ``notes``: what the runtime that will run the program says of
    itself (its ``sdk_notes``), one bullet each after the fixed ones.
    """
    return render_template("typescript/sdk_prompt.md.jinja", notes=notes, **_ts_context(catalog, ""))


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


def _py_context(catalog: Iterable[ToolSchemaEntry], qualify: bool) -> dict[str, object]:
    from dsh_codegen.codegen._py import PyTypes, declarations_text  # only Python renders load the Python type walker

    entries = sorted_catalog(catalog)
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
    return {
        "typing_names": ", ".join(name for name in _TYPING_ORDER if name in used),
        "modules": [
            module if types.aliases[module] == module else f"{module} as {types.aliases[module]}"
            for module in sorted(types.modules_used)
        ],
        "declarations": declarations_text(types.classes, gap),
        "tools_class": _tools_class_text(members, subscripts),
        "members": members,  # not printed (tools_class is): the type-check tests read each tool's types
        "future": types.named_definitions,
        "gap": gap,
    }


def _tools_class_text(members: list[_PyMember], subscripts: list[_PySubscript]) -> str:
    """``class Tools(Protocol):`` and its body, one line per member (a method stub, a
    method with its docstring, or the comment form of a subscript-only tool), then the
    ``__getitem__`` overloads; ``pass`` when the body has no statement.

    One string, as ``declarations_text`` is: the template loop (an attribute lookup and
    an output step per value printed) cost about a twentieth of a Python file's render.
    """
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


def render_py_sdk(catalog: Iterable[ToolSchemaEntry], *, notes: tuple[str, ...] = ()) -> str:
    """The Python ``tools:sdk`` prompt text for ``catalog`` (docs/sdk-text.md, "Python").

    Byte-identical for the same set of tools in any order; never raises for
    odd schemas (they render ``Any`` / ``dict[str, Any]``). ``notes``: what the
    runtime that will run the program says of itself (its ``sdk_notes``), one
    bullet each after the fixed ones.
    """
    return render_template("python/sdk_prompt.md.jinja", notes=notes, **_py_context(catalog, qualify=False))


def render_sdk_module(
    catalog: Iterable[ToolSchemaEntry],
    language: Literal["typescript", "python"],
    *,
    format: bool = True,  # noqa: A002 - the public keyword the design names
) -> str:
    """A generated SDK file to commit, for ``language`` ``"typescript"`` or ``"python"``.

    The file starts with ``Code generated by dsh_codegen <version>. DO NOT
    EDIT.`` and the sha256 of the canonical catalog. TypeScript declarations
    are exported (usable as ``.ts`` or ``.d.ts``). The Python module is
    importable: its ``TypedDict`` classes can annotate tool bodies (``args:
    ReadFileArgs``), annotations a member could shadow are qualified
    (``builtins.list``). It comes out of the templates already in black's
    style (a pinned mode: tests run black and libcst over every generated
    file and require no change), so neither is needed at run time; ``format``
    is kept for compatibility and changes nothing.

    Raises ``ValueError`` for an unknown ``language`` or a catalog that is
    not lossless JSON (the hash needs it; the message names the path).
    """
    entries = sorted_catalog(catalog)
    header = f"Code generated by dsh_codegen {__version__}. DO NOT EDIT."
    hash_line = f"Catalog sha256: {catalog_sha256(entries)}"
    if language == "typescript":
        return render_template(
            "typescript/sdk_module.ts.jinja", header=header, hash_line=hash_line, **_ts_context(entries, "export ")
        )
    if language == "python":
        # The templates write black's style (docs/codegen.md "Files"): no formatter runs.
        return render_template(
            "python/sdk_module.py.jinja", header=header, hash_line=hash_line, **_py_context(entries, qualify=True)
        )
    raise ValueError(f'render_sdk_module: unknown language {language!r} (known: "typescript", "python")')
