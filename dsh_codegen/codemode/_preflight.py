"""The pre-flight check: a program read against the SDK before it runs, by any runtime.

It reads the program's syntax tree (nothing runs) and reports what the SDK
already says is wrong, so the model can correct it before any tool has run:

- a tool the program names that is not visible (``tools.nope``, ``tools["nope"]``),
  with the nearest visible name;
- a binding called with keyword arguments, several arguments or none, where the
  SDK takes one arguments dict;
- for an arguments ``dict`` literal: a required key it lacks (unless it spreads
  ``**other``), a key the tool does not declare (with the declared key it most
  likely meant), and every violation the tool's parameter schema finds in the
  literal values it has (values that are not literals are not judged);
- a key read from a tool's result (``r["k"]``, ``r.get("k")`` where
  ``r = await tools.x(...)``) that a closed output object schema does not declare;
- a key read from a call that was never awaited (``r = tools.x(...)`` then
  ``r["k"]``): the forgotten ``await``.

It is conservative: anything it cannot judge statically it leaves to the run.
Each finding names the line, the call and the fix.

Cost: one parse and one walk of the program; each tool's schema is compiled
once per catalog object (the bridge hands every run of an unchanged registry
the same catalog), not per run.
"""

from __future__ import annotations

import ast
import difflib
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, Final

from dsh_codegen.codegen import ToolSchemaEntry
from dsh_codegen.codemode._texts import tool_expression
from dsh_codegen.json import dump_canonical_json
from dsh_codegen.registry.code_runtime import CodeRunFailure, CodeRunRequest
from dsh_codegen.schema import CompiledValidator, compile_validator

__all__ = ["preflight_check", "preflight_findings", "preflight_message"]

_MAX_LISTED: Final = 12
_UNJUDGED: Final = object()
#: Catalogs whose compiled schemas are kept (a registry's scopes each have one; a change makes a new one).
_CACHED_CATALOGS: Final = 16
_QUOTED_VALUE: Final = 60


class _Catalog:
    """One catalog, read for checking: entries by name, and each tool's relaxed validator once compiled."""

    __slots__ = ("entries", "source", "validators")

    def __init__(self, catalog: tuple[ToolSchemaEntry, ...]) -> None:
        self.source = catalog  # held, so the id the cache is keyed by stays this catalog's
        self.entries = {entry.name: entry for entry in catalog}
        self.validators: dict[str, CompiledValidator | None] = {}

    def validator(self, name: str, schema: dict[str, Any]) -> CompiledValidator | None:
        """The tool's parameter schema without its root presence and key rules (judged here, with
        their fixes), compiled once (``None``: a schema the validator cannot take)."""
        if name not in self.validators:
            relaxed = {
                key: value
                for key, value in schema.items()
                if key not in ("required", "minProperties", "additionalProperties")
            }
            try:
                self.validators[name] = compile_validator(relaxed)
            except Exception:  # a schema the validator cannot take is the pipeline's business, not ours
                self.validators[name] = None
        return self.validators[name]


_catalogs: OrderedDict[int, _Catalog] = OrderedDict()


def _read(catalog: tuple[ToolSchemaEntry, ...]) -> _Catalog:
    key = id(catalog)
    read = _catalogs.get(key)
    if read is not None and read.source is catalog:
        _catalogs.move_to_end(key)
        return read
    read = _catalogs[key] = _Catalog(catalog)
    if len(_catalogs) > _CACHED_CATALOGS:
        _catalogs.popitem(last=False)
    return read


