# cython: language_level=3
"""Compiled twin of the registry pipeline's per-call path.

``dsh_codegen/registry/_pipeline.py`` is the specification and the pure-Python
twin. This module accelerates the path every call takes (building the call,
the first step of the body, output snapshot, validation and rendering) and
the whole pipeline of every call made with a ``ToolExecutionInput``.
Every uncommon outcome (a failure, a body that suspends, a lossy value, a
policy stage) is handed to the Python twin's own functions, so each message
and each cancellation rule exists once, in Python.

The module imports nothing from the package when it loads: ``_pipeline.py``
calls :func:`bind` with its namespace when it selects this twin, so importing
this module first can never start an import cycle.
"""

cimport cython
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_DECREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_SET_ITEM
from cpython.list cimport PyList_GET_SIZE, PyList_GET_ITEM
from cpython.dict cimport PyDict_GetItem

cdef extern from "Python.h":
    # PyIter_Send (3.10+): -1 error (exception set), 0 returned, 1 yielded.
    int PyIter_Send(object iterator, object arg, PyObject** presult) except -1
    void* PyCapsule_GetPointer(object capsule, const char* name) except NULL

ctypedef int (*is_valid_fn)(object validator, object value) except -1
ctypedef object (*snapshot_fn)(object value)

cdef extern from *:
    """
    #include "structmember.h"
    /* The offset of a writable object slot (a __slots__ entry), from its member descriptor. */
    static Py_ssize_t dsh_slot_offset(PyObject *descriptor) {
        PyMemberDef *member;
        if (Py_TYPE(descriptor) != &PyMemberDescr_Type) {
            PyErr_SetString(PyExc_TypeError, "expected the member descriptor of a __slots__ entry");
            return -1;
        }
        member = ((PyMemberDescrObject *)descriptor)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
            PyErr_SetString(PyExc_TypeError, "expected a writable object slot");
            return -1;
        }
        return member->offset;
    }
    /* The object in a slot of an instance (borrowed; NULL when the slot is empty). */
    static PyObject *dsh_slot_get(PyObject *instance, Py_ssize_t offset) {
        return *(PyObject **)((char *)instance + offset);
    }
    /* Store into a slot of an instance (what __init__'s assignment does, without the checks). */
    static void dsh_slot_fill(PyObject *instance, Py_ssize_t offset, PyObject *value) {
        PyObject **slot = (PyObject **)((char *)instance + offset);
        Py_INCREF(value);
        Py_XSETREF(*slot, value);
    }
    /* A fresh, zeroed instance of ``kind``: what object.__new__ / tuple.__new__ allocate
       (for a tuple subtype, n NULL items), before any field is set. */
    static PyObject *dsh_alloc(PyObject *kind, Py_ssize_t n) {
        return ((PyTypeObject *)kind)->tp_alloc((PyTypeObject *)kind, n);
    }
    """
    Py_ssize_t dsh_slot_offset(object descriptor) except -1
    void dsh_slot_fill(object instance, Py_ssize_t offset, object value)
    PyObject* dsh_slot_get(object instance, Py_ssize_t offset)
    object dsh_alloc(object kind, Py_ssize_t n)

cdef enum:
    SEND_RETURN = 0
    SEND_NEXT = 1

from asyncio import CancelledError
from inspect import isawaitable
from types import CoroutineType

# Bound by bind(): the Python twin's classes, constants and helper functions.
cdef object ToolExecutionInput, ToolExecution, ToolExecutionToken, ToolRunContext
cdef object AbortSignal, AbortError, ToolSuccess, ToolFailure, UNSET
cdef object FrozenJsonArray, FrozenJsonObject
cdef object snapshot_json, snapshot_errors, RUN_CODE_NAME, ABORTED_MESSAGE
cdef object DONE, PLAIN_RESULTS, input_type_error, entry_outcome
cdef object aborted_before_dispatch, resolve_for_dispatch, invalid_arguments
cdef object body_failure, drive_body, Resumed, body_steps, await_any
cdef object py_normalize_value, invalid_output, render_value, render_failure, content_failure
cdef object settle_cancellation, run_finalize, call_cancelled, cancelled_outcome
cdef object py_run_pipeline
cdef object Allow, Deny, Ask, Accept, Block, ALLOW, ACCEPT, ToolDispatchExecution
cdef object plain_failure, reason_text, approve, run_guards, failure_from_exception
cdef object normalize_authored, apply_post_decision, run_contexts, log_observer_failure, notify_rest
cdef object bad_pre_decision, bad_post_decision, bad_next_signal, PRE_NEXT_TWICE, POST_NEXT_TWICE
cdef Py_ssize_t D_DISPATCH_EXECUTION, D_DISPATCH_SIGNAL, D_DISPATCH_DEFINITION
cdef object CompiledTool = None
cdef Py_ssize_t D_TOOL_HOT
# Slot offsets of the slotted classes built here without their __init__.
cdef Py_ssize_t D_SUCCESS_VALUE, D_SUCCESS_CONTENT, D_SUCCESS_META, D_SUCCESS_CONTEXTS, D_SUCCESS_CONCLUDES
cdef Py_ssize_t D_SIGNAL_ABORTED, D_SIGNAL_SOURCES, D_SIGNAL_LINKS
cdef Py_ssize_t D_RUN_EXECUTION, D_RUN_SIGNAL, D_RUN_FOLLOWS, D_RUN_DEFERRED, D_RUN_CONCLUDED
cdef bint bound = False
# The compiled validator's is_valid, called directly (from dsh_codegen._schema_c).
cdef object CompiledValidator = None
cdef is_valid_fn validator_is_valid = NULL
# snapshot_json with its defaults, called directly (from dsh_codegen._json_c).
cdef snapshot_fn snapshot = NULL

