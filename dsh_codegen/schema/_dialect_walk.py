"""The dialect walk: validates values against a program that uses the wider tool-schema dialect.

Both twins run it for such programs (``Program.dialect``), so the two cannot
disagree on a verdict or a message: the pure twin as it stands, the compiled
twin (``_ext/_schema_c.pyx``) with its own C verdict walk and report scan
in front, which hand it what they cannot tell (a cyclic value, say) and ask
its value tests (:func:`number_ok`, :func:`string_ok`, :func:`unique_items`,
:func:`value_key`) for the rare values they do not decide in C. Programs of the
seed's subset keep the twins' own fast walks.

Both walks use explicit work stacks, no recursion: a 100,000-deep value under
a recursive schema is walked in memory proportional to its size. ``anyOf``,
``oneOf`` and ``contains`` are marks on the verdict stack (a failure unwinds
to the innermost mark, which tries its next branch or item); a node starts at
most one mark at a time (its other combinators wait as ``START`` frames), so a
failure always unwinds to a mark that encloses it. When the program is
recursive the containers on the current path are counted, so a cyclic value
fails instead of looping. Only exact types are looked at before anything
else, so no user code runs.
"""

from __future__ import annotations

from fractions import Fraction
from math import copysign
from math import isfinite as _isfinite
from typing import Any, Final

from dsh_codegen.schema._program import (
    ARRAY,
    BOOLEAN,
    DIALECT,
    INTEGER,
    NULL,
    NUMBER,
    OBJECT,
    STRING,
    V_ADDITIONAL,
    V_ANY_OF,
    V_CONST,
    V_DEPENDENT,
    V_ENUM,
    V_EXCLUSIVE_MAXIMUM,
    V_EXCLUSIVE_MINIMUM,
    V_FALSE,
    V_FINITE,
    V_LOSSLESS_OBJECT,
    V_LOSSLESS_VALUE,
    V_MAX_CONTAINS,
    V_MAX_ITEMS,
    V_MAX_LENGTH,
    V_MAXIMUM,
    V_MIN_CONTAINS,
    V_MIN_ITEMS,
    V_MIN_LENGTH,
    V_MIN_PROPERTIES,
    V_MINIMUM,
    V_ONE_OF,
    V_PATTERN,
    V_PROPERTY_NAME,
    V_REQUIRED,
    V_TYPE,
    V_TYPES,
    Node,
    Program,
    Violation,
    WalkBudget,
    any_code,
    dialect_violation,
    frozen_types,
    int_is_lossless,
    is_lossless_json,
    json_key,
    mismatch_code,
)

__all__ = ["DialectWalker", "number_ok", "string_ok", "unique_items", "value_key"]

_SMALL_INT_BITS: Final = 2000
_NUMBERS: Final = 1 << INTEGER | 1 << NUMBER
_VISIT: Final = 0
_EXIT: Final = 1
_START_ANY: Final = 2
_START_ONE: Final = 3
_START_CONTAINS: Final = 4
_EXTRAS: Final = 5
_EXIT_ANY: Final = 6
_MARK_ANY: Final = 0
_MARK_ONE: Final = 1
_MARK_CONTAINS: Final = 2


class _Mark:
    """A combinator in progress on the verdict stack: the frames above it belong to its current try."""

    __slots__ = ("kind", "node", "value", "at", "matches")

    def __init__(self, kind: int, node: Node, value: Any) -> None:
        self.kind = kind
        self.node = node
        self.value = value
        self.at = 0  # the branch (anyOf/oneOf) or item (contains) being tried
        self.matches = 0


def _kind(value: Any, fobj: Any, farr: Any) -> int:
    """The JSON kind of ``value`` by exact type (integral floats are ``INTEGER``), or -1."""
    t = type(value)
    if t is str:
        return STRING
    if t is dict or (fobj is not None and t is fobj):
        for key in value:
            if type(key) is not str:
                return -1
        return OBJECT
    if t is int:
        if value.bit_length() <= _SMALL_INT_BITS or int_is_lossless(value):
            return INTEGER
        return -1
    if t is bool:
        return BOOLEAN
    if t is float:
        if not _isfinite(value) or (value == 0.0 and copysign(1.0, value) < 0.0):
            return -1
        return INTEGER if value.is_integer() else NUMBER
    if t is list or t is tuple or (farr is not None and t is farr):
        return ARRAY
    if value is None:
        return NULL
    return -1


