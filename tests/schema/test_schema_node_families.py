"""``Node.uses``: a compiled node whose mask lacks a keyword family keeps that family's class defaults.

The compiler's own walks over finished nodes (its reference edges, which
nodes walk members) read a family's fields only when the node's ``uses``
names it, so a compiler path that sets a field without its family bit would
be silently ignored there. This holds the invariant on every program the
corpus, the catalog and our vectors compile. Also: the compiled twin's node
type (``_schema_c.CompiledNode``) has ``Node``'s fields and defaults.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _shared_helpers import require_compiled_twin

from dsh_codegen.schema._validator import compile_program
from dsh_codegen.schema._program import (
    USES_ALL,
    USES_ARRAY,
    USES_BRANCHES,
    USES_ENUM,
    USES_LINK,
    USES_NUMBER,
    USES_OBJECT,
    USES_STRING,
    Node,
)
from tests.corpus import corpus

FAMILIES = {
    USES_NUMBER: ("num_checks",),
    USES_STRING: ("str_checks",),
    USES_ARRAY: ("items", "prefix", "contains", "min_contains", "max_contains", "arr_checks"),
    USES_OBJECT: ("props", "required", "closed", "additional", "property_names", "dependent", "obj_checks"),
    USES_ENUM: ("enum", "enum_values", "enum_keys", "has_const", "const", "has_const_key", "const_key"),
    USES_BRANCHES: ("all_of", "any_of", "one_of", "branches"),
    USES_LINK: ("ref", "trivial", "false"),
}
HERE = Path(__file__).parent


def _schemas() -> list[Any]:
    schemas = [schema for _, schema, _, _ in corpus()]
    catalog = json.loads((HERE.parent.parent / "bench" / "data" / "catalog60.json").read_text(encoding="utf-8"))
    schemas += [tool["parameters"] for tool in catalog]
    for path in sorted(HERE.glob("vectors/**/*.json")):
        schemas += [group["schema"] for group in json.loads(path.read_text(encoding="utf-8"))]
    return schemas


def test_the_families_cover_every_bit_and_no_field_twice() -> None:
    assert sum(FAMILIES) == USES_ALL
    fields = [field for members in FAMILIES.values() for field in members]
    assert len(fields) == len(set(fields))
    assert all(hasattr(Node, field) for field in fields)


def test_a_family_outside_uses_keeps_its_class_defaults() -> None:
    schemas = _schemas()
    assert len(schemas) > 200
    checked = 0
    for schema in schemas:
        try:
            program = compile_program(schema)
        except Exception:
            continue  # a vector outside the dialect: nothing compiled
        for index, node in enumerate(program.nodes):
            for bit, fields in FAMILIES.items():
                if node.uses & bit:
                    continue
                for field in fields:
                    checked += 1
                    assert getattr(node, field) == getattr(Node, field), (schema, index, field)
    assert checked > 10_000


@pytest.mark.parametrize(
    ("schema", "field", "bit"),
    [
        (True, "trivial", USES_LINK),
        (False, "false", USES_LINK),
        ({"title": "annotations only"}, "trivial", USES_LINK),
        ({"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"}, "ref", USES_LINK),
    ],
)
def test_the_link_family_is_named_where_its_fields_are_set(schema: Any, field: str, bit: int) -> None:
    root = compile_program(schema).nodes[0]
    assert getattr(root, field) != getattr(Node, field)
    assert root.uses & bit


def test_the_shared_plain_leaves_are_unchanged_by_every_compile() -> None:
    from dsh_codegen.schema import _dialect_check, _validator

    running = _validator._check_c if _validator._check_c is not None else _dialect_check  # the twin that runs
    programs = []
    for schema in _schemas():
        try:
            programs.append(compile_program(schema))
        except Exception:
            continue
    shared = {id(leaf) for leaf in running.SHARED_LEAVES.values()}
    uses = sum(1 for program in programs for node in program.nodes if id(node) in shared)
    assert uses > 100, "most programs hold a shared leaf"
    for kind, leaf in running.SHARED_LEAVES.items():
        assert _fields(leaf) == _fields(_dialect_check._leaf_node(kind)), kind


def _fields(node: Any) -> dict[str, Any]:
    return {name: getattr(node, name) for name in Node.__annotations__}


def test_the_compiled_node_type_has_the_fields_and_defaults_of_node() -> None:
    schema_c = require_compiled_twin("_schema_c")
    fresh = schema_c.CompiledNode()
    for name in Node.__annotations__:
        assert getattr(fresh, name) is getattr(Node, name), name
    members = {name for name in dir(schema_c.CompiledNode) if not name.startswith("_")}
    assert members == set(Node.__annotations__)
    assert repr(fresh) == "Node()"
    fresh.kind = 5
    fresh.required = ("a",)
    assert repr(fresh) == "Node(kind=5, required=('a',))"
    with pytest.raises(AttributeError):
        fresh.colour = "red"  # type: ignore[attr-defined]


def test_the_compiled_twin_compiles_into_compiled_nodes() -> None:
    schema_c = require_compiled_twin("_schema_c")
    require_compiled_twin("_dialect_check_c")
    from dsh_codegen.schema import _validator

    if _validator._check_c is None:
        pytest.skip("the pure twin runs (DSH_CODEGEN_PURE_PYTHON=1)")
    program = compile_program({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}})
    assert {type(node) for node in program.nodes} == {schema_c.CompiledNode}