#: Every slot these constructors fill, by class name (a test compares them with ``__slots__``).
FILLED_SLOTS = {
    "ToolSuccess": ("value", "content", "meta", "additional_contexts", "concludes_turn"),
    "ToolRunContext": ("execution", "_signal", "_follows", "_deferred", "_concluded"),
    "ToolDispatchExecution": ("execution", "signal", "definition"),
}


def slot_offsets(kind, *names):
    """The offsets of the ``__slots__`` entries ``names`` of ``kind`` (each checked: a writable object slot)."""
    return tuple([dsh_slot_offset(kind.__dict__[name]) for name in names])


def bind(ns):
    """Take the Python twin's names from its module namespace ``ns`` (called once, by ``_pipeline.py``)."""
    global ToolExecutionInput, ToolExecution, ToolExecutionToken, ToolRunContext
    global AbortSignal, AbortError, ToolSuccess, ToolFailure, UNSET
    global FrozenJsonArray, FrozenJsonObject
    global snapshot_json, snapshot_errors, RUN_CODE_NAME, ABORTED_MESSAGE
    global DONE, PLAIN_RESULTS, input_type_error, entry_outcome
    global aborted_before_dispatch, resolve_for_dispatch, invalid_arguments
    global body_failure, drive_body, Resumed, body_steps, await_any
    global py_normalize_value, invalid_output, render_value, render_failure, content_failure
    global settle_cancellation, run_finalize, call_cancelled, cancelled_outcome
    global py_run_pipeline, bound, CompiledValidator, validator_is_valid, snapshot
    global Allow, Deny, Ask, Accept, Block, ALLOW, ACCEPT, ToolDispatchExecution
    global plain_failure, reason_text, approve, run_guards, failure_from_exception
    global normalize_authored, apply_post_decision, run_contexts, log_observer_failure, notify_rest
    global bad_pre_decision, bad_post_decision, bad_next_signal, PRE_NEXT_TWICE, POST_NEXT_TWICE
    global D_DISPATCH_EXECUTION, D_DISPATCH_SIGNAL, D_DISPATCH_DEFINITION, CompiledTool, D_TOOL_HOT
    global D_SUCCESS_VALUE, D_SUCCESS_CONTENT, D_SUCCESS_META, D_SUCCESS_CONTEXTS, D_SUCCESS_CONCLUDES
    global D_SIGNAL_ABORTED, D_SIGNAL_SOURCES, D_SIGNAL_LINKS
    global D_RUN_EXECUTION, D_RUN_SIGNAL, D_RUN_FOLLOWS, D_RUN_DEFERRED, D_RUN_CONCLUDED
    ToolExecutionInput = ns["ToolExecutionInput"]
    ToolExecution = ns["ToolExecution"]
    ToolExecutionToken = ns["ToolExecutionToken"]
    ToolRunContext = ns["ToolRunContext"]
    AbortSignal = ns["AbortSignal"]
    AbortError = ns["AbortError"]
    ToolSuccess = ns["ToolSuccess"]
    ToolFailure = ns["ToolFailure"]
    UNSET = ns["UNSET"]
    FrozenJsonArray = ns["FrozenJsonArray"]
    FrozenJsonObject = ns["FrozenJsonObject"]
    snapshot_json = ns["snapshot_json"]
    snapshot_errors = ns["ARGUMENT_SNAPSHOT_ERRORS"]
    RUN_CODE_NAME = ns["RUN_CODE_NAME"]
    ABORTED_MESSAGE = ns["_ABORTED_MESSAGE"]
    DONE = ns["_DONE"]
    PLAIN_RESULTS = ns["_PLAIN_RESULTS"]
    input_type_error = ns["input_type_error"]
    entry_outcome = ns["entry_outcome"]
    aborted_before_dispatch = ns["aborted_before_dispatch"]
    resolve_for_dispatch = ns["_resolve_for_dispatch"]
    invalid_arguments = ns["_invalid_arguments"]
    body_failure = ns["body_failure"]
    drive_body = ns["drive_body"]
    Resumed = ns["Resumed"]
    body_steps = ns["_body_steps"]
    await_any = ns["_await_any"]
    py_normalize_value = ns["normalize_value"]
    invalid_output = ns["_invalid_output"]
    render_value = ns["render_value"]
    render_failure = ns["_render_failure"]
    content_failure = ns["_content_failure"]
    settle_cancellation = ns["settle_cancellation"]
    run_finalize = ns["run_finalize"]
    call_cancelled = ns["call_cancelled"]
    cancelled_outcome = ns["_cancelled_outcome"]
    py_run_pipeline = ns["run_pipeline"]
    Allow = ns["Allow"]
    Deny = ns["Deny"]
    Ask = ns["Ask"]
    Accept = ns["Accept"]
    Block = ns["Block"]
    ALLOW = ns["ALLOW"]
    ACCEPT = ns["_ACCEPT"]
    ToolDispatchExecution = ns["ToolDispatchExecution"]
    plain_failure = ns["_plain_failure"]
    reason_text = ns["_reason_text"]
    approve = ns["_approve"]
    run_guards = ns["_run_guards"]
    failure_from_exception = ns["failure_from_exception"]
    normalize_authored = ns["normalize_authored"]
    apply_post_decision = ns["apply_post_decision"]
    run_contexts = ns["_run_contexts"]
    log_observer_failure = ns["_log_observer_failure"]
    notify_rest = ns["_notify_rest"]
    bad_pre_decision = ns["bad_pre_decision"]
    bad_post_decision = ns["bad_post_decision"]
    bad_next_signal = ns["bad_next_signal"]
    PRE_NEXT_TWICE = ns["_PRE_NEXT_TWICE"]
    POST_NEXT_TWICE = ns["_POST_NEXT_TWICE"]
    D_DISPATCH_EXECUTION, D_DISPATCH_SIGNAL, D_DISPATCH_DEFINITION = slot_offsets(
        ToolDispatchExecution, "execution", "signal", "definition"
    )
    D_SUCCESS_VALUE, D_SUCCESS_CONTENT, D_SUCCESS_META, D_SUCCESS_CONTEXTS, D_SUCCESS_CONCLUDES = (
        slot_offsets(ToolSuccess, "value", "content", "meta", "additional_contexts", "concludes_turn")
    )
    D_SIGNAL_ABORTED, D_SIGNAL_SOURCES, D_SIGNAL_LINKS = slot_offsets(
        AbortSignal, "_aborted", "_sources", "_links"
    )
    D_RUN_EXECUTION, D_RUN_SIGNAL, D_RUN_FOLLOWS, D_RUN_DEFERRED, D_RUN_CONCLUDED = slot_offsets(
        ToolRunContext, "execution", "_signal", "_follows", "_deferred", "_concluded"
    )
    from dsh_codegen.registry._definitions import CompiledTool as tool_type

    CompiledTool = tool_type
    (D_TOOL_HOT,) = slot_offsets(tool_type, "hot")
    from dsh_codegen._json_c import SNAPSHOT_CAPSULE
    from dsh_codegen._schema_c import IS_VALID_CAPSULE, CompiledValidator as validator_type

    if snapshot_json.__module__ != "dsh_codegen._json_c":
        raise ImportError("the compiled pipeline needs the compiled snapshot_json")
    snapshot = <snapshot_fn>PyCapsule_GetPointer(SNAPSHOT_CAPSULE, b"dsh_codegen._json_c.snapshot")
    CompiledValidator = validator_type
    validator_is_valid = <is_valid_fn>PyCapsule_GetPointer(
        IS_VALID_CAPSULE, b"dsh_codegen._schema_c.is_valid"
    )
    bound = True