def _leaf_lossless(value: Any) -> Any:
    """True/False for a JSON scalar (or a non-JSON leaf); ``None`` for a container to walk."""
    t = type(value)
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return value.bit_length() <= _SMALL_INT_BITS or int_is_lossless(value)
    if t is float:
        return _isfinite(value) and (value != 0.0 or copysign(1.0, value) > 0.0)
    return None


def number_ok(code: int, arg: Any, value: Any) -> bool:
    if code == V_MINIMUM:
        return bool(value >= arg)
    if code == V_MAXIMUM:
        return bool(value <= arg)
    if code == V_EXCLUSIVE_MINIMUM:
        return bool(value > arg)
    if code == V_EXCLUSIVE_MAXIMUM:
        return bool(value < arg)
    # V_MULTIPLE_OF: the decimal values of the numbers' shortest texts (0.3 is a multiple of 0.1)
    factor = arg[0]
    if type(value) is int and type(factor) is int:
        return value % factor == 0
    quotient = (Fraction(repr(value)) if type(value) is float else Fraction(value)) / arg[1]
    return bool(quotient.denominator == 1)


def string_ok(code: int, arg: Any, value: str) -> bool:
    if code == V_MIN_LENGTH:
        return bool(len(value) >= arg)
    if code == V_MAX_LENGTH:
        return bool(len(value) <= arg)
    if code == V_PATTERN:
        return arg[0](value) is not None
    return bool(arg[0](value))  # V_FORMAT


def unique_items(value: Any) -> bool:
    seen = set()
    for item in value:
        if _leaf_lossless(item) is None and not is_lossless_json(item):
            continue  # not JSON: reported where the item itself is checked
        key = json_key(item)
        if key in seen:
            return False
        seen.add(key)
    return True


def _array_ok(code: int, arg: Any, value: Any) -> bool:
    if code == V_MIN_ITEMS:
        return bool(len(value) >= arg)
    if code == V_MAX_ITEMS:
        return bool(len(value) <= arg)
    return unique_items(value)  # V_UNIQUE


def _object_ok(code: int, arg: Any, value: Any) -> bool:
    if code == V_MIN_PROPERTIES:
        return bool(len(value) >= arg)
    return bool(len(value) <= arg)  # V_MAX_PROPERTIES


def value_key(value: Any, kind: int) -> Any:
    """``json_key(value)``, or a key no enum holds when a container is not lossless JSON."""
    if (kind == ARRAY or kind == OBJECT) and not is_lossless_json(value):
        return _NO_KEY
    return json_key(value)


class _NoKey:
    __slots__ = ()


_NO_KEY: Final = _NoKey()


def _words_mask(mask: int) -> int:
    """A shape mask as the type mask its message names (integer is part of number)."""
    if mask & (1 << NUMBER):
        return mask & ~(1 << INTEGER)
    return mask


# What a member without a schema of its own is checked against (lossless JSON only): one node
# for every walker, as it holds nothing a program sets.
_TRIVIAL_NODE: Final = Node()
_TRIVIAL_NODE.trivial = True