def _binding(node: ast.AST) -> str | None:
    """The tool a ``tools.x`` / ``tools["x"]`` expression names, if it is one."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "tools":
        return node.attr
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "tools"
        and isinstance(node.slice, ast.Constant)
        and type(node.slice.value) is str
    ):
        return node.slice.value
    return None


def _tool_call(node: ast.AST | None) -> tuple[str, ast.Call] | None:
    """``await tools.x(...)`` (or the bare call) -> (``x``, the call)."""
    if isinstance(node, ast.Await):
        node = node.value
    if isinstance(node, ast.Call):
        name = _binding(node.func)
        if name is not None:
            return name, node
    return None


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNJUDGED


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED]) or "(none)"
    return shown + (", ..." if len(names) > _MAX_LISTED else "")


def _nearest(name: str, choices: list[str]) -> str | None:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return close[0]
    # A name that contains a choice or is contained in one (file_path / path, query / q).
    contained = [choice for choice in choices if choice and (choice in name or name in choice)]
    return contained[0] if len(contained) == 1 else None


def _quoted(value: Any) -> str:
    try:
        text = dump_canonical_json(value, sort_keys=False)
    except (ValueError, TypeError):
        text = repr(value)
    return text if len(text) <= _QUOTED_VALUE else text[: _QUOTED_VALUE - 3] + "..."


def _schema_type(schema: Any) -> str:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind if isinstance(kind, str) else "a value"


def _shape_findings(name: str, call: ast.Call, schema: Any) -> Iterator[str]:
    """A call that does not pass exactly one arguments dict positionally."""
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(kw.arg is None for kw in call.keywords):
        return  # *args / **kwargs: not judged statically
    if len(call.args) == 1 and not call.keywords:
        return
    expression = tool_expression(name)
    required = schema.get("required") if isinstance(schema, dict) else None
    keys = [key for key in required if isinstance(key, str)] if isinstance(required, list) else []
    if call.keywords:
        keys = [kw.arg for kw in call.keywords if kw.arg is not None]
    example = "{" + ", ".join(f'"{key}": ...' for key in keys) + "}"
    if call.keywords:
        what = "keyword arguments"
    elif not call.args:
        what = "no arguments"
    else:
        what = f"{len(call.args)} arguments"
    yield f"{expression}(...) was given {what}; a tool takes one arguments dict: write {expression}({example})"


def _argument_findings(name: str, call: ast.Call, schema: Any, catalog: _Catalog) -> Iterator[str]:
    if not call.args or not isinstance(call.args[0], ast.Dict) or not isinstance(schema, dict):
        return
    expression = tool_expression(name)
    literal = call.args[0]
    spread = any(key is None for key in literal.keys)
    present: dict[str, Any] = {}
    for key, value in zip(literal.keys, literal.values):
        if key is None:
            continue
        if not (isinstance(key, ast.Constant) and type(key.value) is str):
            return  # computed keys: nothing to judge
        present[key.value] = _literal(value)
    declared = schema.get("properties")
    properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
    required = schema.get("required")
    missing = (
        [key for key in required if isinstance(key, str) and key not in present]
        if not spread and isinstance(required, list)
        else []
    )
    closed = schema.get("additionalProperties") is False
    renamed: set[str] = set()
    for given in present:
        if given in properties or not properties:
            continue
        meant = _nearest(given, missing) or (_nearest(given, list(properties)) if closed else None)
        if meant is not None and meant not in present:
            renamed.add(meant)
            yield f'{expression}: "{given}" is not an argument of {name}; did you mean "{meant}"?'
        elif closed:
            yield f'{expression}: "{given}" is not an argument of {name} (its arguments: {_listed(list(properties))})'
    for needed in missing:
        if needed not in renamed:
            yield f'{expression}: missing required argument "{needed}" ({_schema_type(properties.get(needed))})'
    judged = {given: value for given, value in present.items() if value is not _UNJUDGED and given in properties}
    validator = catalog.validator(name, schema) if judged else None
    if validator is not None:
        for violation in validator.violations(judged, "arguments"):
            path = violation.path
            got = f"; got {_quoted(judged[path[0]])}" if path and path[0] in judged and len(path) == 1 else ""
            yield f"{expression}: {violation}{got}"


def _closed_keys(schema: Any) -> list[str] | None:
    """The declared keys of a closed object schema, else ``None`` (anything may be read)."""
    if (
        isinstance(schema, dict)
        and schema.get("type") == "object"
        and schema.get("additionalProperties") is False
        and isinstance(schema.get("properties", {}), dict)
    ):
        return list(schema.get("properties", {}))
    return None


def _read_key(node: ast.AST) -> tuple[ast.AST, str] | None:
    """``x["k"]`` or ``x.get("k"...)`` -> (``x``, ``"k"``)."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and isinstance(node.slice, ast.Constant)
        and type(node.slice.value) is str
    ):
        return node.value, node.slice.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and type(node.args[0].value) is str
    ):
        return node.func.value, node.args[0].value
    return None


_KEPT: Final = (ast.Assign, ast.AnnAssign, ast.Call, ast.Attribute, ast.Subscript)
#: Fields that never hold a node (names, flags, the ``ctx`` markers): the walk does not look in them.
_SCALAR_FIELDS: Final = frozenset(
    {
        "ctx",
        "id",
        "attr",
        "arg",
        "name",
        "module",
        "level",
        "kind",
        "type_comment",
        "is_async",
        "conversion",
        "simple",
        "tag",
    }
)
#: Per node class, the fields the walk looks in (filled on first sight; a name or a constant has none).
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {ast.Name: (), ast.Constant: ()}


def _nodes(tree: ast.AST) -> list[ast.AST]:
    """The nodes the check reads (assignments, calls, attribute and item reads), parents before
    their children. A walk of its own, about three times as fast as ``ast.walk`` for a typical
    program: it does not look into the fields that never hold a node, nor into names and constants."""
    kept: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        kind = type(node)
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = tuple(field for field in kind._fields if field not in _SCALAR_FIELDS)
        if isinstance(node, _KEPT):
            kept.append(node)
        for field in fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in reversed(value):
                    if isinstance(item, ast.AST):
                        stack.append(item)
            elif isinstance(value, ast.AST):
                stack.append(value)
    return kept


