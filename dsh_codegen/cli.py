"""The ``dsh-codegen`` command (layer 7); also ``python -m dsh_codegen``.

Exit codes: 0 success; 1 a check failed (stale file, unsupported schema,
invalid data); 2 bad usage or unreadable input (argparse's own code for usage
errors); 141 stdout was closed early (``dsh-codegen demo | head``), the code
a program killed by ``SIGPIPE`` reports in a shell. Errors go to stderr and
name the file and, where there is one, the JSON path.

``sdk`` and ``catalog`` say on stderr what they wrote (``dsh-codegen: wrote
tools_sdk.py (5,000 tools)``) and, when stderr is a terminal and the work
lasts, show a one-line status while they work; ``-q`` silences both.

Every JSON input (catalog, schema, data; a file or stdin) is read as bytes,
decoded as strict UTF-8 and parsed by the library's stack-safe ``parse_json``,
so any nesting depth parses (docs/cli.md, "Limits").
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TextIO

__all__ = ["main"]

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
#: 128 + SIGPIPE: what a shell reports for a program killed by a closed pipe.
EXIT_BROKEN_PIPE = 141

_EPILOG = """\
exit codes:
  0  success
  1  a check failed: --check found OUT stale (a unified diff is printed),
     check-schema found an unsupported schema, validate found violations,
     sdk/catalog met a schema the registry would refuse, sdk --strict met a
     type that degrades to unknown / Any
  2  bad usage or unreadable input (missing file, invalid JSON, bad catalog,
     --registry that cannot be imported)
  141  stdout was closed before the output was written (e.g. | head)