class DialectWalker:
    """Runs one dialect program: :meth:`is_valid` and :meth:`violations`."""

    __slots__ = ("_nodes", "_fobj", "_farr", "_recursive", "_any")

    def __init__(self, program: Program) -> None:
        self._nodes = program.nodes
        self._recursive = program.recursive
        self._fobj, self._farr = frozen_types()
        self._any = _TRIVIAL_NODE

    # --- verdict ---------------------------------------------------------------------------

    def is_valid(self, value: Any) -> bool:
        """Whether ``value`` is lossless JSON matching the program. Never raises (too large: ``False``)."""
        return self._valid_from(0, value)

    def _valid_from(self, root: int, value: Any, budget: WalkBudget | None = None) -> bool:
        if budget is None:
            budget = WalkBudget()
        budget.spend(1)  # the root
        stack: list[Any] = [(_VISIT, self._nodes[root], value)]
        on_path: Any = {} if self._recursive else None
        pop = stack.pop
        while stack:
            frame = pop()
            if type(frame) is _Mark:
                ok = self._matched(frame, stack)
            else:
                tag, node, v = frame
                if tag == _VISIT:
                    ok = self._visit(node, v, stack, on_path, budget)
                elif tag == _EXIT:
                    on_path[id(v)] -= 1
                    continue
                else:
                    ok = self._start(tag, node, v, stack)
            # (a spent budget ends the walk: no other branch is tried)
            if not ok and (budget.exceeded or not self._unwind(stack, on_path)):
                return False
        return True

    def _visit(self, node: Node, v: Any, stack: list[Any], on_path: Any, budget: WalkBudget) -> bool:
        """Check ``v`` against ``node``'s own keywords and push what its parts still need."""
        if node.trivial:
            leaf = _leaf_lossless(v)
            return is_lossless_json(v, budget) if leaf is None else bool(leaf)
        if node.false:
            return False
        kind = _kind(v, self._fobj, self._farr)
        if kind < 0:
            return False
        if node.admit and not (node.admit >> kind) & 1:
            return False
        if node.enum_keys is not None or node.has_const_key:
            key = value_key(v, kind)
            if node.enum_keys is not None and key not in node.enum_keys:
                return False
            if node.has_const_key and key != node.const_key:
                return False
        push = stack.append
        if kind == STRING:
            for code, arg in node.str_checks:
                if not string_ok(code, arg, v):
                    return False
        elif kind == OBJECT:
            if not self._object_frames(node, v, stack, on_path, budget):
                return False
        elif kind == ARRAY:
            if not self._array_frames(node, v, stack, on_path, budget):
                return False
        elif kind == INTEGER or kind == NUMBER:
            for code, arg in node.num_checks:
                if not number_ok(code, arg, v):
                    return False
        nodes = self._nodes
        for branch in node.all_of:
            push((_VISIT, nodes[branch], v))
        if node.ref >= 0:
            push((_VISIT, nodes[node.ref], v))
        if node.contains >= 0 and kind == ARRAY:
            push((_START_CONTAINS, node, v))
        if node.one_of:
            push((_START_ONE, node, v))
        if node.any_of:
            push((_START_ANY, node, v))
        return True

    def _open(self, v: Any, stack: list[Any], on_path: Any) -> None:
        ident = id(v)
        on_path[ident] = on_path.get(ident, 0) + 1
        stack.append((_EXIT, None, v))

    def _object_frames(self, node: Node, v: Any, stack: list[Any], on_path: Any, budget: WalkBudget) -> bool:
        for name in node.required:
            if name not in v:
                return False
        for name, others in node.dependent:
            if name in v:
                for other in others:
                    if other not in v:
                        return False
        for check, arg in node.obj_checks:
            if not _object_ok(check, arg, v):
                return False
        if not node.obj_members:
            return True
        if not budget.spend(len(v)):
            return False
        nodes = self._nodes
        push = stack.append
        if on_path is not None:
            self._open(v, stack, on_path)
        if node.property_names >= 0:
            names = nodes[node.property_names]
            for key in v:
                push((_VISIT, names, key))
        props = node.props
        closed = node.closed
        additional = nodes[node.additional] if node.additional >= 0 else None
        child: Node | None
        for key, item in v.items():
            code = props.get(key) if props else None
            if code is None:
                if closed:
                    return False
                child = additional
            else:
                child = nodes[code >> 1]
            if not self._member(child, item, stack, on_path, budget):
                return False
        return True

    def _member(self, child: Node | None, item: Any, stack: list[Any], on_path: Any, budget: WalkBudget) -> bool:
        """Check a member in place or push its frame (``child`` None: any JSON); False when it cannot match."""
        if child is None or child.trivial:
            leaf = _leaf_lossless(item)
            if leaf is None:
                if on_path is not None and on_path.get(id(item)):
                    return False  # a container inside itself
                stack.append((_VISIT, self._any, item))
                return True
            return bool(leaf)
        if child.inline:
            return self._visit(child, item, stack, on_path, budget)
        if on_path is not None and on_path.get(id(item)):
            return False
        stack.append((_VISIT, child, item))
        return True

    def _array_frames(self, node: Node, v: Any, stack: list[Any], on_path: Any, budget: WalkBudget) -> bool:
        for code, arg in node.arr_checks:
            if not _array_ok(code, arg, v):
                return False
        if not node.arr_members:
            return True
        if not budget.spend(len(v)):
            return False
        nodes = self._nodes
        if on_path is not None:
            self._open(v, stack, on_path)
        prefix = node.prefix
        n_prefix = len(prefix)
        items = nodes[node.items] if node.items >= 0 else None
        index = 0
        for item in v:
            child = nodes[prefix[index]] if index < n_prefix else items
            index += 1
            if not self._member(child, item, stack, on_path, budget):
                return False
        return True

    def _start(self, tag: int, node: Node, v: Any, stack: list[Any]) -> bool:
        """Begin an anyOf/oneOf/contains: push its mark and its first try."""
        if tag == _START_ANY:
            mark = _Mark(_MARK_ANY, node, v)
            stack.append(mark)
            stack.append((_VISIT, self._nodes[node.any_of[0]], v))
        elif tag == _START_ONE:
            mark = _Mark(_MARK_ONE, node, v)
            stack.append(mark)
            stack.append((_VISIT, self._nodes[node.one_of[0]], v))
        else:
            if len(v) == 0:
                return node.min_contains == 0
            mark = _Mark(_MARK_CONTAINS, node, v)
            stack.append(mark)
            stack.append((_VISIT, self._nodes[node.contains], v[0]))
        return True

    def _next(self, mark: _Mark, stack: list[Any]) -> bool:
        """Push the mark's next try; False when there is none."""
        mark.at += 1
        node = mark.node
        if mark.kind == _MARK_CONTAINS:
            if mark.at >= len(mark.value):
                return False
            stack.append(mark)
            stack.append((_VISIT, self._nodes[node.contains], mark.value[mark.at]))
            return True
        branches = node.any_of if mark.kind == _MARK_ANY else node.one_of
        if mark.at >= len(branches):
            return False
        stack.append(mark)
        stack.append((_VISIT, self._nodes[branches[mark.at]], mark.value))
        return True

    def _settled(self, mark: _Mark) -> bool:
        """The verdict of a mark with nothing left to try."""
        if mark.kind == _MARK_ONE:
            return mark.matches == 1
        if mark.kind == _MARK_CONTAINS:
            node = mark.node
            return mark.matches >= node.min_contains and (node.max_contains < 0 or mark.matches <= node.max_contains)
        return False  # anyOf: every branch failed

    def _matched(self, mark: _Mark, stack: list[Any]) -> bool:
        """The mark's current try succeeded: settle it or start its next try."""
        if mark.kind == _MARK_ANY:
            return True
        mark.matches += 1
        if mark.kind == _MARK_ONE:
            if mark.matches > 1:
                return False
        else:
            node = mark.node
            if node.max_contains >= 0 and mark.matches > node.max_contains:
                return False
            if node.max_contains < 0 and mark.matches >= node.min_contains:
                return True  # enough matches and no upper bound: the rest cannot change it
        if self._next(mark, stack):
            return True
        return self._settled(mark)

    def _unwind(self, stack: list[Any], on_path: Any) -> bool:
        """After a failure: resume at the innermost mark that can still succeed, else False."""
        while stack:
            frame = stack.pop()
            if type(frame) is not _Mark:
                if frame[0] == _EXIT:
                    on_path[id(frame[2])] -= 1
                continue
            if self._next(frame, stack):
                return True
            if self._settled(frame):
                return True
        return False

    # --- violations ------------------------------------------------------------------------

    def violations(self, value: Any, root: str, alias: str) -> list[Violation]:
        """Every violation of ``value`` (``[]`` when valid), paths rooted at ``root`` (``alias`` when unrooted)."""
        if self._valid_from(0, value):
            return []
        return self._collect(value, root, alias)

    def _collect(self, value: Any, root: str, alias: str) -> list[Violation]:
        out: list[Violation] = []
        # frames: (tag, node, value, path); path is a chain (parent, segment) or None
        stack: list[Any] = [(_VISIT, self._nodes[0], value, None)]
        on_path: Any = {} if self._recursive else None
        any_path: set[int] = set()
        while stack:
            tag, node, v, at = stack.pop()
            if tag == _EXIT:
                on_path[id(v)] -= 1
            elif tag == _EXIT_ANY:
                any_path.discard(id(v))
            elif tag == _EXTRAS:
                self._collect_extras(node, v, at, stack, on_path, out, root, alias)
            elif node.trivial:
                self._collect_any(v, at, stack, any_path, out, root, alias)
            else:
                self._collect_node(node, v, at, stack, on_path, out, root, alias)
        return out

    def _report(
        self, out: list[Violation], code: int, node: Node, at: Any, root: str, alias: str, extra: Any = None
    ) -> None:
        out.append(dialect_violation(code, node, _segments(at), root, alias, extra))

    def _mismatch(self, node: Node, v: Any) -> int:
        if node.kind != DIALECT:
            return mismatch_code(node.kind, v)
        mask = node.types
        if type(v) is float and mask & _NUMBERS:
            return V_FINITE
        if mask & (1 << OBJECT):
            return mismatch_code(OBJECT, v)
        return mismatch_code((mask & -mask).bit_length() - 1, v)

    def _collect_node(
        self, node: Node, v: Any, at: Any, stack: list[Any], on_path: Any, out: list[Violation], root: str, alias: str
    ) -> None:
        report = self._report
        if node.false:
            report(out, V_FALSE, node, at, root, alias)
            return
        kind = _kind(v, self._fobj, self._farr)
        if kind < 0:
            code = self._mismatch(node, v) if node.admit else any_code(v)
            report(out, code, node, at, root, alias)
            return
        if node.admit and not (node.admit >> kind) & 1:
            report(out, V_TYPE, node, at, root, alias)
            return
        if node.enum_keys is not None or node.has_const_key:
            key = value_key(v, kind)
            if node.enum_keys is not None and key not in node.enum_keys:
                report(out, V_ENUM, node, at, root, alias)
                return
            if node.has_const_key and key != node.const_key:
                report(out, V_CONST, node, at, root, alias)
                return
        nodes = self._nodes
        # frames pushed first are reported last: allOf and $ref after the node's own parts
        later: list[Any] = [(_VISIT, nodes[branch], v, at) for branch in node.all_of]
        if node.ref >= 0:
            later.append((_VISIT, nodes[node.ref], v, at))
        if kind == STRING:
            for code, arg in node.str_checks:
                if not string_ok(code, arg, v):
                    report(out, code, node, at, root, alias, arg)
        elif kind == INTEGER or kind == NUMBER:
            for code, arg in node.num_checks:
                if not number_ok(code, arg, v):
                    report(out, code, node, at, root, alias, arg)
        elif kind == OBJECT:
            self._collect_object_own(node, v, at, out, root, alias)
        elif kind == ARRAY:
            self._collect_array_own(node, v, at, out, root, alias)
        for branches, code in ((node.any_of, V_ANY_OF), (node.one_of, V_ONE_OF)):
            if branches:
                descend = self._combinator(branches, code, node, kind, v, at, out, root, alias)
                if descend >= 0:
                    later.append((_VISIT, nodes[descend], v, at))
        later.reverse()
        stack.extend(later)
        if kind == OBJECT and node.obj_members:
            self._object_children(node, v, at, stack, on_path, out, root, alias)
        elif kind == ARRAY and node.arr_members:
            self._array_children(node, v, at, stack, on_path, out, root, alias)

    def _combinator(
        self,
        branches: Any,
        code: int,
        node: Node,
        kind: int,
        v: Any,
        at: Any,
        out: list[Violation],
        root: str,
        alias: str,
    ) -> int:
        """Report an anyOf/oneOf miss; return the one branch to descend into instead, else -1.

        A branch whose type excludes the value fails anyway, so when exactly one
        branch can match at all the combinator's verdict is that branch's, and its
        own violations say more than a match count (``Optional[Model]``'s
        ``anyOf: [{$ref}, {type: null}]`` reports inside the model).
        """
        nodes = self._nodes
        possible = [branch for branch in branches if (nodes[branch].shape >> kind) & 1]
        if len(possible) == 1:
            return int(possible[0])
        if not possible:
            mask = 0
            for branch in branches:
                mask |= nodes[branch].shape
            if mask:
                self._report(out, V_TYPES, node, at, root, alias, _words_mask(mask))
                return -1
        matched = 0
        for branch in possible:
            if self._valid_from(branch, v):
                matched += 1
                if code == V_ANY_OF:
                    break
        if code == V_ANY_OF and not matched:
            self._report(out, V_ANY_OF, node, at, root, alias)
        elif code == V_ONE_OF and matched != 1:
            self._report(out, V_ONE_OF, node, at, root, alias, matched)
        return -1

    def _collect_object_own(self, node: Node, v: Any, at: Any, out: list[Violation], root: str, alias: str) -> None:
        report = self._report
        for name in node.required:
            if name not in v:
                report(out, V_REQUIRED, node, at, root, alias, name)
        for name, others in node.dependent:
            if name in v:
                for other in others:
                    if other not in v:
                        report(out, V_DEPENDENT, node, at, root, alias, (other, name))
        for code, arg in node.obj_checks:
            if not _object_ok(code, arg, v):
                report(out, code, node, at, root, alias, arg)
        if node.property_names >= 0:
            for key in v:
                if not self._valid_from(node.property_names, key):
                    report(out, V_PROPERTY_NAME, node, (at, key), root, alias)

    def _collect_array_own(self, node: Node, v: Any, at: Any, out: list[Violation], root: str, alias: str) -> None:
        for code, arg in node.arr_checks:
            if not _array_ok(code, arg, v):
                self._report(out, code, node, at, root, alias, arg)
        if node.contains >= 0:
            matches = 0
            for item in v:
                if self._valid_from(node.contains, item):
                    matches += 1
            if matches < node.min_contains:
                self._report(out, V_MIN_CONTAINS, node, at, root, alias, matches)
            elif node.max_contains >= 0 and matches > node.max_contains:
                self._report(out, V_MAX_CONTAINS, node, at, root, alias, matches)

    def _known_valid(self, index: int, item: Any, path: Any) -> bool:
        """Whether ``item`` (at ``path``) is known to match node ``index`` (-1: any JSON) unwalked: never here.

        The compiled twin answers from its C verdict walk near the root, so its
        report walks only the members that fail; a valid member can report nothing.
        """
        return False

    def _push_child(
        self,
        index: int,
        item: Any,
        path: Any,
        stack: list[Any],
        on_path: Any,
        out: list[Violation],
        root: str,
        alias: str,
    ) -> None:
        child = self._nodes[index] if index >= 0 else self._any
        if on_path is not None and not child.trivial and _leaf_lossless(item) is None and on_path.get(id(item)):
            self._report(out, V_LOSSLESS_VALUE, child, path, root, alias)  # a container inside itself
            return
        if self._known_valid(index, item, path):
            return
        stack.append((_VISIT, child, item, path))

    def _object_children(
        self, node: Node, v: Any, at: Any, stack: list[Any], on_path: Any, out: list[Violation], root: str, alias: str
    ) -> None:
        if on_path is not None:
            ident = id(v)
            on_path[ident] = on_path.get(ident, 0) + 1
            stack.append((_EXIT, None, v, at))
        stack.append((_EXTRAS, node, v, at))
        props = node.props or {}
        children = [(code >> 1, v[name], (at, name)) for name, code in props.items() if name in v]
        for index, item, path in reversed(children):
            self._push_child(index, item, path, stack, on_path, out, root, alias)

    def _collect_extras(
        self, node: Node, v: Any, at: Any, stack: list[Any], on_path: Any, out: list[Violation], root: str, alias: str
    ) -> None:
        props = node.props or {}
        extras = [key for key in v if key not in props]
        if node.closed:
            for key in extras:
                self._report(out, V_ADDITIONAL, node, (at, key), root, alias)
            return
        for key in reversed(extras):
            self._push_child(node.additional, v[key], (at, key), stack, on_path, out, root, alias)

    def _array_children(
        self, node: Node, v: Any, at: Any, stack: list[Any], on_path: Any, out: list[Violation], root: str, alias: str
    ) -> None:
        if on_path is not None:
            ident = id(v)
            on_path[ident] = on_path.get(ident, 0) + 1
            stack.append((_EXIT, None, v, at))
        prefix = node.prefix
        for index in range(len(v) - 1, -1, -1):
            child = prefix[index] if index < len(prefix) else node.items
            self._push_child(child, v[index], (at, index), stack, on_path, out, root, alias)

    def _collect_any(
        self, v: Any, at: Any, stack: list[Any], any_path: set[int], out: list[Violation], root: str, alias: str
    ) -> None:
        """An unconstrained value: report its parts that are not lossless JSON (cycles included)."""
        leaf = _leaf_lossless(v)
        if leaf is not None:
            if not leaf:
                self._report(out, any_code(v), self._any, at, root, alias)
            return
        t = type(v)
        if t is dict or (self._fobj is not None and t is self._fobj):
            if any(type(key) is not str for key in v):
                self._report(out, V_LOSSLESS_OBJECT, self._any, at, root, alias)
                return
            members = [(key, v[key]) for key in v]
        elif t is list or t is tuple or (self._farr is not None and t is self._farr):
            members = list(enumerate(v))
        else:
            self._report(out, any_code(v), self._any, at, root, alias)
            return
        if id(v) in any_path:
            self._report(out, V_LOSSLESS_VALUE, self._any, at, root, alias)  # a container inside itself
            return
        any_path.add(id(v))
        stack.append((_EXIT_ANY, self._any, v, at))
        for key, item in reversed(members):
            stack.append((_VISIT, self._any, item, (at, key)))


def _segments(at: Any) -> tuple[Any, ...]:
    out = []
    while at is not None:
        at, segment = at
        out.append(segment)
    out.reverse()
    return tuple(out)
