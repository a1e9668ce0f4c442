"""The child side of Code Mode's run protocol: keeper, fork server, stdio child and program runner.

This file runs as a script (``python -I _child.py <role>``) or, for the stdio
role, as ``python -m dsh_codegen.codemode.child``; it imports the standard
library only, so a child pays for nothing the program does not need, and it is
small enough to read whole. Four roles:

``zygote``  the fork server. Imports everything a program run needs, then
            waits on the control socket (fd 3, ``SOCK_SEQPACKET``) for ``fork``
            requests; forks one child per request on three new pipes whose far
            ends it hands to the host, in a working directory it makes for it and
            removes after it (a child never runs twice; the zygote never runs user
            code), and reports each child's exit. The host asks
            ahead, so a spare child waits, set up, for its run's init frame.
            It is a child subreaper: everything a program spawned ends up its
            child, is killed with the run's process group and session, and is
            reaped here.
``keeper``  the same duty for one run, for the plain-spawn strategy: forks the
            program process, reports its exit on fd 5, and exits.
``stdio``   one run over the process's own stdin (frames in), stdout (frames
            out) and stderr (the program's raw output), for a host that reaches
            this process through any command (``CommandRuntime``): the keeper's
            duty, with the end of stdin as the request to stop and the exit
            status as the report (docs/codemode-protocol.md).
``run``     (inside each) the program process itself: sets up its event
            loop and bindings, reads the init frame from fd 3, runs the
            program, writes frames to fd 4.

The frames (JSON lines) are specified in docs/codemode-protocol.md. The host
words the model-facing text and trusts none of what arrives.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stub: the C module under ``signal``
import ast
import asyncio
import builtins
import gc
import json
import math
import os
import re
import resource
import select
import selectors
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Collection, Coroutine
from typing import Any, NoReturn

_FD_IN = 3
_FD_OUT = 4
_FD_STATUS = 5
_PR_SET_CHILD_SUBREAPER = 36
_LOSSY_ARGS = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"
_MISSING = object()
#: Bytes asked of one read: a pipe holds 64 KiB, and a larger request makes each read's buffer a fresh
#: ``mmap`` (then ``mremap`` and ``munmap``) in a process whose allocator has not grown its threshold.
_READ_SIZE = 1 << 16

# --- lossless JSON, iterative both ways (a 100,000-deep value needs no recursion) ----------------

_ENCODE_STR: Callable[[str], str] = json.encoder.encode_basestring_ascii
scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class Lossy(Exception):
    """The value is not lossless JSON."""


def dump(value: object) -> str:
    """Compact, ASCII-only JSON for a lossless value; ``Lossy`` otherwise (cycles included)."""
    out: list[str] = []
    # Work items: a value to write, or a str to emit, or a ("leave", id) marker.
    work: list[object] = [value]
    open_ids: set[int] = set()
    leave = _Leave
    while work:
        item = work.pop()
        kind = type(item)
        if kind is str:
            out.append(_ENCODE_STR(item))  # type: ignore[arg-type]
        elif kind is _Text:
            out.append(item.text)  # type: ignore[attr-defined]
        elif kind is leave:
            open_ids.discard(item.ident)  # type: ignore[attr-defined]
        elif item is None:
            out.append("null")
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif kind is int:
            try:
                out.append(int.__repr__(item))
            except ValueError:
                raise Lossy("integer too large") from None
        elif kind is float:
            number: float = item  # type: ignore[assignment]
            if not math.isfinite(number) or (number == 0.0 and math.copysign(1.0, number) < 0):
                raise Lossy("non-finite or negative-zero number")
            out.append(float.__repr__(number))
        elif kind is list or kind is tuple:
            ident = id(item)
            if ident in open_ids:
                raise Lossy("cycle")
            open_ids.add(ident)
            seq: list[object] | tuple[object, ...] = item  # type: ignore[assignment]
            work.append(_Leave(ident))
            work.append(_CLOSE_ARRAY)
            for index in range(len(seq) - 1, -1, -1):
                work.append(seq[index])
                if index:
                    work.append(_COMMA)
            out.append("[")
        elif kind is dict:
            ident = id(item)
            if ident in open_ids:
                raise Lossy("cycle")
            open_ids.add(ident)
            pairs = list(item.items())  # type: ignore[attr-defined]
            work.append(_Leave(ident))
            work.append(_CLOSE_OBJECT)
            for index in range(len(pairs) - 1, -1, -1):
                key, member = pairs[index]
                if type(key) is not str:
                    raise Lossy("non-string key")
                work.append(member)
                work.append(_Text(_ENCODE_STR(key) + ":"))
                if index:
                    work.append(_COMMA)
            out.append("{")
        else:
            raise Lossy(f"{kind.__name__} is not JSON")
    return "".join(out)


def offence(value: object) -> tuple[list[str | int], str]:
    """Where ``value`` first stops being lossless JSON (document order) and why, as the host's
    ``snapshot_json`` words it; the host renders both (``dump`` only says that it does).

    Iterative like ``dump``; each item remembers its parent's link, so a path is built only for
    the offence (a deep value costs no path copies).
    """
    open_ids: set[int] = set()
    # Work items: (value, link) with link = (parent link, segment) or None at the root;
    # (_Leave, None) closes a container; (_KeyCheck, link) checks one object key.
    work: list[tuple[object, Any]] = [(value, None)]
    reason = ""
    link: Any = None
    while work:
        item, link = work.pop()
        kind = type(item)
        if kind is _Leave:
            open_ids.discard(item.ident)  # type: ignore[attr-defined]
        elif kind is _KeyCheck:
            key = item.key  # type: ignore[attr-defined]
            if type(key) is not str:
                reason = f"object key of type {type(key).__name__} (keys must be exactly str)"
                break
        elif item is None or item is True or item is False or kind is str:
            continue
        elif kind is int:
            try:
                int.__repr__(item)
            except ValueError:
                reason = (
                    f"int with more than {sys.get_int_max_str_digits()} decimal digits cannot be written"
                    " as JSON (sys.get_int_max_str_digits())"
                )
                break
        elif kind is float:
            number: float = item  # type: ignore[assignment]
            if number != number:
                reason = "NaN is not a JSON number"
                break
            if number == 0.0 and math.copysign(1.0, number) < 0:
                reason = "-0.0 does not survive a JSON round trip"
                break
            if math.isinf(number):
                reason = f"{'inf' if number > 0 else '-inf'} is not a JSON number"
                break
        elif kind is list or kind is tuple or kind is dict:
            ident = id(item)
            if ident in open_ids:
                reason = "the container contains itself (a cycle)"
                break
            open_ids.add(ident)
            work.append((_Leave(ident), None))
            if kind is dict:
                pairs = list(item.items())  # type: ignore[attr-defined]
                for key, member in reversed(pairs):
                    work.append((member, (link, key)))
                    work.append((_KeyCheck(key), link))
            else:
                seq: list[object] | tuple[object, ...] = item  # type: ignore[assignment]
                for index in range(len(seq) - 1, -1, -1):
                    work.append((seq[index], (link, index)))
        else:
            reason = f"type {kind.__name__} is not a JSON type"
            for base, what in (
                (dict, "dict"),
                (list, "list"),
                (tuple, "tuple"),
                (str, "str"),
                (int, "int"),
                (float, "float"),
            ):
                if issubclass(kind, base):
                    reason += f" (a subclass of {what}; only the exact type is)"
                    break
            break
    path: list[str | int] = []
    while link is not None:
        link, segment = link
        path.append(segment)
    path.reverse()
    return path, reason or "not JSON"


class _KeyCheck:
    __slots__ = ("key",)

    def __init__(self, key: object) -> None:
        self.key = key


class _Text:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Leave:
    __slots__ = ("ident",)

    def __init__(self, ident: int) -> None:
        self.ident = ident


_COMMA = _Text(",")
_CLOSE_ARRAY = _Text("]")
_CLOSE_OBJECT = _Text("}")
_WS: Callable[[str, int], Any] = re.compile(r"[ \t\n\r]*").match
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?").match
_CONSTANTS = {"null": None, "true": True, "false": False}


def load(text: str) -> object:
    """Parse JSON text with an explicit stack (the host's frames are canonical JSON)."""
    try:
        return json.loads(text)
    except RecursionError:
        pass
    stack: list[tuple[object, str | None]] = []  # (container, pending key)
    index = _WS(text, 0).end()
    while True:
        char = text[index : index + 1]
        if char == "[" or char == "{":
            container: object = [] if char == "[" else {}
            index = _WS(text, index + 1).end()
            closer = "]" if char == "[" else "}"
            if text[index : index + 1] == closer:
                value: object = container
                index += 1
            else:
                key = None
                if char == "{":
                    key, index = scanstring(text, index + 1)
                    index = _WS(text, index).end() + 1  # the colon
                    index = _WS(text, index).end()
                stack.append((container, key))
                continue
        elif char == '"':
            value, index = scanstring(text, index + 1)
        else:
            match = _NUMBER(text, index)
            if match is not None:
                integer, fraction, exponent = match.groups()
                value = float(integer + (fraction or "") + (exponent or "")) if fraction or exponent else int(integer)
                index = match.end()
            else:
                word = text[index : index + 5].rstrip("]},\n \t\r")
                word = word[:4] if word[:4] in _CONSTANTS else word
                if word not in _CONSTANTS:
                    raise ValueError("malformed JSON")
                value = _CONSTANTS[word]
                index += len(word)
        # Attach ``value`` to the open containers, closing as many as end here.
        while True:
            if not stack:
                return value
            container, key = stack[-1]
            if key is None:
                container.append(value)  # type: ignore[attr-defined]
            else:
                container[key] = value  # type: ignore[index]
            index = _WS(text, index).end()
            char = text[index : index + 1]
            if char == ",":
                index = _WS(text, index + 1).end()
                if key is not None:
                    next_key, index = scanstring(text, index + 1)
                    index = _WS(text, _WS(text, index).end() + 1).end()
                    stack[-1] = (container, next_key)
                break
            index += 1  # the closing bracket
            stack.pop()
            value = container


# --- the program process ------------------------------------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class ToolCallError(Exception):
    """A binding call failed: ``toolName`` names the tool, ``message`` says why."""

    def __init__(self, toolName: str, message: str) -> None:  # noqa: N803 (the contract's name)
        super().__init__(message)
        self.toolName = toolName
        self.message = message

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.toolName, self.message))


