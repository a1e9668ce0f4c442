# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled validator twin (builds to ``dsh_codegen._schema_c``).

Mirrors ``dsh_codegen/schema/_validator_py.py`` name for name: ``CompiledValidator``
with ``is_valid``, ``violations`` and ``validate_args``. The node table the
shared compiler builds is copied into a C array of structs; ``is_valid`` walks
with a C frame stack (inline buffer, heap only past 64 pending frames), never
builds a Python object on success and never runs user code: every value is
type-checked by its exact type before anything else touches it. Messages,
type tags and the ``Violation`` class come from ``dsh_codegen.schema._shared``,
so both twins render identical texts.
"""

from cpython.object cimport PyObject, PyTypeObject
from libc.math cimport isfinite, floor, signbit
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy

from dsh_codegen.schema._shared import (
    Node as _PyNode,
    Program as _Program,
    V_ADDITIONAL,
    V_CONST,
    V_ENUM,
    V_LOSSLESS_OBJECT,
    V_LOSSLESS_VALUE,
    V_ONE_OF,
    V_REQUIRED,
    any_code,
    frozen_types,
    int_is_lossless,
    is_lossless_json,
    make_violation,
    mismatch_code,
)

cdef extern from "Python.h":
    PyTypeObject PyUnicode_Type
    PyTypeObject PyLong_Type
    PyTypeObject PyFloat_Type
    PyTypeObject PyBool_Type
    PyTypeObject PyDict_Type
    PyTypeObject PyList_Type
    PyTypeObject PyTuple_Type
    PyObject* Py_None
    PyTypeObject* Py_TYPE(PyObject* o)
    int PyDict_Next(PyObject* p, Py_ssize_t* ppos, PyObject** pkey, PyObject** pvalue)
    PyObject* PyDict_GetItemWithError(PyObject* p, PyObject* key)
    Py_ssize_t PyList_GET_SIZE(PyObject* p)
    PyObject* PyList_GET_ITEM(PyObject* p, Py_ssize_t i)
    Py_ssize_t PyTuple_GET_SIZE(PyObject* p)
    PyObject* PyTuple_GET_ITEM(PyObject* p, Py_ssize_t i)
    long long PyLong_AsLongLongAndOverflow(PyObject* obj, int* overflow)
    long PyLong_AsLong(PyObject* obj)
    double PyFloat_AS_DOUBLE(PyObject* p)
    int PySet_Contains(PyObject* anyset, PyObject* key)
    Py_hash_t PyObject_Hash(PyObject* o)
    int PyUnicode_Compare(PyObject* left, PyObject* right)
    int PyObject_RichCompareBool(PyObject* a, PyObject* b, int op)
    void PyErr_Clear()
    int Py_EQ

__all__ = ["CompiledValidator"]

# node kinds: the values of dsh_codegen.schema._shared (asserted at import below)
cdef enum:
    K_ANY = 0
    K_NULL = 1
    K_BOOLEAN = 2
    K_INTEGER = 3
    K_NUMBER = 4
    K_STRING = 5
    K_ARRAY = 6
    K_OBJECT = 7
    K_ONE_OF = 8
    F_VISIT = 0
    F_MARK = 1
    INLINE_FRAMES = 64
    # Containers an unconstrained (``{}``) walk visits before it switches to the
    # cycle-checking walk: only a cycle (or a huge shared-reference DAG) gets there.
    ANY_BUDGET = 1000000

from dsh_codegen.schema import _shared as _sh
assert (_sh.JSON_ANY, _sh.NULL, _sh.BOOLEAN, _sh.INTEGER, _sh.NUMBER, _sh.STRING, _sh.ARRAY, _sh.OBJECT,
        _sh.ONE_OF) == (0, 1, 2, 3, 4, 5, 6, 7, 8)


cdef struct CNode:
    int kind
    bint inline_
    bint closed
    bint has_const
    int items
    Py_ssize_t n_required
    Py_ssize_t first_branch
    Py_ssize_t n_branches
    PyObject* props          # dict: name -> position in the validator's entry array
    Py_ssize_t first_prop
    Py_ssize_t n_props
    PyObject* enum_set
    PyObject* const_val


cdef struct PropEntry:
    PyObject* name
    Py_hash_t hash
    int child
    int required


cdef struct Frame:
    PyObject* value
    int node
    int tag
    int branch
    int matches


cdef struct Stack:
    Frame* frames
    Py_ssize_t size
    Py_ssize_t cap
    bint heap


cdef inline int _push(Stack* s, PyObject* value, int node, int tag) except -1:
    cdef Frame* grown
    if s.size == s.cap:
        if s.heap:
            grown = <Frame*>realloc(s.frames, 2 * s.cap * sizeof(Frame))
        else:
            grown = <Frame*>malloc(2 * s.cap * sizeof(Frame))
            if grown != NULL:
                memcpy(grown, s.frames, s.size * sizeof(Frame))
        if grown == NULL:
            raise MemoryError()
        s.frames = grown
        s.cap *= 2
        s.heap = True
    s.frames[s.size].value = value
    s.frames[s.size].node = node
    s.frames[s.size].tag = tag
    s.frames[s.size].branch = 0
    s.frames[s.size].matches = 0
    s.size += 1
    return 0


cdef inline bint _int_ok(PyObject* v):
    cdef int overflow = 0
    PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow == 0:
        return True
    return int_is_lossless(<object>v)


cdef inline bint _float_ok(double d):
    return isfinite(d) and not (d == 0.0 and signbit(d))


cdef inline bint _leaf(PyObject* v, int* is_container):
    """Lossless verdict for a scalar; sets ``is_container`` for dict/list-like values to walk."""
    cdef PyTypeObject* t = Py_TYPE(v)
    is_container[0] = 0
    if t == &PyUnicode_Type or t == &PyBool_Type or v == Py_None:
        return True
    if t == &PyLong_Type:
        return _int_ok(v)
    if t == &PyFloat_Type:
        return _float_ok(PyFloat_AS_DOUBLE(v))
    is_container[0] = 1
    return False


cdef class CompiledValidator:
    """Validates values against one compiled schema (compiled twin).

    Build it with :func:`dsh_codegen.schema.compile_validator`. Instances are
    immutable and safe to share between threads.
    """

    cdef CNode* _nodes
    cdef Py_ssize_t _n
    cdef int* _branches
    cdef PropEntry* _props
    cdef list _py_nodes
    cdef list _keep
    cdef PyTypeObject* _fobj
    cdef PyTypeObject* _farr
    cdef object _any_node

    def __cinit__(self):
        self._nodes = NULL
        self._branches = NULL
        self._props = NULL

    def __init__(self, program):
        if not isinstance(program, _Program):
            raise TypeError("CompiledValidator needs a compiled Program (use compile_validator)")
        cdef list nodes = list(program.nodes)
        cdef Py_ssize_t n = len(nodes), i, total = 0, b, total_props = 0, p
        cdef CNode* c
        cdef PropEntry* e
        fobj, farr = frozen_types()
        self._fobj = <PyTypeObject*>fobj if fobj is not None else NULL
        self._farr = <PyTypeObject*>farr if farr is not None else NULL
        self._keep = [fobj, farr]
        self._py_nodes = nodes
        self._any_node = _PyNode(0)
        for node in nodes:
            total += len(node.branches)
            if node.props:
                total_props += len(node.props)
        self._nodes = <CNode*>malloc(max(n, 1) * sizeof(CNode))
        self._branches = <int*>malloc(max(total, 1) * sizeof(int))
        self._props = <PropEntry*>malloc(max(total_props, 1) * sizeof(PropEntry))
        if self._nodes == NULL or self._branches == NULL or self._props == NULL:
            raise MemoryError()
        self._n = n
        b = 0
        p = 0
        for i in range(n):
            node = nodes[i]
            c = &self._nodes[i]
            c.kind = node.kind
            c.inline_ = node.inline
            c.closed = node.closed
            c.has_const = node.has_const
            c.items = node.items
            c.n_required = len(node.required)
            c.first_branch = b
            c.n_branches = len(node.branches)
            for branch in node.branches:
                self._branches[b] = branch
                b += 1
            c.props = NULL
            c.first_prop = p
            c.n_props = 0
            c.enum_set = NULL
            c.const_val = NULL
            if node.props:
                positions = {}
                for name, code in node.props.items():
                    positions[name] = p - c.first_prop
                    e = &self._props[p]
                    e.name = <PyObject*>name
                    e.hash = hash(name)
                    e.child = code >> 1
                    e.required = code & 1
                    p += 1
                c.n_props = p - c.first_prop
                self._keep.append(positions)
                self._keep.append(node.props)  # keeps the entry names alive
                c.props = <PyObject*>positions
            if node.enum is not None:
                self._keep.append(node.enum)
                c.enum_set = <PyObject*>node.enum
            if node.has_const:
                self._keep.append(node.const)
                c.const_val = <PyObject*>node.const

    def __dealloc__(self):
        free(self._nodes)
        free(self._branches)
        free(self._props)

    # --- verdict -------------------------------------------------------------------------

    cdef inline bint _scalar_ok(self, CNode* n, PyObject* v):
        cdef PyTypeObject* t = Py_TYPE(v)
        cdef double d
        cdef int k = n.kind
        cdef int r
        if k == K_STRING:
            if t != &PyUnicode_Type:
                return False
        elif k == K_INTEGER:
            if t == &PyLong_Type:
                if not _int_ok(v):
                    return False
            elif t == &PyFloat_Type:
                d = PyFloat_AS_DOUBLE(v)
                if not (_float_ok(d) and d == floor(d)):
                    return False
            else:
                return False
        elif k == K_NUMBER:
            if t == &PyLong_Type:
                if not _int_ok(v):
                    return False
            elif t == &PyFloat_Type:
                if not _float_ok(PyFloat_AS_DOUBLE(v)):
                    return False
            else:
                return False
        elif k == K_BOOLEAN:
            if t != &PyBool_Type:
                return False
        elif v != Py_None:
            return False
        if n.enum_set != NULL:
            r = PySet_Contains(n.enum_set, v)
            if r != 1:
                if r < 0:
                    PyErr_Clear()
                return False
        if n.const_val != NULL:
            r = PyObject_RichCompareBool(v, n.const_val, Py_EQ)
            if r != 1:
                if r < 0:
                    PyErr_Clear()
                return False
        return True

    cdef inline bint _is_object(self, PyObject* v):
        cdef PyTypeObject* t = Py_TYPE(v)
        return t == &PyDict_Type or (t == self._fobj and t != NULL)

    cdef inline bint _is_array(self, PyObject* v):
        cdef PyTypeObject* t = Py_TYPE(v)
        return t == &PyList_Type or t == &PyTuple_Type or (t == self._farr and t != NULL)

    cdef bint _lossless(self, PyObject* root) except -1:
        """Whether ``root`` is lossless JSON, without building objects (cycles: shared walk)."""
        cdef Frame inline_frames[INLINE_FRAMES]
        cdef Stack s
        cdef PyObject* v
        cdef PyObject* key
        cdef PyObject* item
        cdef Py_ssize_t pos, i, size
        cdef int container = 0
        cdef long budget = ANY_BUDGET
        cdef bint ok = True
        s.frames = inline_frames
        s.size = 0
        s.cap = INLINE_FRAMES
        s.heap = False
        try:
            _push(&s, root, -1, F_VISIT)
            while s.size > 0:
                s.size -= 1
                v = s.frames[s.size].value
                if _leaf(v, &container):
                    continue
                if not container:
                    ok = False
                    break
                budget -= 1
                if budget < 0:
                    # only a cycle or an enormous shared-reference DAG gets here
                    ok = is_lossless_json(<object>root)
                    break
                if self._is_object(v):
                    pos = 0
                    while PyDict_Next(v, &pos, &key, &item):
                        if Py_TYPE(key) != &PyUnicode_Type:
                            ok = False
                            break
                        if not _leaf(item, &container):
                            if not container:
                                ok = False
                                break
                            _push(&s, item, -1, F_VISIT)
                    if not ok:
                        break
                elif Py_TYPE(v) == &PyTuple_Type:
                    size = PyTuple_GET_SIZE(v)
                    for i in range(size):
                        _push(&s, PyTuple_GET_ITEM(v, i), -1, F_VISIT)
                elif self._is_array(v):
                    size = PyList_GET_SIZE(v)
                    for i in range(size):
                        _push(&s, PyList_GET_ITEM(v, i), -1, F_VISIT)
                else:
                    ok = False
                    break
        finally:
            if s.heap:
                free(s.frames)
        return ok

    cpdef bint is_valid(self, object value) except -1:
        """Whether ``value`` is lossless JSON matching the schema. Never raises; builds no violation."""
        return self._valid_from(0, <PyObject*>value)

    cdef bint _valid_from(self, int root, PyObject* value) except -1:
        cdef Frame inline_frames[INLINE_FRAMES]
        cdef Stack s
        cdef Frame* f
        cdef CNode* n
        cdef CNode* child
        cdef PyObject* v
        cdef PyObject* key
        cdef PyObject* item
        cdef PyObject* code_obj
        cdef PropEntry* props
        cdef PropEntry* e
        cdef Py_ssize_t pos, i, size, seen, cursor
        cdef int container = 0
        cdef int index
        cdef bint ok
        cdef bint result = True
        s.frames = inline_frames
        s.size = 0
        s.cap = INLINE_FRAMES
        s.heap = False
        try:
            _push(&s, value, root, F_VISIT)
            while s.size > 0:
                f = &s.frames[s.size - 1]
                if f.tag == F_MARK:
                    # every frame of the current branch finished: it matched
                    f.matches += 1
                    n = &self._nodes[f.node]
                    if f.matches < 2:
                        f.branch += 1
                        if f.branch < n.n_branches:
                            _push(&s, f.value, self._branches[n.first_branch + f.branch], F_VISIT)
                            continue
                        s.size -= 1
                        continue  # last branch done with exactly one match
                    s.size -= 1
                    ok = False
                else:
                    s.size -= 1
                    v = f.value
                    index = f.node  # f's slot is reused by the next push
                    if index < 0:
                        ok = self._lossless(v)
                    else:
                        n = &self._nodes[index]
                        if n.inline_:
                            ok = self._scalar_ok(n, v)
                        elif n.kind == K_OBJECT:
                            ok = self._is_object(v)
                            if ok:
                                pos = 0
                                seen = 0
                                cursor = 0
                                props = &self._props[n.first_prop]
                                while PyDict_Next(v, &pos, &key, &item):
                                    if Py_TYPE(key) != &PyUnicode_Type:
                                        ok = False
                                        break
                                    # Values usually list their keys in the schema's order: try the
                                    # next declared property before the hash table.
                                    e = NULL
                                    if cursor < n.n_props:
                                        e = &props[cursor]
                                        if e.name != key and (PyObject_Hash(key) != e.hash or
                                                              PyUnicode_Compare(key, e.name) != 0):
                                            e = NULL
                                    if e == NULL and n.props != NULL:
                                        # exact str keys only: the lookup cannot run user code or fail
                                        code_obj = PyDict_GetItemWithError(n.props, key)
                                        if code_obj != NULL:
                                            cursor = PyLong_AsLong(code_obj)
                                            e = &props[cursor]
                                    if e == NULL:
                                        if n.closed:
                                            ok = False
                                            break
                                        if not _leaf(item, &container):
                                            if not container:
                                                ok = False
                                                break
                                            _push(&s, item, -1, F_VISIT)
                                        continue
                                    cursor += 1
                                    seen += e.required
                                    child = &self._nodes[e.child]
                                    if child.inline_:
                                        if not self._scalar_ok(child, item):
                                            ok = False
                                            break
                                    else:
                                        _push(&s, item, e.child, F_VISIT)
                                if ok and seen != n.n_required:
                                    ok = False
                        elif n.kind == K_ARRAY:
                            ok = self._is_array(v)
                            if ok:
                                if Py_TYPE(v) == &PyTuple_Type:
                                    size = PyTuple_GET_SIZE(v)
                                else:
                                    size = PyList_GET_SIZE(v)
                                child = &self._nodes[n.items] if n.items >= 0 else NULL
                                for i in range(size):
                                    item = PyTuple_GET_ITEM(v, i) if Py_TYPE(v) == &PyTuple_Type else PyList_GET_ITEM(v, i)
                                    if child == NULL:
                                        if not _leaf(item, &container):
                                            if not container:
                                                ok = False
                                                break
                                            _push(&s, item, -1, F_VISIT)
                                    elif child.inline_:
                                        if not self._scalar_ok(child, item):
                                            ok = False
                                            break
                                    else:
                                        _push(&s, item, n.items, F_VISIT)
                        elif n.kind == K_ONE_OF:
                            _push(&s, v, index, F_MARK)
                            _push(&s, v, self._branches[n.first_branch], F_VISIT)
                            continue
                        else:  # K_ANY
                            ok = self._lossless(v)
                    if ok:
                        continue
                # failure: discard frames up to the innermost oneOf that can still succeed
                ok = False
                while s.size > 0:
                    f = &s.frames[s.size - 1]
                    if f.tag != F_MARK:
                        s.size -= 1
                        continue
                    n = &self._nodes[f.node]
                    f.branch += 1
                    if f.branch < n.n_branches:
                        _push(&s, f.value, self._branches[n.first_branch + f.branch], F_VISIT)
                        ok = True
                        break
                    s.size -= 1
                    if f.matches == 1:
                        ok = True  # the failed branch was the last; one earlier branch matched
                        break
                if not ok:
                    result = False
                    break
        finally:
            if s.heap:
                free(s.frames)
        return result

    # --- violations ----------------------------------------------------------------------

    def violations(self, object value, str path="value"):
        """Every violation of ``value``, in CONTRACT.md order, paths rooted at ``path``.

        Order: for an object, its own missing required properties first, then
        its declared properties in declaration order (each subtree complete),
        then undeclared keys in the value's order; array items in index order.
        Never raises for any ``value``.
        """
        if self._valid_from(0, <PyObject*>value):
            return []
        return self._collect(value, path, path)

    def validate_args(self, object args):
        """Violations of tool arguments: ``"arguments"`` names the root, children are unrooted."""
        if self._valid_from(0, <PyObject*>args):
            return []
        return self._collect(args, "", "arguments")

    cdef int _scalar_code(self, CNode* n, object node, object v) except -1:
        if self._scalar_ok(n, <PyObject*>v):
            return 0
        # re-run the parts in order to name the first failing rule
        cdef CNode bare = n[0]
        bare.enum_set = NULL
        bare.const_val = NULL
        if not self._scalar_ok(&bare, <PyObject*>v):
            return mismatch_code(n.kind, v)
        if n.enum_set != NULL:
            bare.enum_set = n.enum_set
            if not self._scalar_ok(&bare, <PyObject*>v):
                return V_ENUM
        return V_CONST

    cdef list _collect(self, object value, str root, str alias):
        cdef list out = []
        cdef list stack = [(0, 0, value, None)]
        cdef set on_path = set()
        cdef int tag, index, code
        cdef CNode* n
        cdef list nodes = self._py_nodes
        cdef object any_node = self._any_node
        cdef Py_ssize_t matched
        while stack:
            tag, index, v, at = stack.pop()
            if tag == 2:  # exit of an unconstrained container
                on_path.discard(id(v))
                continue
            node = nodes[index] if index >= 0 else any_node
            if tag == 1:
                self._report_extras(index, node, v, at, stack, out, root, alias)
                continue
            if index < 0:
                self._collect_any(v, at, stack, on_path, out, root, alias)
                continue
            n = &self._nodes[index]
            if n.inline_:
                code = self._scalar_code(n, node, v)
                if code:
                    out.append(make_violation(code, node, _segments(at), root, alias))
            elif n.kind == K_OBJECT:
                self._collect_object(index, node, v, at, stack, out, root, alias)
            elif n.kind == K_ARRAY:
                if not self._is_array(<PyObject*>v):
                    out.append(make_violation(mismatch_code(K_ARRAY, v), node, _segments(at), root, alias))
                    continue
                child = n.items
                for i in range(len(v) - 1, -1, -1):
                    stack.append((0, child, v[i], (at, i)))
            elif n.kind == K_ONE_OF:
                matched = 0
                for i in range(n.n_branches):
                    if self._valid_from(self._branches[n.first_branch + i], <PyObject*>v):
                        matched += 1
                if matched != 1:
                    out.append(make_violation(V_ONE_OF, node, _segments(at), root, alias, matched))
            else:
                self._collect_any(v, at, stack, on_path, out, root, alias)
        return out

    cdef _collect_object(self, int index, object node, object v, object at, list stack, list out, str root, str alias):
        if not self._is_object(<PyObject*>v):
            out.append(make_violation(mismatch_code(K_OBJECT, v), node, _segments(at), root, alias))
            return
        for key in v:
            if type(key) is not str:
                out.append(make_violation(V_LOSSLESS_OBJECT, node, _segments(at), root, alias))
                return
        for name in node.required:
            if name not in v:
                out.append(make_violation(V_REQUIRED, node, _segments(at), root, alias, name))
        stack.append((1, index, v, at))
        props = node.props or {}
        children = [(0, code >> 1, v[name], (at, name)) for name, code in props.items() if name in v]
        children.reverse()
        stack.extend(children)

    cdef _report_extras(self, int index, object node, object v, object at, list stack, list out, str root, str alias):
        props = node.props or {}
        extras = [key for key in v if key not in props]
        if node.closed:
            for key in extras:
                out.append(make_violation(V_ADDITIONAL, node, _segments((at, key)), root, alias))
            return
        extras.reverse()
        stack.extend([(0, -1, v[key], (at, key)) for key in extras])

    cdef _collect_any(self, object v, object at, list stack, set on_path, list out, str root, str alias):
        cdef int container = 0
        if _leaf(<PyObject*>v, &container):
            return
        if not container:
            out.append(make_violation(any_code(v), self._any_node, _segments(at), root, alias))
            return
        if self._is_object(<PyObject*>v):
            for key in v:
                if type(key) is not str:
                    out.append(make_violation(V_LOSSLESS_OBJECT, self._any_node, _segments(at), root, alias))
                    return
            members = [(key, v[key]) for key in v]
        elif self._is_array(<PyObject*>v):
            members = list(enumerate(v))
        else:
            out.append(make_violation(any_code(v), self._any_node, _segments(at), root, alias))
            return
        if id(v) in on_path:
            out.append(make_violation(V_LOSSLESS_VALUE, self._any_node, _segments(at), root, alias))
            return
        on_path.add(id(v))
        stack.append((2, -1, v, at))
        members.reverse()
        stack.extend([(0, -1, item, (at, key)) for key, item in members])


cdef tuple _segments(object at):
    cdef list out = []
    while at is not None:
        at, segment = at
        out.append(segment)
    out.reverse()
    return tuple(out)