"""


class _InputError(Exception):
    """An input problem already phrased for the user (``<file>: <what>``)."""


# How long a run works before the status line appears, and how often it is redrawn. Module
# constants so a test can run the real command on a terminal without racing the delay.
_STATUS_DELAY_S = 0.5
_STATUS_PERIOD_S = 0.1


class _Status:
    """What ``sdk`` and ``catalog`` say on stderr besides errors: the closing ``wrote`` line and,
    on a terminal, a one-line status that a thread redraws while a long run works.

    The status appears only after ``delay_s`` (a quick run shows none), says the current stage and
    the seconds so far, and is erased before any other line is written and when the run ends. The
    work itself never waits for it: a thread, because the stages are single calls into the code
    generator with no place to report from. ``quiet`` silences everything but errors and warnings.
    """

    def __init__(
        self, stream: TextIO, *, quiet: bool, delay_s: float | None = None, period_s: float | None = None
    ) -> None:
        self._stream = stream
        self._quiet = quiet
        self._live = not quiet and _is_terminal(stream)
        self._delay_s = _STATUS_DELAY_S if delay_s is None else delay_s
        self._period_s = _STATUS_PERIOD_S if period_s is None else period_s
        self._stage = ""
        self._shown = False
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = time.monotonic()

    def __enter__(self) -> _Status:
        if self._live:
            self._thread = threading.Thread(target=self._redraw, name="dsh-codegen-status", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self._erase()

    def stage(self, text: str) -> None:
        """Name what the run does now (shown on the status line)."""
        self._stage = text

    def say(self, line: str) -> None:
        """Write ``line`` (a warning, an error) on its own line, the status line erased first."""
        with self._lock:
            self._erase()
            print(line, file=self._stream)

    def done(self, line: str) -> None:
        """The closing line (``wrote ...``), unless quiet; the status line is not drawn again."""
        self._stopped.set()
        if not self._quiet:
            self.say(line)

    def _erase(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False

    def _redraw(self) -> None:
        pause = self._delay_s
        while not self._stopped.wait(pause):
            pause = self._period_s
            with self._lock:
                if self._stage and not self._stopped.is_set():
                    elapsed = time.monotonic() - self._started
                    self._stream.write(f"\r\x1b[Kdsh-codegen: {self._stage} ({elapsed:.1f}s)")
                    self._stream.flush()
                    self._shown = True


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # an embedding program's stream, or a closed one
        return False


def _tools(count: int) -> str:
    return f"{count:,} tool" + ("" if count == 1 else "s")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dsh-codegen",
        description="dsh_codegen command-line tools: SDK files, tool catalogs, schema checks.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=version_text(), help="print the version, the backend and the Python"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("demo", help="run the main demonstration job")

    def add_source(sub: argparse.ArgumentParser) -> None:
        source = sub.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--catalog", metavar="FILE.json", help="a JSON list of {name, description, parameters, output_schema}"
        )
        source.add_argument(
            "--registry",
            metavar="MODULE:ATTR",
            help="an object with a .catalog() method (a ToolRegistry) or a list of ToolSchemaEntry",
        )
        source.add_argument("--mcp", metavar="'COMMAND ARGS...'", help="the tools of an MCP server started over stdio")
        sub.add_argument(
            "--mcp-timeout",
            type=_positive_seconds,
            default=30.0,
            metavar="SECONDS",
            help="with --mcp: how long the server may take to start and list its tools (default: 30)",
        )
        sub.add_argument(
            "--format",
            choices=("auto", "catalog", "mcp", "openai", "anthropic"),
            default="auto",
            help="what --catalog holds: ours, an MCP tools/list result, an OpenAI or an Anthropic tools list (default: detected)",
        )
        sub.add_argument("-o", "--output", metavar="OUT", help="write here (atomically) instead of stdout")
        sub.add_argument(
            "--check",
            action="store_true",
            help="do not write; exit 1 and print a unified diff when OUT is missing or stale",
        )
        sub.add_argument(
            "-q",
            "--quiet",
            action="store_true",
            help="say nothing on success (no 'wrote OUT' line, no status line on a terminal)",
        )

    sdk = commands.add_parser(
        "sdk",
        help="write a typed SDK file (TypeScript or Python) for a tool catalog",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sdk.add_argument(
        "--lang", required=True, choices=("ts", "py"), help="ts: TypeScript declarations; py: Python TypedDicts"
    )
    sdk.add_argument(
        "--strict",
        action="store_true",
        help="exit 1, naming each node, when a type degrades to unknown / Any (default: a warning on stderr)",
    )
    add_source(sdk)
    catalog = commands.add_parser(
        "catalog",
        help="write a Markdown tool catalog",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_source(catalog)
    check = commands.add_parser(
        "check-schema",
        help="check that a JSON schema file is inside the supported subset",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("file", metavar="FILE", help="a JSON file holding one schema")
    validate = commands.add_parser(
        "validate",
        help="validate a JSON data file against a schema file",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    validate.add_argument("--schema", required=True, metavar="FILE", help="a JSON file holding one schema")
    validate.add_argument("data", metavar="DATA", help="a JSON file holding the value ('-' reads stdin)")
    return parser


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return seconds


def version_text() -> str:
    """The ``--version`` line: the package version, the twin in use and the interpreter."""
    from dsh_codegen._backend import backend
    from dsh_codegen._version import __version__

    python = f"Python {sys.version.split()[0]} ({sys.implementation.name}, {sys.executable})"
    return f"dsh-codegen {__version__} (backend: {backend()}; {python})"


def _read_text(path: str, *, what: str = "") -> str:
    """The text of ``path`` (``-`` is stdin): the bytes decoded as strict UTF-8, the same for both.

    ``what`` words the read error (``"the catalog"`` for catalogs, whose texts say so).
    """
    name = "<stdin>" if path == "-" else path
    cannot = f"cannot read {what}: " if what else "cannot read: "
    try:
        if path != "-":
            data = Path(path).read_bytes()
        else:
            stream = sys.stdin
            if stream is None:
                raise _InputError(f"{name}: {cannot}stdin is closed")
            buffer = getattr(stream, "buffer", None)
            if buffer is None:
                # A text stream with no bytes under it (an embedding program's
                # replacement): its text was decoded by whoever made it.
                return str(stream.read())
            data = buffer.read()
    except OSError as error:
        raise _InputError(f"{name}: {cannot}{error.strerror or error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        prefix = f"{what} is not" if what else "not"
        raise _InputError(f"{name}: {prefix} UTF-8 text ({error.reason} at byte {error.start})") from None


def _parse(text: str, name: str) -> object:
    """``parse_json(text)`` (frozen, lossless, any depth), its errors phrased as ``name: invalid JSON ...``."""
    from json import JSONDecodeError

    from dsh_codegen.json import LosslessJsonError, parse_json

    try:
        return parse_json(text)
    except JSONDecodeError as error:
        raise _InputError(f"{name}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}") from None
    except LosslessJsonError as error:  # valid JSON, but a number Python cannot keep exactly (-0.0, 1e400)
        raise _InputError(f"{name}: {error}") from None
    except ValueError as error:  # an integer with more digits than the interpreter converts
        raise _InputError(f"{name}: invalid JSON: {error}") from None


def _read_json(path: str) -> object:
    """The JSON value in ``path`` (``-`` is stdin), frozen; input problems raise :class:`_InputError`."""
    return _parse(_read_text(path), "<stdin>" if path == "-" else path)


def _thaw(value: object) -> object:
    """A plain ``dict``/``list`` copy of a frozen JSON value, with an explicit stack (any depth).

    The code generator reads plain containers (it tests ``type(x) is dict``).
    """
    from dsh_codegen.json import FrozenJsonArray, FrozenJsonObject

    def fresh(node: object) -> object:
        if isinstance(node, FrozenJsonObject):
            return {}
        if isinstance(node, FrozenJsonArray):
            return []
        return node

    root = fresh(value)
    stack: list[tuple[object, object]] = [(value, root)] if root is not value else []
    while stack:
        source, target = stack.pop()
        if isinstance(target, dict):
            assert isinstance(source, dict)
            for key, child in source.items():
                copy = fresh(child)
                target[key] = copy
                if copy is not child:
                    stack.append((child, copy))
        else:
            assert isinstance(source, list) and isinstance(target, list)
            for child in source:
                copy = fresh(child)
                target.append(copy)
                if copy is not child:
                    stack.append((child, copy))
    return root


def _registry_catalog(spec: str) -> list[object]:
    from dsh_codegen.codegen import ToolSchemaEntry

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise _InputError(f"--registry {spec}: expected MODULE:ATTR (e.g. myapp.tools:registry)")
    # A console script does not put the working directory on sys.path; `python -m` does.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: object = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - any import failure is the user's input problem
        raise _InputError(f"--registry {spec}: cannot import {module_name}: {type(error).__name__}: {error}") from None
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise _InputError(f"--registry {spec}: {module_name} has no attribute {attr}") from None
    catalog_method = getattr(target, "catalog", None)
    if callable(catalog_method):
        try:
            target = catalog_method()
        except Exception as error:  # noqa: BLE001 - a failing .catalog() is reported, not a traceback
            raise _InputError(f"--registry {spec}: .catalog() failed: {type(error).__name__}: {error}") from None
    if isinstance(target, (list, tuple)) and all(isinstance(entry, ToolSchemaEntry) for entry in target):
        return list(target)
    raise _InputError(
        f"--registry {spec}: expected an object with a .catalog() method or a list of ToolSchemaEntry, "
        f"got {type(target).__name__}"
    )


def _adapted_source(args: argparse.Namespace) -> list[object] | None:
    """``--mcp``, or a ``--catalog`` in a foreign tool format (docs/adapters.md); ``None``: our own catalog."""
    # Each branch imports only what it needs: a plain --catalog run never loads asyncio or the MCP client.
    from dsh_codegen.adapters import detect_catalog_format, load_catalog_file
    from dsh_codegen.codegen import CatalogError

    try:
        if args.mcp is not None:
            import asyncio
            import shlex

            from dsh_codegen.adapters import catalog_from_mcp_command

            try:
                argv = shlex.split(args.mcp)
                return list(asyncio.run(catalog_from_mcp_command(argv, timeout=args.mcp_timeout)))
            except ImportError as error:  # the extra is missing: the message says which and how
                raise _InputError(str(error)) from None
        if args.catalog is None or args.format == "catalog":
            return None
        if args.format == "auto":
            try:
                kind = detect_catalog_format(_read_json(args.catalog))
            except (_InputError, ValueError):
                return None  # our own loader reports it with its texts
            if kind == "catalog":
                return None
        return list(load_catalog_file(Path(args.catalog), format=args.format))
    except CatalogError as error:
        raise _InputError(str(error)) from None


def _load_source(args: argparse.Namespace) -> list[object]:
    adapted = _adapted_source(args)
    if adapted is not None:
        return adapted
    from dsh_codegen.codegen import CatalogError, catalog_from_json

    if args.catalog is not None:
        # load_catalog's rules and texts, with the command's reading and stack-safe parsing.
        data = _thaw(_parse(_read_text(args.catalog, what="the catalog"), args.catalog))
        try:
            return list(catalog_from_json(data, source=args.catalog))
        except CatalogError as error:
            raise _InputError(str(error)) from None
    return _registry_catalog(args.registry)


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file in the same directory and a rename.

    A failure at any point leaves the previous file (or no file) in place.
    """
    directory = path.parent if str(path.parent) else Path(".")
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    import tempfile  # only a run that writes a file pays for it (shutil, random, bz2, lzma)

    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, path)
    except BaseException:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        raise