class _Channel:
    """The program's end of the protocol: numbered calls out, results in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.bindings = _BINDINGS
        self.pending: dict[int, tuple[str, asyncio.Future[object]]] = {}
        self.next_id = 0
        self.log_room = 0
        self.log_closed = False
        self.buffer = bytearray()

    def open(self, names: list[str], max_log_bytes: int, rest: bytes) -> None:
        """Bind the run's tools and start reading answers (``rest``: what came after the init frame).

        Fd 3 stays blocking: the loop reads it once it reports readable, and
        ``_ProgramSelector`` reads it directly when the loop would only wait for it.
        """
        self.bindings.update((name, _Binding(self, name)) for name in names)
        self.log_room = max_log_bytes
        self.loop.add_reader(_FD_IN, self.read_answers)
        if rest:
            self.loop.call_soon(self.take_answers, rest)

    def send(self, frame: str) -> None:
        _write_all(_FD_OUT, frame.encode("ascii") + b"\n")

    def call(self, name: str, args: object) -> asyncio.Future[object]:
        future: asyncio.Future[object] = self.loop.create_future()
        try:
            if args is _MISSING:
                raise Lossy("missing")
            text = dump(args)
        except Lossy:
            future.set_exception(ToolCallError(name, _LOSSY_ARGS))
            return future
        self.next_id += 1
        self.pending[self.next_id] = (name, future)
        self.send('{"t":"call","id":%d,"tool":%s,"args":%s}' % (self.next_id, _ENCODE_STR(name), text))
        return future

    def log(self, text: str) -> None:
        if self.log_closed:
            return
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.log_room:
            text = text.encode("utf-8", "surrogatepass")[: self.log_room].decode("utf-8", "ignore")
            if text:
                self.send('{"t":"log","text":%s}' % _ENCODE_STR(text))
            self.send('{"t":"logcap"}')
            self.log_closed = True
            return
        self.log_room -= size
        self.send('{"t":"log","text":%s}' % _ENCODE_STR(text))

    async def drain(self) -> None:
        """Wait until every call made has its answer (a call whose future the program cancelled is not waited for)."""
        while True:
            waiting = [future for _, future in self.pending.values() if not future.done()]
            if not waiting:
                return
            await asyncio.wait(waiting)
            for future in waiting:  # nobody awaits them: their failures are not "never retrieved"
                if not future.cancelled():
                    future.exception()

    def read_answers(self) -> None:
        """Read what the host sent (one read: call it when fd 3 is readable, or to wait for an answer)."""
        chunk = os.read(_FD_IN, _READ_SIZE)
        if not chunk:
            self.loop.remove_reader(_FD_IN)
            return
        self.take_answers(chunk)

    def take_answers(self, chunk: bytes) -> None:
        """Settle the calls the complete frames in ``chunk`` (and what came before it) answer."""
        self.buffer += chunk
        while True:
            end = self.buffer.find(b"\n")
            if end < 0:
                return
            line = bytes(self.buffer[:end])
            del self.buffer[: end + 1]
            frame = load(line.decode("utf-8", "surrogatepass"))
            entry = self.pending.pop(frame["id"], None)  # type: ignore[index]
            if entry is None or entry[1].done():
                continue
            name, future = entry
            if frame["t"] == "ok":  # type: ignore[index]
                future.set_result(frame["value"])  # type: ignore[index]
            else:
                future.set_exception(ToolCallError(name, frame["message"]))  # type: ignore[index]


class _ProgramSelector(selectors.DefaultSelector):
    """The program loop's selector: while the loop has nothing to do but wait for a binding's
    answer, it reads the answer pipe directly (one blocking ``read``) instead of asking epoll
    first and reading after, so a binding call costs the child one ``write`` and one ``read``.

    Only when nothing else can wake the loop: no timer and no ready callback (``timeout`` is
    None), no descriptor registered but fd 3 and the loop's own wake-up pipe, and no second
    thread (whose ``call_soon_threadsafe`` would go unheard). A signal handler added with
    ``loop.add_signal_handler`` runs after the answer arrives.
    """

    channel: _Channel | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        channel = self.channel
        if (
            timeout is None
            and channel is not None
            and channel.pending
            and len(self.get_map()) == 2
            and _FD_IN in self.get_map()
            and threading.active_count() == 1
        ):
            channel.read_answers()
            return []
        events: list[tuple[selectors.SelectorKey, int]] = super().select(timeout)
        return events


class _Binding:
    __slots__ = ("_channel", "_name")

    def __init__(self, channel: _Channel, name: str) -> None:
        self._channel = channel
        self._name = name

    def __call__(self, *positional: object, **keywords: object) -> Coroutine[Any, Any, object]:
        # The call is submitted now (a call the program never awaits still runs); what the program
        # holds is a coroutine, as from any ``async def``, so every asyncio idiom takes it:
        # ``await``, ``gather``, ``create_task``, ``ensure_future``, ``TaskGroup``, ``wait_for``.
        if len(positional) > 1 or keywords:
            raise TypeError(_call_shape(self._name, len(positional), keywords))
        return _answer(self._channel.call(self._name, positional[0] if positional else _MISSING))

    def __repr__(self) -> str:
        return f"<tool {self._name!r}>"


def _call_shape(name: str, count: int, keywords: dict[str, object]) -> str:
    """Why a binding call with keyword or extra arguments fails (``MontyRuntime``'s prelude words it the same)."""
    if keywords:
        keys = ", ".join([repr(key) + ": ..." for key in keywords])
        return "a tool takes one arguments dict, not keyword arguments: call tools[" + repr(name) + "]({" + keys + "})"
    return "a tool takes one arguments dict, not " + str(count) + " positional arguments"


async def _answer(future: asyncio.Future[object]) -> object:
    """The result of a submitted binding call."""
    return await future


class _Tools:
    """The tool bindings: ``await tools.name(args)`` or ``await tools["name"](args)``."""

    __slots__ = ()

    def __getattr__(self, name: str) -> _Binding:
        try:
            return _BINDINGS[name]
        except KeyError:
            raise AttributeError(f"no tool named {name!r}") from None

    def __getitem__(self, name: str) -> _Binding:
        try:
            return _BINDINGS[name]
        except (KeyError, TypeError):
            raise KeyError(name) from None

    def __contains__(self, name: object) -> bool:
        return name in _BINDINGS

    def __dir__(self) -> list[str]:
        return sorted(_BINDINGS)

    def __repr__(self) -> str:
        return f"<tools: {', '.join(sorted(_BINDINGS))}>"


def _program_print(
    *values: object, sep: str | None = " ", end: str | None = "\n", file: object = None, flush: bool = False
) -> None:
    # Printing to sys.stdout or sys.stderr is output for the model too (as on MontyRuntime); another file is a file.
    if (file is not None and file is not sys.stdout and file is not sys.stderr) or not _LOGS:
        builtins.print(*values, sep=sep, end=end, file=file, flush=flush)  # type: ignore[call-overload]
        return
    _LOGS[0].log((" " if sep is None else sep).join(map(str, values)))


# One process runs one program, so its bindings, its ``tools`` and its copy of the builtins
# (``print`` replaced, so the program's globals hold exactly the two bindings) are made once,
# at import: in the zygote, shared by every child, which only fills ``_BINDINGS`` and ``_LOGS``.
_BINDINGS: dict[str, _Binding] = {}
_LOGS: list[_Channel] = []  # the channel ``print`` writes to, once the program process has one
_TOOLS = _Tools()
_PROGRAM_BUILTINS = dict(builtins.__dict__, print=_program_print)
# A binding call the program never awaits has run all the same (it was submitted when made): the
# warning Python prints for its unawaited coroutine would only be noise in a dead run's last output.
warnings.filterwarnings("ignore", "coroutine '_answer' was never awaited", RuntimeWarning)


class _AwaitAsyncioRun(ast.NodeTransformer):
    """``asyncio.run(main())`` at the program's top level means ``await main()``: the program already
    runs in an event loop, where ``asyncio.run`` can only fail (``MontyRuntime`` runs it as written).
    Function and class bodies are left alone: they may run in a thread of the program's."""

    def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802 (NodeTransformer's naming)
        self.generic_visit(node)
        function = node.func
        if (
            isinstance(function, ast.Attribute)
            and function.attr == "run"
            and isinstance(function.value, ast.Name)
            and function.value.id == "asyncio"
            and len(node.args) == 1
            and not node.keywords
            and not isinstance(node.args[0], ast.Starred)
        ):
            return ast.copy_location(ast.Await(value=node.args[0]), node)
        return node

    def _leave(self, node: ast.AST) -> ast.AST:
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _leave  # noqa: N815


def _compile_program(code: str) -> Any:
    module = _AwaitAsyncioRun().visit(ast.parse(code, filename="<program>", mode="exec"))
    function = ast.AsyncFunctionDef(
        name="__program__",
        args=ast.arguments(
            posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
        ),
        body=module.body or [ast.Pass()],
        decorator_list=[],
        returns=None,
    )
    if hasattr(ast, "TypeVar"):  # Python 3.12+ nodes carry type parameters
        setattr(function, "type_params", [])  # noqa: B010 (3.11's stubs have no such field)
    ast.copy_location(function, module.body[0]) if module.body else None
    wrapper = ast.Module(body=[function], type_ignores=[])
    ast.fix_missing_locations(wrapper)
    return compile(wrapper, "<program>", "exec", dont_inherit=True)


def _error_frame(error: BaseException) -> str:
    """The ``error`` frame for an exception the program did not catch: the facts, which the host words.

    ``line`` is the deepest line of the program itself in the traceback; ``tool`` the tool a
    ``ToolCallError`` names.
    """
    try:
        text = str(error)
        if type(text) is not str:
            raise TypeError
    except Exception:
        text = "<unprintable exception>"
    line = None
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == "<program>":
            line = trace.tb_lineno
        trace = trace.tb_next
    tool = getattr(error, "toolName", None) if isinstance(error, ToolCallError) else None
    return '{"t":"error","type":%s,"text":%s,"line":%s,"tool":%s}' % (
        _ENCODE_STR(type(error).__name__),
        _ENCODE_STR(text),
        "null" if line is None else int.__repr__(line),
        _ENCODE_STR(tool) if type(tool) is str else "null",
    )


def _apply_limits(limits: dict[str, object]) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu = limits.get("cpu_seconds")
    if type(cpu) is int:
        used = resource.getrusage(resource.RUSAGE_SELF)
        spent = int(used.ru_utime + used.ru_stime)
        resource.setrlimit(resource.RLIMIT_CPU, (spent + cpu, spent + cpu + 1))
    memory = limits.get("memory_bytes")
    if type(memory) is int:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    processes = limits.get("max_processes")
    if type(processes) is int:
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))