# --- construction without __init__ ------------------------------------------------------

cdef object py_input_new = None


def input_new(cls, *args, **kwargs):
    """``ToolExecutionInput.__new__`` for positional arguments, without the generated Python ``__new__``.

    Keywords, or a wrong number of arguments, go to the generated ``__new__``
    (same result, same errors).
    """
    cdef Py_ssize_t n = len(args)
    if kwargs or n < 4 or n > 7:
        return py_input_new(cls, *args, **kwargs)
    fresh = dsh_alloc(cls, 7)
    cdef Py_ssize_t index
    for index in range(7):
        put(fresh, index, <object>PyTuple_GET_ITEM(args, index) if index < n else None)
    return fresh


cdef object py_parse_call_arguments = None
cdef object parse_json = None


def parse_call_arguments(arguments):
    """Compiled twin of ``_loop.parse_call_arguments``.

    Text that ``parse_json`` accepts returns here (frozen); anything else (not
    a ``str``, not JSON, blank, lossy) goes to the Python twin, which parses
    again and decides.
    """
    if type(arguments) is str:
        try:
            return parse_json(arguments)
        except Exception:
            pass
    return py_parse_call_arguments(arguments)


def install_parse_call_arguments(python_twin):
    """Return :func:`parse_call_arguments`, falling back to ``python_twin`` (``_loop.py`` installs it)."""
    global py_parse_call_arguments, parse_json
    from dsh_codegen._json_c import parse_json as compiled_parse_json

    parse_json = compiled_parse_json
    py_parse_call_arguments = python_twin
    return parse_call_arguments


def install_input_new(cls):
    """Make :func:`input_new` the ``__new__`` of ``cls`` (``ToolExecutionInput``), keeping the generated one."""
    global py_input_new
    if py_input_new is None:
        py_input_new = cls.__new__
        cls.__new__ = staticmethod(input_new)


cdef inline int fill(Py_ssize_t offset, object instance, object value) except -1:
    # Store into a slot of a fresh instance (what __init__ would do).
    dsh_slot_fill(instance, offset, value)
    return 0


cdef object new_success(object value, object content, object meta, object contexts, object concludes):
    success = dsh_alloc(ToolSuccess, 0)
    fill(D_SUCCESS_VALUE, success, value)
    fill(D_SUCCESS_CONTENT, success, content)
    fill(D_SUCCESS_META, success, meta)
    fill(D_SUCCESS_CONTEXTS, success, contexts)
    fill(D_SUCCESS_CONCLUDES, success, concludes)
    return success


