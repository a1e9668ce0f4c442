# C declarations for the compiled dialect check: ``dsh_codegen/schema/_dialect_check.py`` compiled by
# Cython as it stands (setup.py builds it as ``dsh_codegen._dialect_check_c``; the pure twin imports the
# same file uncompiled). Cython finds this file by that module name ("augmenting .pxd"): it makes
# ``_Checker`` an extension type with C fields, and types the node and checker arguments of the
# hot functions, so their field reads and writes are struct loads and stores instead of generic
# attribute lookups. Nothing here changes what the code does; a declaration that did not match
# the source would fail the build.

import cython
from dsh_codegen._schema_c cimport CompiledNode


@cython.final
cdef class _Checker:
    cdef public object _fobj, _farr, root, formats, root_id, dialect
    cdef public list violations, nodes, with_required, stack, refs, linked
    cdef public dict lists, leaves, memo, anchors, ref_paths
    cdef public set on_path

    cpdef bint _is_object(self, value)
    cpdef bint _is_array(self, value)
    cpdef _report(self, path, keyword, text)
    cpdef run(self)
    @cython.locals(node=CompiledNode, nodes=list, memo=dict, on_path=set, stack=list)
    cpdef _walk(self)
    @cython.locals(node=CompiledNode)
    cpdef _attach(self, node, index, slot, child_index)
    cpdef _plain_leaf(self, child)
    @cython.locals(node=CompiledNode)
    cpdef _check_node(self, schema, node, index, path)
    @cython.locals(node=CompiledNode)
    cpdef _types(self, schema, node, path)
    @cython.locals(node=CompiledNode)
    cpdef bint _subset_node(self, schema, node, mask)
    @cython.locals(node=CompiledNode)
    cpdef _resolve_refs(self)
    cpdef _count(self, value, path, keyword)
    cpdef bint _number(self, value, path, keyword)
    cpdef _schemas(self, value, path, keyword, field, index, children)


@cython.locals(leaf=CompiledNode)
cpdef _leaf_node(kind)

@cython.locals(c=_Checker, node=CompiledNode)
cpdef _check_ref(c, value, schema, node, index, path, children)
@cython.locals(c=_Checker, node=CompiledNode)
cpdef _check_enum(c, value, schema, node, index, path, children)
@cython.locals(c=_Checker, node=CompiledNode)
cpdef _check_const(c, value, schema, node, index, path, children)
@cython.locals(c=_Checker, node=CompiledNode)
cpdef _check_pattern(c, value, schema, node, index, path, children)
@cython.locals(c=_Checker, node=CompiledNode)
cpdef _check_items(c, value, schema, node, index, path, children)
@cython.locals(c=_Checker, node=CompiledNode)
cpdef _check_properties(c, value, schema, node, index, path, children)
@cython.locals(c=_Checker, node=CompiledNode)
cpdef _check_required(c, value, schema, node, index, path, children)
@cython.locals(c=_Checker, node=CompiledNode)
cpdef _check_additional(c, value, schema, node, index, path, children)

@cython.locals(node=CompiledNode)
cpdef _same_value_edges(node)
@cython.locals(node=CompiledNode)
cpdef _all_edges(node)
@cython.locals(checker=_Checker)
cpdef _linked(checker)
@cython.locals(checker=_Checker, nodes=list)
cpdef _fill_lists(checker)
@cython.locals(checker=_Checker, nodes=list, node=CompiledNode)
cpdef _finish(checker)
@cython.locals(checker=_Checker)
cpdef _check(schema, formats)