def _emit(args: argparse.Namespace, text: str, stdout: TextIO, status: _Status, count: int) -> int:
    """Write ``text`` (for ``count`` tools) to OUT or stdout, or compare it with OUT (``--check``)."""
    if args.output is None:
        if args.check:
            raise _InputError("--check needs -o/--output OUT (the file to compare)")
        stdout.write(text)  # the text is the report: nothing more is said
        return EXIT_OK
    out = Path(args.output)
    if args.check:
        try:
            # newline="" keeps the bytes as they are: a CRLF copy of the expected text is stale.
            with out.open(encoding="utf-8", newline="") as handle:
                current = handle.read()
        except FileNotFoundError:
            current = None
        except (OSError, UnicodeDecodeError) as error:
            raise _InputError(f"{out}: cannot read: {error}") from None
        if current == text:
            status.done(f"dsh-codegen: {out} is up to date ({_tools(count)})")
            return EXIT_OK
        import difflib

        diff = difflib.unified_diff(
            [] if current is None else current.splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"{out} (on disk)" if current is not None else "/dev/null",
            tofile=f"{out} (expected)",
        )
        stdout.writelines(line if line.endswith("\n") else line + "\n" for line in diff)
        status.say(f"dsh-codegen: {out} is {'missing' if current is None else 'stale'}; rerun without --check")
        return EXIT_CHECK_FAILED
    status.stage(f"writing {out}")
    try:
        _write_atomic(out, text)
    except OSError as error:
        raise _InputError(f"{out}: cannot write: {error.strerror or error}") from None
    status.done(f"dsh-codegen: wrote {out} ({_tools(count)})")
    return EXIT_OK


