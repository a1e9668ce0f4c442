"""The pure-Python validator twin: runs a compiled :class:`Program` over a value.

Mirrors ``_ext/_schema_c.pyx`` name for name. Both walks use explicit work
stacks (no recursion), touch only exact JSON types (``type()`` checks before
any other operation, so no user code ever runs: hostile ``__eq__``,
``__hash__`` or getters are never called), and agree on every verdict and
message with the compiled twin.
"""

from __future__ import annotations

from math import copysign, isfinite
from typing import Any, Final

from dsh_codegen.schema._dialect_walk import DialectWalker
from dsh_codegen.schema._program import (
    ARRAY,
    BOOLEAN,
    INTEGER,
    NUMBER,
    OBJECT,
    ONE_OF,
    STRING,
    V_ADDITIONAL,
    V_CONST,
    V_ENUM,
    V_LOSSLESS_OBJECT,
    V_LOSSLESS_VALUE,
    V_ONE_OF,
    V_REQUIRED,
    Node,
    Program,
    Violation,
    WalkBudget,
    any_code,
    budget_violation,
    within_walk_budget,
    frozen_types,
    int_is_lossless,
    is_lossless_json,
    make_violation,
    mismatch_code,
)

__all__ = ["CompiledValidator"]

_SMALL_INT_BITS: Final = 2000


def _scalar_type_ok(kind: int, value: Any) -> bool:
    t = type(value)
    if kind == STRING:
        return t is str
    if kind == INTEGER:
        if t is int:
            return value.bit_length() <= _SMALL_INT_BITS or int_is_lossless(value)
        if t is float:
            return isfinite(value) and value.is_integer() and (value != 0.0 or copysign(1.0, value) > 0.0)
        return False
    if kind == NUMBER:
        if t is int:
            return value.bit_length() <= _SMALL_INT_BITS or int_is_lossless(value)
        if t is float:
            return isfinite(value) and (value != 0.0 or copysign(1.0, value) > 0.0)
        return False
    if kind == BOOLEAN:
        return t is bool
    return value is None  # NULL


def _scalar_code(node: Node, value: Any) -> int:
    """0 when ``value`` satisfies the scalar ``node``, else the first failing rule's code."""
    if not _scalar_type_ok(node.kind, value):
        return mismatch_code(node.kind, value)
    if node.enum is not None and value not in node.enum:
        return V_ENUM
    if node.has_const and value != node.const:
        return V_CONST
    return 0


def _scalar_ok(node: Node, value: Any) -> bool:
    return (
        _scalar_type_ok(node.kind, value)
        and (node.enum is None or value in node.enum)
        and (not node.has_const or value == node.const)
    )


def _leaf_lossless(value: Any) -> bool | None:
    """True/False for a JSON scalar (or non-JSON leaf); ``None`` for a container to walk."""
    t = type(value)
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return value.bit_length() <= _SMALL_INT_BITS or int_is_lossless(value)
    if t is float:
        return isfinite(value) and (value != 0.0 or copysign(1.0, value) > 0.0)
    return None


class _Mark:
    """A oneOf in progress on the is_valid stack: the frames above it belong to ``branch``."""

    __slots__ = ("node", "value", "branch", "matches")

    def __init__(self, node: Node, value: Any) -> None:
        self.node = node
        self.value = value
        self.branch = 0
        self.matches = 0


