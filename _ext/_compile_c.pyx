# cython: annotation_typing=False, infer_types=False, wraparound=True
#
# The compiled twin of the dialect check and compiler: ``dsh_codegen/schema/_compile_py.py``
# compiled by Cython as it stands (one source; the pure twin runs it uncompiled).
# Annotations stay Python's (no C typing from them), no inferred C types (a chain
# path's tuple type would otherwise be inferred recursively), and negative
# indices keep their Python meaning (``iters[-1]``).

include "../dsh_codegen/schema/_compile_py.py"