def _source_name(args: argparse.Namespace) -> str:
    """How messages name the source: the catalog file, ``--mcp <command>`` or ``--registry <spec>``."""
    if args.catalog is not None:
        return str(args.catalog)
    if getattr(args, "mcp", None) is not None:
        return f"--mcp {args.mcp}"
    return f"--registry {args.registry}"


def _unsupported_schemas(catalog: list[object], source: str, status: _Status) -> bool:
    """Print every schema the registry would refuse (as ``check-schema`` does: parameters
    must be object schemas); whether there was one."""
    from dsh_codegen.codegen import ToolSchemaEntry
    from dsh_codegen.schema import JsonSchemaError, assert_object_json_schema, assert_supported_json_schema

    failed = False
    for entry in catalog:
        if not isinstance(entry, ToolSchemaEntry):
            continue  # the renderer reports a catalog that is not made of entries
        checks = [("parameters", entry.parameters, assert_object_json_schema)]
        if entry.output_schema is not None:
            checks.append(("output_schema", entry.output_schema, assert_supported_json_schema))
        for document, schema, check in checks:
            try:
                check(schema)
            except JsonSchemaError as error:
                failed = True
                for violation in error.violations:
                    status.say(f'dsh-codegen: error: {source}: tool "{entry.name}" {document}: {violation}')
    return failed


