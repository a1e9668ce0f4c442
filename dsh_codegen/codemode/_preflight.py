"""The opt-in pre-flight check: a program read against the SDK before it runs.

It reads the program's syntax tree (nothing runs) and reports what the SDK
already says is wrong, so the model can correct it before any tool has run:

- a tool the program names that is not visible (``tools.nope``, ``tools["nope"]``);
- for an arguments ``dict`` literal: a required key it lacks (unless it spreads
  ``**other``), and every violation the tool's parameter schema finds in the
  keys and literal values it has (non-literal values are not judged);
- a key read from a tool's result (``r["k"]``, ``r.get("k")`` where
  ``r = await tools.x(...)``) that a closed output object schema does not declare.

It is conservative: anything it cannot judge statically it leaves to the run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any, Final

from dsh_codegen.codegen import ToolSchemaEntry
from dsh_codegen.schema import CompiledValidator, compile_validator

__all__ = ["preflight_findings", "preflight_message"]

_MAX_LISTED: Final = 12
_UNJUDGED: Final = object()


def _binding(node: ast.AST) -> str | None:
    """The tool a ``tools.x`` / ``tools["x"]`` expression names, if it is one."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "tools":
        return node.attr
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "tools"
            and isinstance(node.slice, ast.Constant) and type(node.slice.value) is str):
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


_Validators = dict[str, "CompiledValidator | None"]


def _relaxed_validator(name: str, schema: dict[str, Any], validators: _Validators) -> CompiledValidator | None:
    """The tool's parameter schema without its presence rules, compiled once per check (``None``: unsupported)."""
    if name not in validators:
        relaxed = {key: value for key, value in schema.items() if key not in ("required", "minProperties")}
        try:
            validators[name] = compile_validator(relaxed)
        except Exception:  # a schema the validator cannot take is the pipeline's business, not ours
            validators[name] = None
    return validators[name]


def _argument_findings(name: str, call: ast.Call, schema: Any, validators: _Validators) -> Iterator[str]:
    if not call.args or not isinstance(call.args[0], ast.Dict) or not isinstance(schema, dict):
        return
    literal = call.args[0]
    spread = any(key is None for key in literal.keys)
    present: dict[str, Any] = {}
    for key, value in zip(literal.keys, literal.values):
        if key is None:
            continue
        if not (isinstance(key, ast.Constant) and type(key.value) is str):
            return  # computed keys: nothing to judge
        judged = _literal(value)
        if judged is not _UNJUDGED:
            present[key.value] = judged
        else:
            present.setdefault(key.value, _UNJUDGED)
    required = schema.get("required")
    if not spread and isinstance(required, list):
        for key in required:
            if isinstance(key, str) and key not in present:
                yield f"tools.{name}: missing required argument {key!r}"
    judged_args = {key: value for key, value in present.items() if value is not _UNJUDGED}
    declared = schema.get("properties")
    properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
    if schema.get("additionalProperties") is False:
        for unjudged in present:
            if unjudged not in properties and unjudged not in judged_args:
                yield f'tools.{name}: "arguments.{unjudged}" is not a declared property (additionalProperties: false)'
    validator = _relaxed_validator(name, schema, validators)
    if validator is not None:
        for violation in validator.violations(judged_args, "arguments"):
            yield f"tools.{name}: {violation}"


def _closed_keys(schema: Any) -> list[str] | None:
    """The declared keys of a closed object schema, else ``None`` (anything may be read)."""
    if (isinstance(schema, dict) and schema.get("type") == "object" and schema.get("additionalProperties") is False
            and isinstance(schema.get("properties", {}), dict)):
        return list(schema.get("properties", {}))
    return None


def _read_key(node: ast.AST) -> tuple[ast.AST, str] | None:
    """``x["k"]`` or ``x.get("k"...)`` -> (``x``, ``"k"``)."""
    if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is str):
        return node.value, node.slice.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args and isinstance(node.args[0], ast.Constant) and type(node.args[0].value) is str):
        return node.func.value, node.args[0].value
    return None


def preflight_findings(code: str, tool_names: tuple[str, ...], catalog: tuple[ToolSchemaEntry, ...]) -> list[str]:
    """What the SDK says is wrong with ``code``, one line each, in source order (empty: run it).

    A program that does not parse yields nothing: the run reports its syntax error.
    """
    try:
        tree = ast.parse(code, filename="<program>", mode="exec")
        nodes = list(ast.walk(tree))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = set(tool_names)
    entries = {entry.name: entry for entry in catalog}
    found: list[tuple[int, str]] = []
    validators: _Validators = {}
    results: dict[str, str | None] = {}  # variable -> the tool whose result it holds (None: ambiguous)
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            called = _tool_call(node.value)
            for target in targets:
                if isinstance(target, ast.Name):
                    tool = called[0] if called else None
                    results[target.id] = tool if results.get(target.id, tool) == tool else None
    for node in nodes:
        line = getattr(node, "lineno", 0)
        name = _binding(node)
        if name is not None and name not in names and not (name.startswith("__") and name.endswith("__")):
            found.append((line, f'unknown tool "{name}" (visible: {_listed(sorted(names))})'))
            continue
        called = _tool_call(node) if isinstance(node, ast.Call) else None
        if called is not None and called[0] in entries:
            found += [(line, text) for text in _argument_findings(called[0], called[1], entries[called[0]].parameters,
                                                                    validators)]
            continue
        read = _read_key(node)
        if read is None:
            continue
        source, key = read
        direct = _tool_call(source)
        tool = direct[0] if direct else (results.get(source.id) if isinstance(source, ast.Name) else None)
        if tool is None or tool not in entries:
            continue
        keys = _closed_keys(entries[tool].output_schema)
        if keys is not None and key not in keys:
            found.append((line, f"tools.{tool}'s result has no key {key!r} (declared: {_listed(keys)})"))
    found.sort(key=lambda item: item[0])
    return [f"line {line}: {text}" for line, text in found]


def preflight_message(findings: list[str]) -> str:
    """The ``exception`` failure text for the model."""
    lines = "\n".join(f"- {finding}" for finding in findings)
    return f"pre-flight check against the SDK failed, nothing ran; fix these and call run_code again:\n{lines}"
