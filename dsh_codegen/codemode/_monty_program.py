"""The program as ``MontyRuntime`` feeds it to Monty: the model's lines, wrapped line for line.

Monty has no top-level ``return``, no class inheritance and no ``__getattr__``,
so a program cannot run there as it is written. This module turns it into one
Monty source text that behaves as the program does on CPython:

- The program becomes the body of ``async def __dsh_program__():`` (so ``await``
  and ``return`` work at its top level), by indenting each of its lines by one
  space, never a line that starts inside a string literal. Its line ``n`` is line
  ``n + 1`` of the source, so Monty's tracebacks name the model's own lines.
- ``tools`` is an instance of a plain class with one method per tool whose name
  is a plain identifier, and ``tools["any name"]``. A call dispatches at once
  (the external function ``__dsh_call__`` runs when the program makes the
  call) and returns an awaitable; an unawaited call still runs.
- ``ToolCallError`` is a built-in exception class nothing else raises
  (``binascii.Incomplete``: CPython's ``binascii`` never raises it and neither
  does Monty's), because Monty cannot define one. A failed call records the
  error's tool in a table keyed by the error's identity, and the program's reads
  of ``.toolName`` / ``.message`` / ``.__name__`` (and ``getattr`` / ``hasattr``)
  are rewritten to helpers that consult it; for any other object they read the
  attribute as written.
- pydantic-monty hands out what it cannot convert as a stand-in string (a
  cycle as ``'[...]'``, a function as ``"<function 'f' at 0x..>"``). When the
  host sees one in a call's arguments, ``__dsh_call__`` asks the program to
  check them (``__dsh_offence__``, run in the sandbox where the real values
  are) and call again with the verdict; in the returned value, the host feeds
  the same check after the run. So a stand-in is never taken for the value.
- ``print`` writes one framed record per call (``<length>:<text>``), so the
  host keeps one log entry per ``print`` call as the subprocess runtime does.
- ``sys.exit(code)`` raises ``SystemExit`` (empty for a successful exit, else
  the code as text), which Monty's own ``sys`` lacks.
- ``asyncio.create_task(x)`` and ``asyncio.ensure_future(x)`` return ``x``
  itself (Monty's ``asyncio`` has neither; a tool call starts when it is made,
  so awaiting or gathering what they return is what the program meant).

The rewrites are text edits at positions taken from CPython's own syntax tree,
which keep every line where it was.
"""

from __future__ import annotations

import ast
import keyword
from dataclasses import dataclass
from typing import Final

__all__ = ["CALL", "CHECK", "DIAGNOSE", "LOG_SEPARATOR", "TOOL_CALL_ERROR", "MontySource", "monty_source"]

#: The external function a binding call reaches: ``__dsh_call__(tool_name, args)``.
CALL: Final = "__dsh_call__"
#: Monty's name of the exception class the program sees as ``ToolCallError``.
TOOL_CALL_ERROR: Final = "binascii.Incomplete"
#: Between a log record's length and its text.
LOG_SEPARATOR: Final = ":"

#: Attribute reads the program's text routes through a helper (see the module docstring).
_READS: Final = {
    "toolName": "__dsh_tool_name__",
    "message": "__dsh_message__",
    "__name__": "__dsh_type_name__",
    "exit": "__dsh_exit_of__",
    "create_task": "__dsh_create_task_of__",
    "ensure_future": "__dsh_ensure_future_of__",
}

_HEAD: Final = "async def __dsh_program__():\n"