def run_program(workdir: str | None) -> None:
    """The program process: set up before its run is known, then init frame in, frames out, ``os._exit``.

    Everything that does not depend on the run (the event loop, the bindings'
    class, the program's builtins, for a fork server's spare its ``workdir``
    too) is made before the init frame is read, so a spare has it ready when
    its run arrives.
    """
    ahead = workdir is not None
    unconfined: OSError | None = None
    if workdir is not None:
        try:
            _enter(workdir)
        except OSError as error:  # reported when the run arrives
            unconfined = error
    selector = _ProgramSelector()
    loop = asyncio.SelectorEventLoop(selector)
    asyncio.set_event_loop(loop)
    channel = _Channel(loop)
    selector.channel = channel

    _LOGS.append(channel)
    namespace: dict[str, object] = {
        "__name__": "__program__",
        "__builtins__": _PROGRAM_BUILTINS,
        "tools": _TOOLS,
        "ToolCallError": ToolCallError,
    }
    if ahead:
        # The first compile and the first turn of the loop in a fresh fork are mostly
        # copy-on-write faults; a spare takes them now, while no run waits for it.
        warm: dict[str, object] = {"__builtins__": builtins}
        exec(_compile_program("return None"), warm)  # noqa: S102 (a fixed program of ours)
        loop.run_until_complete(warm["__program__"]())  # type: ignore[operator]
    init = b""
    while not init.endswith(b"\n"):
        chunk = os.read(_FD_IN, _READ_SIZE)
        if not chunk:
            os._exit(70)
        init += chunk
    head, _, rest = init.partition(b"\n")
    config = load(head.decode("utf-8", "surrogatepass"))
    code: str = config["code"]  # type: ignore[index]
    limits: dict[str, object] = config["limits"]  # type: ignore[index]
    cwd = limits.get("cwd")
    try:
        if unconfined is not None:
            raise unconfined
        if type(cwd) is str:
            _enter(cwd)
        _apply_limits(limits)
        if limits.get("network") is False:
            _isolate_network()
    except (OSError, ValueError) as error:
        message = f"the run could not be confined: {error}"
        _write_all(_FD_OUT, ('{"t":"fail","kind":"exception","message":%s}\n' % _ENCODE_STR(message)).encode("ascii"))
        os._exit(0)
    channel.open(config["tools"], int(limits["max_log_bytes"]), rest)  # type: ignore[index, call-overload]
    try:
        exec(_compile_program(code), namespace)  # noqa: S102 (running the program is the job)
        value = loop.run_until_complete(namespace["__program__"]())  # type: ignore[operator]
    except BaseException as error:  # the program's failure, whatever it is
        if isinstance(error, SystemExit) and not error.code:
            value = None
        else:
            _complete(_error_frame(error))
    # A call the program made and never awaited still runs to its end: the run completes once every
    # binding call it made has settled (within the run's budgets), not while one is still queued.
    loop.run_until_complete(channel.drain())
    if value is None:
        _complete('{"t":"done"}')
    try:
        text = dump(value)
    except Lossy:
        path, reason = offence(value)
        _complete('{"t":"fail","kind":"invalid-output","path":%s,"reason":%s}' % (dump(path), _ENCODE_STR(reason)))
    if len(text) > int(limits["max_output_bytes"]) * 6 + 64:  # type: ignore[call-overload]
        _complete('{"t":"fail","kind":"output-limit"}')  # ASCII escapes at most 6x the UTF-8 size
    _complete('{"t":"done","result":' + text + "}")