def _cmd_sdk(args: argparse.Namespace, stdout: TextIO, status: _Status) -> int:
    from dsh_codegen.codegen import degraded_nodes, render_sdk_module

    status.stage("reading the tools")
    catalog = _load_source(args)
    source = _source_name(args)
    status.stage(f"checking {_tools(len(catalog))}")
    if _unsupported_schemas(catalog, source, status):
        return EXIT_CHECK_FAILED
    language = "typescript" if args.lang == "ts" else "python"
    status.stage(f"looking for types that degrade in {_tools(len(catalog))}")
    degraded = degraded_nodes(catalog, language)  # type: ignore[arg-type]
    level = "error" if args.strict else "warning"
    for node in degraded:
        status.say(f"dsh-codegen: {level}: {source}: {node}")
    if degraded and args.strict:
        status.say(f"dsh-codegen: {len(degraded)} degraded type(s); nothing written (--strict)")
        return EXIT_CHECK_FAILED
    status.stage(f"rendering the {'TypeScript' if args.lang == 'ts' else 'Python'} SDK of {_tools(len(catalog))}")
    try:
        text = render_sdk_module(catalog, language)  # type: ignore[arg-type]
    except ValueError as error:
        raise _InputError(f"{_source_name(args)}: {error}") from None
    return _emit(args, text, stdout, status, len(catalog))


def _cmd_catalog(args: argparse.Namespace, stdout: TextIO, status: _Status) -> int:
    from dsh_codegen.codegen import render_catalog_markdown

    status.stage("reading the tools")
    catalog = _load_source(args)
    status.stage(f"checking {_tools(len(catalog))}")
    if _unsupported_schemas(catalog, _source_name(args), status):
        return EXIT_CHECK_FAILED
    status.stage(f"rendering the catalog of {_tools(len(catalog))}")
    text = render_catalog_markdown(catalog)  # type: ignore[arg-type]
    return _emit(args, text, stdout, status, len(catalog))


def _read_supported_schema(path: str) -> tuple[object, bool]:
    """Read the schema file at ``path``; ``(schema, False)`` once each reason it is unsupported went to stderr."""
    from dsh_codegen.schema import JsonSchemaError, assert_supported_json_schema

    schema = _read_json(path)
    try:
        assert_supported_json_schema(schema)
    except JsonSchemaError as error:
        for violation in error.violations:
            print(f"{path}: {violation}", file=sys.stderr)
        return schema, False
    return schema, True


def _cmd_check_schema(args: argparse.Namespace, stdout: TextIO) -> int:
    if not _read_supported_schema(args.file)[1]:
        return EXIT_CHECK_FAILED
    print(f"{args.file}: ok", file=stdout)
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace, stdout: TextIO) -> int:
    from dsh_codegen.schema import validate_json_schema_value

    schema, supported = _read_supported_schema(args.schema)
    if not supported:
        return EXIT_CHECK_FAILED
    value = _read_json(args.data)
    violations = validate_json_schema_value(schema, value)
    name = "<stdin>" if args.data == "-" else args.data
    for violation in violations:
        print(f"{name}: {violation}", file=sys.stderr)
    if violations:
        return EXIT_CHECK_FAILED
    print(f"{name}: ok", file=stdout)
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from dsh_codegen._demo import run_demo

        return run_demo()
    try:
        if args.command in ("sdk", "catalog"):
            with _Status(sys.stderr, quiet=args.quiet) as status:
                return (_cmd_sdk if args.command == "sdk" else _cmd_catalog)(args, sys.stdout, status)
        return (_cmd_check_schema if args.command == "check-schema" else _cmd_validate)(args, sys.stdout)
    except _InputError as error:
        print(f"dsh-codegen: error: {error}", file=sys.stderr)
        return EXIT_USAGE


def _silence_stdout() -> None:
    # Whatever is still buffered for the closed pipe would fail again when the
    # interpreter flushes stdout at exit ("Exception ignored ..."): point the
    # descriptor at /dev/null so that last flush succeeds quietly.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real descriptor (an embedding program's stream): nothing will flush it at exit


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code (see the module docstring).

    A reader that closes stdout early (``| head``) ends the command quietly
    with :data:`EXIT_BROKEN_PIPE`, with no traceback.
    """
    args = _build_parser().parse_args(argv)
    try:
        code = _run(args)
        # Flush here, not at exit, so a closed pipe surfaces where it is handled.
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    return code