cdef object new_run_context(object execution, object follows):
    # ToolRunContext._following(execution, follows): the fused signal is made on first use.
    run = dsh_alloc(ToolRunContext, 0)
    fill(D_RUN_EXECUTION, run, execution)
    fill(D_RUN_SIGNAL, run, None)
    fill(D_RUN_FOLLOWS, run, follows)
    fill(D_RUN_DEFERRED, run, None)
    fill(D_RUN_CONCLUDED, run, False)
    return run


cdef object new_dispatch_execution(object execution, object signal, object definition):
    dispatch = dsh_alloc(ToolDispatchExecution, 0)
    fill(D_DISPATCH_EXECUTION, dispatch, execution)
    fill(D_DISPATCH_SIGNAL, dispatch, signal)
    fill(D_DISPATCH_DEFINITION, dispatch, definition)
    return dispatch


cdef object new_execution(object token, object call_id, object name, object arguments,
                          object signal, object agent, object parent, object root_call_id):
    # tuple.__new__(ToolExecution, (...)) without the intermediate tuple.
    execution = dsh_alloc(ToolExecution, 8)
    put(execution, 0, token)
    put(execution, 1, call_id)
    put(execution, 2, name)
    put(execution, 3, arguments)
    put(execution, 4, signal)
    put(execution, 5, agent)
    put(execution, 6, parent)
    put(execution, 7, root_call_id)
    return execution


cdef inline int put(object fresh, Py_ssize_t index, object item) except -1:
    Py_INCREF(item)  # PyTuple_SET_ITEM steals a reference
    PyTuple_SET_ITEM(fresh, index, item)
    return 0


# --- the call -------------------------------------------------------------------------------

@cython.freelist(16)
cdef class Call:
    """Compiled twin of ``_pipeline._Call``: the mutable state of one call while the pipeline runs it."""

    cdef public object cancel_exc, chain, compiled, execution, finalize, listeners
    cdef public object produced, registry, run, settled, value, version
    # The argument snapshot error found at entry (read by run_pipeline's fast path).
    cdef object argument_error

    def __init__(self, registry, execution, chain, compiled):
        self.registry = registry
        self.execution = execution
        self.chain = chain
        self.compiled = compiled
        self.version = registry._version
        self.finalize = None if compiled is None else compiled.finalize_content


cdef Call make_call(object registry, object input):
    """``create_execution``: read every input field once, mint the token, snapshot the arguments."""
    cdef Call call
    cdef PyObject* found
    if type(input) is ToolExecutionInput:
        call_id = <object>PyTuple_GET_ITEM(input, 0)
        name = <object>PyTuple_GET_ITEM(input, 1)
        raw_arguments = <object>PyTuple_GET_ITEM(input, 2)
        signal = <object>PyTuple_GET_ITEM(input, 3)
        agent = <object>PyTuple_GET_ITEM(input, 4)
        parent = <object>PyTuple_GET_ITEM(input, 5)
        root_call_id = <object>PyTuple_GET_ITEM(input, 6)
    else:  # any object with these attributes, each read exactly once
        call_id = input.call_id
        name = input.name
        raw_arguments = input.arguments
        signal = input.signal
        agent = input.agent
        parent = input.parent
        root_call_id = input.root_call_id
    if (
        type(call_id) is not str
        or type(name) is not str
        or type(signal) is not AbortSignal
        or (parent is not None and type(parent) is not ToolExecutionToken)
        or (root_call_id is not None and type(root_call_id) is not str)
    ):
        raise input_type_error(call_id, name, signal, parent, root_call_id)
    chain = () if agent is None else registry.chain_for(agent)
    error = None
    try:
        arguments = snapshot(raw_arguments)
    except snapshot_errors as exc:
        arguments = None
        error = exc
    execution = new_execution(
        dsh_alloc(ToolExecutionToken, 0), call_id, name, arguments, signal, agent, parent, root_call_id
    )
    if name == RUN_CODE_NAME:
        compiled = None
    elif chain:
        compiled = registry.resolve(name, chain)
    else:
        tools = registry._global.tools
        if type(tools) is dict:
            found = PyDict_GetItem(tools, name)
            compiled = None if found == NULL else <object>found
        else:
            compiled = tools.get(name)
    call = Call.__new__(Call)
    call.registry = registry
    call.execution = execution
    call.chain = chain
    call.compiled = compiled
    call.version = registry._version
    call.finalize = None if compiled is None else hot(tool_fields(compiled), HOT_FINALIZE)
    call.argument_error = error
    return call


def create_execution(registry, input):
    """Compiled twin of ``_pipeline.create_execution``: ``(call, argument_error)``."""
    cdef Call call = make_call(registry, input)
    return call, call.argument_error


# --- dispatch ------------------------------------------------------------------------------

cdef inline int release(object run) except -1:
    # run._release(): the fused signal (made or not) stops following its sources.
    # ``run`` is a ToolRunContext this module made; its signal, if made, an exact AbortSignal.
    cdef PyObject* made = dsh_slot_get(run, D_RUN_SIGNAL)
    cdef PyObject* links
    if made == NULL or <object>made is None:
        fill(D_RUN_FOLLOWS, run, None)
        return 0
    fused = <object>made
    if type(fused) is AbortSignal:  # its slots may be read by offset
        links = dsh_slot_get(fused, D_SIGNAL_LINKS)
        if links != NULL and <object>links is None:
            fill(D_SIGNAL_SOURCES, fused, None)
            return 0
    run._release()
    return 0