# Monty code. Every name is a dunder (``__dsh_*__``): a name with two leading underscores
# and no trailing ones would be mangled inside the class body.
_PRELUDE: Final = """
import binascii as __dsh_binascii__
ToolCallError = __dsh_binascii__.Incomplete
__dsh_error_class__ = repr(ToolCallError)
__dsh_failed__ = {}
__dsh_check__ = "__dsh_check__"
__dsh_leave__ = []
__dsh_key__ = []
__dsh_getattr__ = getattr
__dsh_hasattr__ = hasattr
__dsh_print__ = print


async def __dsh_settle__(name, pending):
    try:
        return await pending
    except ToolCallError as error:
        __dsh_failed__[id(error)] = (error, name)
        raise


def __dsh_invoke__(name, positional, keywords):
    if len(positional) > 1 or keywords:
        raise TypeError(__dsh_shape__(name, len(positional), keywords))
    args = positional[0] if positional else ...
    pending = __dsh_call__(name, args)
    if pending == __dsh_check__:  # the host saw a stand-in for a value Monty could not hand out
        pending = __dsh_call__(name, args, __dsh_offence__(args))
    return __dsh_settle__(name, pending)


def __dsh_offence__(value):
    # Where value first stops being lossless JSON (document order), as [path, reason]; None if it is.
    # Run only when the host saw one of Monty's stand-ins (a cycle, a function, a class instance).
    work = [(value, None)]
    open_ids = {}
    while work:
        item, link = work.pop()
        if item is __dsh_leave__:
            open_ids.pop(link)
            continue
        if item is __dsh_key__:
            key, link = link
            if type(key).__name__ != "str":
                return __dsh_found__(link, "object key of type " + type(key).__name__ + " (keys must be exactly str)")
            continue
        kind = type(item).__name__
        if item is None or item is True or item is False or kind == "str" or kind == "int":
            continue
        if kind == "float":
            if item != item:
                return __dsh_found__(link, "NaN is not a JSON number")
            if item == 0.0 and str(item) == "-0.0":
                return __dsh_found__(link, "-0.0 does not survive a JSON round trip")
            if item == float("inf") or item == float("-inf"):
                return __dsh_found__(link, str(item) + " is not a JSON number")
            continue
        if kind != "list" and kind != "tuple" and kind != "dict":
            return __dsh_found__(link, "type " + kind + " is not a JSON type")
        if id(item) in open_ids:
            return __dsh_found__(link, "the container contains itself (a cycle)")
        open_ids[id(item)] = True
        work.append((__dsh_leave__, id(item)))
        if kind == "dict":
            for key in reversed(list(item)):
                work.append((item[key], (link, key)))
                work.append((__dsh_key__, (key, link)))
        else:
            for index in range(len(item) - 1, -1, -1):
                work.append((item[index], (link, index)))
    return None


def __dsh_found__(link, reason):
    path = []
    while link is not None:
        link, segment = link
        path.append(segment)
    path.reverse()
    return [path, reason]


def __dsh_shape__(name, count, keywords):
    if keywords:
        keys = ", ".join([repr(key) + ": ..." for key in keywords])
        return "a tool takes one arguments dict, not keyword arguments: call tools[" + repr(name) + "]({" + keys + "})"
    return "a tool takes one arguments dict, not " + str(count) + " positional arguments"


def __dsh_bind__(name):
    def call(*positional, **keywords):
        return __dsh_invoke__(name, positional, keywords)
    return call


def __dsh_record__(value):
    found = __dsh_failed__.get(id(value))
    if found is not None and found[0] is value:
        return found
    return None


def __dsh_tool_name__(value):
    found = __dsh_record__(value)
    if found is not None:
        return found[1]
    return value.toolName


def __dsh_message__(value):
    if __dsh_record__(value) is not None:
        return str(value)
    return value.message


def __dsh_type_name__(value):
    if repr(value) == __dsh_error_class__:  # a class is not the same object each time it is reached
        return "ToolCallError"
    return value.__name__


def __dsh_exit__(code=None):
    if not code:
        raise SystemExit()
    raise SystemExit(str(code))


def __dsh_exit_of__(value):
    if repr(value) == "<module 'sys'>":
        return __dsh_exit__
    return value.exit


def __dsh_same__(awaitable):
    return awaitable


def __dsh_create_task_of__(value):
    if repr(value) == "<module 'asyncio'>":
        return __dsh_same__
    return value.create_task


def __dsh_ensure_future_of__(value):
    if repr(value) == "<module 'asyncio'>":
        return __dsh_same__
    return value.ensure_future


def __dsh_tool_attr__(value, name):
    if value is tools:
        if name in __dsh_names__:
            return __dsh_bind__(name)
        raise AttributeError("no tool named " + repr(name))
    return __dsh_getattr__(value, name)


def getattr(value, name, *default):
    found = __dsh_record__(value)
    if found is not None and name == "toolName":
        return found[1]
    if found is not None and name == "message":
        return str(value)
    return __dsh_getattr__(value, name, *default)


def hasattr(value, name):
    if __dsh_record__(value) is not None and (name == "toolName" or name == "message"):
        return True
    return __dsh_hasattr__(value, name)


def print(*values, sep=" ", end="\\n", file=None, flush=False):
    if file is not None and repr(file) != "<stdout>" and repr(file) != "<stderr>":
        __dsh_print__(*values, sep=sep, end=end, file=file, flush=flush)
        return
    if sep is None:
        sep = " "
    text = sep.join([str(value) for value in values])
    __dsh_print__(str(len(text)) + ":" + text)

"""

_TAIL: Final = "\n__dsh_result__ = await __dsh_program__()\n__dsh_result__\n"
#: Fed after a run whose value showed one of Monty's stand-ins: where the value stops being JSON.
DIAGNOSE: Final = "__dsh_offence__(__dsh_result__)"
#: ``__dsh_call__``'s answer that asks the program to check its arguments first (see ``_PRELUDE``).
CHECK: Final = "__dsh_check__"


@dataclass(frozen=True, slots=True)
class MontySource:
    """The text Monty runs, and where the program's own lines are in it."""

    text: str
    #: Program line ``n`` is source line ``n + offset``.
    offset: int
    #: How many lines the program has.
    lines: int

    def program_line(self, source_line: int) -> int | None:
        """The program's line for ``source_line``, or ``None`` for a line of the prelude."""
        line = source_line - self.offset
        return line if 1 <= line <= self.lines else None


