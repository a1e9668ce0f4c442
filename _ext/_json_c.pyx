# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Lossless JSON, the compiled twin (mirrors ``dsh_codegen/json/_json_py.py`` name for name).

Walks use an explicit C array of frames holding strong references, never C
recursion, so 100,000-deep values need memory linear in their size and no
recursion limit. Traversal order, error texts (built by
``dsh_codegen.json._errors``) and results are those of the Python twin; a
differential test pins it. Only exact types are inspected, so no user code
runs during a walk.

A finalizer or weakref callback run by the collector (an allocation may
trigger it; on 3.12+ only where the walk calls back into Python) can still
change the value mid-walk. Every frame holds strong references, every item
read is a strong reference while it is classified, and the rule of the Python
twin detects the change: a list read beyond its current length or whose length
changed by the time it closes, an object whose size changed before any step
or that yields more members than it had when opened, raises
``LosslessJsonError`` naming the container. The snapshot walks its own clone
of each object (taken in one step when the object is opened), so its copy is
complete and frozen whatever happens to the source.
"""

from cpython.ref cimport PyObject, Py_XDECREF
from libc.math cimport isfinite, signbit
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

import sys

from dsh_codegen.json._errors import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_NODES,
    JsonBudgetError,
    LosslessJsonError,
    budget_option,
    changed_error,
    chars_budget_error,
    cycle_error,
    float_error,
    int_too_long,
    int_too_long_error,
    key_error,
    nodes_budget_error,
    option_error,
    surrogate_error,
    type_error,
    unsafe_int_error,
)
from dsh_codegen.json._frozen import FrozenJsonArray, FrozenJsonObject
from dsh_codegen.json._parser import parse_json as _python_parse_json

__all__ = [
    "FrozenJsonArray",
    "FrozenJsonObject",
    "JsonBudgetError",
    "LosslessJsonError",
    "dump_canonical_json",
    "is_json_value",
    "parse_json",
    "render_json_pretty",
    "snapshot_json",
]


include "_json_float_table.pxi"


cdef extern from *:
    """
    #include <math.h>
    #include <stdint.h>
    #include <string.h>
    /* For the helpers run once per member by the writers' loop: a call costs as much as their work. */
    #if defined(__GNUC__) || defined(__clang__)
    #define DSH_ALWAYS_INLINE inline __attribute__((always_inline))
    #else
    #define DSH_ALWAYS_INLINE inline
    #endif
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
    /* float.__repr__'s text: the shortest decimal that reads back as x (the nearest of
       those when there are several, an even last digit on a tie), in repr's layout
       (fixed notation for 1e-4 <= |x| < 1e16, else d.ddde+XX). The digits come from
       the method of Giulietti's Schubfach: with x = c * 2**q and k = floor(log10(2**q)),
       the interval of decimals that read back as x is at least 10**k wide and less
       than 10**(k + 1), so the shortest decimal in it is its one multiple of
       10**(k + 1) if it has one, else the nearer of the two multiples of 10**k around
       x. Those tests need x and the interval's ends divided by 10**k, to a quarter of
       a unit, and whether each is exact: one multiply by a cached power of ten
       (_json_float_table.pxi, made by tools/float_table.py) gives all three.
       Returns the length written to `out` (room for 48 bytes), or 0 when the
       caller must ask CPython (no 128-bit integers, or the unsure case below). */
    static const char dsh_json_digit_pairs[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    #if defined(__SIZEOF_INT128__)
    typedef unsigned __int128 dsh_u128;
    /* 5**k for k <= 23: 5**24 exceeds every multiple of c the formatter scales (< 2**56). */
    static const uint64_t dsh_json_pow5[24] = {
        1ULL, 5ULL, 25ULL, 125ULL, 625ULL, 3125ULL, 15625ULL, 78125ULL, 390625ULL, 1953125ULL,
        9765625ULL, 48828125ULL, 244140625ULL, 1220703125ULL, 6103515625ULL, 30517578125ULL,
        152587890625ULL, 762939453125ULL, 3814697265625ULL, 19073486328125ULL, 95367431640625ULL,
        476837158203125ULL, 2384185791015625ULL, 11920928955078125ULL};
    /* g * m >> 64 for a power g of the table (high word first) and m < 2**64: the
       product's bits 64 and up (it has 192), whose value over 2**64 is the scaled float. */
    static DSH_ALWAYS_INLINE dsh_u128 dsh_json_scale(const uint64_t *g, uint64_t m) {
        return (dsh_u128)g[0] * m + (uint64_t)(((dsh_u128)g[1] * m) >> 64);
    }
    /* Whether cx * 2**q / 10**k is an integer (cx > 0; k > 0 only with q > k). */
    static int dsh_json_scaled_is_integer(uint64_t cx, int q, int k) {
        if (k <= 0) return q - k >= 0 || __builtin_ctzll(cx) >= k - q;
        return k <= 23 && cx % dsh_json_pow5[k] == 0;
    }
    /* The scaled value X = cx * 2**q / 10**k rounded to odd (its floor, the low bit set
       when X is not an integer), from p = g * (cx << h) >> 64, where g = ceil(G) for the
       exact power G, and X = G * (cx << h) / 2**128: Y = p / 2**64 exceeds X by less
       than 2**-69 (cx << h < 2**59, g - G < 1, and the dropped low word). So a fraction
       of Y of at least 2**-64 (a bit of p's low word set) means floor(Y) < X < Y: X is
       not an integer and has Y's floor. A smaller fraction is decided exactly: an
       integer X is floor(Y); any other X (within 2**-64 of an integer: none of the
       floats tested) sets *unsure. */
    static DSH_ALWAYS_INLINE uint64_t dsh_json_round_odd(dsh_u128 p, uint64_t cx, int q, int k, int *unsure) {
        uint64_t top = (uint64_t)(p >> 64);
        if ((uint64_t)p != 0) return top | 1;
        if (!dsh_json_scaled_is_integer(cx, q, k)) *unsure = 1;
        return top;
    }
    static const uint64_t dsh_json_pow10[18] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
        1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
        100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL};
    /* The eight digits of x < 10**8 at p, zero-padded. Where a 64-bit word is stored
       little-endian, all eight are made in one word: its 32-bit halves hold x's two
       four-digit halves, split into 16-bit lanes of two digits, then bytes of one, by
       multiplies that cannot carry across lanes (w * 5243 >> 19 is w / 100 for
       w < 10**4, u * 103 >> 10 is u / 10 for u < 100); tests/json compares every text
       with repr. Elsewhere two pairs per half from a table. */
    static DSH_ALWAYS_INLINE void dsh_json_digits8(char *p, uint32_t x) {
        uint32_t a = x / 10000, b = x - a * 10000;
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        uint64_t w = a | ((uint64_t)b << 32);
        uint64_t hundreds = ((w * 5243) >> 19) & 0x0000007F0000007FULL;
        w = hundreds | ((w - 100 * hundreds) << 16);
        uint64_t tens = ((w * 103) >> 10) & 0x000F000F000F000FULL;
        w = tens | ((w - 10 * tens) << 8);
        w += 0x3030303030303030ULL;
        memcpy(p, &w, 8);
    #else
        uint32_t a1 = (a * 5243) >> 19, b1 = (b * 5243) >> 19;
        memcpy(p, dsh_json_digit_pairs + 2 * a1, 2);
        memcpy(p + 2, dsh_json_digit_pairs + 2 * (a - 100 * a1), 2);
        memcpy(p + 4, dsh_json_digit_pairs + 2 * b1, 2);
        memcpy(p + 6, dsh_json_digit_pairs + 2 * (b - 100 * b1), 2);
    #endif
    }
    static int dsh_json_format_double(char *out, double x) {
        uint64_t bits, c, d;
        memcpy(&bits, &x, 8);
        int biased = (int)((bits >> 52) & 0x7FF), q, n, e10, decpt;
        char digits[64], *p = out, *r;
        if (biased == 0x7FF) return 0;  /* NaN and infinities: the writers reject them first */
        if (bits >> 63) *p++ = '-';
        c = bits & (((uint64_t)1 << 52) - 1);
        if (biased == 0) {
            if (c == 0) { memcpy(p, "0.0", 3); return (int)(p + 3 - out); }
            q = -1074;
        } else {
            c |= (uint64_t)1 << 52;
            q = biased - 1075;
        }
        if (q <= 0 && q >= -52 && (c & (((uint64_t)1 << -q) - 1)) == 0) {
            /* An integer below 2**53: its own digits (the neighbours are at most 1 away, so
               nothing shorter reads back), fixed notation. */
            d = c >> -q;
            e10 = 0;
        } else {
            /* Below a power of two (not the least exponent) the gap to the next double
               down is half as wide: the interval is [x - 2**q / 4, x + 2**q / 2]. */
            int asym = c == ((uint64_t)1 << 52) && biased > 1, open = (int)(c & 1), unsure = 0;
            int k = (int)(((long long)q * DSH_JSON_LOG10_2 + (asym ? DSH_JSON_LOG10_3_4 : 0)) >> DSH_JSON_LOG_SHIFT);
            /* 1 <= h <= 4 (checked by tools/float_table.py): (4c + 2) << h < 2**59. */
            int h = q + (int)(((long long)-k * DSH_JSON_LOG2_10) >> DSH_JSON_LOG_SHIFT) + 1;
            const uint64_t *g = dsh_json_pow10_table[k - DSH_JSON_K_MIN];
            uint64_t cb = c << 2, m = cb << h, hl = asym ? 1 : 2;
            /* x and the interval's ends (cb -+ 2, cb - 1 below a power of two), scaled. */
            dsh_u128 v = dsh_json_scale(g, m), vl = dsh_json_scale(g, (cb - hl) << h), vr = dsh_json_scale(g, (cb + 2) << h);
            uint64_t vb = dsh_json_round_odd(v, cb, q, k, &unsure);
            uint64_t vbl = dsh_json_round_odd(vl, cb - hl, q, k, &unsure);
            uint64_t vbr = dsh_json_round_odd(vr, cb + 2, q, k, &unsure);
            if (unsure) return 0;
            /* In quarter units of 10**k: x is vb / 4, the ends vbl / 4 and vbr / 4, inclusive
               when c is even (a tie reads back as the even mantissa). */
            uint64_t s = vb >> 2, sp10 = s / 10 * 10, tp10 = sp10 + 10;
            int upin = vbl + open <= sp10 << 2, wpin = (tp10 << 2) + open <= vbr;
            e10 = k;
            if (upin != wpin) {
                /* The one multiple of 10**(k + 1): drop its zeros. */
                d = (upin ? sp10 : tp10) / 10;
                e10++;
                while (d % 100000000 == 0) { d /= 100000000; e10 += 8; }  /* then fewer than 8 */
                if (d % 10000 == 0) { d /= 10000; e10 += 4; }
                if (d % 100 == 0) { d /= 100; e10 += 2; }
                if (d % 10 == 0) { d /= 10; e10 += 1; }
            } else {
                uint64_t t = s + 1;
                int uin = vbl + open <= s << 2, win = (t << 2) + open <= vbr;
                if (uin != win) d = uin ? s : t;
                else d = vb < 4 * s + 2 || (vb == 4 * s + 2 && (s & 1) == 0) ? s : t;
            }
        }
        /* The digits of d (at most 17), zero-padded to 17 at `digits`, the low eight and
           the next eight each in 32-bit arithmetic (two short dependency chains); the
           text is then assembled with fixed-size copies (24 bytes), whose excess later
           stores overwrite. `digits` leaves room for those reads, `out` for those
           writes (48 bytes). */
        {
            int bl = 64 - __builtin_clzll(d), t = (bl * 1233) >> 12;  /* log10(2) ~ 1233 / 4096 */
            n = t + (d >= dsh_json_pow10[t]);
        }
        if (d >= 100000000) {
            uint64_t high = d / 100000000;
            dsh_json_digits8(digits + 9, (uint32_t)(d - high * 100000000));
            digits[0] = (char)('0' + high / 100000000);
            dsh_json_digits8(digits + 1, (uint32_t)(high % 100000000));
        } else {
            dsh_json_digits8(digits + 9, (uint32_t)d);
        }
        memset(digits + 17, '0', 24);  /* defined bytes for the copies' excess */
        r = digits + 17 - n;
        decpt = n + e10;  /* the value is 0.DIGITS * 10**decpt */
        if (decpt > 16 || decpt <= -4) {
            int ex = decpt - 1;
            p[0] = r[0];
            if (n > 1) {
                p[1] = '.';
                memcpy(p + 2, r + 1, 24);
                p += n + 1;
            } else {
                p += 1;
            }
            p[0] = 'e';
            p[1] = ex < 0 ? '-' : '+';
            p += 2;
            if (ex < 0) ex = -ex;
            if (ex >= 100) { *p++ = (char)('0' + ex / 100); ex %= 100; }
            memcpy(p, dsh_json_digit_pairs + 2 * ex, 2);
            p += 2;
        } else if (decpt <= 0) {
            p[0] = '0'; p[1] = '.';
            memset(p + 2, '0', 24);
            p += 2 - decpt;
            memcpy(p, r, 24);
            p += n;
        } else if (decpt >= n) {
            memcpy(p, r, 24);
            p += n;
            memset(p, '0', 24);
            p += decpt - n;
            p[0] = '.'; p[1] = '0';
            p += 2;
        } else {
            memcpy(p, r, 24);
            p += decpt;
            p[0] = '.';
            memcpy(p + 1, r + decpt, 24);
            p += 1 + n - decpt;
        }
        return (int)(p - out);
    }
    #else
    static int dsh_json_format_double(char *out, double x) { (void)out; (void)x; return 0; }
    #endif
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
    /* ---- the writers' output buffer ------------------------------------------------
       Code units of `kind` bytes (1, 2 or 4), the layout of a CPython str of that
       kind, so the result is one memcpy into PyUnicode_New's storage (no UTF-8
       decode). The buffer starts at kind 1 and widens in place the first time a
       string of a wider kind is written. `maxchar` is 127, 255, 0xFFFF or
       0x10FFFF: the category of the widest character known to be written raw;
       when it is narrower than `kind` (a wide string held only escaped lone
       surrogates) the result is narrowed by CPython instead. */
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    typedef struct {
        char *data;
        Py_ssize_t length;   /* in code units */
        Py_ssize_t cap;      /* in code units */
        int kind;
        Py_UCS4 maxchar;
        char scratch[64];    /* number text on its way into a wide buffer */
    } dsh_buf;
    /* Lengths in code units stay below this, so byte sizes never overflow. */
    #define DSH_BUF_LIMIT (PY_SSIZE_T_MAX / 8)
    static int dsh_buf_grow(dsh_buf *b, Py_ssize_t extra) {
        Py_ssize_t need, cap;
        char *data;
        if (extra <= b->cap - b->length) return 0;
        if (extra > DSH_BUF_LIMIT - b->length) { PyErr_NoMemory(); return -1; }
        need = b->length + extra;
        cap = b->cap ? (b->cap < DSH_BUF_LIMIT / 2 ? b->cap * 2 : DSH_BUF_LIMIT) : 4096;
        if (cap < need) cap = need;
        data = (char *)realloc(b->data, (size_t)cap * (size_t)b->kind);
        if (data == NULL) { PyErr_NoMemory(); return -1; }
        b->data = data;
        b->cap = cap;
        return 0;
    }
    #define DSH_RESERVE(b, n) (((n) <= (b)->cap - (b)->length) ? 0 : dsh_buf_grow((b), (n)))
    static inline void dsh_copy_1_2(uint16_t *d, const uint8_t *s, Py_ssize_t n) {
        Py_ssize_t i = 0;
    #if defined(__SSE2__)
        const __m128i z = _mm_setzero_si128();
        uint64_t w;
        uint32_t h;
        for (; i + 16 <= n; i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
            _mm_storeu_si128((__m128i *)(d + i), _mm_unpacklo_epi8(v, z));
            _mm_storeu_si128((__m128i *)(d + i + 8), _mm_unpackhi_epi8(v, z));
        }
        if (n >= 8) {
            /* Whole 8-unit steps, the last one overlapping what is written. */
            for (;;) {
                if (i + 8 > n) i = n - 8;
                memcpy(&w, s + i, 8);
                _mm_storeu_si128((__m128i *)(d + i), _mm_unpacklo_epi8(_mm_cvtsi64_si128((long long)w), z));
                i += 8;
                if (i >= n) return;
            }
        }
        if (n >= 4) {
            memcpy(&h, s, 4);
            _mm_storel_epi64((__m128i *)d, _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)h), z));
            memcpy(&h, s + n - 4, 4);
            _mm_storel_epi64((__m128i *)(d + n - 4), _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)h), z));
            return;
        }
    #endif
        for (; i < n; i++) d[i] = s[i];
    }
    static inline void dsh_copy_1_4(uint32_t *d, const uint8_t *s, Py_ssize_t n) {
        Py_ssize_t i = 0;
    #if defined(__SSE2__)
        const __m128i z = _mm_setzero_si128();
        for (; i + 16 <= n; i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
            __m128i lo = _mm_unpacklo_epi8(v, z), hi = _mm_unpackhi_epi8(v, z);
            _mm_storeu_si128((__m128i *)(d + i), _mm_unpacklo_epi16(lo, z));
            _mm_storeu_si128((__m128i *)(d + i + 4), _mm_unpackhi_epi16(lo, z));
            _mm_storeu_si128((__m128i *)(d + i + 8), _mm_unpacklo_epi16(hi, z));
            _mm_storeu_si128((__m128i *)(d + i + 12), _mm_unpackhi_epi16(hi, z));
        }
    #endif
        for (; i < n; i++) d[i] = s[i];
    }
    static inline void dsh_copy_2_4(uint32_t *d, const uint16_t *s, Py_ssize_t n) {
        Py_ssize_t i = 0;
    #if defined(__SSE2__)
        const __m128i z = _mm_setzero_si128();
        for (; i + 8 <= n; i += 8) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
            _mm_storeu_si128((__m128i *)(d + i), _mm_unpacklo_epi16(v, z));
            _mm_storeu_si128((__m128i *)(d + i + 4), _mm_unpackhi_epi16(v, z));
        }
    #endif
        for (; i < n; i++) d[i] = s[i];
    }
    /* Copy n code units of kind `sk` at s to the end of the buffer (room reserved, sk <= kind). */
    static inline void dsh_buf_copy(dsh_buf *b, const void *s, int sk, Py_ssize_t n) {
        char *out = b->data + b->length * b->kind;
        if (sk == b->kind) memcpy(out, s, (size_t)n * (size_t)sk);
        else if (b->kind == 2) dsh_copy_1_2((uint16_t *)out, (const uint8_t *)s, n);
        else if (sk == 1) dsh_copy_1_4((uint32_t *)out, (const uint8_t *)s, n);
        else dsh_copy_2_4((uint32_t *)out, (const uint16_t *)s, n);
        b->length += n;
    }
    /* Re-code the buffer's content in the wider `kind`, in place (back to front). */
    static int dsh_buf_widen(dsh_buf *b, int kind) {
        Py_ssize_t i = b->length;
        if (b->cap) {
            char *data = (char *)realloc(b->data, (size_t)b->cap * (size_t)kind);
            if (data == NULL) { PyErr_NoMemory(); return -1; }
            b->data = data;
        }
        if (b->kind == 1 && kind == 2) {
            const uint8_t *s = (const uint8_t *)b->data; uint16_t *d = (uint16_t *)b->data;
            while (i-- > 0) d[i] = s[i];
        } else if (b->kind == 1) {
            const uint8_t *s = (const uint8_t *)b->data; uint32_t *d = (uint32_t *)b->data;
            while (i-- > 0) d[i] = s[i];
        } else {
            const uint16_t *s = (const uint16_t *)b->data; uint32_t *d = (uint32_t *)b->data;
            while (i-- > 0) d[i] = s[i];
        }
        b->kind = kind;
        return 0;
    }
    /* ASCII text (room reserved). */
    static inline void dsh_put_ascii_r(dsh_buf *b, const char *s, Py_ssize_t n) {
        Py_ssize_t i;
        if (b->kind == 1) {
            memcpy(b->data + b->length, s, (size_t)n);
        } else if (b->kind == 2) {
            uint16_t *d = (uint16_t *)b->data + b->length;
            for (i = 0; i < n; i++) d[i] = (unsigned char)s[i];
        } else {
            uint32_t *d = (uint32_t *)b->data + b->length;
            for (i = 0; i < n; i++) d[i] = (unsigned char)s[i];
        }
        b->length += n;
    }
    static inline int dsh_put_ascii(dsh_buf *b, const char *s, Py_ssize_t n) {
        if (DSH_RESERVE(b, n) < 0) return -1;
        dsh_put_ascii_r(b, s, n);
        return 0;
    }
    static inline void dsh_putc_r(dsh_buf *b, Py_UCS4 c) {
        if (b->kind == 1) ((uint8_t *)b->data)[b->length] = (uint8_t)c;
        else if (b->kind == 2) ((uint16_t *)b->data)[b->length] = (uint16_t)c;
        else ((uint32_t *)b->data)[b->length] = c;
        b->length++;
    }
    static inline int dsh_putc(dsh_buf *b, char c) {
        if (DSH_RESERVE(b, 1) < 0) return -1;
        dsh_putc_r(b, (unsigned char)c);
        return 0;
    }
    /* Where number text goes: straight into a kind-1 buffer, else via scratch. */
    static inline char *dsh_ascii_begin(dsh_buf *b, Py_ssize_t n) {
        /* n <= 48; 16 more for the whole-chunk widening below */
        if (DSH_RESERVE(b, n + 16) < 0) return NULL;
        return b->kind == 1 ? b->data + b->length : b->scratch;
    }
    /* Widen n ASCII units from p (which has n rounded up to 16 readable bytes)
       in whole 16-unit chunks: fixed-size work, the excess is overwritten later. */
    static inline void dsh_put_chunks_r(dsh_buf *b, const char *p, Py_ssize_t n) {
        Py_ssize_t whole = (n + 15) & ~(Py_ssize_t)15;
        if (b->kind == 2) dsh_copy_1_2((uint16_t *)b->data + b->length, (const uint8_t *)p, whole);
        else dsh_copy_1_4((uint32_t *)b->data + b->length, (const uint8_t *)p, whole);
        b->length += n;
    }
    static inline void dsh_ascii_end(dsh_buf *b, const char *p, Py_ssize_t n) {
        if (b->kind == 1) b->length += n;
        else dsh_put_chunks_r(b, p, n);
    }
    /* ---- cached key text: `"key": ` for short plain ASCII keys --------------------
       Keys repeat (every record of a list has the same ones, usually the same str
       objects), so each distinct key object is escaped once per call and then
       copied with fixed-size moves. Entries hold strong references (a key cannot
       die and its address be reused during the call) and are emptied after it. */
    #define DSH_KEYCACHE 512
    #define DSH_KEYTEXT 48
    typedef struct { PyObject *key; Py_ssize_t len; char text[DSH_KEYTEXT]; } dsh_key_entry;
    typedef struct {
        dsh_key_entry e[DSH_KEYCACHE];
        uint16_t used[DSH_KEYCACHE];
        Py_ssize_t nused;
    } dsh_keycache;
    static void dsh_keycache_clear(dsh_keycache *c) {
        Py_ssize_t i;
        for (i = 0; i < c->nused; i++) {
            dsh_key_entry *e = &c->e[c->used[i]];
            Py_CLEAR(e->key);
        }
        c->nused = 0;
    }
    /* Write the key `k` (an exact str), then `: ` (pretty) or `:`. */
    static int dsh_buf_str(dsh_buf *b, PyObject *s);
    static inline void dsh_copy_small(char *out, const char *data, Py_ssize_t n);
    static DSH_ALWAYS_INLINE int dsh_write_key(dsh_buf *b, dsh_keycache *c, PyObject *k, int pretty) {
        Py_ssize_t n;
        dsh_key_entry *e;
        if (c != NULL) {
            e = &c->e[((uintptr_t)k >> 4) & (DSH_KEYCACHE - 1)];
            if (e->key != k) {
                n = PyUnicode_GET_LENGTH(k);
                if (!(PyUnicode_IS_ASCII(k) && n <= DSH_KEYTEXT - 4
                      && dsh_json_plain_prefix((const unsigned char *)PyUnicode_DATA(k), n) == n))
                    goto uncached;
                if (e->key == NULL) c->used[c->nused++] = (uint16_t)(e - c->e);
                Py_INCREF(k);
                Py_XSETREF(e->key, k);  /* frees at most a str: no Python code runs */
                e->text[0] = '"';
                memcpy(e->text + 1, PyUnicode_DATA(k), (size_t)n);
                e->text[1 + n] = 34;  /* the closing quote */
                e->text[2 + n] = 58;  /* colon */
                e->text[3 + n] = 32;
                e->len = n + 3;
            }
            n = e->len + (pretty != 0);
            if (DSH_RESERVE(b, DSH_KEYTEXT) < 0) return -1;
            if (b->kind == 1) {
                memcpy(b->data + b->length, e->text, DSH_KEYTEXT);
                b->length += n;
            } else {
                dsh_put_chunks_r(b, e->text, n);
            }
            return 0;
        }
    uncached:
        n = PyUnicode_GET_LENGTH(k);
        if (b->kind == 1 && PyUnicode_IS_ASCII(k)
                && dsh_json_plain_prefix((const unsigned char *)PyUnicode_DATA(k), n) == n) {
            /* The common case of a key met once (a wide object): quote, text, quote, colon
               and the space, written in one reservation. */
            char *out;
            if (DSH_RESERVE(b, n + 4) < 0) return -1;
            out = b->data + b->length;
            out[0] = 34;  /* quote */
            dsh_copy_small(out + 1, (const char *)PyUnicode_DATA(k), n);
            out[n + 1] = 34;
            out[n + 2] = 58;  /* colon */
            out[n + 3] = 32;  /* kept only when pretty */
            b->length += n + 3 + (pretty != 0);
            return 0;
        }
        if (dsh_buf_str(b, k) < 0) return -1;
        if (DSH_RESERVE(b, 2) < 0) return -1;
        dsh_putc_r(b, ':');
        if (pretty) dsh_putc_r(b, ' ');
        return 0;
    }
    /* A newline and 16 spaces in each kind, for fixed-size copies of indentation. */
    static const uint8_t dsh_nl1[17] = {10, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32};
    static const uint16_t dsh_nl2[17] = {10, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32};
    static const uint32_t dsh_nl4[17] = {10, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32};
    static int dsh_newline(dsh_buf *b, Py_ssize_t depth, Py_ssize_t indent) {
        Py_ssize_t spaces, i;
        if (indent && depth > (DSH_BUF_LIMIT / 2) / indent) { PyErr_NoMemory(); return -1; }
        spaces = depth * indent;
        if (DSH_RESERVE(b, spaces + 1) < 0) return -1;
        if (b->kind == 1) {
            b->data[b->length] = 10;  /* newline */
            memset(b->data + b->length + 1, ' ', (size_t)spaces);
            b->length += spaces + 1;
        } else {
            dsh_putc_r(b, 10);  /* newline */
            for (i = 0; i < spaces; i++) dsh_putc_r(b, ' ');
        }
        return 0;
    }
    /* `,` when `comma`, then a newline and the indentation of `depth`. */
    static DSH_ALWAYS_INLINE int dsh_separator(dsh_buf *b, int comma, Py_ssize_t depth, Py_ssize_t indent) {
        if (depth <= 16 && indent <= 16 && depth * indent <= 16) {
            Py_ssize_t keep = 1 + depth * indent;
            if (DSH_RESERVE(b, 18) < 0) return -1;
            if (comma) dsh_putc_r(b, ',');
            /* Copy all 17 units (fixed size: a few stores), keep the needed ones. */
            if (b->kind == 1) memcpy(b->data + b->length, dsh_nl1, sizeof dsh_nl1);
            else if (b->kind == 2) memcpy((uint16_t *)b->data + b->length, dsh_nl2, sizeof dsh_nl2);
            else memcpy((uint32_t *)b->data + b->length, dsh_nl4, sizeof dsh_nl4);
            b->length += keep;
            return 0;
        }
        if (comma && dsh_putc(b, ',') < 0) return -1;
        return dsh_newline(b, depth, indent);
    }
    /* The JSON escape of an ASCII special or a lone surrogate (room for 6 reserved). */
    static const char dsh_hex[] = "0123456789abcdef";
    static inline void dsh_put_escape_r(dsh_buf *b, Py_UCS4 c) {
        /* Unit by unit into the buffer: text assembled on the stack and copied
           would be read back before its byte stores retire (a forwarding stall). */
        Py_UCS4 e;
        switch (c) {
        case 34: e = 34; break;  /* quote */
        case 92: e = 92; break;  /* backslash */
        case 10: e = 'n'; break;
        case 13: e = 'r'; break;
        case 9: e = 't'; break;
        case 8: e = 'b'; break;
        case 12: e = 'f'; break;
        default:
            dsh_putc_r(b, 92);
            dsh_putc_r(b, 'u');
            dsh_putc_r(b, (unsigned char)dsh_hex[(c >> 12) & 15]);
            dsh_putc_r(b, (unsigned char)dsh_hex[(c >> 8) & 15]);
            dsh_putc_r(b, (unsigned char)dsh_hex[(c >> 4) & 15]);
            dsh_putc_r(b, (unsigned char)dsh_hex[c & 15]);
            return;
        }
        dsh_putc_r(b, 92);
        dsh_putc_r(b, e);
    }
    /* Whether four UCS-2 units hold one that JSON escapes: below 0x20, '"', backslash
       or a surrogate (0xD800-0xDFFF). Exact for "any" like the byte test. */
    static inline int dsh_json_word_special16(uint64_t w) {
        const uint64_t ones = 0x0001000100010001ULL, high = 0x8000800080008000ULL;
        uint64_t q = w ^ (ones * 0x22), k = w ^ (ones * 0x5C), s = (w & (ones * 0xF800)) ^ (ones * 0xD800);
        return ((((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((k - ones) & ~k) | ((s - ones) & ~s)) & high) != 0;
    }
    static inline int dsh_json_special_unit(Py_UCS4 c) {
        return c < 0x20 || c == 34 || c == 92 || (c & 0xFFFFF800u) == 0xD800u;  /* quote, backslash */
    }
    static inline Py_ssize_t dsh_json_plain_prefix16(const uint16_t *p, Py_ssize_t n) {
        Py_ssize_t i = 0;
        uint64_t w;
        for (; i + 4 <= n; i += 4) {
            memcpy(&w, p + i, 8);
            if (dsh_json_word_special16(w)) break;
        }
        for (; i < n; i++) {
            if (dsh_json_special_unit(p[i])) return i;
        }
        return n;
    }
    static inline Py_ssize_t dsh_json_plain_prefix32(const uint32_t *p, Py_ssize_t n) {
        Py_ssize_t i;
        for (i = 0; i < n; i++) {
            if (dsh_json_special_unit(p[i])) return i;
        }
        return n;
    }
    /* Copy n bytes: fixed-size moves for short texts (keys, short values) instead of a call. */
    static inline void dsh_copy_small(char *out, const char *data, Py_ssize_t n) {
        uint64_t w1, w2;
        uint32_t h1, h2;
        if (n >= 8 && n <= 16) {
            /* Two overlapping 8-byte copies. */
            memcpy(&w1, data, 8);
            memcpy(&w2, data + n - 8, 8);
            memcpy(out, &w1, 8);
            memcpy(out + n - 8, &w2, 8);
        } else if (n >= 4 && n < 8) {
            memcpy(&h1, data, 4);
            memcpy(&h2, data + n - 4, 4);
            memcpy(out, &h1, 4);
            memcpy(out + n - 4, &h2, 4);
        } else if (n < 4) {
            Py_ssize_t i;
            for (i = 0; i < n; i++) out[i] = data[i];
        } else {
            memcpy(out, data, (size_t)n);
        }
    }
    /* Write the exact str `s` as a JSON string. */
    static int dsh_buf_str(dsh_buf *b, PyObject *s) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(s), i = 0, plain;
        int sk = PyUnicode_KIND(s);
        const void *data = PyUnicode_DATA(s);
        int lone_surrogate = 0;
        Py_UCS4 c;
        if (sk == 1 && b->kind == 1) {
            /* The common case, one byte per unit on both sides. */
            plain = dsh_json_plain_prefix((const unsigned char *)data, n);
            if (plain == n) {
                char *out;
                if (DSH_RESERVE(b, n + 2) < 0) return -1;
                out = b->data + b->length;
                out[0] = 34;  /* quote */
                dsh_copy_small(out + 1, (const char *)data, n);
                out[n + 1] = 34;
                b->length += n + 2;
                if (b->maxchar < 255 && !PyUnicode_IS_ASCII(s)) b->maxchar = 255;
                return 0;
            }
        }
        if (sk == 1 && b->kind == 2) {
            /* The next most common case: a one-byte string in a two-byte text. */
            plain = dsh_json_plain_prefix((const unsigned char *)data, n);
            if (plain == n) {
                uint16_t *out;
                if (DSH_RESERVE(b, n + 2) < 0) return -1;
                out = (uint16_t *)b->data + b->length;
                out[0] = 34;  /* quote */
                dsh_copy_1_2(out + 1, (const uint8_t *)data, n);
                out[n + 1] = 34;
                b->length += n + 2;
                if (b->maxchar < 255 && !PyUnicode_IS_ASCII(s)) b->maxchar = 255;
                return 0;
            }
        }
        if (sk > b->kind && dsh_buf_widen(b, sk) < 0) return -1;
        if (DSH_RESERVE(b, n + 2) < 0) return -1;
        dsh_putc_r(b, '"');
        for (;;) {
            if (sk == 1) plain = dsh_json_plain_prefix((const unsigned char *)data + i, n - i);
            else if (sk == 2) plain = dsh_json_plain_prefix16((const uint16_t *)data + i, n - i);
            else plain = dsh_json_plain_prefix32((const uint32_t *)data + i, n - i);
            dsh_buf_copy(b, (const char *)data + i * sk, sk, plain);
            i += plain;
            if (i == n) break;
            /* Room for this escape, the rest as is and the closing quote. */
            if (DSH_RESERVE(b, (n - i) + 7) < 0) return -1;
            c = PyUnicode_READ(sk, data, i);
            if (c >= 0xD800) lone_surrogate = 1;
            dsh_put_escape_r(b, c);
            i++;
        }
        dsh_putc_r(b, '"');
        /* A kind-2 string holds a character >= 256; unless it had surrogates,
           which are escaped, that character was written raw. */
        if (sk == 1) {
            if (b->maxchar < 255 && !PyUnicode_IS_ASCII(s)) b->maxchar = 255;
        } else if (sk == 2) {
            if (b->maxchar < 0xFFFF && !lone_surrogate) b->maxchar = 0xFFFF;
        } else {
            b->maxchar = 0x10FFFF;
        }
        return 0;
    }
    static PyObject *dsh_buf_finish(dsh_buf *b) {
        int need = b->maxchar < 256 ? 1 : b->maxchar < 0x10000 ? 2 : 4;
        PyObject *text;
        if (need != b->kind) return PyUnicode_FromKindAndData(b->kind, b->data, b->length);
        text = PyUnicode_New(b->length, b->maxchar);
        if (text == NULL) return NULL;
        memcpy(PyUnicode_DATA(text), b->data, (size_t)b->length * (size_t)b->kind);
        return text;
    }
    /* ---- sorted members for the canonical writer ------------------------------------ */
    typedef struct { PyObject *k; PyObject *v; } dsh_pair;
    /* a < b for exact strs, by code point (Python's str order); never fails. */
    static inline int dsh_str_lt(PyObject *a, PyObject *b) {
        Py_ssize_t la = PyUnicode_GET_LENGTH(a), lb = PyUnicode_GET_LENGTH(b), n = la < lb ? la : lb, i;
        int ka = PyUnicode_KIND(a), kb = PyUnicode_KIND(b);
        const void *da = PyUnicode_DATA(a), *db = PyUnicode_DATA(b);
        if (ka == 1 && kb == 1) {
            int c = memcmp(da, db, (size_t)n);
            return c ? c < 0 : la < lb;
        }
        for (i = 0; i < n; i++) {
            Py_UCS4 x = PyUnicode_READ(ka, da, i), y = PyUnicode_READ(kb, db, i);
            if (x != y) return x < y;
        }
        return la < lb;
    }
    /* Merge sort by key (keys are distinct, so stability is moot); `tmp` holds n / 2
       pairs. Halves already in order are not merged, so sorted input costs n compares.
       The recursion is log2(n) deep whatever the input. */
    static void dsh_sort_pairs(dsh_pair *a, Py_ssize_t n, dsh_pair *tmp) {
        Py_ssize_t m, i, j, k;
        dsh_pair x;
        if (n <= 16) {
            for (i = 1; i < n; i++) {
                x = a[i];
                for (j = i; j > 0 && dsh_str_lt(x.k, a[j - 1].k); j--) a[j] = a[j - 1];
                a[j] = x;
            }
            return;
        }
        m = n / 2;
        dsh_sort_pairs(a, m, tmp);
        dsh_sort_pairs(a + m, n - m, tmp);
        if (dsh_str_lt(a[m - 1].k, a[m].k)) return;
        memcpy(tmp, a, (size_t)m * sizeof(dsh_pair));
        i = 0; j = m; k = 0;
        while (i < m && j < n) a[k++] = dsh_str_lt(a[j].k, tmp[i].k) ? a[j++] : tmp[i++];
        while (i < m) a[k++] = tmp[i++];
    }
    """
    Py_ssize_t dsh_json_plain_prefix(const unsigned char* p, Py_ssize_t n)
    int dsh_json_format_ll(char* out, long long x)
    int dsh_json_format_double(char* out, double x)
    bint dsh_json_compact_int(PyObject* v, long long* out)
    PyObject* dsh_json_new_dict(PyObject* cls, PyObject* empty)
    PyObject* dsh_json_move_list(PyObject* plain, PyObject* cls, PyObject* empty)
    ctypedef struct dsh_buf:
        char* data
        Py_ssize_t length
        Py_ssize_t cap
        int kind
        uint32_t maxchar
    ctypedef struct dsh_pair:
        PyObject* k
        PyObject* v
    int dsh_buf_grow(dsh_buf* b, Py_ssize_t extra) except -1
    int dsh_put_ascii(dsh_buf* b, const char* s, Py_ssize_t n) except -1
    int dsh_putc(dsh_buf* b, char c) except -1
    int dsh_newline(dsh_buf* b, Py_ssize_t depth, Py_ssize_t indent) except -1
    int dsh_separator(dsh_buf* b, int comma, Py_ssize_t depth, Py_ssize_t indent) except -1
    int dsh_buf_str(dsh_buf* b, PyObject* s) except -1
    char* dsh_ascii_begin(dsh_buf* b, Py_ssize_t n) except NULL
    void dsh_ascii_end(dsh_buf* b, const char* p, Py_ssize_t n)
    object dsh_buf_finish(dsh_buf* b)
    void dsh_sort_pairs(dsh_pair* a, Py_ssize_t n, dsh_pair* tmp)
    ctypedef struct dsh_keycache:
        Py_ssize_t nused
    void dsh_keycache_clear(dsh_keycache* c)
    int dsh_write_key(dsh_buf* b, dsh_keycache* c, PyObject* k, int pretty) except -1


cdef extern from "Python.h":
    PyObject* Py_None
    PyObject* Py_True
    Py_ssize_t PY_SSIZE_T_MAX

    void* type_of "Py_TYPE"(PyObject*)
    Py_ssize_t size_of "Py_SIZE"(PyObject*)
    void incref "Py_INCREF"(PyObject*)
    void decref "Py_DECREF"(PyObject*)

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
    dsh_pair* items     # owned, strong refs: the sorted members (canonical writer), else NULL
    Py_ssize_t pos      # PyDict_Next position, or the next index
    Py_ssize_t size     # the length (or size) when the frame was opened
    Py_ssize_t seen     # members an object yielded so far (read from its source)
    int kind            # OBJECT, ARRAY or TUPLE
    bint walk_dest      # the snapshot walks its clone ``dest`` instead of ``src``
    bint pretty
    bint started
    bint cache_keys     # the object is small: its keys likely recur in its siblings


cdef enum:
    INLINE_FRAMES = 8


cdef struct Stack:
    Frame* frames       # ``inline_frames`` until the walk nests deeper, then a heap array
    Py_ssize_t depth
    Py_ssize_t cap
    Frame inline_frames[INLINE_FRAMES]


cdef inline void stack_init(Stack* st) noexcept:
    # Small values (most tool arguments and results) never touch the heap for their stack.
    st.frames = st.inline_frames
    st.depth = 0
    st.cap = INLINE_FRAMES


cdef int stack_grow(Stack* st) except -1:
    cdef Py_ssize_t cap = st.cap * 2
    cdef Frame* frames
    if st.frames == st.inline_frames:
        frames = <Frame*>malloc(cap * sizeof(Frame))
        if frames != NULL:
            memcpy(frames, st.inline_frames, st.depth * sizeof(Frame))
    else:
        frames = <Frame*>realloc(st.frames, cap * sizeof(Frame))
    if frames == NULL:
        raise MemoryError()
    st.frames = frames
    st.cap = cap
    return 0


cdef inline Frame* stack_push(Stack* st, PyObject* src, int kind) except NULL:
    if st.depth == st.cap:
        stack_grow(st)
    cdef Frame* f = &st.frames[st.depth]
    incref(src)
    f.src = src
    f.dest = NULL
    f.key = NULL
    f.items = NULL
    f.pos = 0
    f.size = size_of(src) if kind != OBJECT else PyDict_GET_SIZE(src)
    f.seen = 0
    f.walk_dest = False
    f.kind = kind
    f.pretty = False
    f.cache_keys = False
    f.started = False
    st.depth += 1
    return f


cdef inline void frame_clear(Frame* f) noexcept:
    decref(f.src)
    Py_XDECREF(f.dest)
    Py_XDECREF(f.key)
    if f.items != NULL:
        items_release(f.items, f.size)
        f.items = NULL


cdef void items_release(dsh_pair* items, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        decref(items[i].k)
        decref(items[i].v)
    free(items)


cdef void stack_release(Stack* st) noexcept:
    while st.depth > 0:
        st.depth -= 1
        frame_clear(&st.frames[st.depth])
    if st.frames != st.inline_frames:
        free(st.frames)
    stack_init(st)


cdef list stack_path(Stack* st, Py_ssize_t drop):
    """The path to the current value: each open frame's current key or index."""
    cdef list path = []
    cdef Py_ssize_t i
    cdef Frame* f
    for i in range(st.depth - drop):
        f = &st.frames[i]
        if f.items != NULL:
            path.append(<object>f.items[f.pos - 1].k)
        elif f.kind == OBJECT:
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


cdef int lone_surrogate(PyObject* s) noexcept:
    """The first surrogate code point of the str ``s`` (UTF-8 cannot encode one), or -1 (``_errors.lone_surrogate``)."""
    cdef Py_ssize_t i, n
    cdef int kind
    cdef const uint16_t* two
    cdef const uint32_t* four
    if PyUnicode_IS_ASCII(s):
        return -1
    kind = PyUnicode_KIND(s)
    if kind == PyUnicode_1BYTE_KIND:
        return -1  # Latin-1: no surrogates
    n = PyUnicode_GET_LENGTH(s)
    if kind == PyUnicode_2BYTE_KIND:
        two = <const uint16_t*>PyUnicode_DATA(s)
        for i in range(n):
            if 0xD800 <= two[i] <= 0xDFFF:
                return two[i]
        return -1
    four = <const uint32_t*>PyUnicode_DATA(s)
    for i in range(n):
        if 0xD800 <= four[i] <= 0xDFFF:
            return <int>four[i]
    return -1


cdef inline int classify(PyObject* v, bint safe, bint reuse, Stack* st, bint utf8=False) except -1:
    cdef void* t = type_of(v)
    cdef int code
    if t == STR_T:
        if utf8:
            code = lone_surrogate(v)
            if code >= 0:
                raise surrogate_error(code, stack_path(st, 0))
        return SCALAR
    if v == Py_None or t == BOOL_T:
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

cdef enum:
    FLAT_MAX = 16  # the most members (or items) a container may have to take the flat path
    FLAT_NODES = 1 + FLAT_MAX * (1 + FLAT_MAX)  # the most values a flat value holds


cdef inline bint flat_scalar(PyObject* v) noexcept:
    # A scalar the walk would copy as it is, decided without raising (anything else: the walk).
    cdef void* t = type_of(v)
    cdef int overflow = 0
    if t == STR_T or v == Py_None or t == BOOL_T:
        return True
    if t == INT_T:
        PyLong_AsLongLongAndOverflow(v, &overflow)
        return overflow == 0
    if t == FLOAT_T:
        return not bad_float(PyFloat_AS_DOUBLE(v))
    return False


cdef bint flat_object(PyObject* src) noexcept:
    # An exact dict of at most FLAT_MAX str keys whose values are all flat scalars.
    cdef Py_ssize_t pos = 0
    cdef PyObject* k
    cdef PyObject* v
    if type_of(src) != DICT_T or PyDict_GET_SIZE(src) > FLAT_MAX:
        return False
    while PyDict_Next(src, &pos, &k, &v):
        if type_of(k) != STR_T or not flat_scalar(v):
            return False
    return True


cdef object frozen_object_copy(PyObject* src):
    # The FrozenJsonObject copy of a flat object (same order; a flat object has no nested copy
    # to make), or None if it is no longer flat: making the copy may run the collector, and a
    # finalizer may change ``src``.
    cdef PyObject* made = dsh_json_new_dict(<PyObject*>FrozenJsonObject, <PyObject*>EMPTY_TUPLE)
    if made == NULL:
        propagate()
        return None
    copy = <object>made
    decref(made)  # <object> took a second reference
    if not flat_object(src):
        return None
    PyDict_Update(made, src)
    return copy


cdef object flat_copy(PyObject* root):
    """The frozen copy of a small flat value, or ``None`` when the general walk must decide.

    Flat: an exact dict that ``flat_object`` accepts, or an exact list of at
    most FLAT_MAX items that are flat scalars or such dicts (a list of content
    blocks). No cycle can hide in it, and every check is exactly the walk's,
    so the copy is the one the walk would make.
    """
    cdef Py_ssize_t i, n
    cdef PyObject* item
    cdef PyObject* sealed
    if type_of(root) == DICT_T:
        return frozen_object_copy(root) if flat_object(root) else None  # (checked again there)
    if type_of(root) != LIST_T:
        return None
    n = PyList_GET_SIZE(root)
    if n > FLAT_MAX:
        return None
    for i in range(n):
        item = PyList_GET_ITEM(root, i)
        if not flat_scalar(item) and not flat_object(item):
            return None
    cdef PyObject* fresh = PyList_New(n)
    plain = <object>fresh
    decref(fresh)  # <object> took a second reference
    for i in range(n):
        # Checked again as it is copied: an allocation here may run a finalizer that changes
        # ``root`` (then the general walk decides).
        if PyList_GET_SIZE(root) != n:
            return None
        item = PyList_GET_ITEM(root, i)
        if type_of(item) == DICT_T:
            held = <object>item  # strong: the copy allocates, and a finalizer may drop it from root
            value = frozen_object_copy(<PyObject*>held)
            if value is None:
                return None
        elif flat_scalar(item):
            value = <object>item
        else:
            return None
        incref(<PyObject*>value)
        PyList_SET_ITEM(<PyObject*>plain, i, <PyObject*>value)
    sealed = dsh_json_move_list(<PyObject*>plain, <PyObject*>FrozenJsonArray, <PyObject*>EMPTY_TUPLE)
    if sealed == NULL:
        propagate()
        return None
    copy = <object>sealed
    decref(sealed)
    return copy


cdef bint all_str_keys(PyObject* src) noexcept:
    cdef Py_ssize_t pos = 0
    cdef PyObject* k
    cdef PyObject* v
    while PyDict_Next(src, &pos, &k, &v):
        if type_of(k) != STR_T:
            return False
    return True


cdef int open_copy(Stack* st, PyObject* src, int kind, bint freeze) except -1:
    cdef Frame* f = stack_push(st, src, kind)
    if kind == OBJECT:
        # A copy of the whole object up front (CPython clones the hash table of
        # an exact dict into an empty one); the walk then replaces the values
        # that are containers with their copies, in place, keeping the order.
        # Copying a key that is not an exact str could run its __eq__; such an
        # object fails the walk anyway, so its copy stays empty.
        # The walk then reads the clone, not ``src``: the clone is private, so
        # the copy is complete whatever a finalizer does to ``src`` meanwhile
        # (its size is still checked, to report such a change).
        # The empty copy is made first and filled after: its allocation may run a finalizer, so
        # the clone is of what src is then. (PyDict_Copy allocates the copy after cloning the
        # table and reads src's size after that: a finalizer clearing src in between leaves a
        # copy whose size says empty while its table holds the old entries.)
        if freeze:
            f.dest = dsh_json_new_dict(<PyObject*>FrozenJsonObject, <PyObject*>EMPTY_TUPLE)
            if f.dest == NULL:
                return propagate()
        else:
            f.dest = PyDict_New()
        if all_str_keys(src):
            PyDict_Update(f.dest, src)
            f.walk_dest = True
        f.size = PyDict_GET_SIZE(src)
    else:
        f.dest = PyList_New(f.size)
    return 0


cdef inline int descend(Stack* st, PyObject* v, int kind, bint build, bint freeze, set deep) except -1:
    """Open a frame for the container ``v`` (and its copy when ``build``), unless it is on the path."""
    if on_path(st, v, deep):
        raise cycle_error(stack_path(st, 0))
    if build:
        open_copy(st, v, kind, freeze)
    else:
        stack_push(st, v, kind)
    track_push(st, v, deep)
    return 0


# A copy that reaches this many values first checks, without building anything, that the
# whole value fits its budget: building ten million containers takes tens of seconds (the
# collector traverses them again and again), checking them a second or so.
cdef Py_ssize_t PRECHECK_NODES = 100_000


cdef object walk(object root, bint freeze, bint safe, bint build, Py_ssize_t max_nodes, bint for_build=False, bint utf8=False):
    """Check ``root`` and, when ``build``, return its detached (frozen) copy.

    ``for_build``: a check standing in for a copy (the budget's pre-check): it
    reuses frozen containers only where the copy would, so it counts alike.
    ``utf8``: strings and keys holding a lone surrogate are refused too.
    """
    cdef bint reuse = not safe and not utf8 and (freeze or not (build or for_build))
    cdef Py_ssize_t precheck_at = PRECHECK_NODES if build and max_nodes > PRECHECK_NODES else -1
    cdef Stack st
    stack_init(&st)
    if max_nodes < 1:
        raise nodes_budget_error(max_nodes, [])
    cdef int kind = classify(<PyObject*>root, safe, reuse, &st, utf8)
    if kind == SCALAR or kind == REUSE:
        return root
    if build and freeze and not safe and not utf8 and max_nodes >= FLAT_NODES:
        # Small flat values (most tool results and content) skip the general walk.
        flat = flat_copy(<PyObject*>root)
        if flat is not None:
            return flat
    cdef set deep = None  # made when the walk first nests LINEAR_DEPTH deep (see track_push)
    cdef Frame* f
    cdef Frame* parent
    cdef PyObject* k
    cdef PyObject* v
    cdef PyObject* done
    cdef PyObject* sealed
    cdef PyObject* src
    cdef object child  # the member being classified, held strongly (see the module docstring)
    cdef bint descended
    cdef Py_ssize_t visited = 1
    try:
        descend(&st, <PyObject*>root, kind, build, freeze, deep)
        while True:
            f = &st.frames[st.depth - 1]
            descended = False
            if f.kind == OBJECT:
                while True:
                    # dict's own iterator rule: the size is checked before every step.
                    if PyDict_GET_SIZE(f.src) != f.size:
                        raise changed_error(stack_path(&st, 1))
                    if f.walk_dest:
                        if not PyDict_Next(f.dest, &f.pos, &k, &v):
                            break
                    else:
                        if not PyDict_Next(f.src, &f.pos, &k, &v):
                            break
                        f.seen += 1
                        if f.seen > f.size:
                            raise changed_error(stack_path(&st, 1))
                        if type_of(k) != STR_T:
                            child = <object>k
                            raise key_error(child, stack_path(&st, 1))
                    if utf8 and lone_surrogate(k) >= 0:
                        raise surrogate_error(lone_surrogate(k), stack_path(&st, 1), True)
                    frame_set_key(f, k)
                    child = <object>v
                    visited += 1
                    if visited > max_nodes:
                        raise nodes_budget_error(max_nodes, stack_path(&st, 0))
                    if visited == precheck_at:
                        walk(root, freeze, safe, False, max_nodes, True, utf8)
                    kind = classify(<PyObject*>child, safe, reuse, &st, utf8)
                    if kind <= REUSE:
                        continue  # already in the copy
                    if deep is None and st.depth >= LINEAR_DEPTH:
                        deep = set()
                    descend(&st, <PyObject*>child, kind, build, freeze, deep)
                    descended = True
                    break
                if not descended and build and not f.walk_dest:
                    # Only an object with a key that is not a str has no clone, and its walk
                    # stops at that key: finishing it means the key went away meanwhile.
                    raise changed_error(stack_path(&st, 1))
            else:
                while f.pos < f.size:
                    if f.kind == TUPLE:
                        child = <object>PyTuple_GET_ITEM(f.src, f.pos)
                    elif f.pos < PyList_GET_SIZE(f.src):
                        child = <object>PyList_GET_ITEM(f.src, f.pos)
                    else:
                        raise changed_error(stack_path(&st, 1))
                    f.pos += 1
                    visited += 1
                    if visited > max_nodes:
                        raise nodes_budget_error(max_nodes, stack_path(&st, 0))
                    if visited == precheck_at:
                        walk(root, freeze, safe, False, max_nodes, True, utf8)
                    kind = classify(<PyObject*>child, safe, reuse, &st, utf8)
                    if kind <= REUSE:
                        if build:
                            incref(<PyObject*>child)
                            PyList_SET_ITEM(f.dest, f.pos - 1, <PyObject*>child)
                        continue
                    if deep is None and st.depth >= LINEAR_DEPTH:
                        deep = set()
                    descend(&st, <PyObject*>child, kind, build, freeze, deep)
                    descended = True
                    break
                if not descended and f.kind == ARRAY and PyList_GET_SIZE(f.src) != f.size:
                    raise changed_error(stack_path(&st, 1))
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


cdef Py_ssize_t budget_limit(str name, object value) except -1:
    # The limit a max_nodes / max_chars option means (None: none); the shared helper words errors.
    if type(value) is int and value >= 0:
        return value if value < PY_SSIZE_T_MAX else PY_SSIZE_T_MAX
    return budget_option(name, value)


def snapshot_json(value, *, freeze=True, safe_integers=False, max_nodes=DEFAULT_MAX_NODES, utf8_strings=False):
    """Return a detached deep copy of the lossless JSON ``value``.

    Guaranteed: the result shares no mutable container with ``value``; with
    ``freeze`` (the default) every container in it is a
    :class:`FrozenJsonObject` / :class:`FrozenJsonArray` (tuples become
    arrays), without it plain ``dict``/``list``. Shared, non-cyclic references
    are copied independently. Frozen containers in ``value`` are lossless by
    construction and are reused as they are when freezing (``value`` itself is
    returned when it is frozen), unless ``safe_integers`` or ``utf8_strings``
    asks to look inside. ``utf8_strings``: a string or object key holding a
    lone surrogate is refused too (for values bound for a consumer that
    encodes text as UTF-8, which cannot carry one; the writers here escape it).

    Raised errors: :class:`LosslessJsonError` naming the path of the first
    offending value when ``value`` is not lossless JSON, when
    ``safe_integers`` is set and an int lies beyond ``±(2**53-1)``, when
    ``utf8_strings`` is set and a string or key holds a lone surrogate, or naming
    a container that changed while it was walked; :class:`JsonBudgetError`
    when the walk would visit more than ``max_nodes`` values (``None``: no
    limit); ``TypeError`` / ``ValueError`` for a ``max_nodes`` that is not
    ``None`` or an int >= 0.
    """
    return walk(value, bool(freeze), bool(safe_integers), True, budget_limit("max_nodes", max_nodes), False, bool(utf8_strings))


def is_json_value(value, *, safe_integers=False, max_nodes=DEFAULT_MAX_NODES, utf8_strings=False):
    """Return whether ``snapshot_json(value, safe_integers=..., max_nodes=..., utf8_strings=...)`` would succeed.

    Never raises for any ``value``: only exact types are inspected, so no user
    code (``__eq__``, ``__hash__``, ``__str__``, iteration) ever runs; a value
    that changes while it is checked, or that exceeds ``max_nodes``, is
    ``False``. Only a bad ``max_nodes`` option raises (as in ``snapshot_json``).
    """
    cdef Py_ssize_t limit = budget_limit("max_nodes", max_nodes)
    try:
        walk(value, True, bool(safe_integers), False, limit, False, bool(utf8_strings))
    except (LosslessJsonError, JsonBudgetError):
        return False
    return True


# --- writers -------------------------------------------------------------------------------
#
# Output goes into a dsh_buf (C code above): code units of the final str's kind,
# widened in place when a wider string appears, copied once into the result.

cdef dsh_buf SHARED_BUF
SHARED_BUF.data = NULL
SHARED_BUF.cap = 0
SHARED_BUF.kind = 1
cdef bint SHARED_BUSY = False
cdef dsh_keycache SHARED_KEYS  # goes with SHARED_BUF (static storage: starts empty)
# Larger buffers are freed after use rather than kept for the next call.
cdef Py_ssize_t RETAINED_BUFFER_BYTES = 8 << 20


cdef inline int write_int(dsh_buf* b, PyObject* v, Stack* st) except -1:
    cdef int overflow = 0
    cdef long long x
    cdef char* out
    if not dsh_json_compact_int(v, &x):
        x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow == 0:
        out = dsh_ascii_begin(b, 24)
        dsh_ascii_end(b, out, dsh_json_format_ll(out, x))
        return 0
    try:
        text = int.__repr__(<object>v)
    except ValueError:
        raise int_too_long_error(stack_path(st, 0)) from None
    cdef bytes raw = (<str>text).encode("ascii")
    return dsh_put_ascii(b, raw, len(raw))


cdef int write_float(dsh_buf* b, PyObject* v, Stack* st) except -1:
    cdef double d = PyFloat_AS_DOUBLE(v)
    if bad_float(d):
        raise float_error(<object>v, stack_path(st, 0))
    cdef char* out = dsh_ascii_begin(b, 48)
    cdef int written = dsh_json_format_double(out, d)
    if written:
        dsh_ascii_end(b, out, written)
        return 0
    # float.__repr__'s own routine: the shortest round-trip text, "2.0" not "2".
    cdef char* text = PyOS_double_to_string(d, b"r", 0, Py_DTSF_ADD_DOT_0, NULL)
    cdef Py_ssize_t n = 0
    while text[n]:
        n += 1
    try:
        dsh_put_ascii(b, text, n)
    finally:
        PyMem_Free(text)
    return 0


cdef inline int write_value(
    dsh_buf* b, PyObject* v, Stack* st, set deep, bint sort_keys, Py_ssize_t pretty_levels
) except -1:
    """Write a scalar, or open a container (push a frame); return 1 when a frame was pushed."""
    cdef void* t = type_of(v)
    if t == STR_T:
        return dsh_buf_str(b, v)
    if t == INT_T:
        return write_int(b, v, st)
    if v == Py_None:
        return dsh_put_ascii(b, b"null", 4)
    if t == BOOL_T:
        if v == Py_True:
            return dsh_put_ascii(b, b"true", 4)
        return dsh_put_ascii(b, b"false", 5)
    if t == FLOAT_T:
        return write_float(b, v, st)
    return open_container(b, v, t, st, deep, sort_keys, pretty_levels)


cdef dsh_pair* sorted_members(PyObject* v, Py_ssize_t* n, Stack* st) except NULL:
    """The members of the object ``v`` (``*n`` of them), sorted by key, as strong references.

    Every key is checked before any member is written (they must all be ``str``
    to be sorted), so the error names the object whatever the order. The pairs
    are taken in one pass over the hash table, which also checks the keys, and
    sorted in C: no lookups by key afterwards.
    """
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t count = 0
    cdef PyObject* k
    cdef PyObject* item
    cdef dsh_pair* pairs = <dsh_pair*>malloc(n[0] * sizeof(dsh_pair))
    if pairs == NULL:
        raise MemoryError()
    # No Python code runs in this loop, so the table cannot change under it.
    while count < n[0] and PyDict_Next(v, &pos, &k, &item):
        if type_of(k) != STR_T:
            # the dict still owns k: releasing the pairs taken so far cannot free it
            items_release(pairs, count)
            raise key_error(<object>k, stack_path(st, 0))
        incref(k)
        incref(item)
        pairs[count].k = k
        pairs[count].v = item
        count += 1
    cdef dsh_pair* tmp = NULL
    if count > 16:
        tmp = <dsh_pair*>malloc((count // 2) * sizeof(dsh_pair))
        if tmp == NULL:
            items_release(pairs, count)
            raise MemoryError()
    dsh_sort_pairs(pairs, count, tmp)
    free(tmp)
    n[0] = count  # the same count: nothing ran that could change the object
    return pairs


cdef int open_container(
    dsh_buf* b, PyObject* v, void* t, Stack* st, set deep, bint sort_keys, Py_ssize_t pretty_levels
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
        return dsh_put_ascii(b, b"{}" if kind == OBJECT else b"[]", 2)
    cdef dsh_pair* items = NULL
    if kind == OBJECT and sort_keys:
        items = sorted_members(v, &n, st)
    cdef Frame* f
    try:
        f = stack_push(st, v, kind)
    except BaseException:
        if items != NULL:
            items_release(items, n)
        raise
    f.items = items
    f.size = n
    f.pretty = st.depth - 1 < pretty_levels
    # The keys of a wide object are mostly met once: caching them would cost more.
    f.cache_keys = kind == OBJECT and n <= 64
    track_push(st, v, deep)
    dsh_putc(b, b"{" if kind == OBJECT else b"[")
    return 1


cdef str write(
    object root, Py_ssize_t pretty_levels, Py_ssize_t indent, bint sort_keys, Py_ssize_t max_nodes, Py_ssize_t max_chars
):
    """Write ``root`` as JSON; containers at depth < ``pretty_levels`` are indented.

    The budget, as in the Python twin: a value is counted when it is reached
    (``max_nodes``); the text's length is checked after each value's own text
    (a scalar, or a container's opening bracket) and once at the end
    (``max_chars``). Lengths are in code units, which are characters.
    """
    global SHARED_BUSY
    cdef dsh_buf local
    cdef dsh_buf* b
    cdef dsh_keycache* keys = NULL
    # The shared buffer keeps its pages between calls (no page faults on reuse);
    # a nested call (a finalizer run by the GC, another thread) gets its own.
    if SHARED_BUSY:
        local.data = NULL
        local.cap = 0
        local.kind = 1
        b = &local
    else:
        SHARED_BUSY = True
        b = &SHARED_BUF
        keys = &SHARED_KEYS
    # Back to one byte per unit: the same memory holds kind times as many units.
    b.cap = b.cap * b.kind
    b.kind = 1
    b.length = 0
    b.maxchar = 127
    cdef Stack st
    stack_init(&st)
    cdef set deep = set()
    cdef Frame* f
    cdef PyObject* k
    cdef PyObject* v
    cdef PyObject* src
    cdef bint descended
    cdef Py_ssize_t visited = 1
    cdef int pushed
    try:
        if max_nodes < 1:
            raise nodes_budget_error(max_nodes, [])
        write_value(b, <PyObject*>root, &st, deep, sort_keys, pretty_levels)
        if b.length > max_chars:
            raise chars_budget_error(max_chars, [])
        while st.depth > 0:
            f = &st.frames[st.depth - 1]
            descended = False
            while True:
                if f.kind == OBJECT:
                    # dict's own iterator rule: the size is checked before every step.
                    if PyDict_GET_SIZE(f.src) != f.size:
                        raise changed_error(stack_path(&st, 1))
                    if f.items != NULL:
                        if f.pos >= f.size:
                            break
                        k = f.items[f.pos].k
                        v = f.items[f.pos].v
                        f.pos += 1
                    else:
                        if not PyDict_Next(f.src, &f.pos, &k, &v):
                            break
                        f.seen += 1
                        if f.seen > f.size:
                            raise changed_error(stack_path(&st, 1))
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
                        raise changed_error(stack_path(&st, 1))
                    f.pos += 1
                visited += 1
                if visited > max_nodes:
                    raise nodes_budget_error(max_nodes, stack_path(&st, 0))
                if f.pretty:
                    dsh_separator(b, f.started, st.depth, indent)
                elif f.started:
                    dsh_putc(b, b",")
                f.started = True
                if f.kind == OBJECT:
                    dsh_write_key(b, keys if f.cache_keys else NULL, k, f.pretty)
                pushed = write_value(b, v, &st, deep, sort_keys, pretty_levels)
                if b.length > max_chars:
                    raise chars_budget_error(max_chars, stack_path(&st, pushed))
                if pushed == 1:
                    descended = True
                    break
            if descended:
                continue
            if f.kind == ARRAY and PyList_GET_SIZE(f.src) != f.size:
                raise changed_error(stack_path(&st, 1))
            if f.pretty:
                dsh_separator(b, False, st.depth - 1, indent)
            dsh_putc(b, b"}" if f.kind == OBJECT else b"]")
            src = f.src
            st.depth -= 1
            frame_clear(f)
            track_pop(&st, src, deep)
        if b.length > max_chars:
            raise chars_budget_error(max_chars, [])
        return dsh_buf_finish(b)
    finally:
        stack_release(&st)
        if b == &SHARED_BUF:
            dsh_keycache_clear(keys)
            if b.cap * b.kind > RETAINED_BUFFER_BYTES:
                free(b.data)
                b.data = NULL
                b.cap = 0
                b.kind = 1
            SHARED_BUSY = False
        else:
            free(b.data)


cdef Py_ssize_t check_option(str name, object value) except -1:
    if type(value) is not int or value < 0:
        raise option_error(name, value)
    return value if value < PY_SSIZE_T_MAX else PY_SSIZE_T_MAX


def render_json_pretty(value, *, indent=2, max_indent=10, max_nodes=DEFAULT_MAX_NODES, max_chars=DEFAULT_MAX_CHARS):
    """Render the lossless JSON ``value`` as pretty JSON (docs/texts.md, "run_code output").

    Guaranteed: ``indent`` spaces per level; a container whose children would
    need more than ``max_indent`` spaces renders fully compact (``,`` and
    ``:``, no spaces); ``{}``/``[]`` for empty containers; strings quoted and
    escaped as ``json.dumps(ensure_ascii=False)`` with lone surrogates escaped
    (``\\udXXX``), so the text always encodes to UTF-8; numbers as Python's
    ``json`` writes them. Every root renders as JSON (a string root is quoted).

    Raised errors: :class:`LosslessJsonError` (with the path) when ``value`` is
    not lossless JSON or a container changed while it was written;
    :class:`JsonBudgetError` when the walk would visit more than ``max_nodes``
    values or the text would exceed ``max_chars`` characters (``None``: no
    limit); ``TypeError``/``ValueError`` when ``indent`` or ``max_indent`` is
    not an int >= 0, or a budget is not ``None`` or an int >= 0.
    """
    check_option("indent", indent)
    check_option("max_indent", max_indent)
    cdef Py_ssize_t nodes = budget_limit("max_nodes", max_nodes)
    cdef Py_ssize_t chars = budget_limit("max_chars", max_chars)
    # A container at depth d is indented when its children's (d + 1) * indent fits.
    levels = sys.maxsize if indent == 0 else max_indent // indent
    return write(value, min(levels, sys.maxsize), min(indent, sys.maxsize), False, nodes, chars)


def dump_canonical_json(value, *, sort_keys=True, max_nodes=DEFAULT_MAX_NODES, max_chars=DEFAULT_MAX_CHARS):
    """Write the lossless JSON ``value`` compactly: no spaces, ``,`` and ``:``.

    Guaranteed: equal to ``json.dumps(value, sort_keys=sort_keys,
    separators=(",", ":"), ensure_ascii=False)`` except that lone surrogates
    are escaped (``\\udXXX``); keys sort by code point. With ``sort_keys``
    (the default) equal values give equal text, for hashing; without it key
    order is kept.

    Raised errors: :class:`LosslessJsonError` (with the path) when ``value`` is
    not lossless JSON or a container changed while it was written;
    :class:`JsonBudgetError` and option errors as for ``render_json_pretty``.
    """
    cdef Py_ssize_t nodes = budget_limit("max_nodes", max_nodes)
    cdef Py_ssize_t chars = budget_limit("max_chars", max_chars)
    return write(value, 0, 0, bool(sort_keys), nodes, chars)


# --- parser --------------------------------------------------------------------------------
#
# A C loop over the text's code units with an explicit stack of open containers
# (no recursion), building the frozen containers directly. It finishes the common
# case itself and reports everything else (malformed text, NaN/Infinity, a lossy
# number, a long int json.loads would refuse) as "delegate": the pure twin's
# parse_json then reads the whole text and gives its verdict and message, so the
# twins agree by construction. The grammar checks mirror CPython's json scanner.

cdef extern from *:
    """
    /* One open container: an object (its dict and the pending member key) or an
       array (its items so far sit on the item stack from `base`). */
    typedef struct { PyObject *dict; PyObject *key; Py_ssize_t base; } dsh_pframe;
    typedef struct {
        dsh_pframe *frames; Py_ssize_t depth, fcap;
        PyObject **items; Py_ssize_t nitems, icap;
        Py_UCS4 *ubuf; Py_ssize_t ucap;   /* a string with escapes, decoded */
        int delegate;                     /* stopped without an exception: ask the pure twin */
        dsh_pframe frames0[32];
        PyObject *items0[64];
        Py_UCS4 ubuf0[128];
    } dsh_pstate;
    /* Grow one of the state's arrays: the first growth leaves the inline storage. */
    static int dsh_pgrow(void **arr, Py_ssize_t *cap, void *inline0, size_t unit) {
        Py_ssize_t cap2 = *cap * 2;
        void *p;
        if ((size_t)cap2 > PY_SSIZE_T_MAX / unit) { PyErr_NoMemory(); return -1; }
        if (*arr == inline0) {
            p = PyMem_Malloc((size_t)cap2 * unit);
            if (p != NULL) memcpy(p, inline0, (size_t)*cap * unit);
        } else {
            p = PyMem_Realloc(*arr, (size_t)cap2 * unit);
        }
        if (p == NULL) { PyErr_NoMemory(); return -1; }
        *arr = p;
        *cap = cap2;
        return 0;
    }
    static void dsh_pstate_init(dsh_pstate *st) {
        st->frames = st->frames0; st->depth = 0; st->fcap = 32;
        st->items = st->items0; st->nitems = 0; st->icap = 64;
        st->ubuf = st->ubuf0; st->ucap = 128;
        st->delegate = 0;
    }
    /* Release every reference still held (an early stop) and the heap storage. */
    static void dsh_pstate_release(dsh_pstate *st) {
        while (st->depth > 0) {
            dsh_pframe *f = &st->frames[--st->depth];
            Py_CLEAR(f->dict);
            Py_CLEAR(f->key);
        }
        while (st->nitems > 0) Py_DECREF(st->items[--st->nitems]);
        if (st->frames != st->frames0) PyMem_Free(st->frames);
        if (st->items != st->items0) PyMem_Free(st->items);
        if (st->ubuf != st->ubuf0) PyMem_Free(st->ubuf);
    }
    static inline int dsh_ppush_item(dsh_pstate *st, PyObject *v) {
        if (st->nitems == st->icap && dsh_pgrow((void **)&st->items, &st->icap, st->items0, sizeof(PyObject *)) < 0)
            return -1;
        st->items[st->nitems++] = v;
        return 0;
    }
    static inline dsh_pframe *dsh_ppush_frame(dsh_pstate *st) {
        dsh_pframe *f;
        if (st->depth == st->fcap && dsh_pgrow((void **)&st->frames, &st->fcap, st->frames0, sizeof(dsh_pframe)) < 0)
            return NULL;
        f = &st->frames[st->depth++];
        f->dict = NULL;
        f->key = NULL;
        f->base = st->nitems;
        return f;
    }
    /* A FrozenJsonArray owning the n references at `items` (on success only). */
    static PyObject *dsh_pmake_list(PyObject *cls, PyObject *empty, PyObject **items, Py_ssize_t n) {
        PyObject *dest = PyList_Type.tp_new((PyTypeObject *)cls, empty, NULL);
        PyObject **a;
        if (dest == NULL || n == 0) return dest;
        a = PyMem_New(PyObject *, n);
        if (a == NULL) { Py_DECREF(dest); return PyErr_NoMemory(); }
        memcpy(a, items, (size_t)n * sizeof(PyObject *));
        ((PyListObject *)dest)->ob_item = a;
        ((PyListObject *)dest)->allocated = n;
        Py_SET_SIZE(dest, n);
        return dest;
    }
    /* Short ASCII keys recur from call to call (every call of a tool has the same
       ones): one str object per distinct key text, its hash computed once. The
       entries are strong references to immutable strs. */
    #define DSH_PKEYS 512
    #define DSH_PKEY_MAX 32
    static PyObject *dsh_pkeys[DSH_PKEYS];
    static PyObject *dsh_pkey(const unsigned char *p, Py_ssize_t len) {
        uint32_t h = 2166136261u;
        Py_ssize_t k;
        PyObject **slot, *s;
        for (k = 0; k < len; k++) h = (h ^ p[k]) * 16777619u;
        slot = &dsh_pkeys[(h ^ (h >> 16)) & (DSH_PKEYS - 1)];
        s = *slot;
        if (s != NULL && PyUnicode_GET_LENGTH(s) == len && memcmp(PyUnicode_DATA(s), p, (size_t)len) == 0) {
            Py_INCREF(s);
            return s;
        }
        s = PyUnicode_New(len, 127);
        if (s == NULL) return NULL;
        memcpy(PyUnicode_DATA(s), p, (size_t)len);
        Py_INCREF(s);
        Py_XSETREF(*slot, s);  /* frees at most a str: no Python code runs */
        return s;
    }
    #define DSH_RD(k) PyUnicode_READ(kind, data, (k))
    /* Whether the len code units at i are all ASCII. */
    static inline int dsh_pascii_span(const void *data, int kind, Py_ssize_t i, Py_ssize_t len) {
        Py_ssize_t k = 0;
        if (kind == PyUnicode_1BYTE_KIND) {
            const unsigned char *p = (const unsigned char *)data + i;
            uint64_t w, acc = 0;
            for (; k + 8 <= len; k += 8) { memcpy(&w, p + k, 8); acc |= w; }
            for (; k < len; k++) acc |= p[k];
            return (acc & 0x8080808080808080ULL) == 0;
        }
        for (; k < len; k++) if (DSH_RD(i + k) >= 128) return 0;
        return 1;
    }
    /* The ASCII str of the len code units at i (keys of up to DSH_PKEY_MAX from the cache). */
    static inline PyObject *dsh_pascii_str(const void *data, int kind, Py_ssize_t i, Py_ssize_t len, int is_key) {
        PyObject *s;
        unsigned char *out, narrow[DSH_PKEY_MAX];
        Py_ssize_t k;
        if (len == 1) return PyUnicode_FromOrdinal(DSH_RD(i));  /* CPython's cached one-character strs */
        if (is_key && len <= DSH_PKEY_MAX) {
            if (kind == PyUnicode_1BYTE_KIND) return dsh_pkey((const unsigned char *)data + i, len);
            for (k = 0; k < len; k++) narrow[k] = (unsigned char)DSH_RD(i + k);
            return dsh_pkey(narrow, len);
        }
        s = PyUnicode_New(len, 127);
        if (s == NULL) return NULL;
        out = (unsigned char *)PyUnicode_DATA(s);
        if (kind == PyUnicode_1BYTE_KIND) memcpy(out, (const unsigned char *)data + i, (size_t)len);
        else for (k = 0; k < len; k++) out[k] = (unsigned char)DSH_RD(i + k);
        return s;
    }
    static inline int dsh_pdigit(Py_UCS4 c) { return c >= '0' && c <= '9'; }
    static inline int dsh_phex(Py_UCS4 c) {
        if (c >= '0' && c <= '9') return (int)(c - '0');
        if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
        if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
        return -1;
    }
    /* Four hex digits at j as a code unit, or -1. */
    static inline long dsh_phex4(const void *data, int kind, Py_ssize_t j) {
        int a = dsh_phex(DSH_RD(j)), b = dsh_phex(DSH_RD(j + 1)), c = dsh_phex(DSH_RD(j + 2)), d = dsh_phex(DSH_RD(j + 3));
        if ((a | b | c | d) < 0) return -1;
        return (long)((a << 12) | (b << 8) | (c << 4) | d);
    }
    static inline int dsh_pput(dsh_pstate *st, Py_ssize_t *out, Py_UCS4 c) {
        if (*out == st->ucap && dsh_pgrow((void **)&st->ubuf, &st->ucap, st->ubuf0, sizeof(Py_UCS4)) < 0) return -1;
        st->ubuf[(*out)++] = c;
        return 0;
    }
    /* The string whose text starts at *pi (after its opening quote); *pi moves past
       the closing quote. NULL with st->delegate set for anything json would reject. */
    static inline PyObject *dsh_pstr(dsh_pstate *st, PyObject *text, const void *data, int kind, Py_ssize_t n,
                                     Py_ssize_t *pi, int is_key, int ascii) {
        Py_ssize_t i = *pi, j, out = 0, len;
        Py_UCS4 c = 0;
        long u, u2;
        if (kind == PyUnicode_1BYTE_KIND) {
            j = i + dsh_json_plain_prefix((const unsigned char *)data + i, n - i);
        } else {
            for (j = i; j < n; j++) {
                c = DSH_RD(j);
                if (c == '"' || c == '\\\\' || c < 0x20) break;
            }
        }
        if (j >= n) { st->delegate = 1; return NULL; }
        c = DSH_RD(j);
        if (c == '"') {
            *pi = j + 1;
            len = j - i;
            if (ascii || dsh_pascii_span(data, kind, i, len))
                return dsh_pascii_str(data, kind, i, len, is_key);
            return PyUnicode_FromKindAndData(kind, (const char *)data + i * kind, len);
        }
        if (c != '\\\\') { st->delegate = 1; return NULL; }  /* a control character */
        /* Escapes: decode into ubuf, as CPython's scanstring does. */
        for (; i < j; i++) if (dsh_pput(st, &out, DSH_RD(i)) < 0) return NULL;
        for (;;) {
            /* at j: a backslash */
            if (j + 1 >= n) { st->delegate = 1; return NULL; }
            c = DSH_RD(j + 1);
            if (c != 'u') {
                switch (c) {
                case '"': case '\\\\': case '/': break;
                case 'b': c = 8; break;
                case 'f': c = 12; break;
                case 'n': c = 10; break;
                case 'r': c = 13; break;
                case 't': c = 9; break;
                default: st->delegate = 1; return NULL;
                }
                j += 2;
            } else {
                /* json wants a character after the four digits (at least the quote) */
                if (j + 6 >= n) { st->delegate = 1; return NULL; }
                u = dsh_phex4(data, kind, j + 2);
                if (u < 0) { st->delegate = 1; return NULL; }
                j += 6;
                if (u >= 0xD800 && u <= 0xDBFF && j + 6 < n && DSH_RD(j) == '\\\\' && DSH_RD(j + 1) == 'u') {
                    u2 = dsh_phex4(data, kind, j + 2);
                    if (u2 < 0) { st->delegate = 1; return NULL; }
                    if (u2 >= 0xDC00 && u2 <= 0xDFFF) {
                        u = 0x10000 + (((u - 0xD800) << 10) | (u2 - 0xDC00));
                        j += 6;
                    }
                }
                c = (Py_UCS4)u;
            }
            if (dsh_pput(st, &out, c) < 0) return NULL;
            for (; j < n; j++) {
                c = DSH_RD(j);
                if (c == '"' || c == '\\\\') break;
                if (c < 0x20) { st->delegate = 1; return NULL; }
                if (dsh_pput(st, &out, c) < 0) return NULL;
            }
            if (j >= n) { st->delegate = 1; return NULL; }
            if (c == '"') break;
        }
        *pi = j + 1;
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, st->ubuf, out);
    }
    /* The number at *pi (json's grammar; the caller saw no other value start). */
    static inline PyObject *dsh_pnum(dsh_pstate *st, PyObject *text, const void *data, int kind, Py_ssize_t n,
                                     Py_ssize_t *pi) {
        Py_ssize_t i = *pi, start = i, int_start, int_end, k, len;
        int neg = 0, is_float = 0;
        Py_UCS4 c = DSH_RD(i);
        if (c == '-') {
            neg = 1;
            if (++i >= n) { st->delegate = 1; return NULL; }
            c = DSH_RD(i);
        }
        int_start = i;
        if (c == '0') {
            i++;
        } else if (c >= '1' && c <= '9') {
            for (i++; i < n && dsh_pdigit(DSH_RD(i)); i++) {}
        } else {
            st->delegate = 1;  /* not a value at all, or NaN / Infinity */
            return NULL;
        }
        int_end = i;
        if (i + 1 < n && DSH_RD(i) == '.' && dsh_pdigit(DSH_RD(i + 1))) {
            for (i += 2; i < n && dsh_pdigit(DSH_RD(i)); i++) {}
            is_float = 1;
        }
        if (i + 1 < n && (DSH_RD(i) == 'e' || DSH_RD(i) == 'E')) {
            k = i + 1;
            if (DSH_RD(k) == '+' || DSH_RD(k) == '-') k++;
            if (k < n && dsh_pdigit(DSH_RD(k))) {
                for (k++; k < n && dsh_pdigit(DSH_RD(k)); k++) {}
                i = k;
                is_float = 1;
            }
        }
        *pi = i;
        if (!is_float) {
            if (int_end - int_start <= 18) {
                long long x = 0;
                for (k = int_start; k < int_end; k++) x = x * 10 + (long long)(DSH_RD(k) - '0');
                return PyLong_FromLongLong(neg ? -x : x);
            } else {
                PyObject *token = PyUnicode_Substring(text, start, int_end), *r;
                if (token == NULL) return NULL;
                r = PyLong_FromUnicodeObject(token, 10);
                Py_DECREF(token);
                if (r == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
                    PyErr_Clear();  /* beyond the digit limit: the pure twin raises json's error */
                    st->delegate = 1;
                }
                return r;
            }
        }
        {
            char small[64], *buf = small;
            double d;
            /* Clinger's fast path: a mantissa below 2**53 and a power of ten up to 1e22
               are exact doubles, so one IEEE multiply or divide rounds correctly: the
               same double strtod gives. */
            static const double p10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
            uint64_t m = 0;
            int nd = 0, e10 = 0, esign = 1, ev = 0;
            for (k = int_start; k < i; k++) {
                Py_UCS4 ch = DSH_RD(k);
                if (ch == '.') continue;
                if (ch == 'e' || ch == 'E') break;
                if (nd < 19) { m = m * 10 + (ch - '0'); if (m) nd++; } else { nd = 99; break; }
                if (k > int_end) e10--;  /* a fraction digit */
            }
            if (nd <= 15 && k < i && (DSH_RD(k) == 'e' || DSH_RD(k) == 'E')) {
                k++;
                if (DSH_RD(k) == '-') { esign = -1; k++; } else if (DSH_RD(k) == '+') k++;
                for (; k < i && ev < 1000; k++) ev = ev * 10 + (int)(DSH_RD(k) - '0');
                e10 += esign * ev;
            }
            if (nd <= 15 && m != 0 && e10 >= -22 && e10 <= 22) {
                d = e10 >= 0 ? (double)m * p10[e10] : (double)m / p10[-e10];
                return PyFloat_FromDouble(neg ? -d : d);
            }
            len = i - start;
            if (len >= (Py_ssize_t)sizeof small) {
                buf = (char *)PyMem_Malloc((size_t)len + 1);
                if (buf == NULL) return PyErr_NoMemory();
            }
            for (k = 0; k < len; k++) buf[k] = (char)DSH_RD(start + k);
            buf[len] = 0;
            d = PyOS_string_to_double(buf, NULL, NULL);
            if (buf != small) PyMem_Free(buf);
            if (d == -1.0 && PyErr_Occurred()) return NULL;
            if (!isfinite(d) || (d == 0.0 && signbit(d))) {
                st->delegate = 1;  /* lossy: the pure twin finds the path (or a later duplicate key) */
                return NULL;
            }
            return PyFloat_FromDouble(d);
        }
    }
    #define DSH_SKIP_WS() \\
        while (i < n && ((c = DSH_RD(i)) == ' ' || c == '\\t' || c == '\\n' || c == '\\r')) i++
    /* The parse proper, for one kind of text (inlined per kind). */
    static inline __attribute__((always_inline)) PyObject *dsh_parse_kind(
            dsh_pstate *st, PyObject *text, const void *data, int kind, Py_ssize_t n, int ascii,
            PyObject *obj_cls, PyObject *arr_cls, PyObject *empty) {
        Py_ssize_t i = 0;
        Py_UCS4 c = 0;
        PyObject *v;
        dsh_pframe *f;
        if (n > 0 && DSH_RD(0) == 0xFEFF) goto delegate;
        DSH_SKIP_WS();
        for (;;) {
        value:
            if (i >= n) goto delegate;
            c = DSH_RD(i);
            switch (c) {
            case '"':
                i++;
                v = dsh_pstr(st, text, data, kind, n, &i, 0, ascii);
                if (v == NULL) return NULL;
                break;
            case '{':
                i++;
                DSH_SKIP_WS();
                v = dsh_json_new_dict(obj_cls, empty);
                if (v == NULL) return NULL;
                if (i < n && c == '}') { i++; break; }
                f = dsh_ppush_frame(st);
                if (f == NULL) { Py_DECREF(v); return NULL; }
                f->dict = v;
                goto key;
            case '[':
                i++;
                DSH_SKIP_WS();
                if (i < n && c == ']') {
                    i++;
                    v = dsh_pmake_list(arr_cls, empty, NULL, 0);
                    if (v == NULL) return NULL;
                    break;
                }
                if (dsh_ppush_frame(st) == NULL) return NULL;
                goto value;
            case 'n':
                if (i + 3 < n && DSH_RD(i + 1) == 'u' && DSH_RD(i + 2) == 'l' && DSH_RD(i + 3) == 'l') {
                    i += 4; v = Py_None; Py_INCREF(v); break;
                }
                goto delegate;
            case 't':
                if (i + 3 < n && DSH_RD(i + 1) == 'r' && DSH_RD(i + 2) == 'u' && DSH_RD(i + 3) == 'e') {
                    i += 4; v = Py_True; Py_INCREF(v); break;
                }
                goto delegate;
            case 'f':
                if (i + 4 < n && DSH_RD(i + 1) == 'a' && DSH_RD(i + 2) == 'l' && DSH_RD(i + 3) == 's'
                        && DSH_RD(i + 4) == 'e') {
                    i += 5; v = Py_False; Py_INCREF(v); break;
                }
                goto delegate;
            default:
                v = dsh_pnum(st, text, data, kind, n, &i);
                if (v == NULL) return NULL;
            }
            /* Hand v to the innermost open container, closing those that end here. */
            for (;;) {
                if (st->depth == 0) {
                    DSH_SKIP_WS();
                    if (i != n) { Py_DECREF(v); goto delegate; }  /* trailing data */
                    return v;
                }
                f = &st->frames[st->depth - 1];
                if (f->dict != NULL) {
                    int r = PyDict_SetItem(f->dict, f->key, v);
                    Py_DECREF(v);
                    Py_CLEAR(f->key);
                    if (r < 0) return NULL;
                } else if (dsh_ppush_item(st, v) < 0) {
                    Py_DECREF(v);
                    return NULL;
                }
                DSH_SKIP_WS();
                if (i >= n) goto delegate;
                c = DSH_RD(i);
                if (c == ',') {
                    i++;
                    DSH_SKIP_WS();
                    if (f->dict != NULL) goto key;
                    goto value;
                }
                if (c != (f->dict != NULL ? '}' : ']')) goto delegate;
                i++;
                if (f->dict != NULL) {
                    v = f->dict;
                    f->dict = NULL;
                } else {
                    v = dsh_pmake_list(arr_cls, empty, st->items + f->base, st->nitems - f->base);
                    if (v == NULL) return NULL;
                    st->nitems = f->base;
                }
                st->depth--;
            }
        key:
            /* at i: an object member's key, then ':' */
            if (i >= n || DSH_RD(i) != '"') goto delegate;
            i++;
            v = dsh_pstr(st, text, data, kind, n, &i, 1, ascii);
            if (v == NULL) return NULL;
            st->frames[st->depth - 1].key = v;
            DSH_SKIP_WS();
            if (i >= n || c != ':') goto delegate;
            i++;
            DSH_SKIP_WS();
        }
    delegate:
        st->delegate = 1;
        return NULL;
    }
    /* Parse the exact str `text`: a new reference; NULL with *delegate set when the
       pure twin must decide; NULL with an exception for a failure of its own. */
    static PyObject *dsh_parse(PyObject *text, PyObject *obj_cls, PyObject *arr_cls, PyObject *empty, int *delegate) {
        dsh_pstate st;
        PyObject *r;
        Py_ssize_t n = PyUnicode_GET_LENGTH(text);
        const void *data = PyUnicode_DATA(text);
        dsh_pstate_init(&st);
        switch (PyUnicode_KIND(text)) {
        case PyUnicode_1BYTE_KIND:
            r = dsh_parse_kind(&st, text, data, PyUnicode_1BYTE_KIND, n, PyUnicode_IS_ASCII(text), obj_cls, arr_cls, empty);
            break;
        case PyUnicode_2BYTE_KIND:
            r = dsh_parse_kind(&st, text, data, PyUnicode_2BYTE_KIND, n, 0, obj_cls, arr_cls, empty);
            break;
        default:
            r = dsh_parse_kind(&st, text, data, PyUnicode_4BYTE_KIND, n, 0, obj_cls, arr_cls, empty);
            break;
        }
        dsh_pstate_release(&st);
        *delegate = r == NULL && st.delegate;
        return r;
    }
    """
    PyObject* dsh_parse(PyObject* text, PyObject* obj_cls, PyObject* arr_cls, PyObject* empty, int* delegate)



def parse_json(text):
    """Parse the JSON ``text`` into a lossless, deeply frozen JSON value.

    Guaranteed: the result equals ``snapshot_json(json.loads(text))`` (objects
    are :class:`FrozenJsonObject` with keys in first-occurrence order and the
    last value of a duplicate key, arrays :class:`FrozenJsonArray`) for every
    text where that succeeds; texts nested any depth parse (no recursion). A
    ``str`` subclass is read as its plain ``str`` value.

    Raised errors, the first met scanning from the start:
    ``json.JSONDecodeError`` with ``json.loads``'s message and position for
    malformed text (a leading byte order mark, trailing data included);
    ``json.JSONDecodeError`` at the token for ``NaN``, ``Infinity`` and
    ``-Infinity`` (``"NaN is not a JSON number"``, ...), which ``json.loads``
    accepts; ``ValueError`` (``json.loads``'s own) for an integer with more
    digits than ``sys.get_int_max_str_digits()``. Then, for a text that is
    valid JSON: :class:`LosslessJsonError` naming the path (``value.a[2]``) of
    the first number that is not lossless in the parsed value (``-0.0``, or a
    float that overflows to infinity such as ``1e400``), as
    ``snapshot_json`` reports it. ``TypeError`` naming the type when ``text``
    is not a ``str``.
    """
    if type(text) is not str:
        return _python_parse_json(text)
    cdef int delegate = 0
    cdef PyObject* r = dsh_parse(
        <PyObject*>text, <PyObject*>FrozenJsonObject, <PyObject*>FrozenJsonArray, <PyObject*>EMPTY_TUPLE, &delegate
    )
    if r == NULL:
        if delegate:
            # Malformed, NaN/Infinity, lossy or a refused int: the Python parser's verdict and message.
            return _python_parse_json(text)
        propagate()
    result = <object>r
    decref(r)
    return result



# --- content blocks (the registry's rendering check) ----------------------------------------


cdef str TYPE_KEY = "type"


def snapshot_content(value):
    """Return ``snapshot_json(value)`` if it is a list of content blocks, else ``None``.

    A content block is an object whose ``"type"`` is a string (a tool's
    rendered content, docs/texts.md). One call instead of a snapshot and a
    separate check: the registry runs it on every rendering. ``None`` means
    lossless JSON of another shape (the snapshot is dropped).

    Raised errors: those of ``snapshot_json(value)`` with its defaults
    (:class:`LosslessJsonError`, :class:`JsonBudgetError`).
    """
    cdef PyObject* block
    cdef PyObject* kind
    cdef Py_ssize_t i
    frozen = walk(value, True, False, True, DEFAULT_MAX_NODES)
    cdef PyObject* root = <PyObject*>frozen
    if type_of(root) != FROZEN_ARRAY_T:
        return None
    for i in range(PyList_GET_SIZE(root)):
        block = PyList_GET_ITEM(root, i)
        if type_of(block) != FROZEN_OBJECT_T:
            return None
        # A snapshot's keys are exact str: the lookup runs no user code and cannot fail.
        kind = PyDict_GetItemWithError(block, <PyObject*>TYPE_KEY)
        if kind == NULL or type_of(kind) != STR_T:
            return None
    return frozen
