"""Local ``$ref`` resolution and the names of referenced definitions.

A reference is resolved inside the document it appears in (one tool's
``parameters`` or ``output_schema``): ``#``, any JSON pointer (``#/$defs/a``,
``#/definitions/a``, ``#/properties/x``, ``~0``/``~1`` and percent escapes) or
an ``$anchor``. Resolution never raises: what cannot be followed is
:data:`MISSING`. In an SDK render every referenced definition gets one name
(a TypeScript ``type`` alias, a Python ``TypedDict`` class or ``TypeAlias``)
from the SDK's shared :class:`ClassNamer`, so recursive schemas render as
recursive types in text linear in the document's size.
"""

from __future__ import annotations

from urllib.parse import unquote

from dsh_codegen.codegen._naming import ClassNamer, camel_case
from dsh_codegen.codegen._nodes import ALL_OF, MISSING, REF, UNION, read_node

__all__ = ["Definitions", "RefResolver", "reaches_itself"]


class Definitions:
    """The named definitions of one SDK render: a namer shared with every other
    generated name, and the definitions still to declare, in naming order."""

    __slots__ = ("namer", "queue")

    def __init__(self, namer: ClassNamer) -> None:
        self.namer = namer
        #: (name, target schema, the resolver of its document), in allocation order.
        self.queue: list[tuple[str, object, RefResolver]] = []


class RefResolver:
    """Follows references inside one document; with :class:`Definitions`, names them."""

    __slots__ = ("root", "base", "definitions", "names", "states", "_anchors")

    def __init__(self, root: object, definitions: Definitions | None = None, base: str = "Value") -> None:
        self.root = root
        self.base = base
        self.definitions = definitions
        #: id(target) -> allocated name.
        self.names: dict[int, str] = {}
        #: id(target) -> the Python walker's state for it ("class", "alias", "done").
        self.states: dict[int, str] = {}
        self._anchors: dict[str, object] | None = None

    def resolve(self, ref: str) -> object:
        """The schema ``ref`` points at, or :data:`MISSING`; never raises."""
        try:
            return self._resolve(ref)
        except Exception:  # noqa: BLE001 - hostile documents degrade to "unresolvable"
            return MISSING

    def _resolve(self, ref: str) -> object:
        if not ref.startswith("#"):
            return MISSING  # remote references are outside the dialect
        fragment = unquote(ref[1:])
        if fragment == "":
            return self.root
        if not fragment.startswith("/"):
            return self._anchor(fragment)
        node = self.root
        for token in fragment[1:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict):
                if token not in node:
                    return MISSING
                node = dict.__getitem__(node, token)
            elif isinstance(node, list) and token.isdigit() and token.isascii():
                index = int(token)
                if index >= len(node) or (token != "0" and token.startswith("0")):
                    return MISSING
                node = list.__getitem__(node, index)
            else:
                return MISSING
        return node

    def _anchor(self, name: str) -> object:
        if self._anchors is None:
            anchors: dict[str, object] = {}
            seen: set[int] = set()
            stack = [self.root]
            while stack:
                node = stack.pop()
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, dict):
                    anchor = dict.get(node, "$anchor")
                    if type(anchor) is str:
                        anchors.setdefault(anchor, node)
                    stack.extend(dict.values(node))
                elif isinstance(node, list):
                    stack.extend(node)
            self._anchors = anchors
        return self._anchors.get(name, MISSING)

    def name(self, ref: str, target: object) -> tuple[str, bool] | None:
        """The name of ``target`` (which ``ref`` resolved to) and whether it is new;
        ``None`` outside an SDK render. A new TypeScript name is queued for declaring."""
        if self.definitions is None:
            return None
        key = id(target)
        found = self.names.get(key)
        if found is not None:
            return found, False
        allocated = self.definitions.namer.allocate(self._base_for(ref))
        self.names[key] = allocated
        self.definitions.queue.append((allocated, target, self))
        return allocated, True

    def _base_for(self, ref: str) -> str:
        fragment = unquote(ref[1:]) if ref.startswith("#") else ref
        if fragment == "" or fragment == "/":
            return self.base
        last = fragment.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        return camel_case(last) if last else self.base


def reaches_itself(target: object, resolver: RefResolver, *, through: frozenset[str]) -> bool:
    """Whether ``target`` refers back to itself through references and the node
    kinds in ``through`` alone (unions and intersections for a TypeScript alias,
    which ``tsc`` rejects as circular). Bounded: a walk too long to finish says yes."""
    stack = [target]
    seen: set[int] = set()
    budget = 10_000
    while stack:
        budget -= 1
        if budget < 0:
            return True
        node = read_node(stack.pop())
        if node.kind == REF:
            found = resolver.resolve(node.ref)
            if found is target:
                return True
            if found is not MISSING and id(found) not in seen:
                seen.add(id(found))
                stack.append(found)
        elif node.kind in through:
            stack.extend(node.branches)
            if node.has_items:
                stack.append(node.items)
    return False


#: The node kinds a TypeScript alias body can refer through without an object or array between.
TS_UNGUARDED = frozenset({UNION, ALL_OF})