# Positions in ``CompiledTool.hot`` (see _definitions.py).
cdef enum:
    HOT_EXECUTE = 0
    HOT_ARGS_VALIDATOR = 1
    HOT_OUTPUT_VALIDATOR = 2
    HOT_RENDER = 3
    HOT_PRESENTATION_META = 4
    HOT_FINALIZE = 5


cdef inline tuple tool_fields(object compiled):
    # ``compiled.hot`` (read by offset for a CompiledTool, whose ``hot`` is always set).
    cdef PyObject* fields
    if type(compiled) is CompiledTool:
        fields = dsh_slot_get(compiled, D_TOOL_HOT)
        if fields != NULL:
            return <tuple>fields
    return compiled.hot


cdef inline object hot(tuple fields, Py_ssize_t index):
    # One field of a CompiledTool's ``hot`` tuple.
    return <object>PyTuple_GET_ITEM(fields, index)


cdef inline bint is_valid(object validator, object value) except -1:
    # ``validator.is_valid(value)``, without the method call for the compiled validator.
    if type(validator) is CompiledValidator:
        return validator_is_valid(validator, value)
    return validator.is_valid(value)


cdef inline bint code_mode(object mode) except -1:
    # ``mode == "code"``, deciding by identity first (the literals are interned).
    if mode is "native" or mode is "both":
        return False
    return mode is "code" or mode == "code"


cdef inline bint signal_untouched(object signal) except -1:
    # ``not signal._aborted and signal._sources is None`` for the caller's (exact) AbortSignal.
    cdef PyObject* aborted = dsh_slot_get(signal, D_SIGNAL_ABORTED)
    cdef PyObject* sources = dsh_slot_get(signal, D_SIGNAL_SOURCES)
    return (
        aborted != NULL and <object>aborted is False and sources != NULL and <object>sources is None
    )


cdef inline bint signal_aborted(object signal) except -1:
    # ``signal.aborted`` without the property call (an exact AbortSignal: slots read by offset).
    cdef PyObject* slot
    if type(signal) is not AbortSignal:
        return signal.aborted
    slot = dsh_slot_get(signal, D_SIGNAL_ABORTED)
    if slot == NULL or <object>slot is not False:
        return signal._aborted  # unset (raises) or set: the attribute says which
    slot = dsh_slot_get(signal, D_SIGNAL_SOURCES)
    return slot != NULL and <object>slot is not None and signal._poll()


cdef object content_blocks(object frozen):
    # check_content's verdict: ``frozen`` if it is a list of {"type": str} blocks, else None.
    if type(frozen) is not FrozenJsonArray:
        return None
    cdef Py_ssize_t index
    cdef PyObject* kind
    for index in range(PyList_GET_SIZE(frozen)):
        block = <object>PyList_GET_ITEM(frozen, index)
        if type(block) is not FrozenJsonObject:
            return None
        kind = PyDict_GetItem(block, "type")
        if kind == NULL or type(<object>kind) is not str:
            return None
    return frozen


cdef object normalize(object call, object compiled, object value, object contexts, object concludes):
    """``normalize_value``: the success for a value that snapshots, validates and renders cleanly."""
    try:
        frozen = snapshot(value)
    except Exception:
        # Lossy or failing: the Python twin repeats the (pure) snapshot and words the failure.
        return py_normalize_value(call, compiled, value, contexts, concludes)
    cdef tuple fields = tool_fields(compiled)
    if not is_valid(hot(fields, HOT_OUTPUT_VALIDATOR), frozen):
        return invalid_output(compiled, frozen, contexts)
    execution = call.execution
    if hot(fields, HOT_PRESENTATION_META) is not None and <object>PyTuple_GET_ITEM(execution, 6) is None:
        return render_value(call, compiled, frozen, contexts, concludes)
    try:
        rendered = hot(fields, HOT_RENDER)(<object>PyTuple_GET_ITEM(execution, 3), frozen)
    except Exception as exc:
        return render_failure(compiled, exc, contexts)
    try:
        content = content_blocks(snapshot(rendered))
    except Exception:
        content = None
    if content is None:
        return content_failure(compiled, rendered, contexts)
    return new_success(frozen, content, UNSET, contexts, concludes)


def normalize_value(call, compiled, value, contexts, concludes_turn):
    """Compiled twin of ``_pipeline.normalize_value``."""
    return normalize(call, compiled, value, contexts, concludes_turn)


cdef object normalize_run(Call call, object compiled, object value, object run):
    # ``run`` is a ToolRunContext this module made: its slots are read by offset.
    cdef PyObject* deferred = dsh_slot_get(run, D_RUN_DEFERRED)
    cdef PyObject* concluded = dsh_slot_get(run, D_RUN_CONCLUDED)
    if deferred == NULL or concluded == NULL:  # deleted by the body: the attributes raise
        return normalize(call, compiled, value, tuple(run._deferred or ()), run._concluded)
    return normalize(
        call,
        compiled,
        value,
        () if <object>deferred is None else tuple(<object>deferred),
        <object>concluded,
    )


