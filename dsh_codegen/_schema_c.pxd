# The C declaration of the compiled validator twin's node (``_ext/_schema_c.pyx`` defines it),
# shared with the compiled dialect check (``dsh_codegen/_dialect_check_c.pxd``) so that both read and
# write its fields as struct members.

cdef class CompiledNode:
    cdef public object kind, enum, enum_values, has_const, const, props, required, closed, items
    cdef public object branches, inline, texts, types, admit, shape, false, trivial, enum_keys
    cdef public object has_const_key, const_key, num_checks, str_checks, arr_checks, obj_checks
    cdef public object prefix, additional, contains, min_contains, max_contains, property_names
    cdef public object dependent, all_of, any_of, one_of, ref, obj_members, arr_members, uses
