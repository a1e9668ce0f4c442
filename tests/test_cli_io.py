"""The dsh-codegen command as a process: how it reads input, reports itself and meets a closed pipe.

Every test runs the real console entry point (``python -m dsh_codegen``) in a
subprocess, because what is tested (stdin's bytes, the exit code at a closed
descriptor, what reaches stderr at interpreter exit) only exists there. The
deep-input tests depend on the twins (parse, subset check, validation) and
run in both passes; the rest are marked ``once``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from _shared_helpers import session_process

import dsh_codegen
from dsh_codegen.cli import EXIT_BROKEN_PIPE

DEPTH = 100_000
TIMEOUT = 120


def _env() -> dict[str, str]:
    # The twin of this pass, and no user site or PYTHON* surprises beyond it.
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


def _cli(*argv: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_codegen", *argv],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=_env(),
        cwd=cwd,
        timeout=TIMEOUT,
    )


@pytest.fixture
def schema(tmp_path: Path) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "string"}}}), encoding="utf-8")
    return path


# --- strict UTF-8, the same on stdin as in a file ---------------------------------------


@pytest.mark.once
@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"a": "\xff"}', "invalid start byte at byte 7"),
        (b'{"a": "\xc3"}', "invalid continuation byte at byte 7"),
        (b'{"a": "\xed\xa0\x80"}', "invalid continuation byte at byte 7"),  # an encoded surrogate
        (b'{"a": "x"}\xe2\x82', "unexpected end of data at byte 10"),
    ],
)
def test_bytes_that_are_not_utf8_fail_alike_on_stdin_and_in_a_file(
    tmp_path: Path, schema: Path, data: bytes, reason: str
) -> None:
    file = tmp_path / "d.json"
    file.write_bytes(data)
    from_file = _cli("validate", "--schema", str(schema), str(file))
    from_stdin = _cli("validate", "--schema", str(schema), "-", stdin=data)
    assert (from_file.returncode, from_file.stdout) == (2, b"")
    assert from_file.stderr.decode() == f"dsh-codegen: error: {file}: not UTF-8 text ({reason})\n"
    assert (from_stdin.returncode, from_stdin.stdout) == (2, b"")
    assert from_stdin.stderr.decode() == f"dsh-codegen: error: <stdin>: not UTF-8 text ({reason})\n"
    # The schema file is read the same way.
    file.write_bytes(b'{"type": "string", "description": "\xff"}')
    bad_schema = _cli("check-schema", str(file))
    assert bad_schema.returncode == 2
    assert bad_schema.stderr.decode() == f"dsh-codegen: error: {file}: not UTF-8 text (invalid start byte at byte 35)\n"


@pytest.mark.once
def test_stdin_bytes_are_not_translated(tmp_path: Path, schema: Path) -> None:
    # A byte order mark is refused as json.loads refuses it, and CRLF is JSON whitespace, on both paths.
    for data, code in ((b'\xef\xbb\xbf{"a": "x"}', 2), (b'{"a":\r\n "x"}\r\n', 0)):
        file = tmp_path / "d.json"
        file.write_bytes(data)
        from_file = _cli("validate", "--schema", str(schema), str(file))
        from_stdin = _cli("validate", "--schema", str(schema), "-", stdin=data)
        assert from_file.returncode == from_stdin.returncode == code
        assert from_file.stderr.replace(str(file).encode(), b"<stdin>") == from_stdin.stderr
    assert b"Unexpected UTF-8 BOM" in _cli("validate", "--schema", str(schema), "-", stdin=b"\xef\xbb\xbf{}").stderr


@pytest.mark.once
def test_catalog_files_are_strict_utf8_too(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    catalog.write_bytes(b'[{"name": "a", "description": "caf\xe9"}]')  # Latin-1
    done = _cli("catalog", "--catalog", str(catalog))
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"dsh-codegen: error: {catalog}: the catalog is not UTF-8 text (invalid continuation byte at byte 34)\n"
    )


# --- the stack-safe parser for every JSON the command reads -----------------------------


def _nested_array_schema(depth: int, leaf: object) -> str:
    return '{"type": "array", "items": ' * depth + json.dumps(leaf) + "}" * depth


def test_check_schema_and_validate_take_100000_levels(tmp_path: Path) -> None:
    schema = tmp_path / "deep-schema.json"
    schema.write_text(_nested_array_schema(DEPTH, {"type": "string"}), encoding="utf-8")
    checked = _cli("check-schema", str(schema))
    assert (checked.returncode, checked.stdout.decode(), checked.stderr) == (0, f"{schema}: ok\n", b"")

    good = "[" * DEPTH + '"x"' + "]" * DEPTH
    data = tmp_path / "deep-data.json"
    data.write_text(good, encoding="utf-8")
    valid = _cli("validate", "--schema", str(schema), str(data))
    assert (valid.returncode, valid.stdout.decode(), valid.stderr) == (0, f"{data}: ok\n", b"")
    valid = _cli("validate", "--schema", str(schema), "-", stdin=good.encode())
    assert (valid.returncode, valid.stdout.decode(), valid.stderr) == (0, "<stdin>: ok\n", b"")

    bad = "[" * DEPTH + "1" + "]" * DEPTH
    invalid = _cli("validate", "--schema", str(schema), "-", stdin=bad.encode())
    assert (invalid.returncode, invalid.stdout) == (1, b"")
    assert invalid.stderr.decode() == f'<stdin>: "value{"[0]" * DEPTH}" must be a string\n'


def test_a_deep_unsupported_schema_is_reported_not_a_crash(tmp_path: Path) -> None:
    schema = tmp_path / "deep-schema.json"
    schema.write_text(_nested_array_schema(DEPTH, {"type": "strin"}), encoding="utf-8")
    checked = _cli("check-schema", str(schema))
    assert checked.returncode == 1
    (line,) = checked.stderr.decode().splitlines()
    assert line.startswith(f"{schema}: schema.items.items.")
    assert line.endswith(".type must be one of object/array/string/number/integer/boolean/null")
    # Malformed deep text: the parser's own position, no RecursionError.
    broken = tmp_path / "broken.json"
    broken.write_text("[" * DEPTH + "}", encoding="utf-8")
    done = _cli("check-schema", str(broken))
    assert done.returncode == 2
    assert done.stderr.decode().startswith(f"dsh-codegen: error: {broken}: invalid JSON at line 1 column {DEPTH + 1}: ")
    assert b"Traceback" not in done.stderr


@pytest.mark.once
def test_a_deep_catalog_renders(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.json"
    parameters = '{"type": "object", "properties": {"x": ' + _nested_array_schema(DEPTH, {"type": "string"}) + "}}"
    catalog.write_text('[{"name": "deep", "parameters": ' + parameters + "}]", encoding="utf-8")
    done = _cli("sdk", "--lang", "ts", "--catalog", str(catalog))
    assert done.returncode == 0, done.stderr[-2000:]
    assert b"string" + b"[]" * DEPTH in done.stdout


@pytest.mark.once
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": -0.0}', '"value.a" is not lossless JSON: -0.0 does not survive a JSON round trip'),
        ('{"a": [1e400]}', '"value.a[0]" is not lossless JSON: 1e400 overflows to infinity'),
        ('{"a": NaN}', "invalid JSON at line 1 column 7: NaN is not a JSON number"),
        ('{"a": 1} 2', "invalid JSON at line 1 column 10: Extra data"),
        ("", "invalid JSON at line 1 column 1: Expecting value"),
    ],
)
def test_lossy_and_malformed_data_are_input_errors(schema: Path, text: str, message: str) -> None:
    done = _cli("validate", "--schema", str(schema), "-", stdin=text.encode())
    assert (done.returncode, done.stdout) == (2, b"")
    stderr = done.stderr.decode()
    assert stderr.startswith("dsh-codegen: error: <stdin>: ") and stderr.count("\n") == 1
    if "1e400" in text:
        # The overflow's wording is the json layer's; the path is the command's promise.
        assert stderr.startswith('dsh-codegen: error: <stdin>: "value.a[0]" is not lossless JSON: ')
    else:
        assert stderr == f"dsh-codegen: error: <stdin>: {message}\n"


@pytest.mark.once
def test_an_integer_too_long_to_convert_is_an_input_error(schema: Path) -> None:
    digits = sys.get_int_max_str_digits() + 1
    done = _cli("validate", "--schema", str(schema), "-", stdin=b'{"a": ' + b"7" * digits + b"}")
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode().startswith("dsh-codegen: error: <stdin>: invalid JSON: Exceeds the limit")


def test_a_closed_stdin_is_an_input_error(
    schema: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dsh_codegen.cli import main

    monkeypatch.setattr(sys, "stdin", None)
    assert main(["validate", "--schema", str(schema), "-"]) == 2
    assert capsys.readouterr().err == "dsh-codegen: error: <stdin>: cannot read: stdin is closed\n"


# --- a closed pipe ends the command quietly -----------------------------------------------


def _with_closed_stdout(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the command with stdout a pipe whose reader is already gone (as after ``| head``)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    command = [sys.executable, "-m", "dsh_codegen", *argv]
    try:
        # `demo` starts Code Mode program processes: a timeout stops them too (session_process)
        with session_process(
            command, stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.PIPE, env=env or _env()
        ) as process:
            _, stderr = process.communicate(timeout=TIMEOUT)
        return subprocess.CompletedProcess(command, process.returncode, None, stderr)
    finally:
        os.close(write_end)


@pytest.mark.once
@pytest.mark.parametrize("unbuffered", [False, True], ids=["fails-at-exit-flush", "fails-at-first-write"])
def test_a_closed_pipe_exits_quietly(schema: Path, unbuffered: bool) -> None:
    env = _env()
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    for argv in (("demo",), ("check-schema", str(schema)), ("sdk", "--lang", "ts", "--catalog", str(_catalog(schema)))):
        done = _with_closed_stdout(*argv, env=env)
        assert (done.returncode, done.stderr) == (EXIT_BROKEN_PIPE, b""), (argv, done.stderr.decode()[-3000:])


def _catalog(near: Path) -> Path:
    path = near.parent / "tools.json"
    path.write_text(json.dumps([{"name": f"tool_{i}", "description": "x" * 200} for i in range(50)]), encoding="utf-8")
    return path


@pytest.mark.once
def test_demo_into_head() -> None:
    # `dsh-codegen demo | head -n 1`, built from two processes and a real pipe. Unbuffered,
    # the demo writes each line as it goes, and its later lines come after a 150 ms timeout
    # it demonstrates, long after head has left.
    with session_process(
        [sys.executable, "-m", "dsh_codegen", "demo"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**_env(), "PYTHONUNBUFFERED": "1"},
    ) as demo:  # a timeout below stops the demo and its program processes
        assert demo.stdout is not None and demo.stderr is not None
        head = subprocess.run(["head", "-n", "1"], stdin=demo.stdout, capture_output=True, timeout=TIMEOUT)
        demo.stdout.close()
        stderr = demo.stderr.read()
        demo.stderr.close()
        code = demo.wait(timeout=TIMEOUT)
    assert head.stdout.decode().startswith("dsh_codegen demo (backend: ")
    assert head.stdout.count(b"\n") == 1
    # 0 only if head was starved past the demo's last line (a loaded machine): never a traceback.
    assert code in (0, EXIT_BROKEN_PIPE)
    assert stderr == b"", stderr.decode()[-3000:]


# --- --version -----------------------------------------------------------------------------


def test_version_names_the_package_the_backend_and_the_python() -> None:
    done = _cli("--version")
    assert (done.returncode, done.stderr) == (0, b"")
    expected = (
        f"dsh-codegen {dsh_codegen.__version__} (backend: {dsh_codegen.backend()}; "
        f"Python {platform.python_version()} ({sys.implementation.name}, {sys.executable}))\n"
    )
    assert done.stdout.decode() == expected
    pure = subprocess.run(
        [sys.executable, "-m", "dsh_codegen", "--version"],
        capture_output=True,
        env={**_env(), "DSH_CODEGEN_PURE_PYTHON": "1"},
        timeout=TIMEOUT,
    )
    assert "(backend: pure; " in pure.stdout.decode() and pure.stderr == b""


# --- what a run imports ----------------------------------------------------------------------

# Runs the command as ``python -m dsh_codegen`` would, then writes the names in
# ``sys.modules`` to the file named by the first argument (after the command's
# own exit, whatever its code).
_MODULES_AT_EXIT = """
import json, runpy, sys
out = sys.argv[1]
sys.argv = ["dsh_codegen", *sys.argv[2:]]
try:
    runpy.run_module("dsh_codegen", run_name="__main__", alter_sys=True)