cdef object start_dispatch(Call call, object signal):
    """``dispatch_core`` up to the body's first step.

    Returns the result, or, for a body that suspended, the ``drive_body``
    coroutine the caller must await (it owns the fused signal from then on).
    """
    cdef PyObject* sent = NULL
    cdef int status
    cdef bint handed_off = False
    execution = call.execution
    compiled = call.compiled
    if compiled is None or call.version != call.registry._version:
        compiled = resolve_for_dispatch(call)
        if type(compiled) is ToolFailure:
            return compiled
    caller = <object>PyTuple_GET_ITEM(execution, 4)
    if signal_aborted(caller) or (signal is not caller and signal.aborted):
        return aborted_before_dispatch()
    args = <object>PyTuple_GET_ITEM(execution, 3)
    cdef tuple fields = tool_fields(compiled)
    validator = hot(fields, HOT_ARGS_VALIDATOR)
    if validator is not None and not is_valid(validator, args):
        return invalid_arguments(validator, args)
    run = new_run_context(execution, caller if signal is caller else (caller, signal))
    call.run = run
    try:
        value = hot(fields, HOT_EXECUTE)(args, run)
        kind = type(value)
        if kind is CoroutineType:
            status = PyIter_Send(value, None, &sent)
            step = <object>sent
            Py_DECREF(step)  # PyIter_Send returned a new reference; <object> took another
            if status == SEND_NEXT:
                # Suspended: the Python twin drives it from its first yield.
                steps = body_steps(call, Resumed(value, step))
                next(steps)
                handed_off = True
                return drive_body(call, compiled, run, steps, step)
            value = step
        elif kind not in PLAIN_RESULTS and isawaitable(value):
            steps = body_steps(call, await_any(value))
            step = next(steps, DONE)
            if step is not DONE:
                handed_off = True
                return drive_body(call, compiled, run, steps, step)
            value = call.value
    except CancelledError:
        # The body itself raised CancelledError (e.g. a future it awaited was cancelled).
        run.signal._abort(AbortError(ABORTED_MESSAGE))
        raise
    except Exception as exc:
        release(run)
        handed_off = True
        return body_failure(call, run, exc, False)
    finally:
        if not handed_off:
            release(run)
    return normalize_run(call, compiled, value, run)


async def dispatch_core(Call call, signal):
    """Compiled twin of ``_pipeline.dispatch_core``."""
    result = start_dispatch(call, signal)
    if type(result) is ToolSuccess or type(result) is ToolFailure:
        return result
    return await result


# --- 3. policy --------------------------------------------------------------------------------
#
# Each waterfall step (the first live listener from ``index``, called with its
# ``next``) is a plain function; the coroutine that awaits the step is the
# caller's own (``run_policy`` or the previous listener's ``next()``), so a
# listener costs one coroutine of ours, its ``next()``.

cdef inline bint is_awaitable(object value) except -1:
    kind = type(value)
    return kind is CoroutineType or (kind not in PLAIN_RESULTS and isawaitable(value))


@cython.freelist(16)
cdef class PreNext:
    """``next()`` of one pre-execute listener: runs the rest of the waterfall once."""

    cdef tuple entries
    cdef Py_ssize_t index
    cdef object execution
    cdef bint called

    def __call__(self):
        return pre_next(self)


cdef object pre_step(tuple entries, Py_ssize_t index, object execution):
    # The decision (or its awaitable) of the first live listener from ``index``; ALLOW past the end.
    cdef PreNext following
    while index < len(entries):
        entry = entries[index]
        if entry.alive:
            following = PreNext.__new__(PreNext)
            following.entries = entries
            following.index = index + 1
            following.execution = execution
            return entry.fn(execution, following)
        index += 1
    return ALLOW


cdef object pre_decision(object decision):
    kind = type(decision)
    if kind is not Allow and kind is not Deny and kind is not Ask:
        raise bad_pre_decision(decision)
    return decision


async def pre_next(PreNext self):
    if self.called:
        raise RuntimeError(PRE_NEXT_TWICE)
    self.called = True
    decision = pre_step(self.entries, self.index, self.execution)
    if is_awaitable(decision):
        decision = await decision
    return pre_decision(decision)


async def run_policy(Call call):
    """Compiled twin of ``_pipeline.run_policy``."""
    execution = call.execution
    try:
        decision = pre_step(call.listeners.pre, 0, execution)
        if is_awaitable(decision):
            decision = await decision
        if type(decision) is Deny:
            return plain_failure(reason_text(decision.reason)), False
        if type(pre_decision(decision)) is Ask:
            denied = await approve(call, decision.reason)
            if denied is not None:
                return denied, False
        reason = run_guards(call) if call.registry._global.guards or call.chain else None
    except Exception as exc:
        return failure_from_exception(exc), True
    if reason is not None:
        return plain_failure(reason), False
    if signal_aborted(<object>PyTuple_GET_ITEM(execution, 4)):
        return aborted_before_dispatch(), False
    return None, False


# --- 4. dispatch through the wrappers --------------------------------------------------------

@cython.freelist(16)
cdef class WrapNext:
    """``next(signal=None)`` of one wrapper: runs the inner layers with the (optionally) replaced signal."""

    cdef Call call
    cdef Py_ssize_t index
    cdef object dispatch

    def __call__(self, signal=None):
        return wrap_next(self, signal)