def monty_source(code: str, tool_names: tuple[str, ...]) -> MontySource:
    """The Monty source text for ``code`` with bindings for ``tool_names``.

    Raised errors: ``SyntaxError`` (and its subclasses) from CPython's parser,
    whose text the subprocess runtime reports for the same program;
    ``ValueError`` for a program with a NUL character; ``RecursionError`` for a
    program nested too deeply to parse.
    """
    code = code.replace("\r\n", "\n").replace("\r", "\n")  # the newlines CPython's tokenizer reads
    tree = ast.parse(code, filename="<program>", mode="exec")
    lines = code.split("\n")
    if lines[-1] == "":
        lines.pop()
    methods = {name for name in tool_names if _is_method(name)}
    other_reads: dict[str, str] = {}  # ``tools.<name>`` that is no method: its helper
    edited = _rewrite_reads(code, lines, tree, methods, other_reads).split("\n")[: len(lines)]
    inside = _string_lines(tree)
    body = "".join(
        line + "\n" if number in inside else " " + line + "\n" for number, line in enumerate(edited, start=1)
    )
    if not tree.body:
        body += " pass\n"
    helpers = "".join(
        f"\n\ndef {helper}(value):\n    return __dsh_tool_attr__(value, {name!r})\n"
        for name, helper in other_reads.items()
    )
    return MontySource(_HEAD + body + _PRELUDE + _tools_class(tool_names) + helpers + _TAIL, 1, len(lines))


def _is_method(name: str) -> bool:
    """Whether ``tools`` has a method for the tool ``name`` on Monty (else only ``tools[name]``)."""
    return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")


def _string_lines(tree: ast.Module) -> set[int]:
    """Lines that start inside a string literal (or an f-string): they keep their text as is.

    Indentation means nothing on such a line, also where it starts inside an
    f-string's replacement field, so no line of a multi-line literal is touched.
    """
    inside: set[int] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))):
            end = node.end_lineno or node.lineno
            inside.update(range(node.lineno + 1, end + 1))
            continue  # 3.11 gives the parts of an f-string unreliable positions: the whole span is enough
        stack.extend(ast.iter_child_nodes(node))
    return inside


def _rewrite_reads(
    code: str, lines: list[str], tree: ast.Module, methods: set[str], other_reads: dict[str, str]
) -> str:
    """``x.toolName`` -> ``__dsh_tool_name__(x)`` and the other reads of ``_READS``, line for line.

    ``tools.<name>`` where ``tools`` has no method ``<name>`` (and ``<name>`` is no dunder) reads
    through a helper of its own (added to ``other_reads``), which answers as the subprocess
    runtime's ``tools`` does: the binding of a visible tool, else ``no tool named '<name>'``.

    A read whose text is not laid out as expected (a ``.`` and the name on one
    line) is left as written.
    """
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def offset(line: int, column: int) -> int:
        text = lines[line - 1]
        return starts[line - 1] + len(text.encode("utf-8")[:column].decode("utf-8", "replace"))

    opens: list[tuple[int, int, str]] = []  # (offset, -end, text): the outer of two reads opens first
    closes: list[tuple[int, int]] = []  # (the dot's offset, the name's end)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        helper = _READS.get(node.attr)
        if (
            helper is None
            and isinstance(node.value, ast.Name)
            and node.value.id == "tools"
            and node.attr not in methods
            and not (node.attr.startswith("__") and node.attr.endswith("__"))
        ):
            helper = other_reads.setdefault(node.attr, f"__dsh_tool_attr_{len(other_reads)}__")
        if helper is None or node.end_lineno is None or node.end_col_offset is None:
            continue
        end = offset(node.end_lineno, node.end_col_offset)
        name_start = end - len(node.attr)
        dot = name_start - 1
        while dot > 0 and code[dot] in " \t":
            dot -= 1
        if code[name_start:end] != node.attr or code[dot] != ".":
            continue
        opens.append((offset(node.lineno, node.col_offset), -end, helper + "("))
        closes.append((dot, end))
    if not opens:
        return code
    edits = sorted(
        [(start, 0, order, text, start) for start, order, text in opens]
        + [(dot, 1, 0, ")", end) for dot, end in closes]
    )
    out = []
    position = 0
    for start, _kind, _order, text, resume in edits:
        out.append(code[position:start])
        out.append(text)
        position = resume
    out.append(code[position:])
    return "".join(out)


def _tools_class(names: tuple[str, ...]) -> str:
    methods = "".join(
        f"    def {name}(self, *positional, **keywords):\n"
        f"        return __dsh_invoke__({name!r}, positional, keywords)\n"
        for name in names
        if _is_method(name)
    )
    listed = "{" + ", ".join(repr(name) for name in names) + "}" if names else "set()"
    return (
        f"__dsh_names__ = {listed}\n"
        "\n\nclass Tools:\n"
        f"{methods}"
        "    def __getitem__(self, name):\n"
        "        if name in __dsh_names__:\n"
        "            return __dsh_bind__(name)\n"
        "        raise KeyError(name)\n"
        "\n"
        "    def __contains__(self, name):\n"
        "        return name in __dsh_names__\n"
        "\n\ntools = Tools()\n"
    )