except SystemExit as exit_:
    code = exit_.code
else:
    code = 0
with open(out, "w", encoding="utf-8") as handle:
    json.dump({"code": code, "modules": sorted(sys.modules)}, handle)
"""

# Loaded only for --mcp or serving: an sdk run from a file needs none of them.
_NOT_FOR_SDK = (
    "dsh_codegen.adapters._mcp_serve",
    "dsh_codegen.adapters._mcp_import",
    "dsh_codegen.registry",
    "mcp",
    "asyncio",
    "black",
    "libcst",
)
# Loaded only to convert a foreign tool list (OpenAI, Anthropic, MCP): our own catalog format needs none of them
# (the schema layer is loaded either way: `sdk` checks every schema it renders).
_FOREIGN_ONLY = ("dsh_codegen.adapters._formats", "dsh_codegen.adapters._lowering", "dsh_codegen.adapters._strict")


@pytest.mark.once
@pytest.mark.parametrize("lang", ["ts", "py"])
@pytest.mark.parametrize("document", ["catalog", "openai"])
def test_sdk_from_a_catalog_file_imports_no_mcp_server_and_no_formatter(
    tmp_path: Path, lang: str, document: str
) -> None:
    tool = {
        "name": "get_sum",
        "description": "Add.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    }
    if document == "openai":
        tool = {"type": "function", "function": tool}
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps([tool]), encoding="utf-8")
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _MODULES_AT_EXIT,
            str(report),
            "sdk",
            "--catalog",
            str(catalog),
            "--lang",
            lang,
            "-o",
            str(tmp_path / f"tools.{lang}"),
        ],
        capture_output=True,
        env=_env(),
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    seen = json.loads(report.read_text(encoding="utf-8"))
    assert seen["code"] in (0, None)
    assert "get_sum" in (tmp_path / f"tools.{lang}").read_text(encoding="utf-8")
    # The run did go through the catalog-format detection (which lives in the adapters layer).
    assert "dsh_codegen.adapters._catalog_docs" in seen["modules"]
    loaded = [name for name in seen["modules"] if name.split(".")[0] in _NOT_FOR_SDK or name.startswith(_NOT_FOR_SDK)]
    assert loaded == []
    foreign = [name for name in seen["modules"] if name.startswith(_FOREIGN_ONLY)]
    if document == "catalog":
        assert foreign == []
    else:
        # The OpenAI list went through the converters (so the check above is not vacuous).
        assert "dsh_codegen.adapters._formats" in foreign
    # Each language's modules are loaded only by its own renders.
    mine, other = ("_ts_sdk", "_py") if lang == "ts" else ("_py_sdk", "_ts")
    assert f"dsh_codegen.codegen.{mine}" in seen["modules"]
    assert not [name for name in seen["modules"] if name.startswith(f"dsh_codegen.codegen.{other}")]