cdef Py_ssize_t live_wrapper(tuple wrappers, Py_ssize_t index):
    # The position of the first live wrapper from ``index`` (len(wrappers) when none is left).
    while index < len(wrappers) and not wrappers[index].alive:
        index += 1
    return index


cdef object call_wrapper(Call call, Py_ssize_t index, object dispatch):
    # Wrapper ``index`` (live) around the layers inside it: what it returned, or its awaitable.
    cdef WrapNext following = WrapNext.__new__(WrapNext)
    following.call = call
    following.index = index + 1
    following.dispatch = dispatch
    return (<tuple>call.listeners.wrappers)[index].fn(dispatch, following)


cdef object authored(Call call, object returned):
    # What a wrapper returned: a result some next() produced is kept as is, anything else normalized.
    if call.produced is not None:
        for item in call.produced:
            if item is returned:
                return item
    return normalize_authored(call, returned)


async def wrap_next(WrapNext self, signal):
    cdef Py_ssize_t index
    dispatch = self.dispatch
    if signal is not None and type(signal) is not AbortSignal:
        raise bad_next_signal(signal)
    call = self.call
    if call.cancel_exc is not None:
        # The awaiting task was cancelled under an earlier next(): no new body starts.
        raise call.cancel_exc
    previous = dispatch.signal
    if signal is not None:
        dispatch.signal = signal
    try:
        index = live_wrapper(call.listeners.wrappers, self.index)
        if index == len(call.listeners.wrappers):
            result = start_dispatch(call, dispatch.signal)
            if type(result) is not ToolSuccess and type(result) is not ToolFailure:
                result = await result
        elif signal_aborted(<object>PyTuple_GET_ITEM(call.execution, 4)):
            # The caller cancelled while an outer wrapper was still deciding.
            result = aborted_before_dispatch()
        else:
            result = call_wrapper(call, index, dispatch)
            if is_awaitable(result):
                result = await result
            result = authored(call, result)
    finally:
        # Restore: outer wrappers (and the registry) see their own signal again.
        dispatch.signal = previous
    if call.produced is None:
        call.produced = [result]
    else:
        call.produced.append(result)
    return result


async def run_dispatch(Call call):
    """Compiled twin of ``_pipeline.run_dispatch``."""
    cdef Py_ssize_t index
    execution = call.execution
    caller = <object>PyTuple_GET_ITEM(execution, 4)
    wrappers = call.listeners.wrappers
    index = live_wrapper(wrappers, 0)
    if not wrappers:
        result = start_dispatch(call, caller)
        if type(result) is not ToolSuccess and type(result) is not ToolFailure:
            result = await result
        return result, False
    resolved = call.compiled
    if resolved is None or call.version != call.registry._version:
        try:
            resolved = call.registry.resolve(<object>PyTuple_GET_ITEM(execution, 2), call.chain)
        except Exception:
            resolved = None  # dispatch reports the error as the result
    dispatch = new_dispatch_execution(
        execution, caller, None if resolved is None else resolved.definition
    )
    try:
        if index == len(wrappers):
            result = start_dispatch(call, caller)
            if type(result) is not ToolSuccess and type(result) is not ToolFailure:
                result = await result
        elif signal_aborted(caller):
            result = aborted_before_dispatch()
        else:
            result = call_wrapper(call, index, dispatch)
            if is_awaitable(result):
                result = await result
            result = authored(call, result)
    except Exception as exc:
        if call.cancel_exc is not None:
            raise call.cancel_exc from None  # a wrapper swallowed the task's cancellation
        contexts = () if call.run is None else run_contexts(call.run)
        return failure_from_exception(exc, additional_contexts=contexts), True
    if call.cancel_exc is not None:
        raise call.cancel_exc  # a wrapper swallowed the task's cancellation
    return result, False


# --- 5-8. commit ----------------------------------------------------------------------------------

@cython.freelist(16)
cdef class PostNext:
    """``next()`` of one post-execute listener."""

    cdef tuple entries
    cdef Py_ssize_t index
    cdef object execution, result
    cdef bint called

    def __call__(self):
        return post_next(self)


cdef object post_step(tuple entries, Py_ssize_t index, object execution, object result):
    # The decision (or its awaitable) of the first live listener from ``index``; ACCEPT past the end.
    cdef PostNext following
    while index < len(entries):
        entry = entries[index]
        if entry.alive:
            following = PostNext.__new__(PostNext)
            following.entries = entries
            following.index = index + 1
            following.execution = execution
            following.result = result
            return entry.fn(execution, result, following)
        index += 1
    return ACCEPT


cdef object post_decision(object decision):
    if type(decision) is not Accept and type(decision) is not Block:
        raise bad_post_decision(decision)
    return decision


async def post_next(PostNext self):
    if self.called:
        raise RuntimeError(POST_NEXT_TWICE)
    self.called = True
    decision = post_step(self.entries, self.index, self.execution, self.result)
    if is_awaitable(decision):
        decision = await decision
    return post_decision(decision)


def notify_result(Call call, result):
    """Compiled twin of ``_pipeline.notify_result``."""
    cdef Py_ssize_t index
    entries = call.listeners.observers if call.listeners is not None else ()
    execution = call.execution
    cancelled = False
    for index in range(len(entries)):
        entry = entries[index]
        if not entry.alive:
            continue
        try:
            outcome = entry.fn(execution, result)
        except CancelledError:
            cancelled = True
            continue
        except Exception as exc:
            log_observer_failure(entry, exc)
            continue
        if is_awaitable(outcome):
            return notify_rest(call, result, entries, index, outcome, cancelled)
    return cancelled


