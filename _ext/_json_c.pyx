# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Lossless JSON, the compiled twin (mirrors ``dsh_codegen/json/_json_py.py`` name for name).

Walks use an explicit C array of frames holding strong references, never C
recursion, so 100,000-deep values need memory linear in their size and no
recursion limit. Traversal order, error texts (built by
``dsh_codegen.json._shared``) and results are those of the Python twin; a
differential test pins it. Only exact types are inspected, so no user code
runs during a walk.
"""

from cpython.ref cimport PyObject, Py_XDECREF
from libc.math cimport isfinite, signbit
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memset

import sys

from dsh_codegen.json._shared import (
    FrozenJsonArray,
    FrozenJsonObject,
    LosslessJsonError,
    cycle_error,
    float_error,
    int_too_long,
    int_too_long_error,
    key_error,
    option_error,
    type_error,
    unsafe_int_error,
)

__all__ = [
    "FrozenJsonArray",
    "FrozenJsonObject",
    "LosslessJsonError",
    "dump_canonical_json",
    "is_json_value",
    "render_json_pretty",
    "snapshot_json",
]


cdef extern from *:
    """
    #include <math.h>
    #include <stdint.h>
    #include <string.h>
    /* New empty instances of our frozen subclasses, made by the base type's own
       tp_new: the classes' Python-level __new__ (which validates) is for users. */
    static PyObject *dsh_json_new_dict(PyObject *cls, PyObject *empty) {
        return PyDict_Type.tp_new((PyTypeObject *)cls, empty, NULL);
    }
    /* Move the items of the exact list `plain` into a new instance of `cls`
       (a list subclass) in O(1): the item array changes owner. */
    static PyObject *dsh_json_move_list(PyObject *plain, PyObject *cls, PyObject *empty) {
        PyObject *dest = PyList_Type.tp_new((PyTypeObject *)cls, empty, NULL);
        if (dest == NULL) return NULL;
        PyListObject *a = (PyListObject *)dest, *b = (PyListObject *)plain;
        a->ob_item = b->ob_item;
        a->allocated = b->allocated;
        Py_SET_SIZE(a, Py_SIZE(b));
        b->ob_item = NULL;
        b->allocated = 0;
        Py_SET_SIZE(b, 0);
        return dest;
    }
    /* Whether an 8-byte word of UTF-8 holds a byte that JSON escapes (below
       0x20, '"' or backslash); the classic "has a byte less than n" test, exact
       for "any" (bytes of 0x80 and above never match: they are written raw). */
    static inline int dsh_json_word_special(uint64_t w) {
        const uint64_t ones = 0x0101010101010101ULL;
        uint64_t q = w ^ (ones * 0x22), b = w ^ (ones * 0x5C);
        return ((((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & (ones * 0x80)) != 0;
    }
    /* Length of the prefix of the UTF-8 text `p` that JSON writes as is. */
    /* 1 for the bytes JSON escapes: controls, '"' and backslash. */
    static const unsigned char dsh_json_special[256] = {
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    };
    static inline Py_ssize_t dsh_json_plain_prefix(const unsigned char *p, Py_ssize_t n) {
        Py_ssize_t i = 0;
        uint64_t w;
        if (n >= 8) {
            for (; i + 8 <= n; i += 8) {
                memcpy(&w, p + i, 8);
                if (dsh_json_word_special(w)) goto bytes;
            }
            if (i == n) return n;
            memcpy(&w, p + n - 8, 8);  /* the tail, overlapping checked bytes */
            if (!dsh_json_word_special(w)) return n;
        }
        /* Short texts byte by byte: composing a word from fewer bytes would stall
           the load on the partial stores. */
    bytes:
        for (; i < n; i++) {
            if (dsh_json_special[p[i]]) return i;
        }
        return n;
    }
    /* The value of a one-digit int without a call into the runtime. */
    static inline int dsh_json_compact_int(PyObject *v, long long *out) {
    #if PY_VERSION_HEX < 0x030C0000
        Py_ssize_t size = Py_SIZE(v);
        if (size >= -1 && size <= 1) {
            *out = (long long)size * (long long)((PyLongObject *)v)->ob_digit[0];
            return 1;
        }
        return 0;
    #else
        if (PyUnstable_Long_IsCompact((PyLongObject *)v)) {
            *out = (long long)PyUnstable_Long_CompactValue((PyLongObject *)v);
            return 1;
        }
        return 0;
    #endif
    }
    /* float.__repr__'s text for 1e-4 <= |x| < 2**53 (where repr uses fixed
       notation), found without the bignum arithmetic of CPython's dtoa. With
       x = M * 2**-shift exactly, a decimal c * 10**-k reads back as x when its
       distance to x is under half the gap to the neighbouring double (ties go
       to an even mantissa); everything is an integer below 2**124. Whether some
       c works only grows with k (a decimal with k digits also has k + 1), so a
       binary search finds the fewest digits, and the nearest c there is repr's.
       Returns the length written to `out` (room for 48 bytes), or 0 when the
       caller must ask CPython (other magnitudes, or two equally near decimals). */
    #if defined(__SIZEOF_INT128__)
    typedef unsigned __int128 dsh_u128;
    static const uint64_t dsh_json_pow10[20] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
        100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
        10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
        100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL};
    static dsh_u128 dsh_json_p10(int k) {
        return k < 20 ? (dsh_u128)dsh_json_pow10[k] : (dsh_u128)dsh_json_pow10[19] * dsh_json_pow10[k - 19];
    }
    /* 1 and the decimal in *c when some c * 10**-k reads back as x; 2 for a tie. */
    static int dsh_json_probe(uint64_t M, int shift, int narrow_below, int k, dsh_u128 *c) {
        const dsh_u128 one = (dsh_u128)1 << shift, mask = one - 1, p10 = dsh_json_p10(k);
        const dsh_u128 num = (dsh_u128)M * p10;
        dsh_u128 r = num & mask, up = one - r;
        dsh_u128 lo = narrow_below ? 4 * r : 2 * r, hi = 2 * up;
        int even = (M & 1) == 0;
        int ok_lo = lo < p10 || (lo == p10 && even);
        int ok_hi = hi < p10 || (hi == p10 && even);
        if (!ok_lo && !ok_hi) return 0;
        if (ok_lo && ok_hi && r == up) return 2;
        *c = (num >> shift) + ((ok_lo && (!ok_hi || r < up)) ? 0 : 1);
        return 1;
    }
    static int dsh_json_format_double(char *out, double x) {
        int neg = x < 0, n, i, lo = 0, hi = 21;
        double a = neg ? -x : x;
        dsh_u128 c = 0;
        uint64_t bits, small;
        char digits[24], *p = out;
        if (a == 0.0) { memcpy(out, "0.0", 3); return 3; }
        if (!(a >= 1e-4 && a < 9007199254740992.0)) return 0;
        memcpy(&bits, &a, 8);  /* a normal double: a = M * 2**-shift, exactly */
        uint64_t M = (bits & (((uint64_t)1 << 52) - 1)) | ((uint64_t)1 << 52);
        int shift = 1075 - (int)((bits >> 52) & 0x7FF);  /* 1 <= shift <= 66 here */
        if (shift <= 0 || shift > 70) return 0;
        /* Below a power of two the gap to the next double down is half as wide. */
        int narrow_below = M == ((uint64_t)1 << 52);
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (dsh_json_probe(M, shift, narrow_below, mid, &c)) hi = mid; else lo = mid + 1;
        }
        if (dsh_json_probe(M, shift, narrow_below, lo, &c) != 1) return 0;
        if (c >> 64) return 0;  /* never: at most 17 digits */
        small = (uint64_t)c;    /* 64-bit division: 128-bit would call a helper */
        n = 0;
        do { digits[n++] = (char)('0' + (int)(small % 10)); small /= 10; } while (small != 0);
        if (neg) *p++ = '-';
        if (lo == 0) {
            for (i = n - 1; i >= 0; i--) *p++ = digits[i];
            *p++ = '.'; *p++ = '0';
        } else if (n > lo) {
            for (i = n - 1; i >= lo; i--) *p++ = digits[i];
            *p++ = '.';
            for (; i >= 0; i--) *p++ = digits[i];
        } else {
            *p++ = '0'; *p++ = '.';
            for (i = lo - n; i > 0; i--) *p++ = '0';
            for (i = n - 1; i >= 0; i--) *p++ = digits[i];
        }
        return (int)(p - out);
    }
    #else
    static int dsh_json_format_double(char *out, double x) { (void)out; (void)x; return 0; }
    #endif
    static const char dsh_json_digit_pairs[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    /* Write the decimal text of `x` at `out` (room for 20 bytes); return its length.
       Digits go straight to their place (no variable-length copy). */
    static int dsh_json_format_ll(char *out, long long x) {
        unsigned long long u = x < 0 ? (unsigned long long)(-(x + 1)) + 1 : (unsigned long long)x;
        int len = 1, neg = x < 0;
        unsigned long long t = u;
        for (;;) {  /* the digit count, one division per four digits */
            if (t < 10) break;
            if (t < 100) { len += 1; break; }
            if (t < 1000) { len += 2; break; }
            if (t < 10000) { len += 3; break; }
            t /= 10000;
            len += 4;
        }
        char *p = out + neg + len;
        while (u >= 100) {
            unsigned r = (unsigned)(u % 100);
            u /= 100;
            p -= 2;
            p[0] = dsh_json_digit_pairs[2 * r];
            p[1] = dsh_json_digit_pairs[2 * r + 1];
        }
        if (u >= 10) {
            p -= 2;
            p[0] = dsh_json_digit_pairs[2 * u];
            p[1] = dsh_json_digit_pairs[2 * u + 1];
        } else {
            *--p = (char)('0' + u);
        }
        if (neg) out[0] = '-';
        return neg + len;
    }
    """
    Py_ssize_t dsh_json_plain_prefix(const unsigned char* p, Py_ssize_t n)
    int dsh_json_format_ll(char* out, long long x)
    int dsh_json_format_double(char* out, double x)
    bint dsh_json_compact_int(PyObject* v, long long* out)
    PyObject* dsh_json_new_dict(PyObject* cls, PyObject* empty)
    PyObject* dsh_json_move_list(PyObject* plain, PyObject* cls, PyObject* empty)


cdef extern from "Python.h":
    PyObject* Py_None
    PyObject* Py_True
    Py_ssize_t PY_SSIZE_T_MAX

    void* type_of "Py_TYPE"(PyObject*)
    Py_ssize_t size_of "Py_SIZE"(PyObject*)
    void incref "Py_INCREF"(PyObject*)
    void decref "Py_DECREF"(PyObject*)

    PyObject* PyDict_Copy(PyObject*) except NULL
    PyObject* PyDict_New() except NULL
    int PyDict_Update(PyObject*, PyObject*) except -1
    int PyDict_Next(PyObject*, Py_ssize_t*, PyObject**, PyObject**)
    int PyDict_SetItem(PyObject*, PyObject*, PyObject*) except -1
    PyObject* PyDict_GetItemWithError(PyObject*, PyObject*)
    PyObject* PyDict_Keys(PyObject*) except NULL
    Py_ssize_t PyDict_GET_SIZE(PyObject*)

    PyObject* PyList_New(Py_ssize_t) except NULL
    Py_ssize_t PyList_GET_SIZE(PyObject*)
    PyObject* PyList_GET_ITEM(PyObject*, Py_ssize_t)
    void PyList_SET_ITEM(PyObject*, Py_ssize_t, PyObject*)
    int PyList_Sort(PyObject*) except -1
    PyObject* PyTuple_GET_ITEM(PyObject*, Py_ssize_t)

    double PyFloat_AS_DOUBLE(PyObject*)
    long long PyLong_AsLongLongAndOverflow(PyObject*, int*) except? -1
    PyObject* PyErr_Occurred()

    Py_ssize_t PyUnicode_GET_LENGTH(PyObject*)
    int PyUnicode_KIND(PyObject*)
    void* PyUnicode_DATA(PyObject*)
    bint PyUnicode_IS_ASCII(PyObject*)
    int PyUnicode_1BYTE_KIND
    int PyUnicode_2BYTE_KIND
    const char* PyUnicode_AsUTF8AndSize(PyObject*, Py_ssize_t*)
    void PyErr_Clear()
    object PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)
    object PyUnicode_New(Py_ssize_t, uint32_t)

    char* PyOS_double_to_string(double, char, int, int, int*) except NULL
    int Py_DTSF_ADD_DOT_0
    void PyMem_Free(void*)


cdef void* DICT_T = <void*>dict
cdef void* LIST_T = <void*>list
cdef void* TUPLE_T = <void*>tuple
cdef void* STR_T = <void*>str
cdef void* INT_T = <void*>int
cdef void* FLOAT_T = <void*>float
cdef void* BOOL_T = <void*>bool
cdef void* FROZEN_OBJECT_T = <void*>FrozenJsonObject
cdef void* FROZEN_ARRAY_T = <void*>FrozenJsonArray
cdef tuple EMPTY_TUPLE = ()


cdef inline int propagate() except -1:
    # Turns a C-API failure (an exception already set) into a Cython raise.
    return -1


# Kinds of a value met during a walk (same meaning as in the Python twin).
cdef enum:
    SCALAR = 0
    REUSE = 1
    OBJECT = 2
    ARRAY = 3
    TUPLE = 4

cdef long long MAX_SAFE = 9007199254740991
# Cycle checks compare against the first frames directly (no allocation);
# deeper frames are also kept in a set so the check stays O(1) at any depth.
cdef Py_ssize_t LINEAR_DEPTH = 32


# --- frames ------------------------------------------------------------------------------

cdef struct Frame:
    PyObject* src       # strong: the container being walked
    PyObject* dest      # strong: the copy being built (NULL when only checking)
    PyObject* key       # strong: the current member's key (objects), for error paths
    PyObject* keys      # strong: the sorted keys (canonical writer), else NULL
    Py_ssize_t pos      # PyDict_Next position, or the next index
    Py_ssize_t size     # array length (the number of sorted keys)
    int kind            # OBJECT, ARRAY or TUPLE
    bint pretty
    bint started


cdef struct Stack:
    Frame* frames
    Py_ssize_t depth
    Py_ssize_t cap


cdef int stack_grow(Stack* st) except -1:
    cdef Py_ssize_t cap = st.cap * 2 if st.cap else 64
    cdef Frame* frames = <Frame*>realloc(st.frames, cap * sizeof(Frame))
    if frames == NULL:
        raise MemoryError()
    st.frames = frames
    st.cap = cap
    return 0


cdef Frame* stack_push(Stack* st, PyObject* src, int kind) except NULL:
    if st.depth == st.cap:
        stack_grow(st)
    cdef Frame* f = &st.frames[st.depth]
    incref(src)
    f.src = src
    f.dest = NULL
    f.key = NULL
    f.keys = NULL
    f.pos = 0
    f.size = size_of(src) if kind != OBJECT else 0
    f.kind = kind
    f.pretty = False
    f.started = False
    st.depth += 1
    return f


cdef inline void frame_clear(Frame* f) noexcept:
    decref(f.src)
    Py_XDECREF(f.dest)
    Py_XDECREF(f.key)
    Py_XDECREF(f.keys)


cdef void stack_release(Stack* st) noexcept:
    while st.depth > 0:
        st.depth -= 1
        frame_clear(&st.frames[st.depth])
    free(st.frames)
    st.frames = NULL
    st.cap = 0


cdef list stack_path(Stack* st, Py_ssize_t drop):
    """The path to the current value: each open frame's current key or index."""
    cdef list path = []
    cdef Py_ssize_t i
    cdef Frame* f
    for i in range(st.depth - drop):
        f = &st.frames[i]
        if f.kind == OBJECT:
            path.append(<object>f.key)
        else:
            path.append(f.pos - 1)
    return path


cdef inline void frame_set_key(Frame* f, PyObject* key) noexcept:
    incref(key)
    Py_XDECREF(f.key)
    f.key = key


cdef bint on_path(Stack* st, PyObject* value, set deep):
    cdef Py_ssize_t i
    cdef Py_ssize_t n = st.depth if st.depth < LINEAR_DEPTH else LINEAR_DEPTH
    for i in range(n):
        if st.frames[i].src == value:
            return True
    return st.depth > LINEAR_DEPTH and (<size_t>value) in deep


cdef inline int track_push(Stack* st, PyObject* value, set deep) except -1:
    # Called after the push: frames at index >= LINEAR_DEPTH live in the set.
    if st.depth > LINEAR_DEPTH:
        deep.add(<size_t>value)
    return 0


cdef inline int track_pop(Stack* st, PyObject* value, set deep) except -1:
    # Called after the pop.
    if st.depth >= LINEAR_DEPTH:
        deep.discard(<size_t>value)
    return 0


# --- checks ------------------------------------------------------------------------------

cdef int check_int(PyObject* v, bint safe, Stack* st) except -1:
    cdef int overflow = 0
    cdef long long x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow == 0:
        if safe and (x > MAX_SAFE or x < -MAX_SAFE):
            raise unsafe_int_error(stack_path(st, 0))
        return SCALAR
    if safe:
        raise unsafe_int_error(stack_path(st, 0))
    if int_too_long(<object>v):
        raise int_too_long_error(stack_path(st, 0))
    return SCALAR


cdef inline bint bad_float(double d):
    return not isfinite(d) or (d == 0.0 and signbit(d))


cdef inline int classify(PyObject* v, bint safe, bint reuse, Stack* st) except -1:
    cdef void* t = type_of(v)
    if t == STR_T or v == Py_None or t == BOOL_T:
        return SCALAR
    if t == INT_T:
        return check_int(v, safe, st)
    if t == FLOAT_T:
        if bad_float(PyFloat_AS_DOUBLE(v)):
            raise float_error(<object>v, stack_path(st, 0))
        return SCALAR
    if t == DICT_T:
        return OBJECT
    if t == LIST_T:
        return ARRAY
    if t == TUPLE_T:
        return TUPLE
    if t == FROZEN_OBJECT_T:
        return REUSE if reuse else OBJECT
    if t == FROZEN_ARRAY_T:
        return REUSE if reuse else ARRAY
    raise type_error(<object>v, stack_path(st, 0))


# --- snapshot ------------------------------------------------------------------------------

cdef bint all_str_keys(PyObject* src) noexcept:
    cdef Py_ssize_t pos = 0
    cdef PyObject* k
    cdef PyObject* v
    while PyDict_Next(src, &pos, &k, &v):
        if type_of(k) != STR_T:
            return False
    return True


cdef int open_copy(Stack* st, PyObject* src, int kind, bint freeze) except -1:
    cdef Frame* f = stack_push(st, src, OBJECT if kind == OBJECT else kind)
    if kind == OBJECT:
        # A copy of the whole object up front (CPython clones the hash table of
        # an exact dict into an empty one); the walk then replaces the values
        # that are containers with their copies, in place, keeping the order.
        # Copying a key that is not an exact str could run its __eq__; such an
        # object fails the walk anyway, so its copy stays empty.
        if freeze:
            f.dest = dsh_json_new_dict(<PyObject*>FrozenJsonObject, <PyObject*>EMPTY_TUPLE)
            if f.dest == NULL:
                return propagate()
            if all_str_keys(src):
                PyDict_Update(f.dest, src)
        elif all_str_keys(src):
            f.dest = PyDict_Copy(src)
        else:
            f.dest = PyDict_New()
    else:
        f.dest = PyList_New(f.size)
    return 0


cdef object walk(object root, bint freeze, bint safe, bint build):
    """Check ``root`` and, when ``build``, return its detached (frozen) copy."""
    cdef bint reuse = not safe and (freeze or not build)
    cdef Stack st
    st.frames = NULL
    st.depth = 0
    st.cap = 0
    cdef int kind = classify(<PyObject*>root, safe, reuse, &st)
    if kind == SCALAR or kind == REUSE:
        return root
    cdef set deep = set()
    cdef Frame* f
    cdef Frame* parent
    cdef PyObject* k
    cdef PyObject* v
    cdef PyObject* done
    cdef PyObject* sealed
    cdef PyObject* src
    cdef bint descended
    try:
        if build:
            open_copy(&st, <PyObject*>root, kind, freeze)
        else:
            stack_push(&st, <PyObject*>root, OBJECT if kind == OBJECT else kind)
        while True:
            f = &st.frames[st.depth - 1]
            descended = False
            if f.kind == OBJECT:
                while PyDict_Next(f.src, &f.pos, &k, &v):
                    if type_of(k) != STR_T:
                        raise key_error(<object>k, stack_path(&st, 1))
                    frame_set_key(f, k)
                    kind = classify(v, safe, reuse, &st)
                    if kind <= REUSE:
                        continue  # already in the copy
                    if on_path(&st, v, deep):
                        raise cycle_error(stack_path(&st, 0))
                    if build:
                        open_copy(&st, v, kind, freeze)
                    else:
                        stack_push(&st, v, kind)
                    track_push(&st, v, deep)
                    descended = True
                    break
            else:
                while f.pos < f.size:
                    if f.kind == TUPLE:
                        v = PyTuple_GET_ITEM(f.src, f.pos)
                    elif f.pos < PyList_GET_SIZE(f.src):
                        v = PyList_GET_ITEM(f.src, f.pos)
                    else:
                        raise RuntimeError("list changed size during the walk")
                    f.pos += 1
                    kind = classify(v, safe, reuse, &st)
                    if kind <= REUSE:
                        if build:
                            incref(v)
                            PyList_SET_ITEM(f.dest, f.pos - 1, v)
                        continue
                    if on_path(&st, v, deep):
                        raise cycle_error(stack_path(&st, 0))
                    if build:
                        open_copy(&st, v, kind, freeze)
                    else:
                        stack_push(&st, v, kind)
                    track_push(&st, v, deep)
                    descended = True
                    break
                if not descended and f.kind == ARRAY and PyList_GET_SIZE(f.src) != f.size:
                    raise RuntimeError("list changed size during the walk")
            if descended:
                continue
            # The frame is complete: seal its copy and hand it to the parent.
            done = f.dest
            f.dest = NULL
            if done != NULL and freeze and f.kind != OBJECT:
                sealed = dsh_json_move_list(done, <PyObject*>FrozenJsonArray, <PyObject*>EMPTY_TUPLE)
                decref(done)
                done = sealed
                if done == NULL:
                    propagate()
            src = f.src
            st.depth -= 1
            frame_clear(f)
            track_pop(&st, src, deep)
            if st.depth == 0:
                if done == NULL:
                    return None
                result = <object>done
                decref(done)
                return result
            if done == NULL:
                continue
            parent = &st.frames[st.depth - 1]
            if parent.kind == OBJECT:
                try:
                    PyDict_SetItem(parent.dest, parent.key, done)
                finally:
                    decref(done)
            else:
                PyList_SET_ITEM(parent.dest, parent.pos - 1, done)
    finally:
        stack_release(&st)


def snapshot_json(value, *, freeze=True, safe_integers=False):
    """Return a detached deep copy of the lossless JSON ``value``.

    Guaranteed: the result shares no mutable container with ``value``; with
    ``freeze`` (the default) every container in it is a
    :class:`FrozenJsonObject` / :class:`FrozenJsonArray` (tuples become
    arrays), without it plain ``dict``/``list``. Shared, non-cyclic references
    are copied independently. Frozen containers in ``value`` are lossless by
    construction and are reused as they are when freezing (``value`` itself is
    returned when it is frozen), unless ``safe_integers`` asks to look inside.

    Raised errors: :class:`LosslessJsonError` naming the path of the first
    offending value when ``value`` is not lossless JSON, or when
    ``safe_integers`` is set and an int lies beyond ``±(2**53-1)``.
    """
    return walk(value, bool(freeze), bool(safe_integers), True)


def is_json_value(value, *, safe_integers=False):
    """Return whether ``snapshot_json(value, safe_integers=...)`` would succeed.

    Never raises, whatever ``value`` is: only exact types are inspected, so no
    user code (``__eq__``, ``__hash__``, ``__str__``, iteration) ever runs.
    """
    try:
        walk(value, True, bool(safe_integers), False)
    except LosslessJsonError:
        return False
    return True


# --- writers -------------------------------------------------------------------------------

cdef struct Buf:
    char* data
    Py_ssize_t length
    Py_ssize_t cap
    bint ascii          # nothing but ASCII written so far


cdef Buf SHARED_BUF
SHARED_BUF.data = NULL
SHARED_BUF.cap = 0
cdef bint SHARED_BUSY = False
# Larger buffers are freed after use rather than kept for the next call.
cdef Py_ssize_t RETAINED_BUFFER_BYTES = 8 << 20


cdef int buf_reserve(Buf* b, Py_ssize_t extra) except -1:
    if extra <= b.cap - b.length:
        return 0
    if extra > PY_SSIZE_T_MAX // 2 - b.length:
        raise MemoryError()
    cdef Py_ssize_t need = b.length + extra
    cdef Py_ssize_t cap = b.cap * 2 if b.cap else 4096
    if cap < need:
        cap = need
    cdef char* data = <char*>realloc(b.data, cap)
    if data == NULL:
        raise MemoryError()
    b.data = data
    b.cap = cap
    return 0


cdef inline int buf_write(Buf* b, const char* text, Py_ssize_t n) except -1:
    if n > b.cap - b.length:
        buf_reserve(b, n)
    memcpy(b.data + b.length, text, n)
    b.length += n
    return 0


cdef inline int buf_putc(Buf* b, char c) except -1:
    if b.length == b.cap:
        buf_reserve(b, 1)
    b.data[b.length] = c
    b.length += 1
    return 0


cdef inline int buf_separator(Buf* b, bint comma, Py_ssize_t depth, Py_ssize_t indent) except -1:
    """Write ``,`` (when ``comma``), a newline and the indentation of ``depth``."""
    cdef Py_ssize_t spaces = depth * indent
    cdef char* out
    if depth <= 16 and indent <= 16 and spaces <= 16:
        # The common case, with fixed-size stores: reserve 18 bytes, keep 2 + spaces.
        if 18 > b.cap - b.length:
            buf_reserve(b, 18)
        out = b.data + b.length
        if comma:
            out[0] = b","
            out += 1
        memcpy(out, NEWLINE_SPACES, 17)
        b.length = out + 1 + spaces - b.data
        return 0
    if comma:
        buf_putc(b, b",")
    return buf_newline(b, depth, indent)


cdef inline int buf_newline(Buf* b, Py_ssize_t depth, Py_ssize_t indent) except -1:
    cdef Py_ssize_t spaces
    if depth <= 64 and indent <= 64:
        spaces = depth * indent
    elif indent and depth > (PY_SSIZE_T_MAX // 4) // indent:
        raise MemoryError()
    else:
        spaces = depth * indent
    if spaces + 1 > b.cap - b.length:
        buf_reserve(b, spaces + 1)
    b.data[b.length] = b"\n"
    memset(b.data + b.length + 1, 32, spaces)
    b.length += spaces + 1
    return 0


cdef const char* HEX = b"0123456789abcdef"
cdef const char* NEWLINE_SPACES = b"\n                "  # a newline and 16 spaces

# For each ASCII byte: 0 = written as is, else the letter after the backslash
# (``u`` meaning ``\u00XX``), as json.dumps(ensure_ascii=False) writes it.
cdef char ESCAPE[128]
cdef int _i
for _i in range(128):
    ESCAPE[_i] = 0
    if _i < 32:
        ESCAPE[_i] = b"u"
ESCAPE[34] = b'"'
ESCAPE[92] = b"\\"
ESCAPE[8] = b"b"
ESCAPE[12] = b"f"
ESCAPE[10] = b"n"
ESCAPE[13] = b"r"
ESCAPE[9] = b"t"


cdef inline char* put_escape(char* p, uint32_t c):
    """Write the JSON escape of an ASCII special or a lone surrogate (reserved space)."""
    cdef char e = ESCAPE[c] if c < 128 else b"u"
    p[0] = b"\\"
    if e != b"u":
        p[1] = e
        return p + 2
    p[1] = b"u"
    p[2] = HEX[(c >> 12) & 15]
    p[3] = HEX[(c >> 8) & 15]
    p[4] = HEX[(c >> 4) & 15]
    p[5] = HEX[c & 15]
    return p + 6


cdef inline int write_str(Buf* b, PyObject* s) except -1:
    cdef Py_ssize_t n
    cdef const uint8_t* p1
    cdef char* out
    if PyUnicode_IS_ASCII(s):
        n = PyUnicode_GET_LENGTH(s)
        p1 = <const uint8_t*>PyUnicode_DATA(s)
        if dsh_json_plain_prefix(p1, n) == n:
            # The common case: nothing to escape.
            if n + 2 > b.cap - b.length:
                buf_reserve(b, n + 2)
            out = b.data + b.length
            out[0] = b'"'
            memcpy(out + 1, p1, n)
            out[n + 1] = b'"'
            b.length += n + 2
            return 0
    return write_str_escaped(b, s)


cdef int write_utf8_escaped(Buf* b, const uint8_t* p, Py_ssize_t n) except -1:
    """Write the valid UTF-8 text ``p`` as a JSON string."""
    cdef Py_ssize_t plain = dsh_json_plain_prefix(p, n)
    cdef Py_ssize_t i = 0
    buf_putc(b, b'"')
    # Copy plain runs whole; escape the one byte that ends each run. Space is
    # reserved run by run, so a long text costs its own size, not six times it.
    while True:
        buf_write(b, <const char*>p + i, plain)
        i += plain
        if i == n:
            break
        if 6 > b.cap - b.length:
            buf_reserve(b, 6)
        b.length = put_escape(b.data + b.length, p[i]) - b.data
        i += 1
        plain = dsh_json_plain_prefix(p + i, n - i)
    return buf_putc(b, b'"')


cdef int write_str_escaped(Buf* b, PyObject* s) except -1:
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(s)
    cdef Py_ssize_t i
    cdef int kind = PyUnicode_KIND(s)
    cdef void* data = PyUnicode_DATA(s)
    cdef const uint8_t* p1
    cdef const uint16_t* p2
    cdef const uint32_t* p4
    cdef uint32_t c
    cdef char* out
    cdef Py_ssize_t size
    cdef const char* utf8
    if PyUnicode_IS_ASCII(s):
        return write_utf8_escaped(b, <const uint8_t*>data, n)
    # The UTF-8 form (cached on the string by CPython) is copied in runs like
    # ASCII; a string holding a surrogate has none and is written per character.
    utf8 = PyUnicode_AsUTF8AndSize(s, &size)
    if utf8 != NULL:
        b.ascii = False
        return write_utf8_escaped(b, <const uint8_t*>utf8, size)
    PyErr_Clear()
    if n > (PY_SSIZE_T_MAX // 8):
        raise MemoryError()
    b.ascii = False
    # Worst case 6 bytes per character (an escape), plus the quotes.
    buf_reserve(b, 6 * n + 2)
    out = b.data + b.length
    out[0] = b'"'
    out += 1
    if kind == PyUnicode_1BYTE_KIND:
        p1 = <const uint8_t*>data
        for i in range(n):
            c = p1[i]
            if c < 128:
                if ESCAPE[c]:
                    out = put_escape(out, c)
                else:
                    out[0] = <char>c
                    out += 1
            else:
                out[0] = <char>(0xC0 | (c >> 6))
                out[1] = <char>(0x80 | (c & 0x3F))
                out += 2
    else:
        p2 = <const uint16_t*>data
        p4 = <const uint32_t*>data
        for i in range(n):
            c = p2[i] if kind == PyUnicode_2BYTE_KIND else p4[i]
            if c < 128:
                if ESCAPE[c]:
                    out = put_escape(out, c)
                else:
                    out[0] = <char>c
                    out += 1
            elif c < 0x800:
                out[0] = <char>(0xC0 | (c >> 6))
                out[1] = <char>(0x80 | (c & 0x3F))
                out += 2
            elif 0xD800 <= c <= 0xDFFF:
                # A lone surrogate cannot be encoded as UTF-8: escape it.
                out = put_escape(out, c)
            elif c < 0x10000:
                out[0] = <char>(0xE0 | (c >> 12))
                out[1] = <char>(0x80 | ((c >> 6) & 0x3F))
                out[2] = <char>(0x80 | (c & 0x3F))
                out += 3
            else:
                out[0] = <char>(0xF0 | (c >> 18))
                out[1] = <char>(0x80 | ((c >> 12) & 0x3F))
                out[2] = <char>(0x80 | ((c >> 6) & 0x3F))
                out[3] = <char>(0x80 | (c & 0x3F))
                out += 4
    out[0] = b'"'
    out += 1
    b.length = out - b.data
    return 0


cdef inline int write_int(Buf* b, PyObject* v, Stack* st) except -1:
    cdef int overflow = 0
    cdef long long x
    if not dsh_json_compact_int(v, &x):
        x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow == 0:
        if 24 > b.cap - b.length:
            buf_reserve(b, 24)
        b.length += dsh_json_format_ll(b.data + b.length, x)
        return 0
    try:
        text = int.__repr__(<object>v)
    except ValueError:
        raise int_too_long_error(stack_path(st, 0)) from None
    cdef bytes raw = (<str>text).encode("ascii")
    return buf_write(b, raw, len(raw))


cdef int write_float(Buf* b, PyObject* v, Stack* st) except -1:
    cdef double d = PyFloat_AS_DOUBLE(v)
    if bad_float(d):
        raise float_error(<object>v, stack_path(st, 0))
    if 48 > b.cap - b.length:
        buf_reserve(b, 48)
    cdef int written = dsh_json_format_double(b.data + b.length, d)
    if written:
        b.length += written
        return 0
    # float.__repr__'s own routine: the shortest round-trip text, "2.0" not "2".
    cdef char* text = PyOS_double_to_string(d, b"r", 0, Py_DTSF_ADD_DOT_0, NULL)
    cdef Py_ssize_t n = 0
    while text[n]:
        n += 1
    try:
        buf_write(b, text, n)
    finally:
        PyMem_Free(text)
    return 0


cdef inline int write_value(
    Buf* b, PyObject* v, Stack* st, set deep, bint sort_keys, Py_ssize_t pretty_levels
) except -1:
    """Write a scalar, or open a container (push a frame); return 1 when a frame was pushed."""
    cdef void* t = type_of(v)
    if t == STR_T:
        return write_str(b, v)
    if t == INT_T:
        return write_int(b, v, st)
    if v == Py_None:
        return buf_write(b, b"null", 4)
    if t == BOOL_T:
        if v == Py_True:
            return buf_write(b, b"true", 4)
        return buf_write(b, b"false", 5)
    if t == FLOAT_T:
        return write_float(b, v, st)
    return open_container(b, v, t, st, deep, sort_keys, pretty_levels)


cdef int open_container(
    Buf* b, PyObject* v, void* t, Stack* st, set deep, bint sort_keys, Py_ssize_t pretty_levels
) except -1:
    cdef int kind
    if t == DICT_T or t == FROZEN_OBJECT_T:
        kind = OBJECT
    elif t == LIST_T or t == FROZEN_ARRAY_T:
        kind = ARRAY
    elif t == TUPLE_T:
        kind = TUPLE
    else:
        raise type_error(<object>v, stack_path(st, 0))
    if on_path(st, v, deep):
        raise cycle_error(stack_path(st, 0))
    cdef Py_ssize_t n = PyDict_GET_SIZE(v) if kind == OBJECT else size_of(v)
    if n == 0:
        return buf_write(b, b"{}" if kind == OBJECT else b"[]", 2)
    cdef PyObject* keys = NULL
    cdef PyObject* k
    cdef PyObject* item
    cdef Py_ssize_t pos = 0
    if kind == OBJECT and sort_keys:
        while PyDict_Next(v, &pos, &k, &item):
            if type_of(k) != STR_T:
                raise key_error(<object>k, stack_path(st, 0))
        keys = PyDict_Keys(v)
        try:
            PyList_Sort(keys)
        except BaseException:
            decref(keys)
            raise
    cdef Frame* f = stack_push(st, v, kind)
    f.keys = keys
    if keys != NULL:
        f.size = PyList_GET_SIZE(keys)
    f.pretty = st.depth - 1 < pretty_levels
    track_push(st, v, deep)
    buf_putc(b, b"{" if kind == OBJECT else b"[")
    return 1


cdef str write(object root, Py_ssize_t pretty_levels, Py_ssize_t indent, bint sort_keys):
    """Write ``root`` as JSON; containers at depth < ``pretty_levels`` are indented."""
    global SHARED_BUSY
    cdef Buf local
    cdef Buf* b
    # The shared buffer keeps its pages between calls (no page faults on reuse);
    # a nested call (a finalizer run by the GC, another thread) gets its own.
    if SHARED_BUSY:
        local.data = NULL
        local.cap = 0
        b = &local
    else:
        SHARED_BUSY = True
        b = &SHARED_BUF
    b.length = 0
    b.ascii = True
    cdef Stack st
    st.frames = NULL
    st.depth = 0
    st.cap = 0
    cdef set deep = set()
    cdef Frame* f
    cdef PyObject* k
    cdef PyObject* v
    cdef PyObject* src
    cdef bint descended
    cdef int kind
    try:
        write_value(b, <PyObject*>root, &st, deep, sort_keys, pretty_levels)
        while st.depth > 0:
            f = &st.frames[st.depth - 1]
            descended = False
            while True:
                if f.kind == OBJECT:
                    if f.keys != NULL:
                        if f.pos >= f.size:
                            break
                        k = PyList_GET_ITEM(f.keys, f.pos)
                        f.pos += 1
                        v = PyDict_GetItemWithError(f.src, k)
                        if v == NULL:
                            if PyErr_Occurred() == NULL:
                                raise RuntimeError("dict changed size during the walk")
                            propagate()
                    else:
                        if not PyDict_Next(f.src, &f.pos, &k, &v):
                            break
                        if type_of(k) != STR_T:
                            raise key_error(<object>k, stack_path(&st, 1))
                    frame_set_key(f, k)
                else:
                    if f.pos >= f.size:
                        break
                    if f.kind == TUPLE:
                        v = PyTuple_GET_ITEM(f.src, f.pos)
                    elif f.pos < PyList_GET_SIZE(f.src):
                        v = PyList_GET_ITEM(f.src, f.pos)
                    else:
                        raise RuntimeError("list changed size during the walk")
                    f.pos += 1
                if f.pretty:
                    buf_separator(b, f.started, st.depth, indent)
                elif f.started:
                    buf_putc(b, b",")
                f.started = True
                if f.kind == OBJECT:
                    write_str(b, k)
                    if f.pretty:
                        buf_write(b, b": ", 2)
                    else:
                        buf_putc(b, b":")
                if write_value(b, v, &st, deep, sort_keys, pretty_levels) == 1:
                    descended = True
                    break
            if descended:
                continue
            if f.kind == ARRAY and PyList_GET_SIZE(f.src) != f.size:
                raise RuntimeError("list changed size during the walk")
            if f.pretty:
                buf_newline(b, st.depth - 1, indent)
            buf_putc(b, b"}" if f.kind == OBJECT else b"]")
            src = f.src
            st.depth -= 1
            frame_clear(f)
            track_pop(&st, src, deep)
        if b.ascii:
            text = PyUnicode_New(b.length, 127)
            memcpy(PyUnicode_DATA(<PyObject*>text), b.data, b.length)
            return text
        return PyUnicode_DecodeUTF8(b.data, b.length, NULL)
    finally:
        stack_release(&st)
        if b == &SHARED_BUF:
            if b.cap > RETAINED_BUFFER_BYTES:
                free(b.data)
                b.data = NULL
                b.cap = 0
            SHARED_BUSY = False
        else:
            free(b.data)


cdef Py_ssize_t check_option(str name, object value) except -1:
    if type(value) is not int or value < 0:
        raise option_error(name, value)
    return value if value < PY_SSIZE_T_MAX else PY_SSIZE_T_MAX


def render_json_pretty(value, *, indent=2, max_indent=10):
    """Render the lossless JSON ``value`` as CONTRACT.md section 3.2 pretty JSON.

    Guaranteed: ``indent`` spaces per level; a container whose children would
    need more than ``max_indent`` spaces renders fully compact (``,`` and
    ``:``, no spaces); ``{}``/``[]`` for empty containers; strings quoted and
    escaped as ``json.dumps(ensure_ascii=False)`` with lone surrogates escaped
    (``\\udXXX``), so the text always encodes to UTF-8; numbers as Python's
    ``json`` writes them. Every root renders as JSON (a string root is quoted).

    Raised errors: :class:`LosslessJsonError` (with the path) when ``value`` is
    not lossless JSON; ``TypeError``/``ValueError`` when ``indent`` or
    ``max_indent`` is not an int >= 0.
    """
    check_option("indent", indent)
    check_option("max_indent", max_indent)
    # A container at depth d is indented when its children's (d + 1) * indent fits.
    levels = sys.maxsize if indent == 0 else max_indent // indent
    return write(value, min(levels, sys.maxsize), min(indent, sys.maxsize), False)


def dump_canonical_json(value, *, sort_keys=True):
    """Write the lossless JSON ``value`` compactly: no spaces, ``,`` and ``:``.

    Guaranteed: equal to ``json.dumps(value, sort_keys=sort_keys,
    separators=(",", ":"), ensure_ascii=False)`` except that lone surrogates
    are escaped (``\\udXXX``); keys sort by code point. With ``sort_keys``
    (the default) equal values give equal text, for hashing; without it key
    order is kept.

    Raised errors: :class:`LosslessJsonError` (with the path) when ``value`` is
    not lossless JSON.
    """
    return write(value, 0, 0, bool(sort_keys))