def _enter(workdir: str) -> None:
    """Make ``workdir`` the program's working, home and temporary directory."""
    os.chdir(workdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir


def _complete(frame: str) -> NoReturn:
    """Send the completion frame, close the frame stream (the host's end of file) and exit."""
    _write_all(_FD_OUT, frame.encode("ascii") + b"\n")
    os.close(_FD_OUT)  # now, not after the exit has torn the address space down
    os._exit(0)


def _isolate_network() -> None:
    """New user and network namespaces: no interface but a down loopback (best effort, Linux)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    clone_newuser, clone_newnet = 0x10000000, 0x40000000
    flags = clone_newnet if os.geteuid() == 0 else clone_newuser | clone_newnet
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET) failed")


# --- the keeper duty: fork, kill the run's group and session, reap everything -------------------


def _become_subreaper() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _children() -> list[int]:
    """Our direct children (read with bare system calls: this runs after every run's exit)."""
    try:
        fd = os.open(f"/proc/self/task/{os.getpid()}/children", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        data = b""
        while chunk := os.read(fd, 1 << 16):
            data += chunk
    except OSError:
        return []
    finally:
        os.close(fd)
    return [int(pid) for pid in data.split()]


def _reap_strays(live: Collection[int]) -> None:
    """Reap every exited child that is not the leader of a live run."""
    for pid in _children():
        if pid not in live:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _has_exited(pid: int) -> bool:
    """Whether the child ``pid`` has exited, without reaping it (its group id stays reserved)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_run(pid: int) -> None:
    """Kill the run's process group while its leader ``pid`` is still unreaped (so neither id can
    have been reused). Before the leader's ``setsid`` there is no such group yet, and nothing in it
    but the leader: then the leader alone is killed."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    except PermissionError:
        pass


def _collect(pid: int) -> str:
    """Kill the run's group while its leader is still unreaped, then reap the leader."""
    _kill_run(pid)
    _found, status, usage = os.wait4(pid, 0)
    return _status_text(status, usage.ru_utime + usage.ru_stime)


def _status_text(status: int, cpu: float) -> str:
    if os.WIFSIGNALED(status):
        return '{"signal":%d,"cpu":%s}' % (os.WTERMSIG(status), float.__repr__(cpu))
    return '{"code":%d,"cpu":%s}' % (os.waitstatus_to_exitcode(status), float.__repr__(cpu))


def _sweep(group: int, live_sessions: Collection[int], deadline_s: float = 2.0) -> None:
    """Kill ``group`` and every orphan of ours outside a live run; reap until it is gone."""
    stop = time.monotonic() + deadline_s
    while True:
        empty = False
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            empty = True
        strays = False
        for pid in _children():
            if pid in live_sessions:
                continue  # a live run's leader (perhaps not yet in its own session)
            try:
                session = os.getsid(pid)
            except ProcessLookupError:
                session = -1  # already a zombie: reaped below
            if session in live_sessions:
                continue  # an orphan of a run still going: that run's end sweeps it
            strays = True
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, os.WNOHANG)
            except (ProcessLookupError, ChildProcessError):
                pass
        if (empty and not strays) or time.monotonic() >= stop:
            return
        time.sleep(0.0005)


def _fork_program(fds: tuple[int, int, int], closing: tuple[int, ...], workdir: str | None) -> int:
    """Fork the program process onto fds 3 (in), 4 (out) and 1/2 (raw output).

    ``workdir``: a fork server's spare, forked before its run is known, in the
    working directory the zygote made for it; ``None``: the keeper's child, told
    its directory by the init frame.
    """
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        for fd in closing:
            os.close(fd)
        frames_in, frames_out, raw = fds
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(raw, 1)
        os.dup2(raw, 2)
        os.dup2(frames_in, _FD_IN)
        os.dup2(frames_out, _FD_OUT)
        os.closerange(_FD_OUT + 1, 1 << 16)
        # The C functions under ``signal``'s wrappers: the wrappers convert every old handler
        # and mask to enums, Python code whose first run in a fresh fork is page faults.
        _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
        _signal.signal(_signal.SIGHUP, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
        _signal.set_wakeup_fd(-1)
        # ``sys.stdout`` and ``sys.stderr`` are kept: they write to fds 1 and 2, now the raw pipe
        # (the zygote and the keeper never write to them, so nothing of theirs is buffered there).
        run_program(workdir)
    finally:
        os._exit(71)


class _Stop(Exception):
    pass


def _stop_once() -> Callable[[int, object], None]:
    """A handler for stop signals: the first one interrupts the keeper's wait; the rest are no-ops
    (a second one must not cut its clean-up short)."""
    stopping: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if not stopping:
            stopping.append(signum)
            raise _Stop

    return stop


def keeper() -> None:
    """One run (plain-spawn strategy): fds 3/4/1 are the program's, fd 5 reports its exit."""
    _become_subreaper()
    signal.signal(signal.SIGTERM, _stop_once())
    # A stop request arriving around the fork waits until the program's pid is known.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    pid = _fork_program((_FD_IN, _FD_OUT, 1), (), None)
    for fd in (_FD_IN, _FD_OUT, 0, 1, 2):
        os.close(fd)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except _Stop:
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    report = _collect(pid)
    _sweep(pid, set())
    _write_all(_FD_STATUS, report.encode("ascii") + b"\n")
    os._exit(0)


def _warm_up(rounds: int = 10) -> None:
    """Run a child's own code paths here a few times, on a fixed program of ours, before any fork.

    CPython 3.11+ rewrites a function's bytecode in place (specializes it) over its first
    calls; done here, the children share those pages instead of each writing its own copy.
    """
    for _ in range(rounds):
        selector = _ProgramSelector()
        loop = asyncio.SelectorEventLoop(selector)
        channel = _Channel(loop)
        selector.channel = channel
        namespace: dict[str, object] = {"__builtins__": _PROGRAM_BUILTINS, "tools": _TOOLS}
        exec(_compile_program("return [1, 'a', {'b': None}]"), namespace)  # noqa: S102 (a fixed program of ours)
        value = loop.run_until_complete(namespace["__program__"]())  # type: ignore[operator]
        load(dump(value))
        loop.close()


def _make_workdir(parent: str) -> str:
    """A new private directory under ``parent`` for one run (a fresh random name; never an existing one)."""
    for _ in range(100):
        path = os.path.join(parent, "dsh-run-" + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free run directory name under {parent}")


def _remove_workdir(path: str) -> bool:
    """Remove a run's directory if it is empty (the common case); False if the program left something in it."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def _remove_tree(path: str) -> None:
    if not _remove_workdir(path):
        import shutil  # only for a program that left files behind

        shutil.rmtree(path, ignore_errors=True)


def zygote(tmp: str) -> None:
    """The fork server: requests on the socket at fd 3; never runs user code itself.

    Each child's working directory is made here, under ``tmp``, before the
    child is forked (so neither the host nor the run waits for a ``mkdir``), and
    removed here once the child and its group are reaped: when the zygote has
    nothing else to do, and at the latest before it exits.
    """
    _become_subreaper()
    asyncio.get_event_loop_policy()  # made once here, not in every child's ``set_event_loop``
    _warm_up()
    gc.freeze()  # what the zygote imported stays shared with its children (no copy-on-write by the collector)
    control = socket.socket(fileno=_FD_IN)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    live: dict[int, str] = {}  # a live run's leader -> its working directory
    removals: list[str] = []  # working directories of reaped runs, not removed yet
    handed: list[str] = []  # non-empty ones left to the host, removed here again on the way out (if a reply was lost)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)

    def reply(text: str, fds: tuple[int, ...] = ()) -> bool:
        try:
            socket.send_fds(control, [text.encode("ascii")], fds)
        except OSError:
            return False  # the host is gone: the socket's end of file, read next, stops everything
        return True

    def spare(request_id: int) -> None:
        """Fork a child for a future run on three new pipes, and hand the host its ends of them."""
        pipes: list[int] = []
        workdir = None
        try:
            workdir = _make_workdir(tmp)
            for _ in range(3):
                pipes.extend(os.pipe())
            frames_in, host_in, host_out, frames_out, host_raw, raw = pipes
            pid = _fork_program(
                (frames_in, frames_out, raw), (control.fileno(), wake_r, wake_w, host_in, host_out, host_raw), workdir
            )
        except OSError as error:  # EMFILE, EAGAIN and friends: this request fails, the server stays
            if workdir is not None:
                _remove_workdir(workdir)
            reply('{"op":"failed","id":%d,"message":%s}' % (request_id, _ENCODE_STR(str(error))))
        else:
            live[pid] = workdir
            # The host's ends are non-blocking for the host's loop (a flag of the host's side of each pipe only).
            for fd in (host_in, host_out, host_raw):
                os.set_blocking(fd, False)
            # A pidfd of the child too (opened before it can be reaped, so it is this child's): if a
            # program kills this zygote, the host can still stop the child and see it exit.
            handed = [host_in, host_out, host_raw]
            try:
                handed.append(os.pidfd_open(pid))
                pipes.append(handed[-1])  # closed here after sending, like the pipes
            except (OSError, AttributeError):
                pass
            reply('{"op":"forked","id":%d,"pid":%d,"cwd":%s}' % (request_id, pid, _ENCODE_STR(workdir)), tuple(handed))
        finally:
            for fd in pipes:
                os.close(fd)

    def finish(pid: int) -> str:
        report = _collect(pid)
        removals.append(live.pop(pid))
        _sweep(pid, live)
        return report

    while True:
        events = selector.select(0 if removals else None)
        if removals and (not events or len(removals) > 64):  # idle (or far behind): one removal
            workdir = removals.pop()
            # A tree the program left behind could take long: the host removes it in a worker thread.
            if not _remove_workdir(workdir):
                handed.append(workdir)
                reply('{"op":"leftover","cwd":%s}' % _ENCODE_STR(workdir))
            continue
        for key, _events in events:
            if key.fileobj is wake_r:
                os.read(wake_r, 4096)
                for pid in [pid for pid in live if _has_exited(pid)]:
                    reply('{"op":"exit","pid":%d,"status":%s}' % (pid, finish(pid)))
                _reap_strays(live)
                continue
            try:
                message, fds, _flags, _addr = socket.recv_fds(control, 1 << 16, 3)
            except InterruptedError:
                continue
            except OSError:  # ECONNRESET: the host closed its end with replies unread; the same as EOF
                message, fds = b"", []
            if not message:
                for pid in list(live):
                    finish(pid)
                for workdir in removals + handed:
                    _remove_tree(workdir)
                # The directory the host made for this zygote's runs goes too: a host that exits without
                # closing its runtime (the socket's end of file is then all it says) cannot remove it.
                _remove_workdir(tmp)
                os._exit(0)
            for fd in fds:  # no request carries descriptors
                os.close(fd)
            request = json.loads(message)
            if request["op"] == "fork":
                spare(request["id"])
            elif request["op"] == "kill" and request["pid"] in live:
                try:
                    os.killpg(request["pid"], signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _exit_code(status: int, out_of_cpu: bool) -> int:
    """The stdio keeper's exit code for the program's wait ``status``: its own code, or ``128 + N``
    for a signal N, as a shell reports it (``docker exec``, ``kubectl exec`` and ``ssh`` pass it
    on). A ``SIGKILL`` once its CPU time reached its limit (a program that ignored ``SIGXCPU`` is
    killed at the hard limit) is reported as ``SIGXCPU``, the signal that says so."""
    if not os.WIFSIGNALED(status):
        return os.waitstatus_to_exitcode(status) & 0xFF
    signum = os.WTERMSIG(status)
    if signum == signal.SIGKILL and out_of_cpu:
        signum = signal.SIGXCPU
    return 128 + signum


def _cpu_budget(pid: int) -> float:
    """The CPU seconds the child ``pid`` (unreaped) could use before ``SIGXCPU``: its hard limit, which
    ``_apply_limits`` sets a second past the budget, less that second (the soft limit itself moves up a
    second with each ``SIGXCPU`` the kernel sends a program that ignores it); ``inf`` without a limit."""
    try:
        _soft, hard = resource.prlimit(pid, resource.RLIMIT_CPU)
    except (OSError, AttributeError):
        return math.inf
    return math.inf if hard == resource.RLIM_INFINITY else float(hard - 1)


def stdio() -> None:
    """One run over stdin (frames in), stdout (frames out) and stderr (raw output); the exit code reports.

    The program is forked onto the usual layout (fd 3 the frames in, fd 4 the
    frames out, fds 1 and 2 this process's stderr) in a fresh working directory
    under the temporary directory. This process keeps stdin only to watch for
    its end, never reading it: when the host closes it (or the transport that
    carries it goes away), or on ``SIGTERM`` or ``SIGHUP``, the program's
    process group is killed. However the program ended, everything it left is
    then killed and reaped, the directory removed, and this process exits with
    the program's status (see ``_exit_code``).
    """
    _become_subreaper()
    try:
        workdir = _make_workdir(tempfile.gettempdir())
    except OSError as error:
        message = f"the run could not be confined: no working directory: {error}"
        _write_all(1, ('{"t":"fail","kind":"exception","message":%s}\n' % _ENCODE_STR(message)).encode("ascii"))
        os._exit(0)
    os.dup2(0, _FD_IN)
    os.dup2(1, _FD_OUT)
    os.dup2(2, 1)  # this process's own stray writes go where the program's raw output goes
    wake_r, wake_w = os.pipe()  # after the fds above, which it must not take
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    stop = _stop_once()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    # A stop request arriving around the fork waits until the program's pid is known.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP})
    pid = _fork_program((_FD_IN, _FD_OUT, 1), (wake_r, wake_w), workdir)
    os.close(_FD_IN)
    os.close(_FD_OUT)  # the program holds the frame stream alone: its close is the host's end of file
    watch = select.poll()
    # Watched, never read (the program reads it): the end of stdin shows as a hang-up on a pipe, and
    # as a read hang-up on a socket (POLLRDHUP, where the platform has it).
    watch.register(0, getattr(select, "POLLRDHUP", 0))
    watch.register(wake_r, select.POLLIN)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGHUP})
        while not _has_exited(pid):
            if any(fd == 0 for fd, _events in watch.poll()):
                break
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
    except _Stop:
        pass
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    _kill_run(pid)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    cpu_budget = _cpu_budget(pid)
    _found, status, usage = os.wait4(pid, 0)
    _sweep(pid, set())
    _remove_tree(workdir)
    os._exit(_exit_code(status, usage.ru_utime + usage.ru_stime >= cpu_budget))


if __name__ == "__main__":
    # ``zygote TMP SITE...``, ``keeper SITE...`` or ``stdio``: SITE the site-packages, added without running
    # site's .pth hooks.
    role = sys.argv[1] if len(sys.argv) > 1 else ""
    if role == "zygote" and len(sys.argv) > 2:
        sys.path.extend(sys.argv[3:])
        zygote(sys.argv[2])
    elif role == "keeper":
        sys.path.extend(sys.argv[2:])
        keeper()
    elif role == "stdio":
        stdio()
    else:
        sys.exit("usage: _child.py zygote TMP [SITE...] | keeper [SITE...] | stdio")