def preflight_findings(code: str, tool_names: tuple[str, ...], catalog: tuple[ToolSchemaEntry, ...]) -> list[str]:
    """What the SDK says is wrong with ``code``, one line each, in source order (empty: run it).

    ``catalog`` may be empty (then only tool names and call shapes are
    checked). A program that does not parse yields nothing: the run reports
    its syntax error.
    """
    if "tools" not in code:
        return []  # no binding is named: nothing to check
    try:
        tree = ast.parse(code, filename="<program>", mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    nodes = _nodes(tree)
    names = set(tool_names)
    read = _read(catalog)
    entries = read.entries
    found: list[tuple[int, str]] = []
    results: dict[str, str | None] = {}  # variable -> the tool whose result it holds (None: ambiguous)
    # variable -> the tool whose call it holds without ``await`` (None: assigned anything else too)
    unawaited: dict[str, str | None] = {}
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            called = _tool_call(node.value)
            bare = called[0] if called is not None and not isinstance(node.value, ast.Await) else None
            for target in targets:
                if isinstance(target, ast.Name):
                    tool = called[0] if called else None
                    results[target.id] = tool if results.get(target.id, tool) == tool else None
                    unawaited[target.id] = bare if unawaited.get(target.id, bare) == bare else None
    visible = sorted(names)
    for node in nodes:
        line = getattr(node, "lineno", 0)
        name = _binding(node)
        if name is not None and name not in names and not (name.startswith("__") and name.endswith("__")):
            meant = _nearest(name, visible)
            fix = f"; did you mean {tool_expression(meant)}?" if meant is not None else ""
            found.append((line, f"{tool_expression(name)}: no such tool{fix} (tools: {_listed(visible)})"))
            continue
        called = _tool_call(node) if isinstance(node, ast.Call) else None
        if called is not None and called[0] in names:
            tool, call = called
            schema = entries[tool].parameters if tool in entries else None
            shape = list(_shape_findings(tool, call, schema))
            found += [(line, text) for text in shape]
            if not shape and tool in entries:
                found += [(line, text) for text in _argument_findings(tool, call, schema, read)]
            continue
        key_read = _read_key(node)
        if key_read is None:
            continue
        source, key = key_read
        forgot = _forgotten_await(source, key, unawaited)
        if forgot is not None:
            found.append((line, forgot))
            continue
        direct = _tool_call(source)
        tool_read = direct[0] if direct else (results.get(source.id) if isinstance(source, ast.Name) else None)
        if tool_read is None or tool_read not in entries:
            continue
        keys = _closed_keys(entries[tool_read].output_schema)
        if keys is not None and key not in keys:
            meant = _nearest(key, keys)
            fix = f'; did you mean "{meant}"?' if meant is not None else ""
            found.append(
                (line, f'{tool_expression(tool_read)}(...) returns no key "{key}"{fix} (its keys: {_listed(keys)})')
            )
    found.sort(key=lambda item: item[0])
    return [f"line {line}: {text}" for line, text in found]


def _forgotten_await(source: ast.AST, key: str, unawaited: dict[str, str | None]) -> str | None:
    """A key read from a binding call that was never awaited (it reads a coroutine, not the result)."""
    if isinstance(source, ast.Call):
        name = _binding(source.func)
        if name is not None:
            call = f"{tool_expression(name)}(...)"
            return f'{call}["{key}"] reads a coroutine, not the result: write (await {call})["{key}"]'
    if isinstance(source, ast.Name) and unawaited.get(source.id):
        call = f"{tool_expression(str(unawaited[source.id]))}(...)"
        return (
            f'{source.id} = {call} is not awaited, so {source.id}["{key}"] reads a coroutine, not the result:'
            f" write {source.id} = await {call}"
        )
    return None


def preflight_message(findings: list[str]) -> str:
    """The ``exception`` failure text for the model."""
    lines = "\n".join(f"- {finding}" for finding in findings)
    return f"pre-flight check against the SDK failed, nothing ran; fix these and call run_code again:\n{lines}"


def preflight_check(request: CodeRunRequest) -> CodeRunFailure | None:
    """Read ``request.code`` against ``request.catalog``: the ``exception`` failure to return
    instead of running it, or ``None`` when nothing was found (run it).

    For any runtime: call it first in ``run`` and return its failure as is.
    """
    findings = preflight_findings(request.code, request.tool_names, request.catalog)
    return CodeRunFailure("exception", preflight_message(findings)) if findings else None