async def commit(Call call, result, bint skip_post, bint cancelled):
    """Compiled twin of ``_pipeline._commit`` (stages 5-8)."""
    listeners = call.listeners
    if not skip_post and not cancelled and listeners.post:
        # run_post_execute(), inlined: the waterfall (chain end Accept()) over the frozen result.
        try:
            try:
                decision = post_step(listeners.post, 0, call.execution, result)
                if is_awaitable(decision):
                    decision = await decision
                post_decision(decision)
            except Exception as exc:
                result = failure_from_exception(exc, additional_contexts=result.additional_contexts)
            else:
                if decision is not ACCEPT:  # the chain's own end: nothing to apply
                    result = apply_post_decision(call, result, decision)
        except CancelledError:
            cancelled = True
            call_cancelled(call)
    # settle_cancellation only ever replaces a success, and only after a cancellation
    if type(result) is ToolSuccess and (
        cancelled or signal_aborted(<object>PyTuple_GET_ITEM(call.execution, 4))
    ):
        result = settle_cancellation(call, result, cancelled)
    if call.finalize is not None:
        result = run_finalize(call, result)
    if listeners.observers:
        notified = notify_result(call, result)
        if notified is True or (notified is not False and await notified):
            cancelled = True
    return result, cancelled


# --- the pipeline ------------------------------------------------------------------------------

cdef enum:
    # ListenerSnapshot.stages bits (see _registry.py).
    STAGE_PRE = 1
    STAGE_WRAP = 2
    STAGE_POST = 4
    STAGE_OBSERVE = 8
    STAGE_GUARDS = 16


async def full_pipeline(registry, input, gate):
    """The Python twin's ``run_pipeline`` over this module's stages (an exact call description)."""
    cdef int stages
    call = make_call(registry, input)
    chain = call.chain
    if chain:
        listeners = registry.listeners_for(chain)
        stages = listeners.stages | STAGE_GUARDS  # a scope's call always runs the policy stage
    else:
        listeners = registry._global_listeners  # dropped whenever a listener or guard changes
        if listeners is None:
            listeners = registry.listeners_for(())
        stages = listeners.stages
    call.listeners = listeners
    caller = <object>PyTuple_GET_ITEM(call.execution, 4)
    result = None
    if (
        chain
        or call.argument_error is not None
        or not signal_untouched(caller)
        or code_mode(registry.mode)
    ):
        result = entry_outcome(call, call.argument_error)
    skip_post = True
    cancel_exc = None
    if result is None:
        try:
            if gate is not None:
                async with gate.policy():
                    result, skip_post = await run_policy(call)
            elif stages & (STAGE_PRE | STAGE_GUARDS):
                result, skip_post = await run_policy(call)
            if result is None:
                if stages & STAGE_WRAP:
                    result, skip_post = await run_dispatch(call)
                else:
                    skip_post = False
                    result = start_dispatch(call, caller)
                    if type(result) is not ToolSuccess and type(result) is not ToolFailure:
                        result = await result
        except CancelledError as exc:
            cancel_exc = exc
            call_cancelled(call)
            result = cancelled_outcome(call)
            skip_post = True
    cancelled = cancel_exc is not None
    if gate is not None:
        committed = False
        try:
            async with gate.commit():
                committed = True
                result, cancelled = await commit(call, result, skip_post, cancelled)
        except CancelledError as exc:
            if committed:
                raise
            # Entering the gate was cancelled: still finalize and observe, without ordering.
            if cancel_exc is None:
                cancel_exc = exc
            call_cancelled(call)
            result, cancelled = await commit(call, result, True, True)
    elif stages & (STAGE_POST | STAGE_OBSERVE):
        result, cancelled = await commit(call, result, skip_post, cancelled)
    else:
        result = plain_finish(call, result, cancelled)
    if cancelled:
        raise cancel_exc if cancel_exc is not None else CancelledError()
    return result


cdef object plain_finish(Call call, object result, bint cancelled):
    # Stages 6-7: caller cancellation replaces a success; finalize_content exactly once.
    if cancelled or signal_aborted(<object>PyTuple_GET_ITEM(call.execution, 4)):
        result = settle_cancellation(call, result, cancelled)
    if call.finalize is not None:
        result = run_finalize(call, result)
    return result


def execute(registry, input, *, gate=None):
    """Compiled twin of ``ToolRegistry.execute`` (the registry installs it as the method)."""
    return pipeline(registry, input, gate)


def run_pipeline(registry, input, gate):
    """Compiled twin of ``_pipeline.run_pipeline``: the call's coroutine.

    An exact ``ToolExecutionInput`` (any layer, gated or not) runs
    :func:`full_pipeline`; a duck-typed call description runs the Python
    twin's ``run_pipeline``, over this module's stages.
    """
    return pipeline(registry, input, gate)


cdef object pipeline(object registry, object input, object gate):
    if bound and type(input) is ToolExecutionInput:
        return full_pipeline(registry, input, gate)
    return py_run_pipeline(registry, input, gate)
