# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled validator twin (builds to ``dsh_codegen._schema_c``).

Mirrors ``dsh_codegen/schema/_validator_py.py`` name for name: ``CompiledValidator``
with ``is_valid``, ``violations`` and ``validate_args``. The node table the
shared compiler builds is copied into a C array of structs; ``is_valid`` walks
with a C frame stack (inline buffer, heap only past 64 pending frames), never
builds a Python object on success and never runs user code: every value is
type-checked by its exact type before anything else touches it. Messages,
type tags and the ``Violation`` class come from ``dsh_codegen.schema._program``,
so both twins render identical texts.
"""

cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_XDECREF
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.math cimport isfinite, floor, signbit
from libc.stdlib cimport malloc, realloc, free
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from dsh_codegen.json import quote_path
from dsh_codegen.schema._program import (
    FIXED_SUFFIX,
    KEYWORD_OF_CODE,
    TYPE_SUFFIX,
    Node as _PyNode,
    Program as _Program,
    Violation as _Violation,
    node_suffix,
    root_text,
    segment_text,
    V_ADDITIONAL,
    V_CONST,
    V_ENUM,
    V_LOSSLESS_OBJECT,
    V_LOSSLESS_VALUE,
    V_ONE_OF,
    V_REQUIRED,
    any_code,
    budget_violation,
    dependent_suffix,
    dialect_keyword,
    dialect_suffix,
    frozen_types,
    int_is_lossless,
    mismatch_code,
    V_ANY_OF,
    V_DEPENDENT,
    V_EXCLUSIVE_MAXIMUM,
    V_EXCLUSIVE_MINIMUM,
    V_FALSE,
    V_FORMAT,
    V_MAX_CONTAINS,
    V_MAX_ITEMS,
    V_MAX_LENGTH,
    V_MAX_PROPERTIES,
    V_MAXIMUM,
    V_MIN_CONTAINS,
    V_MIN_ITEMS,
    V_MIN_LENGTH,
    V_MIN_PROPERTIES,
    V_MINIMUM,
    V_MULTIPLE_OF,
    V_PATTERN,
    V_PROPERTY_NAME,
    V_TYPE,
    V_TYPES,
    V_UNIQUE,
    WalkBudget,
    dialect_violation,
    json_key,
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
    PyObject* Py_True
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
    ctypedef struct PyASCIIObject:
        Py_hash_t hash
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject* o)
    int PyUnicode_KIND(PyObject* o)
    void* PyUnicode_DATA(PyObject* o)
    object PyLong_FromVoidPtr(PyObject* p)
    Py_ssize_t PyDict_Size(PyObject* p)
    bint PyDict_Check(PyObject* p)
    bint PyList_Check(PyObject* p)
    int PyUnicode_Compare(PyObject* left, PyObject* right)
    int PyObject_RichCompareBool(PyObject* a, PyObject* b, int op)
    void PyErr_Clear()
    int Py_EQ
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    Py_UCS4 PyUnicode_MAX_CHAR_VALUE(PyObject* o)
    Py_UCS4 PyUnicode_READ_CHAR(PyObject* o, Py_ssize_t index)
    Py_ssize_t PyUnicode_CopyCharacters(object to, Py_ssize_t to_start, PyObject* from_,
                                        Py_ssize_t from_start, Py_ssize_t how_many) except -1
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value)
    int PyObject_GenericSetAttr(object o, object name, object value) except -1

# The dialect walk (programs of the wider tool-schema dialect), shared with the pure twin: the C
# tables below decide what they can and hand the rest to it.
from dsh_codegen.schema._dialect_walk import DialectWalker, number_ok, string_ok, unique_items, value_key

__all__ = ["CompiledValidator"]

# node kinds: the values of dsh_codegen.schema._program (asserted at import below)
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

from dsh_codegen.schema import _program
from dsh_codegen.json import DEFAULT_MAX_NODES
cdef long MAX_NODES = DEFAULT_MAX_NODES
assert (_program.JSON_ANY, _program.NULL, _program.BOOLEAN, _program.INTEGER, _program.NUMBER, _program.STRING, _program.ARRAY, _program.OBJECT,
        _program.ONE_OF) == (0, 1, 2, 3, 4, 5, 6, 7, 8)


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
    PyObject* required       # tuple of required names
    Py_ssize_t first_req     # into the validator's required-position array


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
    long* left  # the values the validation may still reach (``_program.WalkBudget``; shared by its walks)


cdef void* _grown(void* items, Py_ssize_t size, Py_ssize_t cap, bint heap, size_t unit) except NULL:
    """A heap buffer of ``cap`` units starting with the ``size`` units of ``items``.

    ``items`` is resized when it is already on the heap (``heap``), else copied
    (a caller's inline buffer, or NULL with ``size`` 0, stays as it is).
    """
    cdef void* grown
    if heap:
        grown = realloc(items, cap * unit)
    else:
        grown = malloc(cap * unit)
        if grown != NULL and size > 0:
            memcpy(grown, items, size * unit)
    if grown == NULL:
        raise MemoryError()
    return grown


cdef inline int _push(Stack* s, PyObject* value, int node, int tag) except -1:
    if s.size == s.cap:
        s.frames = <Frame*>_grown(s.frames, s.size, 2 * s.cap, s.heap, sizeof(Frame))
        s.cap *= 2
        s.heap = True
    s.frames[s.size].value = value
    s.frames[s.size].node = node
    s.frames[s.size].tag = tag
    s.frames[s.size].branch = 0
    s.frames[s.size].matches = 0
    s.size += 1
    return 0


cdef inline bint _spend(long* left, Py_ssize_t count) noexcept:
    """``WalkBudget.spend``: count ``count`` more values; False once past the budget (``left`` < 0)."""
    left[0] -= count
    return left[0] >= 0


cdef inline void _reverse(Stack* s, Py_ssize_t base):
    """Reverse the frames pushed since ``base``: children are then checked in document
    order, so an early error (the common case) is found before the later siblings."""
    cdef Py_ssize_t lo = base, hi = s.size - 1
    cdef Frame tmp
    while lo < hi:
        tmp = s.frames[lo]
        s.frames[lo] = s.frames[hi]
        s.frames[hi] = tmp
        lo += 1
        hi -= 1


cdef inline Py_hash_t _str_hash(PyObject* s) noexcept:
    """The hash of an exact ``str``: its cached value when there is one (no call)."""
    cdef Py_hash_t h = (<PyASCIIObject*>s).hash
    return h if h != -1 else PyObject_Hash(s)


cdef inline bint _str_eq(PyObject* a, PyObject* b) noexcept:
    """Equality of two exact ``str`` (same length, same kind, same bytes)."""
    cdef Py_ssize_t n
    cdef int kind
    if a == b:
        return True
    n = PyUnicode_GET_LENGTH(a)
    kind = PyUnicode_KIND(a)
    if n != PyUnicode_GET_LENGTH(b) or kind != PyUnicode_KIND(b):
        return False
    return _bytes_eq(<const char*>PyUnicode_DATA(a), <const char*>PyUnicode_DATA(b), n * kind)


cdef inline bint _bytes_eq(const char* a, const char* b, Py_ssize_t n) noexcept:
    """``memcmp(a, b, n) == 0`` inline: property names are short, and a call to memcmp
    costs more than comparing them a word at a time (this runs once per matched key)."""
    cdef uint64_t x, y
    while n >= 8:
        memcpy(&x, a, 8)
        memcpy(&y, b, 8)
        if x != y:
            return False
        a += 8
        b += 8
        n -= 8
    while n > 0:
        if a[0] != b[0]:
            return False
        a += 1
        b += 1
        n -= 1
    return True


cdef inline bint _int_ok(PyObject* v) noexcept:
    cdef int overflow = 0
    PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow == 0:
        return True
    return int_is_lossless(<object>v)


cdef inline bint _float_ok(double d) noexcept:
    return isfinite(d) and not (d == 0.0 and signbit(d))


cdef inline bint _leaf(PyObject* v, int* is_container) noexcept:
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


cdef inline bint _is_object_of(PyObject* v, PyTypeObject* fobj) noexcept:
    cdef PyTypeObject* t = Py_TYPE(v)
    return t == &PyDict_Type or (t == fobj and t != NULL)


cdef inline bint _is_array_of(PyObject* v, PyTypeObject* farr) noexcept:
    cdef PyTypeObject* t = Py_TYPE(v)
    return t == &PyList_Type or t == &PyTuple_Type or (t == farr and t != NULL)


cdef inline Py_ssize_t size_of_container(PyObject* v) noexcept:
    """The members of an exact dict, list or tuple (or our frozen ones); 0 for anything else."""
    cdef PyTypeObject* t = Py_TYPE(v)
    if PyDict_Check(v):
        return PyDict_Size(v)
    if t == &PyTuple_Type:
        return PyTuple_GET_SIZE(v)
    if PyList_Check(v):
        return PyList_GET_SIZE(v)
    return 0


cdef bint _within_budget(PyObject* root, PyTypeObject* fobj, PyTypeObject* farr) except -1:
    """``_program.within_walk_budget``: whether walking ``root`` reaches at most ``MAX_NODES`` values.

    The careful walk in its measuring mode: it counts the members of every
    exact container, JSON or not inside, and does not follow a cycle into itself.
    """
    cdef long left = MAX_NODES - 1  # the root counted
    _lossless_careful(root, fobj, farr, set(), &left, False)
    return left >= 0


cdef bint _lossless_walk(PyObject* root, PyTypeObject* fobj, PyTypeObject* farr, set ancestors, long* left) except -1:
    """Whether ``root`` is lossless JSON, without building objects (cycles: the careful walk).

    The members of every container walked count against ``left`` (False once
    it is spent, which the caller tells from an invalid value by ``left`` < 0).
    """
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
                ok = _lossless_careful(root, fobj, farr, ancestors, left)
                break
            if not _spend(left, size_of_container(v)):
                ok = False
                break
            if _is_object_of(v, fobj):
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
            elif _is_array_of(v, farr):
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

cdef bint _lossless_careful(PyObject* root, PyTypeObject* fobj, PyTypeObject* farr, set ancestors, long* left,
                            bint lossless=True) except -1:
    """The lossless walk with cycle detection: ancestors' ids in a set kept on the validator.

    Creates only ints (which the garbage collector does not track), so no
    collection and no finalizer can run while borrowed references are held.
    Not ``lossless``: the measuring walk of :func:`_within_budget` (``_program._tree_walk``),
    which only the budget stops: it skips what is not a container and does not
    follow a cycle into itself.
    """
    cdef Frame inline_frames[INLINE_FRAMES]
    cdef Stack s
    cdef PyObject* v
    cdef PyObject* key
    cdef PyObject* item
    cdef Py_ssize_t pos, i, size
    cdef int container = 0
    cdef bint ok = True
    cdef object ident
    s.frames = inline_frames
    s.size = 0
    s.cap = INLINE_FRAMES
    s.heap = False
    try:
        _push(&s, root, -1, F_VISIT)
        while s.size > 0:
            s.size -= 1
            v = s.frames[s.size].value
            if s.frames[s.size].tag == F_MARK:  # leaving v: no longer an ancestor
                ancestors.discard(PyLong_FromVoidPtr(v))
                continue
            if not lossless:
                if not (_is_object_of(v, fobj) or _is_array_of(v, farr)):
                    continue
            elif _leaf(v, &container):
                continue
            elif not container:
                ok = False
                break
            ident = PyLong_FromVoidPtr(v)
            if ident in ancestors:
                if not lossless:
                    continue  # measuring: a cycle is reported by the walks that follow
                ok = False
                break
            if not _spend(left, size_of_container(v)):
                ok = False
                break
            if _is_object_of(v, fobj):
                pos = 0
                while lossless and PyDict_Next(v, &pos, &key, &item):
                    if Py_TYPE(key) != &PyUnicode_Type:
                        ok = False
                        break
                if not ok:
                    break
                ancestors.add(ident)
                _push(&s, v, -1, F_MARK)
                pos = 0
                while PyDict_Next(v, &pos, &key, &item):
                    _push(&s, item, -1, F_VISIT)
            elif _is_array_of(v, farr):
                ancestors.add(ident)
                _push(&s, v, -1, F_MARK)
                if Py_TYPE(v) == &PyTuple_Type:
                    size = PyTuple_GET_SIZE(v)
                    for i in range(size):
                        _push(&s, PyTuple_GET_ITEM(v, i), -1, F_VISIT)
                else:
                    size = PyList_GET_SIZE(v)
                    for i in range(size):
                        _push(&s, PyList_GET_ITEM(v, i), -1, F_VISIT)
            else:
                ok = False
                break
    finally:
        ancestors.clear()
        if s.heap:
            free(s.frames)
    return ok


# --- the dialect's verdict walk in C ----------------------------------------------------------
#
# The same walk as ``DialectWalker._valid_from`` (``_dialect_walk``: the reference, which the pure
# twin runs), over a C copy of the dialect's node fields. Frames own a reference to their value,
# so the Python calls some checks make (``pattern``, ``format``, ``uniqueItems``, numbers beyond
# 2**53, ``multipleOf`` of fractions) cannot free a value the walk still holds.

cdef enum:
    D_VISIT = 0
    D_EXIT = 1
    D_START_ANY = 2
    D_START_ONE = 3
    D_START_CONTAINS = 4
    D_MARK_ANY = 5
    D_MARK_ONE = 6
    D_MARK_CONTAINS = 7
    D_LOSSLESS = 8

cdef long long EXACT_DOUBLE = 9007199254740992  # 2**53: every integer up to it is a double exactly

cdef int C_MINIMUM = V_MINIMUM, C_MAXIMUM = V_MAXIMUM
cdef int C_EXCLUSIVE_MINIMUM = V_EXCLUSIVE_MINIMUM, C_EXCLUSIVE_MAXIMUM = V_EXCLUSIVE_MAXIMUM
cdef int C_MULTIPLE_OF = V_MULTIPLE_OF, C_MIN_LENGTH = V_MIN_LENGTH, C_MAX_LENGTH = V_MAX_LENGTH
cdef int C_PATTERN = V_PATTERN
cdef int C_MIN_ITEMS = V_MIN_ITEMS, C_MAX_ITEMS = V_MAX_ITEMS
cdef int C_MIN_PROPERTIES = V_MIN_PROPERTIES, C_MAX_PROPERTIES = V_MAX_PROPERTIES
cdef int C_ENUM = V_ENUM, C_CONST = V_CONST, C_TYPE = V_TYPE, C_TYPES = V_TYPES, C_FALSE = V_FALSE
cdef int C_REQUIRED = V_REQUIRED, C_DEPENDENT = V_DEPENDENT, C_ADDITIONAL = V_ADDITIONAL
cdef int C_PROPERTY_NAME = V_PROPERTY_NAME, C_ANY_OF = V_ANY_OF, C_ONE_OF = V_ONE_OF
cdef int C_MIN_CONTAINS = V_MIN_CONTAINS, C_MAX_CONTAINS = V_MAX_CONTAINS


cdef struct Check:
    int code
    Py_ssize_t count     # a length or size bound
    bint exact           # the numeric bound is ``bound`` exactly (a float, or an int within 2**53)
    double bound
    long long factor     # multipleOf: an int factor in (0, 2**53], else 0
    PyObject* pair       # the node's ``(code, argument)`` tuple, for the Python check
    PyObject* search     # pattern: the compiled expression's ``search``, else NULL


cdef struct ReportProp:
    PyObject* key        # a declared name, borrowed from its node's props (kept alive by the node)
    Py_hash_t hash
    int child
    int required         # 1 when the name is required
    PyObject* text       # the name's ``_segment`` entry (kept by the table's _report_keep)


cdef struct DNode:
    bint trivial
    bint false_
    bint simple          # a type test only: checked in place, no frame
    bint closed
    bint obj_members
    bint arr_members
    int admit
    int shape            # Node.shape: the value kinds that can match (read by _scan_combinator)
    PyObject* enum_keys  # frozenset of json_key values, or NULL
    bint has_const_key
    PyObject* const_key
    PyObject* props      # dict name -> child << 1 | required, or NULL
    PyObject* required   # tuple of names
    PyObject* dependent  # tuple of (name, names)
    Py_ssize_t first_check
    Py_ssize_t n_num
    Py_ssize_t n_str
    Py_ssize_t n_arr
    Py_ssize_t n_obj
    Py_ssize_t first_prefix
    Py_ssize_t n_prefix
    Py_ssize_t first_all
    Py_ssize_t n_all
    Py_ssize_t first_any
    Py_ssize_t n_any
    Py_ssize_t first_one
    Py_ssize_t n_one
    int items
    int additional
    int property_names
    int contains
    Py_ssize_t min_contains
    Py_ssize_t max_contains
    int ref


cdef inline int _opush(Stack* s, PyObject* value, int node, int tag) except -1:
    """Push a frame that owns a reference to ``value``."""
    _push(s, value, node, tag)
    Py_INCREF(<object>value)
    return 0


cdef inline void _opop(Stack* s) noexcept:
    s.size -= 1
    Py_DECREF(<object>s.frames[s.size].value)


cdef inline Py_ssize_t _array_size(PyObject* v) noexcept:
    if Py_TYPE(v) == &PyTuple_Type:
        return PyTuple_GET_SIZE(v)
    return PyList_GET_SIZE(v)


cdef inline PyObject* _array_item(PyObject* v, Py_ssize_t i) noexcept:
    if Py_TYPE(v) == &PyTuple_Type:
        return PyTuple_GET_ITEM(v, i)
    return PyList_GET_ITEM(v, i)


cdef bint _scalars_unique(PyObject* v, Py_ssize_t size) except -1:
    """True when the short array ``v`` of strings and numbers has no two JSON-equal items.

    False means "duplicates, or not such an array": the caller then asks ``_unique``.
    Strings and numbers compare without running user code (``1 == 1.0``, as JSON says).
    """
    cdef Py_ssize_t i, j
    cdef PyTypeObject* t
    cdef PyObject* a
    cdef int r
    if size > 16:
        return False
    for i in range(size):
        a = _array_item(v, i)
        t = Py_TYPE(a)
        if t != &PyUnicode_Type and t != &PyLong_Type and t != &PyFloat_Type:
            return False
    for i in range(size):
        a = _array_item(v, i)
        for j in range(i + 1, size):
            r = PyObject_RichCompareBool(a, _array_item(v, j), Py_EQ)
            if r != 0:
                if r < 0:
                    PyErr_Clear()
                return False
    return True


# The compiled twin's node: ``_program.Node``'s fields as C struct members. A new node copies
# every field from ``_DEFAULTS``, one node made at import with ``Node``'s class defaults, so
# the defaults have one source; the C tables below read a node's fields as struct loads, and
# making one allocates no instance dict.
NODE_FIELDS = tuple(_PyNode.__annotations__)


@cython.no_gc  # holds ints, strs and containers of schema data, never a node: in no cycle
@cython.final
cdef class CompiledNode:
    """One compiled schema node (see ``_program.Node``): the same fields, the same defaults."""

    # Its fields are declared in dsh_codegen/_schema_c.pxd (the compiled dialect check reads them too).

    def __cinit__(self):
        cdef CompiledNode p = _DEFAULTS
        if p is None:  # making _DEFAULTS itself: filled by name below
            return
        self.kind = p.kind
        self.enum = p.enum
        self.enum_values = p.enum_values
        self.has_const = p.has_const
        self.const = p.const
        self.props = p.props
        self.required = p.required
        self.closed = p.closed
        self.items = p.items
        self.branches = p.branches
        self.inline = p.inline
        self.texts = p.texts
        self.types = p.types
        self.admit = p.admit
        self.shape = p.shape
        self.false = p.false
        self.trivial = p.trivial
        self.enum_keys = p.enum_keys
        self.has_const_key = p.has_const_key
        self.const_key = p.const_key
        self.num_checks = p.num_checks
        self.str_checks = p.str_checks
        self.arr_checks = p.arr_checks
        self.obj_checks = p.obj_checks
        self.prefix = p.prefix
        self.additional = p.additional
        self.contains = p.contains
        self.min_contains = p.min_contains
        self.max_contains = p.max_contains
        self.property_names = p.property_names
        self.dependent = p.dependent
        self.all_of = p.all_of
        self.any_of = p.any_of
        self.one_of = p.one_of
        self.ref = p.ref
        self.obj_members = p.obj_members
        self.arr_members = p.arr_members
        self.uses = p.uses

    def __repr__(self):
        changed = [f"{name}={getattr(self, name)!r}" for name in NODE_FIELDS
                   if getattr(self, name) is not getattr(_DEFAULTS, name)]
        return f"Node({', '.join(changed)})"


cdef CompiledNode _DEFAULTS = None
_DEFAULTS = CompiledNode()
for _name in NODE_FIELDS:  # an AttributeError here: Node has a field CompiledNode does not declare
    setattr(_DEFAULTS, _name, getattr(_PyNode, _name))
del _name


@cython.final
cdef class _DialectTable:
    """The dialect program's nodes as C structs, and the verdict walk over them."""

    cdef DNode* _nodes
    cdef Py_ssize_t _n
    cdef Check* _checks
    cdef int* _indices    # prefixItems, allOf, anyOf and oneOf children
    cdef list _py_nodes   # keeps every object the C structs borrow alive
    cdef PyTypeObject* _fobj
    cdef PyTypeObject* _farr
    cdef list _keep
    cdef bint _recursive
    cdef set _ancestors   # for the lossless walk's cycle check
    cdef dict _texts      # the report's message suffixes, per (code, node, check or extra), made on first use
    cdef list _report_slots  # the report's commonest suffixes: per node its type text, then per check its text
    cdef ReportProp* _report_props  # the report's member loop: every node's props in order, made on first use
    cdef Py_ssize_t* _report_first  # per node, its first entry in _report_props (n + 1 offsets)
    cdef list _report_keep          # the _segment entries _report_props borrows
    cdef list _report_required      # per node, the _segment entries of its required names, in order

    def __cinit__(self):
        self._nodes = NULL
        self._checks = NULL
        self._indices = NULL
        self._report_props = NULL
        self._report_first = NULL

    def __dealloc__(self):
        free(self._nodes)
        free(self._checks)
        free(self._indices)
        free(self._report_props)
        free(self._report_first)

    def __init__(self, program, fobj, farr):
        """``fobj``, ``farr``: ``frozen_types()`` as the walker that owns the table read it."""
        cdef list nodes = list(program.nodes)
        cdef Py_ssize_t n = len(nodes), i, n_checks = 0, n_indices = 0, c = 0, x = 0
        cdef DNode* d
        cdef CompiledNode node
        self._fobj = <PyTypeObject*>fobj if fobj is not None else NULL
        self._farr = <PyTypeObject*>farr if farr is not None else NULL
        self._keep = [fobj, farr]
        self._py_nodes = nodes
        self._recursive = program.recursive
        self._ancestors = set()
        for node in nodes:
            n_checks += (len(<tuple>node.num_checks) + len(<tuple>node.str_checks)
                         + len(<tuple>node.arr_checks) + len(<tuple>node.obj_checks))
            n_indices += (len(<tuple>node.prefix) + len(<tuple>node.all_of)
                          + len(<tuple>node.any_of) + len(<tuple>node.one_of))
        self._nodes = <DNode*>malloc(max(n, 1) * sizeof(DNode))
        self._checks = <Check*>malloc(max(n_checks, 1) * sizeof(Check))
        self._indices = <int*>malloc(max(n_indices, 1) * sizeof(int))
        if self._nodes == NULL or self._checks == NULL or self._indices == NULL:
            raise MemoryError()
        self._n = n
        for i in range(n):
            node = nodes[i]
            d = &self._nodes[i]
            d.admit = node.admit
            d.shape = node.shape
            d.trivial = node.trivial
            d.false_ = node.false
            d.ref = node.ref
            d.obj_members = node.obj_members
            d.arr_members = node.arr_members
            enum_keys = node.enum_keys
            d.enum_keys = <PyObject*>enum_keys if enum_keys is not None else NULL
            d.has_const_key = node.has_const_key
            d.const_key = <PyObject*>node.const_key  # kept alive by the node, held in _py_nodes
            d.closed = node.closed
            props = node.props
            d.props = <PyObject*>props if props else NULL
            d.required = <PyObject*>node.required
            d.dependent = <PyObject*>node.dependent
            d.additional = node.additional
            d.property_names = node.property_names
            d.items = node.items
            d.contains = node.contains
            d.min_contains = node.min_contains
            d.max_contains = node.max_contains
            d.first_check = c
            for pair in <tuple>node.num_checks:
                self._fill_check(&self._checks[c], pair)
                c += 1
            d.n_num = c - d.first_check
            for pair in <tuple>node.str_checks:
                self._fill_check(&self._checks[c], pair)
                c += 1
            d.n_str = c - d.first_check - d.n_num
            for pair in <tuple>node.arr_checks:
                self._fill_check(&self._checks[c], pair)
                c += 1
            d.n_arr = c - d.first_check - d.n_num - d.n_str
            for pair in <tuple>node.obj_checks:
                self._fill_check(&self._checks[c], pair)
                c += 1
            d.n_obj = c - d.first_check - d.n_num - d.n_str - d.n_arr
            d.first_prefix = x
            x = self._fill_indices(x, node.prefix)
            d.n_prefix = x - d.first_prefix
            d.first_all = x
            x = self._fill_indices(x, node.all_of)
            d.n_all = x - d.first_all
            d.first_any = x
            x = self._fill_indices(x, node.any_of)
            d.n_any = x - d.first_any
            d.first_one = x
            x = self._fill_indices(x, node.one_of)
            d.n_one = x - d.first_one
            # only scalars (integer under number included) and no other keyword: a type test
            d.simple = (not d.trivial and not d.false_ and d.admit != 0
                        and not d.admit & (1 << K_ARRAY | 1 << K_OBJECT)
                        and d.enum_keys == NULL and not d.has_const_key
                        and c == d.first_check and d.n_all == 0 and d.n_any == 0 and d.n_one == 0
                        and d.ref < 0)

    cdef Py_ssize_t _fill_indices(self, Py_ssize_t x, tuple children) except -1:
        for child in children:
            self._indices[x] = child
            x += 1
        return x

    cdef int _fill_check(self, Check* k, tuple pair) except -1:
        code, arg = pair
        k.code = code
        k.pair = <PyObject*>pair  # kept alive by its node
        k.count = 0
        k.exact = False
        k.bound = 0.0
        k.factor = 0
        k.search = NULL
        if code == C_PATTERN:
            k.search = <PyObject*>arg[0]  # kept alive by the pair
        elif code == C_MIN_LENGTH or code == C_MAX_LENGTH or code == C_MIN_ITEMS or code == C_MAX_ITEMS \
                or code == C_MIN_PROPERTIES or code == C_MAX_PROPERTIES:
            k.count = arg
        elif code == C_MULTIPLE_OF:
            factor = arg[0]
            if type(factor) is int and 0 < factor <= EXACT_DOUBLE:
                k.factor = factor
        elif code == C_MINIMUM or code == C_MAXIMUM or code == C_EXCLUSIVE_MINIMUM or code == C_EXCLUSIVE_MAXIMUM:
            if type(arg) is float or (type(arg) is int and -EXACT_DOUBLE <= arg <= EXACT_DOUBLE):
                k.exact = True
                k.bound = arg
        return 0

    # --- one value ---------------------------------------------------------------------------

    cdef int _kind(self, PyObject* v) except -2:
        """``_dialect_walk._kind`` on exact types: the JSON kind, or -1."""
        cdef PyTypeObject* t = Py_TYPE(v)
        cdef Py_ssize_t pos = 0
        cdef PyObject* key
        cdef PyObject* item
        cdef double d
        if t == &PyUnicode_Type:
            return K_STRING
        if t == &PyDict_Type or (t == self._fobj and t != NULL):
            while PyDict_Next(v, &pos, &key, &item):
                if Py_TYPE(key) != &PyUnicode_Type:
                    return -1
            return K_OBJECT
        if t == &PyLong_Type:
            return K_INTEGER if _int_ok(v) else -1
        if t == &PyBool_Type:
            return K_BOOLEAN
        if t == &PyFloat_Type:
            d = PyFloat_AS_DOUBLE(v)
            if not _float_ok(d):
                return -1
            return K_INTEGER if d == floor(d) else K_NUMBER
        if t == &PyList_Type or t == &PyTuple_Type or (t == self._farr and t != NULL):
            return K_ARRAY
        if v == Py_None:
            return K_NULL
        return -1

    cdef bint _number_check(self, Check* k, PyObject* v) except -1:
        cdef double d
        cdef long long i
        cdef int overflow = 0
        cdef int code = k.code
        cdef bint exact_value = False
        if Py_TYPE(v) == &PyFloat_Type:
            d = PyFloat_AS_DOUBLE(v)
            exact_value = True
        else:
            i = PyLong_AsLongLongAndOverflow(v, &overflow)
            if overflow == 0:
                if code == C_MULTIPLE_OF and k.factor > 0:
                    return i % k.factor == 0
                if -EXACT_DOUBLE <= i <= EXACT_DOUBLE:
                    d = <double>i
                    exact_value = True
        if exact_value and k.exact:
            if code == C_MINIMUM:
                return d >= k.bound
            if code == C_MAXIMUM:
                return d <= k.bound
            if code == C_EXCLUSIVE_MINIMUM:
                return d > k.bound
            if code == C_EXCLUSIVE_MAXIMUM:
                return d < k.bound
        pair = <tuple>k.pair
        return number_ok(code, pair[1], <object>v)

    cdef inline int _enum_code(self, DNode* d, PyObject* v, int kind) except -1:
        """0 when ``v`` passes the node's enum and const, else ``V_ENUM`` or ``V_CONST``."""
        cdef object key
        if d.enum_keys == NULL and not d.has_const_key:
            return 0
        if kind == K_STRING or kind == K_INTEGER or kind == K_NUMBER or kind == K_NULL:
            key = <object>v  # its own key (json_key)
        else:
            key = value_key(<object>v, kind)
        if d.enum_keys != NULL and key not in <frozenset>d.enum_keys:
            return C_ENUM
        if d.has_const_key and not key == <object>d.const_key:
            return C_CONST
        return 0

    cdef inline bint _check_ok(self, Check* k, PyObject* v, int kind) except -1:
        """Whether ``v`` (of ``kind``, the kind the check is for) passes one check.

        The verdict walk (through ``_own_ok``) and the report scan share it; inline on
        a final class, so the verdict walk pays no call per check.
        """
        cdef Py_ssize_t size
        if kind == K_STRING:
            if k.code == C_MIN_LENGTH:
                return PyUnicode_GET_LENGTH(v) >= k.count
            if k.code == C_MAX_LENGTH:
                return PyUnicode_GET_LENGTH(v) <= k.count
            if k.search != NULL:
                return (<object>k.search)(<object>v) is not None
            return string_ok(k.code, (<tuple>k.pair)[1], <object>v)
        if kind == K_INTEGER or kind == K_NUMBER:
            return self._number_check(k, v)
        if kind == K_ARRAY:
            size = _array_size(v)
            if k.code == C_MIN_ITEMS:
                return size >= k.count
            if k.code == C_MAX_ITEMS:
                return size <= k.count
            return _scalars_unique(v, size) or unique_items(<object>v)
        size = PyDict_Size(v)  # K_OBJECT
        if k.code == C_MIN_PROPERTIES:
            return size >= k.count
        return size <= k.count

    cdef bint _own_ok(self, DNode* d, PyObject* v, int kind) except -1:
        """The node's keywords on ``v`` itself (enum, const, the checks of ``kind``)."""
        cdef Py_ssize_t j, first, n
        if (d.enum_keys != NULL or d.has_const_key) and self._enum_code(d, v, kind):
            return False
        first, n = self._checks_of(d, kind)
        for j in range(first, first + n):
            if not self._check_ok(&self._checks[j], v, kind):
                return False
        return True

    cdef inline bint _flat(self, DNode* d) noexcept:
        """No allOf, anyOf, oneOf or ``$ref`` (and not ``false``): a scalar is decided without a frame."""
        return not (d.false_ or d.n_all or d.n_any or d.n_one or d.ref >= 0)

    cdef bint _scalar_ok(self, DNode* d, PyObject* v) except -1:
        """``_visit``'s verdict for the JSON scalar ``v`` and a ``_flat`` node ``d``, in place.

        Type, enum, const and the checks of its kind: all a scalar meets in a node
        without parts (``contains`` and members apply to containers only).
        """
        cdef int kind = self._kind(v)
        return kind >= 0 and (not d.admit or (d.admit >> kind) & 1) and self._own_ok(d, v, kind)

    cdef inline (Py_ssize_t, Py_ssize_t) _checks_of(self, DNode* d, int kind) noexcept:
        """The first index and the number of the node's checks that apply to a value of ``kind``."""
        if kind == K_STRING:
            return d.first_check + d.n_num, d.n_str
        if kind == K_INTEGER or kind == K_NUMBER:
            return d.first_check, d.n_num
        if kind == K_ARRAY:
            return d.first_check + d.n_num + d.n_str, d.n_arr
        if kind == K_OBJECT:
            return d.first_check + d.n_num + d.n_str + d.n_arr, d.n_obj
        return d.first_check, 0

    cdef inline bint _simple_ok(self, DNode* d, PyObject* v) except -1:
        cdef int kind = self._kind(v)
        return kind >= 0 and (d.admit >> kind) & 1

    # --- the walk ----------------------------------------------------------------------------

    cdef bint valid_from(self, int root, PyObject* value) except -1:
        """Whether ``value`` is lossless JSON matching node ``root``.

        A recursive program first walks without tracking the containers on the
        path: only a cyclic value (or an enormous one) uses up the budget of
        containers, and the walk then starts again with the tracking on.
        """
        cdef long budget = ANY_BUDGET
        cdef long left = MAX_NODES - 1  # the root counted
        cdef int verdict = self._walk(root, value, None, &budget, &left)
        if verdict == 2:
            verdict = self._walk(root, value, {}, &budget, &left)
        return verdict == 1

    cdef int _walk(self, int root, PyObject* value, object on_path, long* budget, long* left) except -1:
        """1 when ``value`` matches node ``root``, 0 when not, 2 when the container budget ran out.

        ``left``: the walk budget (``_program.WalkBudget``); 0 once it is spent.
        """
        cdef Frame inline_frames[INLINE_FRAMES]
        cdef Stack s
        cdef Frame* f
        cdef PyObject* v
        cdef int tag, index
        cdef int container = 0
        cdef int ok
        cdef int result = 1
        cdef bint counting = self._recursive and on_path is None
        s.frames = inline_frames
        s.size = 0
        s.cap = INLINE_FRAMES
        s.heap = False
        s.left = left
        try:
            _opush(&s, value, root, D_VISIT)
            while s.size > 0:
                f = &s.frames[s.size - 1]
                tag = f.tag
                if tag >= D_MARK_ANY and tag <= D_MARK_CONTAINS:
                    ok = self._matched(&s)
                else:
                    s.size -= 1
                    v = f.value  # owned: released below, after its children own their own
                    index = f.node
                    try:
                        if tag == D_VISIT:
                            if counting and (Py_TYPE(v) == &PyDict_Type or not _leaf(v, &container)):
                                budget[0] -= 1
                                if budget[0] < 0:
                                    result = 2
                                    break
                            ok = self._visit(&s, index, v, on_path)
                        elif tag == D_LOSSLESS:
                            ok = self._lossless_value(v, left)
                        elif tag == D_EXIT:
                            on_path[PyLong_FromVoidPtr(v)] -= 1
                            ok = True
                        else:
                            ok = self._start(&s, tag, index, v)
                    finally:
                        Py_DECREF(<object>v)
                # (a spent walk budget ends the walk: no other branch is tried)
                if not ok and (left[0] < 0 or not self._unwind(&s, on_path)):
                    result = 0
                    break
        finally:
            while s.size > 0:
                _opop(&s)
            if s.heap:
                free(s.frames)
        return result

    cdef bint _lossless_value(self, PyObject* v, long* left) except -1:
        cdef int container = 0
        if _leaf(v, &container):
            return True
        if not container:
            return False
        return _lossless_walk(v, self._fobj, self._farr, self._ancestors, left)

    cdef bint _visit(self, Stack* s, int index, PyObject* v, object on_path) except -1:
        """``DialectWalker._visit``: check ``v`` against the node and push what its parts need."""
        cdef DNode* d = &self._nodes[index]
        cdef int kind
        cdef Py_ssize_t j
        if d.trivial:
            return self._lossless_value(v, s.left)
        if d.false_:
            return False
        if (Py_TYPE(v) == &PyDict_Type and d.obj_members and d.property_names < 0 and d.enum_keys == NULL
                and not d.has_const_key and PyTuple_GET_SIZE(d.dependent) == 0):
            # An exact dict whose first key-dependent step is _object_frames' member loop: that
            # loop tests each key for an exact str before any lookup, so _kind's scan is not needed.
            kind = K_OBJECT
        else:
            kind = self._kind(v)
        if kind < 0:
            return False
        if d.admit and not (d.admit >> kind) & 1:
            return False
        if not self._own_ok(d, v, kind):
            return False
        if kind == K_OBJECT:
            if not self._object_frames(s, d, v, on_path):
                return False
        elif kind == K_ARRAY:
            if not self._array_frames(s, d, v, on_path):
                return False
        for j in range(d.n_all):
            _opush(s, v, self._indices[d.first_all + j], D_VISIT)
        if d.ref >= 0:
            _opush(s, v, d.ref, D_VISIT)
        if d.contains >= 0 and kind == K_ARRAY:
            _opush(s, v, index, D_START_CONTAINS)
        if d.n_one:
            _opush(s, v, index, D_START_ONE)
        if d.n_any:
            _opush(s, v, index, D_START_ANY)
        return True

    cdef int _child(self, Stack* s, int child, PyObject* item, object on_path) except -1:
        """Check or push one member: 1 when it may still match, 0 when it cannot."""
        cdef DNode* c
        cdef int container = 0
        if child >= 0:
            c = &self._nodes[child]
            if c.simple:
                return self._simple_ok(c, item)
            if not c.trivial:
                if _leaf(item, &container):
                    if self._flat(c):
                        return self._scalar_ok(c, item)  # a leaf check: no frame
                elif on_path is not None and container and on_path.get(PyLong_FromVoidPtr(item)):
                    return 0  # a container inside itself
                _opush(s, item, child, D_VISIT)
                return 1
        if _leaf(item, &container):
            return 1
        if not container:
            return 0
        if on_path is not None and on_path.get(PyLong_FromVoidPtr(item)):
            return 0
        _opush(s, item, -1, D_LOSSLESS)
        return 1

    cdef void _open(self, Stack* s, PyObject* v, object on_path) except *:
        ident = PyLong_FromVoidPtr(v)
        on_path[ident] = on_path.get(ident, 0) + 1
        _opush(s, v, -1, D_EXIT)

    cdef bint _object_frames(self, Stack* s, DNode* d, PyObject* v, object on_path) except -1:
        cdef Py_ssize_t pos = 0, base, present = 0
        cdef PyObject* key
        cdef PyObject* item
        cdef PyObject* found
        cdef long code
        cdef int child
        for name, others in <tuple>d.dependent:
            if PyDict_GetItemWithError(v, <PyObject*>name) != NULL:  # exact str keys: no user code
                for other in <tuple>others:
                    if PyDict_GetItemWithError(v, <PyObject*>other) == NULL:
                        return False
        if not d.obj_members:
            return self._has_required(d, v)
        if not _spend(s.left, PyDict_Size(v)):
            return False
        if on_path is not None:
            self._open(s, v, on_path)
        if d.property_names >= 0:
            while PyDict_Next(v, &pos, &key, &item):
                _opush(s, key, d.property_names, D_VISIT)
            pos = 0
        base = s.size
        while PyDict_Next(v, &pos, &key, &item):
            if Py_TYPE(key) != &PyUnicode_Type:
                return False  # not lossless JSON (tested before the lookup: no user __hash__ runs)
            found = PyDict_GetItemWithError(d.props, key) if d.props != NULL else NULL
            if found == NULL:
                if d.closed:
                    return False
                child = d.additional
            else:
                code = PyLong_AsLong(found)
                present += code & 1  # a declared required property
                child = code >> 1
            if not self._child(s, child, item, on_path):
                return False
        # the required names are all declared and all here, or some need looking up
        if present < PyTuple_GET_SIZE(d.required) and not self._has_required(d, v):
            return False
        if s.size - base > 1:
            _reverse(s, base)  # members in document order: an early error is found first
        return True

    cdef bint _has_required(self, DNode* d, PyObject* v) except -1:
        for name in <tuple>d.required:
            if PyDict_GetItemWithError(v, <PyObject*>name) == NULL:  # exact str keys: no user code
                return False
        return True

    cdef bint _array_frames(self, Stack* s, DNode* d, PyObject* v, object on_path) except -1:
        cdef Py_ssize_t size, i, base
        cdef int child
        if not d.arr_members:
            return True
        size = _array_size(v)
        if not _spend(s.left, size):
            return False
        if on_path is not None:
            self._open(s, v, on_path)
        base = s.size
        for i in range(size):
            child = self._indices[d.first_prefix + i] if i < d.n_prefix else d.items
            if not self._child(s, child, _array_item(v, i), on_path):
                return False
        if s.size - base > 1:
            _reverse(s, base)
        return True

    cdef bint _start(self, Stack* s, int tag, int index, PyObject* v) except -1:
        """Begin an anyOf/oneOf/contains: push its mark and its first try."""
        cdef DNode* d = &self._nodes[index]
        if tag == D_START_ANY:
            _opush(s, v, index, D_MARK_ANY)
            _opush(s, v, self._indices[d.first_any], D_VISIT)
        elif tag == D_START_ONE:
            _opush(s, v, index, D_MARK_ONE)
            _opush(s, v, self._indices[d.first_one], D_VISIT)
        else:
            if _array_size(v) == 0:
                return d.min_contains == 0
            _opush(s, v, index, D_MARK_CONTAINS)
            _opush(s, _array_item(v, 0), d.contains, D_VISIT)
        return True

    cdef bint _next(self, Stack* s) except -1:
        """Push the next try of the mark on top of the stack; False when there is none."""
        cdef Frame* mark = &s.frames[s.size - 1]
        cdef DNode* d = &self._nodes[mark.node]
        cdef PyObject* v = mark.value
        cdef int child
        mark.branch += 1
        if mark.tag == D_MARK_CONTAINS:
            if mark.branch >= _array_size(v):
                return False
            _opush(s, _array_item(v, mark.branch), d.contains, D_VISIT)
            return True
        if mark.tag == D_MARK_ANY:
            if mark.branch >= d.n_any:
                return False
            child = self._indices[d.first_any + mark.branch]
        else:
            if mark.branch >= d.n_one:
                return False
            child = self._indices[d.first_one + mark.branch]
        _opush(s, v, child, D_VISIT)
        return True

    cdef inline bint _settled(self, Frame* mark) noexcept:
        """The verdict of a mark with nothing left to try."""
        cdef DNode* d = &self._nodes[mark.node]
        if mark.tag == D_MARK_ONE:
            return mark.matches == 1
        if mark.tag == D_MARK_CONTAINS:
            return mark.matches >= d.min_contains and (d.max_contains < 0 or mark.matches <= d.max_contains)
        return False  # anyOf: every branch failed

    cdef bint _matched(self, Stack* s) except -1:
        """The current try of the mark on top succeeded: settle the mark or start its next try."""
        cdef Frame* mark = &s.frames[s.size - 1]
        cdef DNode* d = &self._nodes[mark.node]
        cdef bint verdict
        if mark.tag == D_MARK_ANY:
            _opop(s)
            return True
        mark.matches += 1
        if mark.tag == D_MARK_ONE:
            if mark.matches > 1:
                _opop(s)
                return False
        else:
            if d.max_contains >= 0 and mark.matches > d.max_contains:
                _opop(s)
                return False
            if d.max_contains < 0 and mark.matches >= d.min_contains:
                _opop(s)
                return True  # enough matches and no upper bound: the rest cannot change it
        if self._next(s):
            return True
        verdict = self._settled(&s.frames[s.size - 1])
        _opop(s)
        return verdict

    cdef bint _unwind(self, Stack* s, object on_path) except -1:
        """After a failure: resume at the innermost mark that can still succeed, else False."""
        cdef Frame* f
        cdef bint verdict
        while s.size > 0:
            f = &s.frames[s.size - 1]
            if f.tag < D_MARK_ANY or f.tag > D_MARK_CONTAINS:
                if f.tag == D_EXIT:
                    on_path[PyLong_FromVoidPtr(f.value)] -= 1
                _opop(s)
                continue
            if self._next(s):
                return True
            verdict = self._settled(&s.frames[s.size - 1])
            _opop(s)
            if verdict:
                return True
        return False


class _CompiledDialectWalker(DialectWalker):
    """The dialect walk with its verdicts (``_valid_from``) taken from the C table."""

    __slots__ = ("_table",)

    def __init__(self, program):
        DialectWalker.__init__(self, program)
        self._table = _DialectTable(program, self._fobj, self._farr)

    def is_valid(self, value):
        return (<_DialectTable>self._table).valid_from(0, <PyObject*>value)

    def _valid_from(self, root, value):
        return (<_DialectTable>self._table).valid_from(root, <PyObject*>value)

    def _known_valid(self, index, item, path):
        # Only in the first PRECHECK_DEPTH levels: each verdict walks the item's whole
        # subtree, so asking at every level of a 100,000-deep value would be quadratic.
        cdef Py_ssize_t depth = 0
        while path is not None:
            depth += 1
            if depth > PRECHECK_DEPTH:
                return False
            path = path[0]
        cdef long left = MAX_NODES - 1
        if index < 0:
            return _lossless_walk(<PyObject*>item, (<_DialectTable>self._table)._fobj,
                                  (<_DialectTable>self._table)._farr, (<_DialectTable>self._table)._ancestors, &left)
        return (<_DialectTable>self._table).valid_from(index, <PyObject*>item)



# --- the violations walk: owned references, a path arena -------------------------------------

cdef enum:
    T_VISIT = 0
    T_EXTRAS = 1
    T_EXIT = 2
    T_NOOP = 3
    # Children at most this deep are first run through the verdict walk and skipped when
    # valid, so reporting costs what the invalid parts cost; deeper ones are walked
    # directly, which keeps a 100,000-deep value linear.
    PRECHECK_DEPTH = 32
    # violation codes of dsh_codegen.schema._program (asserted below)
    V_TYPE_C = 1
    V_FINITE_C = 2
    V_ENUM_C = 6
    V_CONST_C = 7
    V_REQUIRED_C = 8

assert (_program.V_TYPE, _program.V_FINITE, _program.V_ENUM, _program.V_CONST, _program.V_REQUIRED) == (1, 2, 6, 7, 8)


cdef struct VFrame:
    PyObject* value      # an owned reference: the walk runs Python code (messages), so it holds on
    int node             # -1: any JSON
    int tag
    Py_ssize_t path      # index into the path arena, -1 for the root


cdef struct PathSeg:
    Py_ssize_t parent
    Py_ssize_t depth
    PyObject* key        # an owned reference, or NULL for an array index
    Py_ssize_t index
    PyObject* text       # the key's ``_segment`` entry when known (borrowed, kept by its table), else NULL


cdef struct VStack:
    VFrame* items
    Py_ssize_t size
    Py_ssize_t cap
    bint heap


cdef struct Paths:
    PathSeg* items
    Py_ssize_t size
    Py_ssize_t cap
    bint heap            # items is malloc'ed (else a caller's inline buffer, or NULL with cap 0)


cdef int _vpush(VStack* s, PyObject* value, int node, int tag, Py_ssize_t path) except -1:
    if s.size == s.cap:
        s.items = <VFrame*>_grown(s.items, s.size, 2 * s.cap, s.heap, sizeof(VFrame))
        s.cap *= 2
        s.heap = True
    Py_INCREF(<object>value)
    s.items[s.size].value = value
    s.items[s.size].node = node
    s.items[s.size].tag = tag
    s.items[s.size].path = path
    s.size += 1
    return 0


cdef Py_ssize_t _path_add(Paths* p, Py_ssize_t parent, PyObject* key, Py_ssize_t index) except -2:
    cdef Py_ssize_t cap
    if p.size == p.cap:
        cap = 32 if p.cap == 0 else 2 * p.cap
        p.items = <PathSeg*>_grown(p.items, p.size, cap, p.heap, sizeof(PathSeg))
        p.cap = cap
        p.heap = True
    if key != NULL:
        Py_INCREF(<object>key)
    p.items[p.size].parent = parent
    p.items[p.size].depth = 1 if parent < 0 else p.items[parent].depth + 1
    p.items[p.size].key = key
    p.items[p.size].index = index
    p.items[p.size].text = NULL
    p.size += 1
    return p.size - 1


cdef inline Py_ssize_t _depth(Paths* p, Py_ssize_t at):
    return 0 if at < 0 else p.items[at].depth


cdef tuple _segments_of(Paths* p, Py_ssize_t at):
    """The path segments of arena entry ``at`` (``()`` for the root).

    A top-level declared name's path is the one-segment tuple its table text keeps
    (``_segment``): flat tool arguments report most violations there.
    """
    cdef Py_ssize_t i = _depth(p, at)
    cdef tuple out
    cdef object segment
    if i == 1 and p.items[at].text != NULL:
        return <tuple>PyTuple_GET_ITEM(p.items[at].text, 2)
    out = PyTuple_New(i)
    while at >= 0:
        i -= 1
        if p.items[at].key != NULL:
            segment = <object>p.items[at].key
        else:
            segment = p.items[at].index
        Py_INCREF(segment)
        PyTuple_SET_ITEM(out, i, segment)
        at = p.items[at].parent
    return out


cdef inline Py_ssize_t _put(object out, int kind, char* data, Py_ssize_t offset, PyObject* piece) except -1:
    """Copy the ``str`` ``piece`` into the new string ``out`` (of ``kind``, at ``data``) at ``offset``."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(piece)
    if PyUnicode_KIND(piece) == kind:  # the common case: plain bytes to copy
        memcpy(data + offset * kind, PyUnicode_DATA(piece), n * kind)
    else:
        PyUnicode_CopyCharacters(out, offset, piece, 0, n)
    return offset + n


cdef dict _SEGMENT_TEXT = {}
cdef str _QUOTE = '"'
# ``[i]`` for the array indices most paths hold (always safe to quote by adding quotes)
cdef Py_ssize_t _N_INDEX_TEXT = 256
cdef tuple _INDEX_TEXT = tuple(f"[{i}]" for i in range(_N_INDEX_TEXT))


cdef inline tuple _segment(object segment):
    """``(text, safe, (segment,))``: ``_program.segment_text`` through a plain dict (the common
    keys repeat), and the one-segment path a top-level segment's violations share."""
    cdef object found = _SEGMENT_TEXT.get(segment)
    if found is None:
        found = segment_text(segment) + ((segment,),)  # and the path of a top-level segment
        if len(_SEGMENT_TEXT) >= 8192:
            _SEGMENT_TEXT.clear()
        _SEGMENT_TEXT[segment] = found
    return <tuple>found


cdef object _ANY_NODE = _PyNode()  # what unconstrained values are checked against

# Objects with at most this many declared properties find a key by scanning their
# entries (hash first); larger ones keep a name -> position dict.
cdef enum:
    _SCAN_PROPS = 8


cdef class _Render:
    """Builds ``Violation``s exactly as ``dsh_codegen.schema._program.make_violation`` does."""

    cdef str root
    cdef bint root_safe
    cdef str quoted_root

    def __cinit__(self, str root, str alias):
        self.root, self.root_safe, self.quoted_root = root_text(root, alias)

    cdef str where(self, tuple segments, str prefix, str suffix):
        """``prefix + <quoted path> + suffix``, built in one go when quoting is just quotes."""
        cdef bint safe = self.root_safe
        cdef str text = self.root
        cdef str piece
        cdef tuple entry
        cdef bint first = True
        if not segments:
            return f"{prefix}{self.quoted_root}{suffix}"
        for segment in segments:
            entry = _segment(segment)
            piece = <str>entry[0]
            if first and not self.root and piece.startswith("."):
                piece = piece[1:]  # an unrooted path starts with its first key
            first = False
            text += piece
            safe = safe and entry[1]
        if safe:
            return f'{prefix}"{text}"{suffix}'
        return f"{prefix}{quote_path(text)}{suffix}"

    cdef inline PyObject* _piece(self, PathSeg* seg, bint* safe) noexcept:
        """The path text of ``seg`` when the arena or a table holds it (borrowed), else NULL.

        Clears ``safe`` when the piece needs more than quotes around the path.
        """
        cdef PyObject* piece
        if seg.key == NULL:
            return PyTuple_GET_ITEM(<PyObject*>_INDEX_TEXT, seg.index) if seg.index < _N_INDEX_TEXT else NULL
        if seg.text == NULL:
            return NULL
        if PyTuple_GET_ITEM(seg.text, 1) != Py_True:
            safe[0] = False
        piece = PyTuple_GET_ITEM(seg.text, 0)
        if seg.parent < 0 and PyUnicode_GET_LENGTH(<PyObject*>self.root) == 0 and PyUnicode_READ_CHAR(piece, 0) == 46:
            return seg.key  # an unrooted path starts with its first key: a ".key" piece is the key itself
        return piece

    cdef object _where_borrowed(self, Paths* p, Py_ssize_t at, str prefix, str suffix):
        """``where_at`` when every piece is borrowed from the arena or a table and quotes suffice, else None.

        The common case (declared names, small indices): no piece is referenced or
        listed; one pass sizes the text, a second writes the pieces from the end
        back. Nothing in between runs Python code, so the borrowed pieces stay.
        """
        cdef bint safe = self.root_safe
        cdef Py_ssize_t i = at, end
        cdef Py_ssize_t total = PyUnicode_GET_LENGTH(<PyObject*>prefix) + \
            PyUnicode_GET_LENGTH(<PyObject*>self.root) + PyUnicode_GET_LENGTH(<PyObject*>suffix) + 2
        cdef Py_UCS4 maxchar = max(PyUnicode_MAX_CHAR_VALUE(<PyObject*>prefix),
                                   PyUnicode_MAX_CHAR_VALUE(<PyObject*>self.root),
                                   PyUnicode_MAX_CHAR_VALUE(<PyObject*>suffix))
        cdef PyObject* piece
        cdef int kind
        cdef char* data
        while i >= 0:
            piece = self._piece(&p.items[i], &safe)
            if piece == NULL:
                return None
            total += PyUnicode_GET_LENGTH(piece)
            maxchar = max(maxchar, PyUnicode_MAX_CHAR_VALUE(piece))
            i = p.items[i].parent
        if not safe:
            return None
        out = PyUnicode_New(total, maxchar)
        kind = PyUnicode_KIND(<PyObject*>out)
        data = <char*>PyUnicode_DATA(<PyObject*>out)
        end = _put(out, kind, data, 0, <PyObject*>prefix)
        PyUnicode_WRITE(kind, data, end, 34)  # the opening quote
        _put(out, kind, data, end + 1, <PyObject*>self.root)
        end = total - PyUnicode_GET_LENGTH(<PyObject*>suffix) - 1
        PyUnicode_WRITE(kind, data, end, 34)  # the closing quote
        _put(out, kind, data, end + 1, <PyObject*>suffix)
        i = at
        while i >= 0:
            piece = self._piece(&p.items[i], &safe)
            end -= PyUnicode_GET_LENGTH(piece)
            _put(out, kind, data, end, piece)
            i = p.items[i].parent
        return out

    cdef str where_at(self, Paths* p, Py_ssize_t at, str prefix, str suffix):
        """``where`` for the path of arena entry ``at``, written straight into one new ``str``."""
        cdef Py_ssize_t k = _depth(p, at), i, total, offset
        cdef bint safe = self.root_safe
        cdef PyObject* pieces_inline[16]
        cdef PyObject** pieces = pieces_inline
        cdef tuple entry
        cdef object piece
        cdef PathSeg* seg
        cdef Py_UCS4 maxchar
        cdef int kind
        cdef char* data
        if k == 0:
            return prefix + self.quoted_root + suffix
        fast = self._where_borrowed(p, at, prefix, suffix)
        if fast is not None:
            return <str>fast
        if k > 16:
            pieces = <PyObject**>malloc(k * sizeof(PyObject*))
            if pieces == NULL:
                raise MemoryError()
        for i in range(k):
            pieces[i] = NULL
        try:
            # every piece is referenced while it is listed (the segment cache may drop entries)
            i = k - 1
            while at >= 0:
                seg = &p.items[at]
                if seg.key == NULL and seg.index < _N_INDEX_TEXT:
                    piece = _INDEX_TEXT[seg.index]
                else:
                    if seg.text != NULL:
                        entry = <tuple>seg.text
                    else:
                        entry = _segment(<object>seg.key if seg.key != NULL else seg.index)
                    piece = entry[0]
                    safe = safe and entry[1] is True
                if i == 0 and not self.root and seg.key != NULL and PyUnicode_READ_CHAR(<PyObject*>piece, 0) == 46:
                    # an unrooted path starts with its first key: a ".key" piece is the key itself
                    piece = <object>seg.key
                Py_INCREF(piece)
                pieces[i] = <PyObject*>piece
                i -= 1
                at = seg.parent
            if not safe:
                text = self.root + "".join([<object>pieces[i] for i in range(k)])
                return prefix + quote_path(text) + suffix
            total = PyUnicode_GET_LENGTH(<PyObject*>prefix) + PyUnicode_GET_LENGTH(<PyObject*>self.root) + \
                PyUnicode_GET_LENGTH(<PyObject*>suffix) + 2
            maxchar = max(PyUnicode_MAX_CHAR_VALUE(<PyObject*>prefix), PyUnicode_MAX_CHAR_VALUE(<PyObject*>self.root),
                          PyUnicode_MAX_CHAR_VALUE(<PyObject*>suffix))
            for i in range(k):
                total += PyUnicode_GET_LENGTH(pieces[i])
                maxchar = max(maxchar, PyUnicode_MAX_CHAR_VALUE(pieces[i]))
            out = PyUnicode_New(total, maxchar)
            kind = PyUnicode_KIND(<PyObject*>out)
            data = <char*>PyUnicode_DATA(<PyObject*>out)
            offset = _put(out, kind, data, 0, <PyObject*>prefix)
            PyUnicode_WRITE(kind, data, offset, 34)  # the opening quote
            offset = _put(out, kind, data, offset + 1, <PyObject*>self.root)
            for i in range(k):
                offset = _put(out, kind, data, offset, pieces[i])
            PyUnicode_WRITE(kind, data, offset, 34)
            _put(out, kind, data, offset + 1, <PyObject*>suffix)
            return <str>out
        finally:
            for i in range(k):
                Py_XDECREF(pieces[i])
            if pieces != pieces_inline:
                free(pieces)

    cdef object violation(self, int code, object node, tuple segments, object extra):
        cdef str suffix
        if code == V_REQUIRED_C:
            path = segments + (extra,)
            return _new_violation(path, "required", self.where(path, "missing required property ", ""))
        if code == V_TYPE_C:
            return _new_violation(segments, "type", self.where(segments, "", TYPE_SUFFIX[node.kind]))
        suffix = FIXED_SUFFIX.get(code)
        if suffix is None:
            if code == V_ONE_OF:
                suffix = f" must match exactly one oneOf branch (matched {extra})"
            else:
                suffix = node_suffix(code, node)
        return _new_violation(segments, KEYWORD_OF_CODE[code], self.where(segments, "", suffix))


cdef dict _RENDERS = {}


cdef _Render _VALUE_RENDER = _Render("value", "value")
cdef _Render _ARGS_RENDER = _Render("", "arguments")


cdef _Render _render_for(str root, str alias):
    """One renderer per (root, alias): building it quotes the root, so it is kept."""
    if root == "value" and alias == "value":
        return _VALUE_RENDER
    if not root and alias == "arguments":
        return _ARGS_RENDER
    cdef _Render r = _RENDERS.get((root, alias))
    if r is None:
        r = _Render(root, alias)
        if len(_RENDERS) < 64:
            _RENDERS[(root, alias)] = r
    return r


# The shared message tables as tuples indexed by violation code / node kind (no dict lookups).
cdef tuple _KEYWORD_BY_CODE = tuple(KEYWORD_OF_CODE.get(code, "") for code in range(16))
cdef tuple _FIXED_BY_CODE = tuple(FIXED_SUFFIX.get(code) for code in range(16))
cdef tuple _TYPE_SUFFIX_BY_KIND = tuple(TYPE_SUFFIX.get(kind, "") for kind in range(16))


# --- the reporting scan: one C walk that records violations, rendered afterwards ------------

cdef struct Rec:
    int code
    int node
    Py_ssize_t path      # the offending value's arena entry (for required: the missing name's)
    Py_ssize_t extra     # oneOf: the match count


cdef struct Recs:
    Rec* items
    Py_ssize_t size
    Py_ssize_t cap
    bint heap


cdef enum:
    INLINE_RECS = 8      # violations recorded before the record buffer moves to the heap
    INLINE_SEGS = 64     # path entries likewise


cdef int _rec_add(Recs* r, int code, int node, Py_ssize_t path, Py_ssize_t extra) except -1:
    if r.size == r.cap:
        r.items = <Rec*>_grown(r.items, r.size, 2 * r.cap, r.heap, sizeof(Rec))
        r.cap *= 2
        r.heap = True
    r.items[r.size].code = code
    r.items[r.size].node = node
    r.items[r.size].path = path
    r.items[r.size].extra = extra
    r.size += 1
    return 0


cdef inline void _buffers_open(Recs* recs, Rec* inline_recs, Paths* p, PathSeg* inline_segs) noexcept:
    """Start the record and path buffers in the caller's inline arrays (they move to the heap when full)."""
    recs.items = inline_recs
    recs.size = 0
    recs.cap = INLINE_RECS
    recs.heap = False
    p.items = inline_segs
    p.size = 0
    p.cap = INLINE_SEGS
    p.heap = False


cdef inline void _paths_close(Paths* p) noexcept:
    """Drop the path keys the arena references, and its heap copy."""
    cdef Py_ssize_t i
    for i in range(p.size):
        if p.items[i].key != NULL:
            Py_DECREF(<object>p.items[i].key)
    if p.heap:
        free(p.items)


cdef inline void _buffers_close(Recs* recs, Paths* p) noexcept:
    """Release the path arena and the heap copy of the record buffer."""
    _paths_close(p)
    if recs.heap:
        free(recs.items)


cdef inline int _spush(VStack* s, PyObject* value, int node, int tag, Py_ssize_t path) except -1:
    """``_vpush`` without the reference: the scan runs no Python code, so borrowing is safe."""
    if s.size == s.cap:
        s.items = <VFrame*>_grown(s.items, s.size, 2 * s.cap, s.heap, sizeof(VFrame))
        s.cap *= 2
        s.heap = True
    s.items[s.size].value = value
    s.items[s.size].node = node
    s.items[s.size].tag = tag
    s.items[s.size].path = path
    s.size += 1
    return 0


cdef inline object _new_violation(tuple path, str keyword, str message):
    """``_program.new_violation``: a ``Violation`` with its fields set as ``object.__setattr__`` sets them."""
    violation = object.__new__(_Violation)
    PyObject_GenericSetAttr(violation, "path", path)
    PyObject_GenericSetAttr(violation, "keyword", keyword)
    PyObject_GenericSetAttr(violation, "message", message)
    return violation


# --- the dialect's reporting scan: the report walk over _DialectTable, rendered afterwards ----

cdef enum:
    # Containers the scan of a recursive program visits before it hands the value to the
    # Python walk, which tracks the containers on the path: only a cyclic value gets there.
    SCAN_BUDGET = 1000000

# the codes whose record holds the index of the failed check (its argument is in the message)
cdef bint _IS_CHECK[64]
for _code in range(64):
    _IS_CHECK[_code] = _code in (V_MINIMUM, V_MAXIMUM, V_EXCLUSIVE_MINIMUM, V_EXCLUSIVE_MAXIMUM, V_MULTIPLE_OF,
                                 V_MIN_LENGTH, V_MAX_LENGTH, V_PATTERN, V_FORMAT, V_MIN_ITEMS, V_MAX_ITEMS,
                                 V_UNIQUE, V_MIN_PROPERTIES, V_MAX_PROPERTIES)
cdef tuple _DIALECT_KEYWORD_BY_CODE = tuple(
    dialect_keyword(code) if code in KEYWORD_OF_CODE or code in _program.DIALECT_KEYWORD else "" for code in range(64))


cdef inline void _vreverse(VStack* s, Py_ssize_t base) noexcept:
    """Reverse the frames from ``base`` up: members pushed in document order pop in it."""
    cdef Py_ssize_t lo = base, hi = s.size - 1
    cdef VFrame tmp
    while lo < hi:
        tmp = s.items[lo]
        s.items[lo] = s.items[hi]
        s.items[hi] = tmp
        lo += 1
        hi -= 1


cdef bint _verdict(_DialectTable t, int index, PyObject* v, long* budget) except -1:
    """``valid_from`` on the scan's container budget; a spent budget (``budget`` < 0) ends the scan.

    Each verdict of a recursive program would otherwise spend a budget of its own
    on a cyclic member, once per level above it.
    """
    cdef long left = MAX_NODES - 1
    return t._walk(index, v, None, budget, &left) == 1


cdef int _scan_child(_DialectTable t, VStack* s, Paths* p, int child, object item, Py_ssize_t at,
                     PyObject* key, Py_ssize_t index, PyObject* text) except -1:
    """``DialectWalker._push_child``: push a member to report on, unless it is a scalar its node accepts.

    A JSON scalar under a ``_flat`` node is decided in place, so a valid one costs
    no frame and no path entry. A container is always pushed: the scan itself tells
    a valid one (it records nothing), where a verdict walk first would walk every
    invalid member twice, and once more per level above it.
    """
    cdef int container = 0
    cdef DNode* c
    if _leaf(<PyObject*>item, &container):
        if child < 0:
            return 0
        c = &t._nodes[child]
        if c.trivial or (t._flat(c) and t._scalar_ok(c, <PyObject*>item)):
            return 0
    at = _path_add(p, at, key, index)
    p.items[at].text = text  # a declared name's path text, known from the table (else NULL)
    _vpush(s, <PyObject*>item, child, T_VISIT, at)
    return 0


cdef int _scan_object_own(_DialectTable t, Recs* recs, Paths* p, VFrame* f, DNode* d,
                          Py_ssize_t present) except -1:
    """``DialectWalker._collect_object_own`` up to the checks: missing required and dependent names.

    ``present`` is the number of declared required names the member loop met, or -1
    when it has not run yet: when it met them all, no name needs looking up.
    """
    cdef PyObject* v = f.value
    cdef Py_ssize_t i = 0, at
    if present < PyTuple_GET_SIZE(d.required):
        for name in <tuple>d.required:
            if PyDict_GetItemWithError(v, <PyObject*>name) == NULL:  # exact str keys: no user code
                if t._report_first == NULL:
                    _report_props_build(t)
                at = _path_add(p, f.path, <PyObject*>name, 0)
                # the name's path text, kept by the table (where_at then borrows it)
                p.items[at].text = PyTuple_GET_ITEM(PyList_GET_ITEM(<PyObject*>t._report_required, f.node), i)
                _rec_add(recs, C_REQUIRED, f.node, at, 0)
            i += 1
        i = 0
    for name, others in <tuple>d.dependent:
        if PyDict_GetItemWithError(v, <PyObject*>name) != NULL:
            for other in <tuple>others:
                if PyDict_GetItemWithError(v, <PyObject*>other) == NULL:
                    _rec_add(recs, C_DEPENDENT, f.node, _path_add(p, f.path, <PyObject*>other, 0), i)
        i += 1
    return 0


cdef int _scan_parts(_DialectTable t, Recs* recs, Paths* p, VFrame* f, DNode* d, int kind,
                     long* budget) except -1:
    """After the checks: propertyNames (objects) or contains (arrays)."""
    cdef PyObject* v = f.value
    cdef PyObject* key
    cdef PyObject* item
    cdef Py_ssize_t pos = 0, i, matches = 0
    if kind == K_OBJECT and d.property_names >= 0:
        while PyDict_Next(v, &pos, &key, &item):
            key_obj = <object>key
            if not _verdict(t, d.property_names, key, budget):
                _rec_add(recs, C_PROPERTY_NAME, f.node, _path_add(p, f.path, key, 0), 0)
    elif kind == K_ARRAY and d.contains >= 0:
        for i in range(_array_size(v)):
            item_obj = <object>_array_item(v, i)
            if _verdict(t, d.contains, <PyObject*>item_obj, budget):
                matches += 1
        if matches < d.min_contains:
            _rec_add(recs, C_MIN_CONTAINS, f.node, f.path, matches)
        elif d.max_contains >= 0 and matches > d.max_contains:
            _rec_add(recs, C_MAX_CONTAINS, f.node, f.path, matches)
    return 0


cdef int _scan_combinator(_DialectTable t, Recs* recs, VFrame* f, Py_ssize_t first, Py_ssize_t n, int code,
                          int kind, long* budget) except -2:
    """``DialectWalker._combinator``: record an anyOf/oneOf miss; the one branch to descend into, else -1."""
    cdef Py_ssize_t j
    cdef int branch, only = -1, possible = 0, mask = 0, shape, matched = 0
    for j in range(n):
        branch = t._indices[first + j]
        shape = t._nodes[branch].shape
        mask |= shape
        if (shape >> kind) & 1:
            possible += 1
            only = branch
    if possible == 1:
        return only
    if possible == 0 and mask:
        if mask & (1 << K_NUMBER):
            mask &= ~(1 << K_INTEGER)  # integer is part of number
        _rec_add(recs, C_TYPES, f.node, f.path, mask)
        return -1
    for j in range(n):
        branch = t._indices[first + j]
        if (t._nodes[branch].shape >> kind) & 1 and _verdict(t, branch, f.value, budget):
            matched += 1
            if code == C_ANY_OF:
                break
    if code == C_ANY_OF and not matched:
        _rec_add(recs, C_ANY_OF, f.node, f.path, 0)
    elif code == C_ONE_OF and matched != 1:
        _rec_add(recs, C_ONE_OF, f.node, f.path, matched)
    return -1


cdef int _report_props_build(_DialectTable t) except -1:
    """Fill ``t._report_props`` and ``t._report_first`` from the nodes' ``props`` dicts, in their order.

    Made on the first report, so a program that is only ever asked ``is_valid`` never
    pays for it; the member loop then reads names, hashes and children from an array.
    """
    cdef Py_ssize_t i, pos, c = 0, total = 0
    cdef PyObject* key
    cdef PyObject* code
    cdef PyObject* props
    cdef long entry
    for i in range(t._n):
        if t._nodes[i].props != NULL:
            total += PyDict_Size(t._nodes[i].props)
    rp = <ReportProp*>malloc(max(total, 1) * sizeof(ReportProp))
    first = <Py_ssize_t*>malloc((t._n + 1) * sizeof(Py_ssize_t))
    if rp == NULL or first == NULL:
        free(rp)
        free(first)
        raise MemoryError()
    keep = []
    required = []
    try:
        for i in range(t._n):
            required.append(tuple([_segment(name) for name in <tuple>t._nodes[i].required]))
            first[i] = c
            props = t._nodes[i].props
            pos = 0
            if props != NULL:
                while PyDict_Next(props, &pos, &key, &code):
                    entry = PyLong_AsLong(code)
                    rp[c].key = key
                    rp[c].hash = _str_hash(key)
                    rp[c].child = entry >> 1
                    rp[c].required = entry & 1
                    text = _segment(<object>key)
                    keep.append(text)
                    rp[c].text = <PyObject*>text
                    c += 1
    except BaseException:
        free(rp)
        free(first)
        raise
    first[t._n] = c
    if t._report_first != NULL:
        # another thread's first report built them while segment_text ran (it may switch
        # threads): theirs are in use, so these go
        free(rp)
        free(first)
        return 0
    t._report_keep = keep
    t._report_required = required
    t._report_props = rp
    t._report_first = first
    return 0


cdef inline bint _str_keys_from(PyObject* v, Py_ssize_t pos) noexcept:
    """Whether every key of the dict ``v`` from position ``pos`` on is an exact ``str``."""
    cdef PyObject* key
    cdef PyObject* item
    while PyDict_Next(v, &pos, &key, &item):
        if Py_TYPE(key) != &PyUnicode_Type:
            return False
    return True


cdef Py_ssize_t _scan_children(_DialectTable t, VStack* s, Paths* p, VFrame* f, DNode* d, int kind,
                               bint check_keys) except -1:
    """``DialectWalker._object_children`` / ``_array_children``: push the members to report on.

    For an object, returns how many declared required names it holds. Members go in
    declaration order; arguments mostly come in that order too, so each declared name
    is first compared with the value's next key, and looked up only when that differs.

    With ``check_keys``, the object's keys are not yet known to be exact ``str``
    (``_kind``'s test, left to this loop so the keys are walked once): each key is
    tested as the loop reaches it, and all the rest before the first lookup, which
    must not meet a key of another type (its ``__eq__`` is user code). Returns -2,
    having pushed only frames, when one is not: the value is not JSON.
    """
    cdef PyObject* v = f.value
    cdef PyObject* item
    cdef PyObject* next_key = NULL
    cdef PyObject* next_item = NULL
    cdef Py_ssize_t next_pos = 0, i, j, base, declared = 0, present = 0
    cdef ReportProp* rp
    cdef int child
    if kind == K_OBJECT:
        base = s.size
        if t._report_first == NULL:
            _report_props_build(t)
        if not PyDict_Next(v, &next_pos, &next_key, &next_item):
            next_key = NULL
        for j in range(t._report_first[f.node], t._report_first[f.node + 1]):
            rp = &t._report_props[j]
            if check_keys and next_key != NULL and Py_TYPE(next_key) != &PyUnicode_Type:
                return -2
            if next_key != NULL and _str_hash(next_key) == rp.hash and _str_eq(next_key, rp.key):
                item = next_item  # the value's next key is this name (keys are exact str: see _kind)
                if not PyDict_Next(v, &next_pos, &next_key, &next_item):
                    next_key = NULL
            else:
                if check_keys:
                    if not _str_keys_from(v, next_pos):
                        return -2
                    check_keys = False
                item = PyDict_GetItemWithError(v, rp.key)
            if item != NULL:
                declared += 1
                present += rp.required
                _scan_child(t, s, p, rp.child, <object>item, f.path, rp.key, 0, rp.text)
        if check_keys and next_key != NULL and (Py_TYPE(next_key) != &PyUnicode_Type or
                                                not _str_keys_from(v, next_pos)):
            return -2
        if declared < PyDict_Size(v):
            _vpush(s, v, f.node, T_EXTRAS, f.path)  # the undeclared keys, after the declared members
        _vreverse(s, base)
        return present
    for i in range(_array_size(v) - 1, -1, -1):
        child = t._indices[d.first_prefix + i] if i < d.n_prefix else d.items
        _scan_child(t, s, p, child, <object>_array_item(v, i), f.path, NULL, i, NULL)
    return 0


cdef int _scan_extras(_DialectTable t, VStack* s, Recs* recs, Paths* p, VFrame* f) except -1:
    """``DialectWalker._collect_extras``: the undeclared keys (closed) or their values (open)."""
    cdef DNode* d = &t._nodes[f.node]
    cdef PyObject* key
    cdef PyObject* item
    cdef Py_ssize_t pos = 0, base = s.size
    while PyDict_Next(f.value, &pos, &key, &item):
        if d.props != NULL and PyDict_GetItemWithError(d.props, key) != NULL:
            continue
        if d.closed:
            _rec_add(recs, C_ADDITIONAL, f.node, _path_add(p, f.path, key, 0), 0)
        else:
            _scan_child(t, s, p, d.additional, <object>item, f.path, key, 0, NULL)
    _vreverse(s, base)
    return 0


cdef int _scan_dialect(_DialectTable t, object value, Recs* recs, Paths* p) except -1:
    """``DialectWalker._collect`` over the C table: record every violation, in its order; 1 when done.

    Returns 0 to hand the value to the Python walk: a part that is not plain
    JSON (only that walk classifies it), or a recursive program's value past
    the container budget (a cycle, which only that walk reports). Frames own
    their values: the checks run Python code (patterns, big numbers).
    """
    cdef VFrame inline_frames[INLINE_FRAMES]
    cdef VStack s
    cdef VFrame f
    cdef DNode* d
    cdef PyObject* v
    cdef Py_ssize_t j, first, n
    cdef Py_ssize_t present
    cdef int kind, code, descend_any, descend_one, container = 0
    cdef bint members_first, defer_keys
    cdef long budget = SCAN_BUDGET
    cdef long left = MAX_NODES - 1  # what its lossless checks may reach (the value was measured first)
    cdef int result = 1
    cdef object held
    s.items = inline_frames
    s.size = 0
    s.cap = INLINE_FRAMES
    s.heap = False
    try:
        _vpush(&s, <PyObject*>value, 0, T_VISIT, -1)
        while s.size > 0:
            s.size -= 1
            f = s.items[s.size]
            held = <object>f.value  # takes a reference of its own ...
            Py_DECREF(held)         # ... so the frame's can go
            v = f.value
            if budget < 0:
                result = 0  # a cycle, or an enormous value: the Python walk tracks the path
                break
            if f.tag == T_EXTRAS:
                _scan_extras(t, &s, recs, p, &f)
                continue
            if f.node < 0 or t._nodes[f.node].trivial:
                if not t._lossless_value(v, &left):
                    result = 0
                    break
                continue
            d = &t._nodes[f.node]
            if t._recursive and (Py_TYPE(v) == &PyDict_Type or not _leaf(v, &container)):
                budget -= 1
            if d.false_:
                _rec_add(recs, C_FALSE, f.node, f.path, 0)
                continue
            # a plain dict under a _flat node that admits objects and has no enum/const: its
            # keys are tested (as _kind would) by the member loop, which walks them anyway
            defer_keys = (Py_TYPE(v) == &PyDict_Type and d.obj_members and t._flat(d) and
                          (not d.admit or (d.admit >> K_OBJECT) & 1) and
                          d.enum_keys == NULL and not d.has_const_key)
            kind = K_OBJECT if defer_keys else t._kind(v)
            if kind < 0:
                result = 0
                break
            if d.admit and not (d.admit >> kind) & 1:
                _rec_add(recs, C_TYPE, f.node, f.path, 0)
                continue
            code = t._enum_code(d, v, kind)
            if code:
                _rec_add(recs, code, f.node, f.path, 0)
                continue
            members_first = kind == K_OBJECT and d.obj_members and t._flat(d)
            if kind == K_OBJECT:
                # a _flat node pushes nothing but its members: pushed first, they tell which
                # required names are here (records, not frames, carry the order before them)
                present = _scan_children(t, &s, p, &f, d, kind, defer_keys) if members_first else -1
                if present == -2:
                    result = 0  # a key that is not a str: not JSON
                    break
                _scan_object_own(t, recs, p, &f, d, present)
            first, n = t._checks_of(d, kind)
            for j in range(first, first + n):
                if not t._check_ok(&t._checks[j], v, kind):
                    _rec_add(recs, t._checks[j].code, f.node, f.path, j)
            _scan_parts(t, recs, p, &f, d, kind, &budget)
            if members_first:
                continue
            descend_any = _scan_combinator(t, recs, &f, d.first_any, d.n_any, C_ANY_OF, kind, &budget) if d.n_any else -1
            descend_one = _scan_combinator(t, recs, &f, d.first_one, d.n_one, C_ONE_OF, kind, &budget) if d.n_one else -1
            # reported after the node's members: allOf, $ref, then the one possible branch of each combinator
            if descend_one >= 0:
                _vpush(&s, v, descend_one, T_VISIT, f.path)
            if descend_any >= 0:
                _vpush(&s, v, descend_any, T_VISIT, f.path)
            if d.ref >= 0:
                _vpush(&s, v, d.ref, T_VISIT, f.path)
            for j in range(d.n_all - 1, -1, -1):
                _vpush(&s, v, t._indices[d.first_all + j], T_VISIT, f.path)
            if (kind == K_OBJECT and d.obj_members) or (kind == K_ARRAY and d.arr_members):
                _scan_children(t, &s, p, &f, d, kind, False)
        if budget < 0:
            result = 0  # spent by the last frame's verdicts: their False may be the budget's
    finally:
        while s.size > 0:
            s.size -= 1
            Py_DECREF(<object>s.items[s.size].value)
        if s.heap:
            free(s.items)
    return result


cdef list _report_slots_of(_DialectTable t):
    """``t._report_slots``, made on first use: one slot per node (its type text), then one per check."""
    cdef Py_ssize_t n_checks = 0
    cdef DNode* last
    if t._report_slots is None:
        if t._n:
            last = &t._nodes[t._n - 1]
            n_checks = last.first_check + last.n_num + last.n_str + last.n_arr + last.n_obj
        t._report_slots = [None] * (t._n + n_checks)
    return t._report_slots


cdef str _dialect_suffix_of(_DialectTable t, Rec* rec):
    """The message after the path: per node and check (or type mask, or trigger) made once and kept.

    A failed check or type test (most reports) finds its text by index in a list; the
    rarer texts are kept in a dict by one int per (code, node, extra).
    """
    cdef int code = rec.code
    cdef Py_ssize_t key
    cdef list slots
    cdef Py_ssize_t slot = -1
    if code == C_TYPE:
        slot = rec.node
    elif _IS_CHECK[code]:
        slot = t._n + rec.extra
    if slot >= 0:
        slots = _report_slots_of(t)
        text = slots[slot]
        if text is None:
            node = t._py_nodes[rec.node]
            if code == C_TYPE:
                text = dialect_suffix(code, node, 0)
            else:
                text = dialect_suffix(code, node, (<tuple>t._checks[rec.extra].pair)[1])
            slots[slot] = text
        return <str>text
    if code == C_ONE_OF or code == C_MIN_CONTAINS or code == C_MAX_CONTAINS:
        return dialect_suffix(code, t._py_nodes[rec.node], rec.extra)  # a match count: not worth keeping
    if t._texts is None:
        t._texts = {}
    key = (rec.extra * 64 + code) * t._n + rec.node  # code < 64, extra >= 0: one int per (code, node, extra)
    text = t._texts.get(key)
    if text is None:
        node = t._py_nodes[rec.node]
        if code == C_DEPENDENT:
            text = dependent_suffix((<tuple>node.dependent)[rec.extra][0])
        elif _IS_CHECK[code]:
            text = dialect_suffix(code, node, (<tuple>t._checks[rec.extra].pair)[1])
        else:
            text = dialect_suffix(code, node, rec.extra)
        t._texts[key] = text
    return <str>text


cdef list _render_dialect(_DialectTable t, Recs* recs, Paths* p, _Render r):
    """The recorded violations as ``Violation``s, in record order (``dialect_violation``'s texts)."""
    cdef list out = PyList_New(recs.size)  # filled below, in order
    cdef Rec* rec
    cdef Py_ssize_t i
    cdef int code
    cdef str message
    for i in range(recs.size):
        rec = &recs.items[i]
        code = rec.code
        if code == C_REQUIRED:
            message = r.where_at(p, rec.path, "missing required property ", "")
        elif code == C_DEPENDENT:
            message = r.where_at(p, rec.path, "missing required property ", _dialect_suffix_of(t, rec))
        else:
            message = r.where_at(p, rec.path, "", _dialect_suffix_of(t, rec))
        violation = _new_violation(_segments_of(p, rec.path), <str>_DIALECT_KEYWORD_BY_CODE[code], message)
        Py_INCREF(violation)  # PyList_SET_ITEM steals a reference
        PyList_SET_ITEM(out, i, violation)
    return out


cdef list _report_dialect(_DialectTable t, object walker, object value, str root, str alias, _Render r):
    """Every violation of a dialect program: the C scan when it can tell, else ``walker``'s Python walk.

    ``r`` is ``_render_for(root, alias)`` when the caller knows it without comparing texts
    (``validate_args``), else None: found when there is something to render.

    No verdict walk first: the scan visits what it would (and records nothing for a
    valid value), so asking it first cost a second walk of every invalid value.
    """
    cdef Rec inline_recs[INLINE_RECS]
    cdef PathSeg inline_segs[INLINE_SEGS]
    cdef Recs recs
    cdef Paths p
    _buffers_open(&recs, inline_recs, &p, inline_segs)
    try:
        if _scan_dialect(t, value, &recs, &p):
            if recs.size == 0:
                return []
            return _render_dialect(t, &recs, &p, r if r is not None else _render_for(root, alias))
    finally:
        _buffers_close(&recs, &p)
    return walker.violations(value, root, alias)


cdef class CompiledValidator:
    """Validates values against one compiled schema (compiled twin).

    Build it with :func:`dsh_codegen.schema.compile_validator`. Instances are
    immutable and safe to share between threads.
    """

    cdef CNode* _nodes
    cdef Py_ssize_t _n
    cdef int* _branches
    cdef PropEntry* _props
    cdef Py_ssize_t* _req_pos     # per object node: the position of each required name, in order
    cdef Py_ssize_t _max_props
    cdef list _py_nodes
    cdef list _keep
    cdef PyTypeObject* _fobj
    cdef PyTypeObject* _farr
    cdef object _any_node
    cdef set _ancestors
    cdef list _suffixes           # per node: enum and const message suffixes, made on first use
    cdef object _dialect          # a DialectWalker for a program of the wider dialect, else None
    cdef _DialectTable _dtable    # its C verdict walk
    cdef bint _ready

    def __cinit__(self):
        self._nodes = NULL
        self._branches = NULL
        self._props = NULL
        self._req_pos = NULL

    def __init__(self, program):
        if not isinstance(program, _Program):
            raise TypeError("CompiledValidator needs a compiled Program (use compile_validator)")
        if self._ready:
            raise TypeError("CompiledValidator is immutable: it is initialized once")
        self._ready = True
        self._dialect = None
        if program.dialect:
            # the dialect walk runs this program; the C tables below serve the subset only
            self._dialect = _CompiledDialectWalker(program)
            self._dtable = self._dialect._table
            return
        cdef list nodes = list(program.nodes)
        cdef Py_ssize_t n = len(nodes), i, j, total = 0, b, total_props = 0, p, total_required = 0, q = 0
        cdef CNode* c
        cdef PropEntry* e
        fobj, farr = frozen_types()
        self._fobj = <PyTypeObject*>fobj if fobj is not None else NULL
        self._farr = <PyTypeObject*>farr if farr is not None else NULL
        self._keep = [fobj, farr]
        self._py_nodes = nodes
        self._any_node = _ANY_NODE
        self._ancestors = set()  # made here: the verdict walk must not allocate containers
        self._suffixes = [None] * (2 * n)
        cdef CompiledNode node
        for node in nodes:
            total += len(<tuple>node.branches)
            props = node.props
            if props:
                total_props += len(<dict>props)
                self._max_props = max(self._max_props, len(<dict>props))
            total_required += len(<tuple>node.required)
        self._nodes = <CNode*>malloc(max(n, 1) * sizeof(CNode))
        self._branches = <int*>malloc(max(total, 1) * sizeof(int))
        self._props = <PropEntry*>malloc(max(total_props, 1) * sizeof(PropEntry))
        self._req_pos = <Py_ssize_t*>malloc(max(total_required, 1) * sizeof(Py_ssize_t))
        if self._nodes == NULL or self._branches == NULL or self._props == NULL or self._req_pos == NULL:
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
            required = node.required
            c.n_required = len(<tuple>required)
            c.required = <PyObject*>required  # kept alive by the node, held in _py_nodes
            c.first_branch = b
            for branch in <tuple>node.branches:
                self._branches[b] = branch
                b += 1
            c.n_branches = b - c.first_branch
            c.props = NULL
            c.first_prop = p
            c.first_req = q
            c.n_props = 0
            c.enum_set = NULL
            c.const_val = NULL
            props = node.props
            if props:
                for name, code in (<dict>props).items():
                    e = &self._props[p]
                    e.name = <PyObject*>name  # kept alive by the node's props
                    e.hash = _str_hash(<PyObject*>name)
                    e.child = code >> 1
                    e.required = code & 1
                    p += 1
                c.n_props = p - c.first_prop
                if c.n_required:
                    # a required name is always a declared property (the compiler checked)
                    order = None
                    if c.n_props > _SCAN_PROPS:
                        order = {name: position for position, name in enumerate(<dict>props)}
                    for name in <tuple>required:
                        if order is not None:
                            self._req_pos[q] = order[name]
                        else:
                            for j in range(c.n_props):
                                if _str_eq(<PyObject*>name, self._props[c.first_prop + j].name):
                                    self._req_pos[q] = j
                                    break
                        q += 1
                if c.n_props > _SCAN_PROPS:
                    positions = {name: position for position, name in enumerate(<dict>props)}
                    self._keep.append(positions)
                    c.props = <PyObject*>positions
            enum = node.enum
            if enum is not None:
                c.enum_set = <PyObject*>enum  # kept alive by the node
            if c.has_const:
                const = node.const
                self._keep.append(const)
                c.const_val = <PyObject*>const

    cdef inline PropEntry* _match(self, CNode* n, PyObject* key, Py_ssize_t* cursor) noexcept:
        """The declared property named ``key`` (an exact ``str``), or NULL; ``cursor`` is its position.

        Values usually list their keys in the schema's order, so the property at
        ``cursor`` (the one after the last match) is tried before any lookup.
        """
        cdef PropEntry* e
        if cursor[0] < n.n_props:
            e = &self._props[n.first_prop + cursor[0]]
            if e.name == key or (_str_hash(key) == e.hash and _str_eq(key, e.name)):
                return e
        return self._find_prop(n, key, cursor)

    cdef inline PropEntry* _find_prop(self, CNode* n, PyObject* key, Py_ssize_t* position) noexcept:
        """The declared property named ``key`` (an exact ``str``), or NULL; sets its position."""
        cdef PyObject* found
        cdef Py_hash_t h
        cdef Py_ssize_t j
        cdef PropEntry* props = &self._props[n.first_prop]
        if n.props != NULL:
            # exact str keys only: the lookup cannot run user code or fail
            found = PyDict_GetItemWithError(n.props, key)
            if found == NULL:
                return NULL
            position[0] = PyLong_AsLong(found)
            return &props[position[0]]
        h = _str_hash(key)
        for j in range(n.n_props):
            if props[j].hash == h and _str_eq(key, props[j].name):
                position[0] = j
                return &props[j]
        return NULL

    cdef inline Py_ssize_t _gather(self, CNode* n, PyObject* v, PyObject** found) noexcept:
        """Each member of the object ``v`` to its declared property of ``n``, in one pass (no lookups).

        ``found[j]`` becomes the value of the ``j``-th declared property (borrowed), or
        NULL when absent. Returns how many declared properties are present, or -1 at
        the first key that is not an exact ``str`` (``found`` is then partly filled).
        """
        cdef Py_ssize_t j
        cdef Py_ssize_t pos = 0
        cdef Py_ssize_t cursor = 0
        cdef Py_ssize_t present = 0
        cdef PyObject* key
        cdef PyObject* item
        for j in range(n.n_props):
            found[j] = NULL
        while PyDict_Next(v, &pos, &key, &item):
            if Py_TYPE(key) != &PyUnicode_Type:
                return -1
            if self._match(n, key, &cursor) != NULL:
                found[cursor] = item
                cursor += 1
                present += 1
        return present

    def __dealloc__(self):
        free(self._nodes)
        free(self._branches)
        free(self._props)
        free(self._req_pos)

    # --- verdict -------------------------------------------------------------------------

    cdef inline bint _scalar_ok(self, CNode* n, PyObject* v) noexcept:
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

    cdef inline bint _is_object(self, PyObject* v) noexcept:
        cdef PyTypeObject* t = Py_TYPE(v)
        return t == &PyDict_Type or (t == self._fobj and t != NULL)

    cdef inline bint _is_array(self, PyObject* v) noexcept:
        cdef PyTypeObject* t = Py_TYPE(v)
        return t == &PyList_Type or t == &PyTuple_Type or (t == self._farr and t != NULL)

    cdef bint _lossless(self, PyObject* root, long* left=NULL) except -1:
        """Whether ``root`` is lossless JSON, without building objects (cycles: the careful walk).

        ``left``: the walk budget to spend (a fresh one when NULL: the report walks,
        which run on a value measured first).
        """
        cdef long fresh = MAX_NODES - 1
        return _lossless_walk(root, self._fobj, self._farr, self._ancestors, left if left != NULL else &fresh)

    cpdef bint is_valid(self, object value) except -1:
        """Whether ``value`` is lossless JSON matching the schema. Never raises; builds no violation."""
        if self._dtable is not None:
            return self._dtable.valid_from(0, <PyObject*>value)
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
        cdef PropEntry* props
        cdef PropEntry* e
        cdef Py_ssize_t pos, i, size, seen, cursor, base
        cdef int container = 0
        cdef int index
        cdef bint ok
        cdef bint result = True
        cdef long left = MAX_NODES - 1  # the walk budget (``_program.WalkBudget``), the root counted
        s.frames = inline_frames
        s.size = 0
        s.cap = INLINE_FRAMES
        s.heap = False
        s.left = &left
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
                        ok = self._lossless(v, &left)
                    else:
                        n = &self._nodes[index]
                        if n.inline_:
                            ok = self._scalar_ok(n, v)
                        elif n.kind == K_OBJECT:
                            ok = self._is_object(v) and _spend(&left, PyDict_Size(v))
                            base = s.size
                            if ok:
                                pos = 0
                                seen = 0
                                cursor = 0
                                props = &self._props[n.first_prop]
                                while PyDict_Next(v, &pos, &key, &item):
                                    if Py_TYPE(key) != &PyUnicode_Type:
                                        ok = False
                                        break
                                    e = self._match(n, key, &cursor)
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
                                if ok and s.size - base > 1:
                                    _reverse(&s, base)
                        elif n.kind == K_ARRAY:
                            ok = self._is_array(v)
                            base = s.size
                            if ok:
                                if Py_TYPE(v) == &PyTuple_Type:
                                    size = PyTuple_GET_SIZE(v)
                                else:
                                    size = PyList_GET_SIZE(v)
                                ok = _spend(&left, size)
                            if ok:
                                child = &self._nodes[n.items] if n.items >= 0 else NULL
                                if child != NULL and not child.inline_:
                                    # pushed last to first, so the first item is checked first
                                    for i in range(size - 1, -1, -1):
                                        item = PyTuple_GET_ITEM(v, i) if Py_TYPE(v) == &PyTuple_Type else PyList_GET_ITEM(v, i)
                                        _push(&s, item, n.items, F_VISIT)
                                else:
                                    for i in range(size):
                                        item = PyTuple_GET_ITEM(v, i) if Py_TYPE(v) == &PyTuple_Type else PyList_GET_ITEM(v, i)
                                        if child == NULL:
                                            if not _leaf(item, &container):
                                                if not container:
                                                    ok = False
                                                    break
                                                _push(&s, item, -1, F_VISIT)
                                        elif not self._scalar_ok(child, item):
                                            ok = False
                                            break
                        elif n.kind == K_ONE_OF:
                            _push(&s, v, index, F_MARK)
                            _push(&s, v, self._branches[n.first_branch], F_VISIT)
                            continue
                        else:  # K_ANY
                            ok = self._lossless(v, &left)
                    if ok:
                        continue
                # failure: discard frames up to the innermost oneOf that can still succeed
                # (a spent walk budget ends the walk: no other branch is tried)
                ok = False
                while s.size > 0 and left >= 0:
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
        """Every violation of ``value``, in the order of guarantee 97 (docs/guarantees.md), paths rooted at ``path``.

        Order: for an object, its own missing required properties first, then
        its declared properties in declaration order (each subtree complete),
        then undeclared keys in the value's order; array items in index order.
        Never raises for any ``value``.
        """
        if not _within_budget(<PyObject*>value, self._fobj, self._farr):
            return [budget_violation(path, path)]
        if self._dialect is not None:
            return _report_dialect(self._dtable, self._dialect, value, path, path, None)
        return self._report(value, path, path)

    def validate_args(self, object args):
        """Violations of tool arguments: ``"arguments"`` names the root, children are unrooted."""
        if not _within_budget(<PyObject*>args, self._fobj, self._farr):
            return [budget_violation("", "arguments")]
        if self._dialect is not None:
            return _report_dialect(self._dtable, self._dialect, args, "", "arguments", _ARGS_RENDER)
        return self._report(args, "", "arguments")

    cdef list _report(self, object value, str root, str alias):
        """Every violation: the C scan when it can tell, else the general collecting walk."""
        cdef Rec inline_recs[INLINE_RECS]
        cdef PathSeg inline_segs[INLINE_SEGS]
        cdef Recs recs
        cdef Paths p
        cdef int done
        _buffers_open(&recs, inline_recs, &p, inline_segs)
        try:
            done = self._scan(<PyObject*>value, &recs, &p)
            if done and recs.size == 0:
                return []
            if done:
                return self._render(&recs, &p, _render_for(root, alias))
        finally:
            _buffers_close(&recs, &p)
        # something only Python can classify (a non-JSON value): the general walk reports it
        if self._valid_from(0, <PyObject*>value):
            return []
        return self._collect(value, root, alias)

    cdef int _plain_mismatch(self, int kind, PyObject* v) noexcept:
        """``_mismatch`` for plain JSON values, 0 where it would need Python (the scan gives up)."""
        cdef PyTypeObject* t = Py_TYPE(v)
        if t == &PyUnicode_Type or t == &PyBool_Type or v == Py_None or t == &PyList_Type or t == &PyTuple_Type:
            return V_TYPE_C
        if t == &PyDict_Type and kind != K_OBJECT:
            return V_TYPE_C
        if t == &PyLong_Type and _int_ok(v):
            return V_TYPE_C
        if t == &PyFloat_Type:
            if (kind == K_NUMBER or kind == K_INTEGER) and not _float_ok(PyFloat_AS_DOUBLE(v)):
                return V_FINITE_C
            return V_TYPE_C
        return 0

    cdef int _plain_scalar_code(self, CNode* n, PyObject* v) noexcept:
        """``_scalar_code`` for a value known to fail ``n``; 0 where it would need Python."""
        cdef CNode bare = n[0]
        bare.enum_set = NULL
        bare.const_val = NULL
        if not self._scalar_ok(&bare, v):
            return self._plain_mismatch(n.kind, v)
        if n.enum_set != NULL:
            bare.enum_set = n.enum_set
            if not self._scalar_ok(&bare, v):
                return V_ENUM_C
        return V_CONST_C

    cdef int _scan(self, PyObject* value, Recs* recs, Paths* p) except -1:
        """Walk ``value`` once, recording every violation in guarantee 97's order; 1 when done.

        Runs no Python code and creates no Python object (so the borrowed references
        it walks stay valid); path keys are referenced by the arena. Returns 0 when
        a violation needs Python to classify (a value that is not plain JSON): the
        caller then uses the general walk.
        """
        cdef VFrame inline_frames[INLINE_FRAMES]
        cdef VStack s
        cdef VFrame f
        cdef CNode* n
        cdef CNode* child
        cdef PropEntry* e
        cdef PyObject* v
        cdef PyObject* key
        cdef PyObject* item
        cdef PyObject* found_inline[16]
        cdef PyObject** found = found_inline
        cdef Py_ssize_t pos, i, j, size, matched, present, position
        cdef int code, container = 0
        cdef bint tuple_, shallow
        cdef int result = 1
        s.items = inline_frames
        s.size = 0
        s.cap = INLINE_FRAMES
        s.heap = False
        if self._max_props > 16:
            found = <PyObject**>malloc(self._max_props * sizeof(PyObject*))
            if found == NULL:
                raise MemoryError()
        try:
            _spush(&s, value, 0, T_VISIT, -1)
            while s.size > 0:
                s.size -= 1
                f = s.items[s.size]
                v = f.value
                if f.tag == T_EXTRAS:
                    # after the declared children: undeclared keys (closed) or their values (open)
                    n = &self._nodes[f.node]
                    pos = 0
                    while PyDict_Next(v, &pos, &key, &item):
                        if self._find_prop(n, key, &position) != NULL:
                            continue
                        if n.closed:
                            _rec_add(recs, V_ADDITIONAL, f.node, _path_add(p, f.path, key, 0), 0)
                        elif not self._lossless(item):
                            result = 0
                            break
                    if not result:
                        break
                    continue
                if f.node < 0:
                    if not self._lossless(v):
                        result = 0
                        break
                    continue
                n = &self._nodes[f.node]
                if n.inline_:
                    if not self._scalar_ok(n, v):
                        code = self._plain_scalar_code(n, v)
                        if code == 0:
                            result = 0
                            break
                        _rec_add(recs, code, f.node, f.path, 0)
                elif n.kind == K_OBJECT:
                    if not self._is_object(v):
                        code = self._plain_mismatch(K_OBJECT, v)
                        if code == 0:
                            result = 0
                            break
                        _rec_add(recs, code, f.node, f.path, 0)
                        continue
                    present = self._gather(n, v, found)
                    if present < 0:
                        _rec_add(recs, V_LOSSLESS_OBJECT, f.node, f.path, 0)
                        continue
                    if present != PyDict_Size(v):
                        _spush(&s, v, f.node, T_EXTRAS, f.path)
                    # declared children last to first, so they are visited in declaration order;
                    # a child the verdict walk accepts is skipped (that walk is the cheaper one)
                    shallow = _depth(p, f.path) < PRECHECK_DEPTH
                    for j in range(n.n_props - 1, -1, -1):
                        item = found[j]
                        if item != NULL:
                            e = &self._props[n.first_prop + j]
                            child = &self._nodes[e.child]
                            if child.inline_:
                                if self._scalar_ok(child, item):
                                    continue
                            elif shallow and self._valid_from(e.child, item):
                                continue
                            _spush(&s, item, e.child, T_VISIT, _path_add(p, f.path, e.name, 0))
                    # the object's own missing required properties come before its children's
                    for j in range(n.n_required):
                        position = self._req_pos[n.first_req + j]
                        if found[position] == NULL:
                            _rec_add(recs, V_REQUIRED_C, f.node,
                                     _path_add(p, f.path, self._props[n.first_prop + position].name, 0), 0)
                elif n.kind == K_ARRAY:
                    if not self._is_array(v):
                        code = self._plain_mismatch(K_ARRAY, v)
                        if code == 0:
                            result = 0
                            break
                        _rec_add(recs, code, f.node, f.path, 0)
                        continue
                    tuple_ = Py_TYPE(v) == &PyTuple_Type
                    size = PyTuple_GET_SIZE(v) if tuple_ else PyList_GET_SIZE(v)
                    child = &self._nodes[n.items] if n.items >= 0 else NULL
                    if child == NULL:
                        for i in range(size):
                            item = PyTuple_GET_ITEM(v, i) if tuple_ else PyList_GET_ITEM(v, i)
                            if not self._lossless(item):
                                result = 0
                                break
                        if not result:
                            break
                    elif child.inline_:
                        # leaves: report in index order right away (nothing comes between them)
                        for i in range(size):
                            item = PyTuple_GET_ITEM(v, i) if tuple_ else PyList_GET_ITEM(v, i)
                            if self._scalar_ok(child, item):
                                continue
                            code = self._plain_scalar_code(child, item)
                            if code == 0:
                                result = 0
                                break
                            _rec_add(recs, code, n.items, _path_add(p, f.path, NULL, i), 0)
                        if not result:
                            break
                    else:
                        shallow = _depth(p, f.path) < PRECHECK_DEPTH
                        for i in range(size - 1, -1, -1):
                            item = PyTuple_GET_ITEM(v, i) if tuple_ else PyList_GET_ITEM(v, i)
                            if shallow and self._valid_from(n.items, item):
                                continue
                            _spush(&s, item, n.items, T_VISIT, _path_add(p, f.path, NULL, i))
                elif n.kind == K_ONE_OF:
                    matched = 0
                    for i in range(n.n_branches):
                        if self._valid_from(self._branches[n.first_branch + i], v):
                            matched += 1
                    if matched != 1:
                        _rec_add(recs, V_ONE_OF, f.node, f.path, matched)
                elif not self._lossless(v):
                    result = 0
                    break
        finally:
            if s.heap:
                free(s.items)
            if found != found_inline:
                free(found)
        return result

    cdef list _render(self, Recs* recs, Paths* p, _Render r):
        """The recorded violations as ``Violation``s, in record order."""
        cdef list out = []
        cdef Rec* rec
        cdef Py_ssize_t i
        cdef int code
        cdef tuple segments
        cdef str suffix
        for i in range(recs.size):
            rec = &recs.items[i]
            code = rec.code
            segments = _segments_of(p, rec.path)
            if code == V_REQUIRED_C:
                out.append(_new_violation(segments, "required",
                                          r.where_at(p, rec.path, "missing required property ", "")))
                continue
            if code == V_TYPE_C:
                suffix = <str>_TYPE_SUFFIX_BY_KIND[self._nodes[rec.node].kind]
            elif code == V_ONE_OF:
                suffix = f" must match exactly one oneOf branch (matched {rec.extra})"
            else:
                suffix = <str?>_FIXED_BY_CODE[code] if _FIXED_BY_CODE[code] is not None else self._suffix(code, rec.node)
            out.append(_new_violation(segments, <str>_KEYWORD_BY_CODE[code], r.where_at(p, rec.path, "", suffix)))
        return out

    cdef str _suffix(self, int code, int node):
        """The enum/const suffix of ``node``, kept per node after the first use."""
        cdef Py_ssize_t at = 2 * node + (code == V_CONST_C)
        cdef object text = self._suffixes[at]
        if text is None:
            text = node_suffix(code, self._py_nodes[node])
            self._suffixes[at] = text
        return <str>text

    cdef int _mismatch(self, int kind, PyObject* v) except -1:
        """``mismatch_code`` of the shared module, without the call for plain JSON values."""
        cdef int code = self._plain_mismatch(kind, v)
        if code:
            return code
        return mismatch_code(kind, <object>v)

    cdef int _scalar_code(self, CNode* n, PyObject* v) except -1:
        """0 when ``v`` satisfies the scalar node, else the first failing rule: type, enum, const."""
        cdef CNode bare
        if self._scalar_ok(n, v):
            return 0
        bare = n[0]
        bare.enum_set = NULL
        bare.const_val = NULL
        if not self._scalar_ok(&bare, v):
            return self._mismatch(n.kind, v)
        if n.enum_set != NULL:
            bare.enum_set = n.enum_set
            if not self._scalar_ok(&bare, v):
                return V_ENUM_C
        return V_CONST_C

    cdef int _known_valid(self, int child, PyObject* item, Py_ssize_t depth) except -1:
        """Whether ``item`` is cheaply known to satisfy node ``child`` (-1: any JSON): skip it."""
        cdef int container = 0
        cdef CNode* n
        if child < 0:
            if _leaf(item, &container):
                return True
            return container and depth < PRECHECK_DEPTH and self._lossless(item)
        n = &self._nodes[child]
        if n.inline_:
            return self._scalar_ok(n, item)
        return depth < PRECHECK_DEPTH and self._valid_from(child, item)

    cdef list _collect(self, object value, str root, str alias):
        cdef VStack s
        cdef Paths p
        cdef VFrame f
        cdef CNode* n
        cdef PropEntry* e
        cdef PyObject* v
        cdef PyObject* key
        cdef PyObject* item
        cdef Py_ssize_t pos, i, j, size, seg, matched, extras_at, depth, present, position
        cdef PyObject* found_inline[16]
        cdef PyObject** found = found_inline
        cdef int code, container = 0
        cdef object vobj, node
        cdef list out = []
        cdef list members
        cdef set on_path = None  # made on the first unconstrained container
        cdef _Render r = _render_for(root, alias)
        cdef VFrame inline_frames[INLINE_FRAMES]
        s.items = inline_frames
        s.size = 0
        s.cap = INLINE_FRAMES
        s.heap = False
        p.items = NULL
        p.size = 0
        p.cap = 0
        p.heap = False
        if self._max_props > 16:
            found = <PyObject**>malloc(self._max_props * sizeof(PyObject*))
            if found == NULL:
                raise MemoryError()
        try:
            _vpush(&s, <PyObject*>value, 0, T_VISIT, -1)
            while s.size > 0:
                s.size -= 1
                f = s.items[s.size]
                vobj = <object>f.value  # takes a reference of its own ...
                Py_DECREF(vobj)         # ... so the frame's can go
                v = f.value
                if f.tag == T_EXIT:
                    on_path.discard(id(vobj))
                    continue
                if f.tag == T_NOOP:
                    continue
                if f.tag == T_EXTRAS:
                    self._extras(&s, &p, f, vobj, out, r)
                    continue
                if f.node < 0:
                    if on_path is None:
                        on_path = set()
                    self._collect_any(&s, &p, f, vobj, on_path, out, r)
                    continue
                n = &self._nodes[f.node]
                node = self._py_nodes[f.node]
                if n.inline_:
                    code = self._scalar_code(n, v)
                    if code:
                        out.append(r.violation(code, node, _segments_of(&p, f.path), None))
                elif n.kind == K_OBJECT:
                    if not self._is_object(v):
                        out.append(r.violation(self._mismatch(K_OBJECT, v), node, _segments_of(&p, f.path), None))
                        continue
                    present = self._gather(n, v, found)
                    if present < 0:
                        out.append(r.violation(V_LOSSLESS_OBJECT, node, _segments_of(&p, f.path), None))
                        continue
                    # push first (frames own their values), report afterwards (that runs Python)
                    extras_at = s.size
                    _vpush(&s, v, f.node, T_EXTRAS, f.path)
                    depth = _depth(&p, f.path)
                    for j in range(n.n_props - 1, -1, -1):
                        item = found[j]
                        if item != NULL:
                            e = &self._props[n.first_prop + j]
                            if not self._known_valid(e.child, item, depth):
                                seg = _path_add(&p, f.path, e.name, 0)
                                _vpush(&s, item, e.child, T_VISIT, seg)
                    if present == PyDict_Size(v):
                        s.items[extras_at].tag = T_NOOP  # no undeclared key to report or check
                    for j in range(n.n_required):
                        position = self._req_pos[n.first_req + j]
                        if found[position] == NULL:
                            name_obj = <object>self._props[n.first_prop + position].name
                            out.append(r.violation(V_REQUIRED_C, node, _segments_of(&p, f.path), name_obj))
                elif n.kind == K_ARRAY:
                    if not self._is_array(v):
                        out.append(r.violation(self._mismatch(K_ARRAY, v), node, _segments_of(&p, f.path), None))
                        continue
                    size = PyTuple_GET_SIZE(v) if Py_TYPE(v) == &PyTuple_Type else PyList_GET_SIZE(v)
                    depth = _depth(&p, f.path)
                    for i in range(size - 1, -1, -1):
                        item = PyTuple_GET_ITEM(v, i) if Py_TYPE(v) == &PyTuple_Type else PyList_GET_ITEM(v, i)
                        if not self._known_valid(n.items, item, depth):
                            seg = _path_add(&p, f.path, NULL, i)
                            _vpush(&s, item, n.items, T_VISIT, seg)
                elif n.kind == K_ONE_OF:
                    matched = 0
                    for i in range(n.n_branches):
                        if self._valid_from(self._branches[n.first_branch + i], v):
                            matched += 1
                    if matched != 1:
                        out.append(r.violation(V_ONE_OF, node, _segments_of(&p, f.path), matched))
                else:
                    if on_path is None:
                        on_path = set()
                    self._collect_any(&s, &p, f, vobj, on_path, out, r)
        finally:
            while s.size > 0:
                s.size -= 1
                Py_DECREF(<object>s.items[s.size].value)
            _paths_close(&p)
            if s.heap:
                free(s.items)
            if found != found_inline:
                free(found)
        return out

    cdef int _extras(self, VStack* s, Paths* p, VFrame f, object vobj, list out, _Render r) except -1:
        """After an object's declared children: its undeclared keys (closed) or their values (open)."""
        cdef CNode* n = &self._nodes[f.node]
        cdef PyObject* key
        cdef PyObject* item
        cdef Py_ssize_t pos = 0, i, position = 0, depth
        cdef list extras = []
        node = self._py_nodes[f.node]
        while PyDict_Next(f.value, &pos, &key, &item):
            if self._find_prop(n, key, &position) == NULL:
                extras.append((<object>key, <object>item))
        if n.closed:
            if extras:
                segments = _segments_of(p, f.path)
                for key_obj, _ in extras:
                    out.append(r.violation(V_ADDITIONAL, node, segments + (key_obj,), None))
            return 0
        depth = _depth(p, f.path)
        for i in range(len(extras) - 1, -1, -1):
            key_obj, item_obj = extras[i]
            if not self._known_valid(-1, <PyObject*>item_obj, depth):
                _vpush(s, <PyObject*>item_obj, -1, T_VISIT, _path_add(p, f.path, <PyObject*>key_obj, 0))
        return 0

    cdef int _collect_any(self, VStack* s, Paths* p, VFrame f, object vobj, set on_path, list out,
                          _Render r) except -1:
        """Where any JSON is allowed: report every part that is not lossless JSON."""
        cdef PyObject* v = f.value
        cdef PyObject* key
        cdef PyObject* item
        cdef Py_ssize_t pos = 0, i, size
        cdef int container = 0
        cdef list members
        if _leaf(v, &container):
            return 0
        if container and self._is_object(v):
            members = []
            while PyDict_Next(v, &pos, &key, &item):
                if Py_TYPE(key) != &PyUnicode_Type:
                    out.append(r.violation(V_LOSSLESS_OBJECT, self._any_node, _segments_of(p, f.path), None))
                    return 0
                members.append((<object>key, <object>item))
        elif container and self._is_array(v):
            members = None
        else:
            out.append(r.violation(any_code(vobj), self._any_node, _segments_of(p, f.path), None))
            return 0
        if id(vobj) in on_path:
            out.append(r.violation(V_LOSSLESS_VALUE, self._any_node, _segments_of(p, f.path), None))  # inside itself
            return 0
        on_path.add(id(vobj))
        _vpush(s, v, -1, T_EXIT, f.path)
        if members is not None:
            for i in range(len(members) - 1, -1, -1):
                key_obj, item_obj = members[i]
                _vpush(s, <PyObject*>item_obj, -1, T_VISIT, _path_add(p, f.path, <PyObject*>key_obj, 0))
        else:
            size = PyTuple_GET_SIZE(v) if Py_TYPE(v) == &PyTuple_Type else PyList_GET_SIZE(v)
            for i in range(size - 1, -1, -1):
                item = PyTuple_GET_ITEM(v, i) if Py_TYPE(v) == &PyTuple_Type else PyList_GET_ITEM(v, i)
                _vpush(s, item, -1, T_VISIT, _path_add(p, f.path, NULL, i))
        return 0


# --- compile-time help for dsh_codegen.schema._dialect_check (the compiled twin's fast paths) -------

cdef str _KEY_TYPE = "type"
cdef str _KEY_DESCRIPTION = "description"
cdef str _KEY_TITLE = "title"
cdef tuple _SCALAR_NAMES = ("null", "boolean", "integer", "number", "string")  # kinds 1..5
assert tuple(_program.KIND_OF_TYPE[name] for name in _SCALAR_NAMES) == (1, 2, 3, 4, 5)


cdef int _leaf_kind(PyObject* child) noexcept:
    """``_compile._Checker._plain_leaf``'s test: the scalar kind of a plain leaf, else -1.

    A plain leaf is an exact ``dict`` whose keys are exact ``str`` among ``type``,
    ``description``, ``title``, with a scalar type name and string annotations.
    Only exact types are looked at, so no user code runs.
    """
    cdef Py_ssize_t pos = 0, i
    cdef PyObject* key
    cdef PyObject* value
    cdef int kind = -1
    if Py_TYPE(child) != &PyDict_Type:
        return -1
    while PyDict_Next(child, &pos, &key, &value):
        if Py_TYPE(key) != &PyUnicode_Type or Py_TYPE(value) != &PyUnicode_Type:
            return -1
        if _str_eq(key, <PyObject*>_KEY_TYPE):
            for i in range(5):
                if _str_eq(value, PyTuple_GET_ITEM(<PyObject*>_SCALAR_NAMES, i)):
                    kind = <int>i + 1
                    break
            else:
                return -1
        elif not (_str_eq(key, <PyObject*>_KEY_DESCRIPTION) or _str_eq(key, <PyObject*>_KEY_TITLE)):
            return -1
    return kind


def str_keys(dict schema):
    """Whether every key of an exact ``dict`` is an exact ``str`` (``_dialect_check._check_node``'s key test)."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* key
    cdef PyObject* value
    while PyDict_Next(<PyObject*>schema, &pos, &key, &value):
        if Py_TYPE(key) != &PyUnicode_Type:
            return False
    return True


def fill_props(dict declared, dict props, list children, object props_path, list nodes, dict leaves,
               object make_leaf):
    """The property loop of ``_dialect_check._check_properties`` for an exact ``dict``.

    For each ``(name, child)`` in order: a plain leaf maps ``name`` to its kind's
    shared inline node (``leaves``: kind -> index, made by ``make_leaf(kind)`` on
    first use and appended to ``nodes``) shifted left once; any other child maps to 0 and is appended to
    ``children`` as ``(child, (props_path, name), name)``. Returns False at the
    first key that is not an exact ``str`` (what was filled before it stays).
    """
    cdef Py_ssize_t pos = 0
    cdef PyObject* key
    cdef PyObject* child
    cdef int kind
    cdef object index
    while PyDict_Next(<PyObject*>declared, &pos, &key, &child):
        if Py_TYPE(key) != &PyUnicode_Type:
            return False
        name = <object>key    # referenced before anything below can allocate
        child_obj = <object>child
        kind = _leaf_kind(child)
        if kind < 0:
            props[name] = 0
            children.append((child_obj, (props_path, name), name))
            continue
        index = leaves.get(kind)
        if index is None:
            index = len(nodes)
            nodes.append(make_leaf(kind))
            leaves[kind] = index
        props[name] = <Py_ssize_t>index << 1
    return True