class CompiledValidator:
    """Validates values against one compiled schema (pure-Python twin).

    Build it with :func:`dsh_codegen.schema.compile_validator`. Instances are
    immutable and safe to share between threads.
    """

    __slots__ = ("_nodes", "_fobj", "_farr", "_dialect")

    def __init__(self, program: Program) -> None:
        if not isinstance(program, Program):
            raise TypeError("CompiledValidator needs a compiled Program (use compile_validator)")
        if hasattr(self, "_nodes"):
            raise TypeError("CompiledValidator is immutable: it is initialized once")
        self._nodes: list[Node] = program.nodes
        self._fobj, self._farr = frozen_types()
        # a program of the wider dialect runs on the shared dialect walk (both twins)
        self._dialect: DialectWalker | None = DialectWalker(program) if program.dialect else None

    # --- verdict ---------------------------------------------------------------------------

    def is_valid(self, value: object) -> bool:
        """Whether ``value`` is lossless JSON matching the schema. Never raises; builds no violation.

        A value that would take more than the walk budget to check
        (:class:`~dsh_codegen.schema._program.WalkBudget`) is not valid.
        """
        if self._dialect is not None:
            return self._dialect.is_valid(value)
        return self._valid_from(0, value)

    def _valid_from(self, root: int, value: object, budget: WalkBudget | None = None) -> bool:
        if budget is None:
            budget = WalkBudget()
        budget.spend(1)  # the root
        nodes = self._nodes
        stack: list[Any] = [(nodes[root], value)]
        pop = stack.pop
        push = stack.append
        while stack:
            frame = pop()
            if type(frame) is _Mark:
                # every frame of the current branch finished: the branch matched
                frame.matches += 1
                ok = frame.matches < 2 and self._next_branch(frame, stack)
                if ok:
                    continue
                if frame.matches == 1:
                    continue  # last branch done, exactly one match
            else:
                node, v = frame
                kind = node.kind
                if node.inline:
                    ok = _scalar_ok(node, v)
                elif kind == OBJECT:
                    ok = self._object_ok(node, v, push, budget)
                elif kind == ARRAY:
                    ok = self._array_ok(node, v, push, budget)
                elif kind == ONE_OF:
                    mark = _Mark(node, v)
                    push(mark)
                    push((nodes[node.branches[0]], v))
                    continue
                else:  # JSON_ANY
                    leaf = _leaf_lossless(v)
                    ok = is_lossless_json(v, budget) if leaf is None else leaf
                if ok:
                    continue
            # failure: discard frames up to the innermost oneOf in progress (a spent budget ends the walk)
            if budget.exceeded or not self._unwind(stack):
                return False
        return True

    def _next_branch(self, mark: _Mark, stack: list[Any]) -> bool:
        """Start the next branch of ``mark``; False when every branch has run."""
        mark.branch += 1
        branches = mark.node.branches
        if mark.branch < len(branches):
            stack.append(mark)
            stack.append((self._nodes[branches[mark.branch]], mark.value))
            return True
        return False

    def _unwind(self, stack: list[Any]) -> bool:
        """After a failure: resume at the innermost oneOf that can still succeed, else False."""
        while stack:
            frame = stack.pop()
            if type(frame) is not _Mark:
                continue
            if self._next_branch(frame, stack):
                return True
            if frame.matches == 1:
                return True  # the failed branch was the last; one earlier branch matched
        return False

    def _object_ok(self, node: Node, v: Any, push: Any, budget: WalkBudget) -> bool:
        t = type(v)
        if t is not dict and (self._fobj is None or t is not self._fobj):
            return False
        if not budget.spend(len(v)):
            return False
        nodes = self._nodes
        props = node.props
        closed = node.closed
        seen_required = 0
        for key, item in v.items():
            if type(key) is not str:
                return False
            code = props.get(key) if props else None
            if code is None:
                if closed:
                    return False
                leaf = _leaf_lossless(item)
                if leaf is None:
                    push((_ANY, item))
                elif not leaf:
                    return False
                continue
            seen_required += code & 1
            child = nodes[code >> 1]
            if child.inline:
                if not _scalar_ok(child, item):
                    return False
            else:
                push((child, item))
        return seen_required == len(node.required)

    def _array_ok(self, node: Node, v: Any, push: Any, budget: WalkBudget) -> bool:
        t = type(v)
        if t is not list and t is not tuple and (self._farr is None or t is not self._farr):
            return False
        if not budget.spend(len(v)):
            return False
        if node.items < 0:
            for item in v:
                leaf = _leaf_lossless(item)
                if leaf is None:
                    push((_ANY, item))
                elif not leaf:
                    return False
            return True
        child = self._nodes[node.items]
        if child.inline:
            for item in v:
                if not _scalar_ok(child, item):
                    return False
            return True
        for item in v:
            push((child, item))
        return True

    # --- violations ------------------------------------------------------------------------

    def violations(self, value: object, path: str = "value") -> list[Violation]:
        """Every violation of ``value``, in the order of guarantee 97 (docs/guarantees.md), paths rooted at ``path``.

        Order: for an object, its own missing required properties first, then
        its declared properties in declaration order (each subtree complete),
        then undeclared keys in the value's order; array items in index order.
        Never raises for any ``value``.
        """
        if type(path) is not str:
            raise TypeError(f"path must be a str, not {type(path).__name__}")
        if not within_walk_budget(value):
            return [budget_violation(path, path)]
        if self._dialect is not None:
            return self._dialect.violations(value, path, path)
        if self._valid_from(0, value):
            return []
        return self._collect(value, path, path)

    def validate_args(self, args: object) -> list[Violation]:
        """Violations of tool arguments: ``"arguments"`` names the root, children are unrooted."""
        if not within_walk_budget(args):
            return [budget_violation("", "arguments")]
        if self._dialect is not None:
            return self._dialect.violations(args, "", "arguments")
        if self._valid_from(0, args):
            return []
        return self._collect(args, "", "arguments")

    def _collect(self, value: object, root: str, alias: str) -> list[Violation]:
        nodes = self._nodes
        out: list[Violation] = []
        # frames: (tag, node, value, path); path is a chain (parent, segment) or None
        stack: list[tuple[int, Node, Any, Any]] = [(_VISIT, nodes[0], value, None)]
        on_path: set[int] = set()

        def report(code: int, node: Node, at: Any, extra: Any = None) -> None:
            out.append(make_violation(code, node, _segments(at), root, alias, extra))

        while stack:
            tag, node, v, at = stack.pop()
            if tag == _EXIT:
                on_path.discard(id(v))
                continue
            if tag == _EXTRAS:
                self._report_extras(node, v, at, stack, report)
                continue
            kind = node.kind
            if node.inline:
                code = _scalar_code(node, v)
                if code:
                    report(code, node, at)
            elif kind == OBJECT:
                self._collect_object(node, v, at, stack, report)
            elif kind == ARRAY:
                self._collect_array(node, v, at, stack, report)
            elif kind == ONE_OF:
                matched = sum(1 for branch in node.branches if self._valid_from(branch, v))
                if matched != 1:
                    report(V_ONE_OF, node, at, matched)
            else:
                self._collect_any(v, at, stack, on_path, report)
        return out

    def _collect_object(self, node: Node, v: Any, at: Any, stack: list[Any], report: Any) -> None:
        t = type(v)
        if t is not dict and (self._fobj is None or t is not self._fobj):
            report(mismatch_code(OBJECT, v), node, at)
            return
        if any(type(key) is not str for key in v):
            report(V_LOSSLESS_OBJECT, node, at)
            return
        for name in node.required:
            if name not in v:
                report(V_REQUIRED, node, at, name)
        stack.append((_EXTRAS, node, v, at))
        props = node.props or {}
        children = [(_VISIT, self._nodes[code >> 1], v[name], (at, name)) for name, code in props.items() if name in v]
        stack.extend(reversed(children))

    def _report_extras(self, node: Node, v: Any, at: Any, stack: list[Any], report: Any) -> None:
        props = node.props or {}
        extras = [key for key in v if key not in props]
        if node.closed:
            for key in extras:
                report(V_ADDITIONAL, node, (at, key))
            return
        stack.extend((_VISIT, _ANY, v[key], (at, key)) for key in reversed(extras))

    def _collect_array(self, node: Node, v: Any, at: Any, stack: list[Any], report: Any) -> None:
        t = type(v)
        if t is not list and t is not tuple and (self._farr is None or t is not self._farr):
            report(mismatch_code(ARRAY, v), node, at)
            return
        child = self._nodes[node.items] if node.items >= 0 else _ANY
        stack.extend((_VISIT, child, v[index], (at, index)) for index in range(len(v) - 1, -1, -1))

    def _collect_any(self, v: Any, at: Any, stack: list[Any], on_path: set[int], report: Any) -> None:
        leaf = _leaf_lossless(v)
        if leaf is not None:
            if not leaf:
                report(any_code(v), _ANY, at)
            return
        t = type(v)
        if t is dict or (self._fobj is not None and t is self._fobj):
            if any(type(key) is not str for key in v):
                report(V_LOSSLESS_OBJECT, _ANY, at)
                return
            members = [(key, v[key]) for key in v]
        elif t is list or t is tuple or (self._farr is not None and t is self._farr):
            members = list(enumerate(v))
        else:
            report(any_code(v), _ANY, at)
            return
        if id(v) in on_path:
            report(V_LOSSLESS_VALUE, _ANY, at)  # a container inside itself
            return
        on_path.add(id(v))
        stack.append((_EXIT, _ANY, v, at))
        stack.extend((_VISIT, _ANY, item, (at, key)) for key, item in reversed(members))


_VISIT: Final = 0
_EXTRAS: Final = 1
_EXIT: Final = 2
#: The node every unconstrained value (open-object extras, item-less arrays) is checked against.
_ANY: Final = Node()


def _segments(at: Any) -> tuple[str | int, ...]:
    out: list[str | int] = []
    while at is not None:
        at, segment = at
        out.append(segment)
    out.reverse()
    return tuple(out)
