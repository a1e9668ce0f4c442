"""What the model reads of a run, made in one place for every runtime.

A runtime reports facts (the program raised ``KeyError`` on line 3; its
returned value holds a ``datetime`` at ``result.when``; it printed this line);
the functions here turn them into the text the model gets, so the same program
reads the same way on ``PythonSubprocessRuntime``, ``MontyRuntime`` and any
runtime written against ``docs/codemode.md``:

- :func:`program_error_text`: an exception the program did not catch;
- :func:`completion_error_text`: a returned value that is not lossless JSON
  (the path and the reason ``snapshot_json`` gives);
- :class:`LogSink`: the program's ``print`` lines, counted and capped at
  ``max_log_bytes`` behind one marker line.
"""

from __future__ import annotations

import keyword
from typing import Final

from dsh_codegen.json import LosslessJsonError, dump_canonical_json

__all__ = [
    "INVALID_COMPLETION",
    "LOG_MARKER",
    "LogSink",
    "completion_error_text",
    "program_error_text",
    "tool_expression",
]

#: The start of every ``invalid-output`` failure for a returned value that is not lossless JSON.
INVALID_COMPLETION: Final = "program completion must be lossless JSON"
#: The line that replaces everything the program printed past ``max_log_bytes``.
LOG_MARKER: Final = "[output truncated: the program printed more than {} bytes]"
#: How ``snapshot_json`` roots its paths; a completion's path is rooted at ``result`` instead.
_SNAPSHOT_ROOT: Final = "value"


def completion_error_text(error: LosslessJsonError) -> str:
    """The ``invalid-output`` message for a returned value ``snapshot_json`` rejected with ``error``.

    ``program completion must be lossless JSON: result.when: type datetime is
    not a JSON type``: the path (rooted at ``result``, the value the program
    returned) and the reason, as ``snapshot_json`` words them.
    """
    path = error.path_text
    if path.startswith(_SNAPSHOT_ROOT):
        path = "result" + path[len(_SNAPSHOT_ROOT) :]
    return f"{INVALID_COMPLETION}: {path}: {error.reason}"


def tool_expression(name: str) -> str:
    """How a program names the binding of ``name``: ``tools.read_file``, or ``tools["my-tool"]``."""
    if name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("__"):
        return f"tools.{name}"
    return f"tools[{dump_canonical_json(name)}]"


def program_error_text(type_name: str, text: str, line: int | None, tool_name: str | None = None) -> str:
    """The ``exception`` message for an exception the program did not catch.

    ``KeyError: 'x' (line 3)``: the exception's class name, its text (omitted
    when empty) and the program's line where it was raised (the deepest frame
    of the program itself), when known. A ``ToolCallError`` (``tool_name``
    given) also names the call that failed: ``ToolCallError: tools.read_file
    failed: no such file (line 2)``.
    """
    if tool_name is not None:
        text = f"{tool_expression(tool_name)} failed: {text}" if text else f"{tool_expression(tool_name)} failed"
    where = f" (line {line})" if line is not None else ""
    return f"{type_name}: {text}{where}" if text else f"{type_name}{where}"


class LogSink:
    """The program's ``print`` output: one entry per ``print`` call, capped at ``max_bytes``.

    Every runtime counts the same way: the UTF-8 bytes of each entry (the
    separators between entries are not counted). The entry that crosses the cap
    is cut at a character boundary, then one :data:`LOG_MARKER` line closes the
    logs and later entries are dropped.
    """

    __slots__ = ("closed", "entries", "max_bytes", "used")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self.entries: list[str] = []
        self.closed = False

    def add(self, entry: str) -> None:
        """Keep one printed entry (or the part of it that fits, then the marker)."""
        if self.closed:
            return
        data = entry.encode("utf-8", "surrogatepass")
        room = self.max_bytes - self.used
        if len(data) > room:
            cut = data[:room].decode("utf-8", "ignore")
            if cut:
                self.entries.append(cut)
            self.close()
            return
        self.used += len(data)
        self.entries.append(entry)

    def close(self) -> None:
        """Drop everything printed from now on, behind the marker line (once)."""
        if not self.closed:
            self.closed = True
            self.entries.append(LOG_MARKER.format(self.max_bytes))

    def lines(self) -> tuple[str, ...]:
        """The entries kept so far, the marker line last if the cap was reached."""
        return tuple(self.entries)
