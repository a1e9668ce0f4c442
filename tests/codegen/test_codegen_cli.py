"""The dsh-codegen command: sdk, catalog, check-schema, validate; exit codes and errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen_helpers import CASES
from dsh_codegen.cli import main
from dsh_codegen.codegen import load_catalog, render_catalog_markdown, render_sdk_module

CATALOG = CASES / "contract_example" / "catalog.json"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.once
@pytest.mark.parametrize(("lang", "language"), [("ts", "typescript"), ("py", "python")])
def test_sdk_writes_the_module_and_check_detects_staleness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lang: str, language: str
) -> None:
    out = tmp_path / f"sdk.{lang}"
    expected = render_sdk_module(load_catalog(CATALOG), language)  # type: ignore[arg-type]
    wrote = (0, "", f"dsh-codegen: wrote {out} (3 tools)\n")
    assert _run(capsys, "sdk", "--lang", lang, "--catalog", str(CATALOG), "-o", str(out)) == wrote
    assert out.read_text(encoding="utf-8") == expected
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temp file left behind
    current = (0, "", f"dsh-codegen: {out} is up to date (3 tools)\n")
    assert _run(capsys, "sdk", "--lang", lang, "--catalog", str(CATALOG), "-o", str(out), "--check") == current
    out.write_text(expected.replace("read_file", "read_files", 1), encoding="utf-8")
    code, stdout, stderr = _run(capsys, "sdk", "--lang", lang, "--catalog", str(CATALOG), "-o", str(out), "--check")
    assert code == 1
    assert stdout.startswith(f"--- {out} (on disk)\n+++ {out} (expected)\n@@ ")
    assert "-" in stdout and "+" in stdout
    assert stderr == f"dsh-codegen: {out} is stale; rerun without --check\n"
    out.unlink()
    code, stdout, stderr = _run(capsys, "sdk", "--lang", lang, "--catalog", str(CATALOG), "-o", str(out), "--check")
    assert code == 1 and stdout.startswith("--- /dev/null\n") and "is missing" in stderr
    assert not out.exists()


@pytest.mark.once
def test_check_compares_bytes_not_translated_newlines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "catalog.md"
    expected = render_catalog_markdown(load_catalog(CATALOG))
    out.write_bytes(expected.replace("\n", "\r\n").encode("utf-8"))
    code, _, stderr = _run(capsys, "catalog", "--catalog", str(CATALOG), "-o", str(out), "--check")
    assert (code, stderr) == (1, f"dsh-codegen: {out} is stale; rerun without --check\n")


@pytest.mark.once
def test_sdk_to_stdout_and_catalog_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = _run(capsys, "sdk", "--lang", "py", "--catalog", str(CATALOG))
    assert code == 0 and stdout == render_sdk_module(load_catalog(CATALOG), "python")
    code, stdout, _ = _run(capsys, "catalog", "--catalog", str(CATALOG))
    assert code == 0 and stdout == render_catalog_markdown(load_catalog(CATALOG))
    out = tmp_path / "catalog.md"
    assert _run(capsys, "catalog", "--catalog", str(CATALOG), "-o", str(out))[0] == 0
    assert _run(capsys, "catalog", "--catalog", str(CATALOG), "-o", str(out), "--check")[0] == 0


@pytest.mark.once
@pytest.mark.parametrize("command", [["sdk", "--lang", "py"], ["catalog"]])
def test_a_write_is_said_on_stderr_and_q_silences_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    # Issue 39: a successful run used to say nothing at all.
    out = tmp_path / "out.txt"
    assert _run(capsys, *command, "--catalog", str(CATALOG), "-o", str(out)) == (
        0,
        "",
        f"dsh-codegen: wrote {out} (3 tools)\n",
    )
    one = tmp_path / "one.json"
    one.write_text(json.dumps(json.loads(CATALOG.read_text(encoding="utf-8"))[:1]), encoding="utf-8")
    assert _run(capsys, *command, "--catalog", str(one), "-o", str(out))[2] == f"dsh-codegen: wrote {out} (1 tool)\n"
    for check in ([], ["--check"]):
        assert _run(capsys, *command, "-q", "--catalog", str(CATALOG), "-o", str(out), *check) == (0, "", "")
    # Stdout is the output itself: nothing is added to it or said beside it.
    code, stdout, stderr = _run(capsys, *command, "--catalog", str(CATALOG))
    assert code == 0 and stdout and stderr == ""
    # -q silences the report, not the problems.
    code, _, stderr = _run(capsys, *command, "-q", "--catalog", str(CATALOG), "-o", str(tmp_path / "no" / "out"))
    assert code == 2 and stderr.startswith("dsh-codegen: error: ")


class _Terminal:
    """A text stream that says it is a terminal and keeps what was written."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.once
def test_the_status_line_is_drawn_on_a_terminal_and_erased_before_other_lines() -> None:
    import threading

    from dsh_codegen.cli import _Status

    terminal = _Terminal()
    drawn = threading.Event()
    with _Status(terminal, quiet=False, delay_s=0, period_s=0.01) as status:  # type: ignore[arg-type]
        status.stage("rendering the Python SDK of 5,000 tools")
        for _ in range(1000):  # the thread draws within a few periods; ten seconds at most
            if "rendering" in terminal.text:
                break
            drawn.wait(0.01)
        status.say("dsh-codegen: warning: something")
        status.done("dsh-codegen: wrote out.py (5,000 tools)")
    status_line = "\r\x1b[Kdsh-codegen: rendering the Python SDK of 5,000 tools ("
    assert status_line in terminal.text
    # Every other line starts on a clean line, and the run ends with no status left on screen.
    assert "\r\x1b[Kdsh-codegen: warning: something\n" in terminal.text
    assert terminal.text.endswith("something\ndsh-codegen: wrote out.py (5,000 tools)\n")
    assert "dsh-codegen:  (" not in terminal.text  # no status before a stage is named
    quiet = _Terminal()
    with _Status(quiet, quiet=True, delay_s=0, period_s=0.01) as status:  # type: ignore[arg-type]
        status.stage("working")
        status.done("dsh-codegen: wrote out.py (5,000 tools)")
    assert quiet.text == ""


@pytest.mark.once
def test_a_long_run_on_a_terminal_shows_its_stages(tmp_path: Path) -> None:
    import pty

    # The real command on a real terminal, with the status line's delay and period made tiny so
    # the test never races the clock (a fast machine renders these tools in under half a second).
    tools = json.loads(CATALOG.read_text(encoding="utf-8"))
    big = [{**tools[i % len(tools)], "name": f"tool_{i}"} for i in range(4000)]
    catalog = tmp_path / "big.json"
    catalog.write_text(json.dumps(big), encoding="utf-8")
    out = tmp_path / "sdk.py"
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "DSH_CODEGEN_PURE_PYTHON"}
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, dsh_codegen.cli as cli; cli._STATUS_DELAY_S = 0; cli._STATUS_PERIOD_S = 0.001;"
            " sys.exit(cli.main(sys.argv[1:]))",
            "sdk",
            "--lang",
            "py",
            "--catalog",
            str(catalog),
            "-o",
            str(out),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
    ) as process:
        os.close(follower)
        screen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end closed: the command has exited
                break
            if not chunk:
                break
            screen += chunk
    os.close(leader)
    assert process.returncode == 0, screen.decode(errors="replace")
    text = screen.decode()
    assert "\r\x1b[Kdsh-codegen: rendering the Python SDK of 4,000 tools (" in text, text[-2000:]
    assert text.endswith(f"\r\x1b[Kdsh-codegen: wrote {out} (4,000 tools)\r\n"), text[-500:]


@pytest.mark.once
def test_check_without_output_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = _run(capsys, "sdk", "--lang", "ts", "--catalog", str(CATALOG), "--check")
    assert code == 2 and stderr == "dsh-codegen: error: --check needs -o/--output OUT (the file to compare)\n"


@pytest.mark.once
@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"name": "x"}', "the catalog must be a JSON array of tool objects, got an object"),
        ('[{"name": "a"}, 3]', '"[1]" must be an object, got a number'),
        ('[{"name": 1}]', '"[0].name" must be a string'),
        ('[{"name": "a", "parameters": []}]', '"[0].parameters" must be an object'),
        ('[{"name": "a", "output_schema": 1}]', '"[0].output_schema" must be an object or null'),
        ('[{"name": "a", "description": null}]', '"[0].description" must be a string'),
        (
            '[{"name": "a", "params": {}}]',
            '"[0].params" is not a catalog field (known: name, description, parameters, output_schema)',
        ),
        ('[{"name": "a"}, {"name": "a"}]', '"[1].name" repeats the tool name "a" already used at "[0]"'),
        # Not a trailing comma: Python 3.13's json words those differently from 3.11's.
        ('[{"name": "a" "x"}]', "invalid JSON at line 1 column 15: Expecting ',' delimiter"),
        (
            '[{"name": "a", "parameters": {"default": NaN}}]',
            "invalid JSON at line 1 column 42: NaN is not a JSON number",
        ),
    ],
)
def test_bad_catalogs_name_the_file_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "tools.json"
    path.write_text(content, encoding="utf-8")
    out = tmp_path / "sdk.ts"
    code, stdout, stderr = _run(capsys, "sdk", "--lang", "ts", "--catalog", str(path), "-o", str(out))
    assert (code, stdout) == (2, "")
    assert stderr == f"dsh-codegen: error: {path}: {message}\n"
    assert not out.exists()


@pytest.mark.once
def test_unreadable_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.json"
    code, _, stderr = _run(capsys, "catalog", "--catalog", str(missing))
    assert (
        code == 2 and stderr == f"dsh-codegen: error: {missing}: cannot read the catalog: No such file or directory\n"
    )


@pytest.mark.once
def test_a_failed_render_keeps_the_previous_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sdk.ts"
    out.write_text("previous\n", encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    assert _run(capsys, "sdk", "--lang", "ts", "--catalog", str(bad), "-o", str(out))[0] == 2
    assert out.read_text(encoding="utf-8") == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "sdk.ts"]


@pytest.mark.once
def test_existing_file_mode_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sdk.py"
    out.write_text("old\n", encoding="utf-8")
    os.chmod(out, 0o640)
    assert _run(capsys, "sdk", "--lang", "py", "--catalog", str(CATALOG), "-o", str(out))[0] == 0
    assert out.stat().st_mode & 0o777 == 0o640


@pytest.mark.once
def test_registry_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_tools_mod.py").write_text(
        "from dsh_codegen.codegen import ToolSchemaEntry\n"
        "ENTRIES = [ToolSchemaEntry('echo', 'Echo.', {'type': 'object'}, {'type': 'string'})]\n"
        "class Reg:\n"
        "    def catalog(self):\n"
        "        return list(ENTRIES)\n"
        "registry = Reg()\n"
        "class Broken:\n"
        "    def catalog(self):\n"
        "        raise RuntimeError('no catalog today')\n"
        "broken = Broken()\n"
        "number = 3\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, from_registry, _ = _run(capsys, "sdk", "--lang", "ts", "--registry", "my_tools_mod:registry")
    assert code == 0 and "  echo: Record<string, JsonValue>;" in from_registry
    code, from_list, _ = _run(capsys, "sdk", "--lang", "ts", "--registry", "my_tools_mod:ENTRIES")
    assert (code, from_list) == (0, from_registry)
    for spec, message in [
        ("my_tools_mod", "expected MODULE:ATTR (e.g. myapp.tools:registry)"),
        ("no_such_mod_xyz:x", "cannot import no_such_mod_xyz: ModuleNotFoundError: No module named 'no_such_mod_xyz'"),
        ("my_tools_mod:missing", "my_tools_mod has no attribute missing"),
        ("my_tools_mod:broken", ".catalog() failed: RuntimeError: no catalog today"),
        ("my_tools_mod:number", "expected an object with a .catalog() method or a list of ToolSchemaEntry, got int"),
    ]:
        code, _, stderr = _run(capsys, "sdk", "--lang", "py", "--registry", spec)
        assert (code, stderr) == (2, f"dsh-codegen: error: --registry {spec}: {message}\n")


def test_check_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "string"}}}), encoding="utf-8")
    assert _run(capsys, "check-schema", str(good)) == (0, f"{good}: ok\n", "")
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"type": "object", "properties": {"a": {"type": "strin"}}, "required": ["b"], "additionalProperties": False}
        ),
        encoding="utf-8",
    )
    code, stdout, stderr = _run(capsys, "check-schema", str(bad))
    assert (code, stdout) == (1, "")
    # One line per violation, in the schema layer's walk order.
    assert stderr.splitlines() == [
        f'{bad}: schema.required names "b" which is not in properties',
        f"{bad}: schema.properties.a.type must be one of object/array/string/number/integer/boolean/null",
    ]


def test_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {
                    "servers": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]},
                    }
                },
            }
        ),
        encoding="utf-8",
    )
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"servers": [{"host": "a"}, {"host": 1}, {}]}), encoding="utf-8")
    code, stdout, stderr = _run(capsys, "validate", "--schema", str(schema), str(data))
    assert (code, stdout) == (1, "")
    assert stderr.splitlines() == [
        f'{data}: "value.servers[1].host" must be a string',
        f'{data}: missing required property "value.servers[2].host"',
    ]
    data.write_text(json.dumps({"servers": [{"host": "a"}]}), encoding="utf-8")
    assert _run(capsys, "validate", "--schema", str(schema), str(data)) == (0, f"{data}: ok\n", "")
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO('{"servers": 3}'))
    code, _, stderr = _run(capsys, "validate", "--schema", str(schema), "-")
    assert code == 1 and stderr == '<stdin>: "value.servers" must be an array\n'
    data.write_text("{oops", encoding="utf-8")
    code, _, stderr = _run(capsys, "validate", "--schema", str(schema), str(data))
    assert code == 2 and stderr.startswith(f"dsh-codegen: error: {data}: invalid JSON at line 1 column 2")
    schema.write_text(json.dumps({"type": "string", "not": {"pattern": "x"}}), encoding="utf-8")
    code, _, stderr = _run(capsys, "validate", "--schema", str(schema), str(data))
    assert code == 1 and stderr.startswith(f"{schema}: schema.not is not supported")


@pytest.mark.once
def test_help_documents_exit_codes_and_module_entry_point() -> None:
    result = subprocess.run([sys.executable, "-m", "dsh_codegen", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "exit codes:" in result.stdout and "  1  a check failed" in result.stdout
    for command in ("sdk", "catalog", "check-schema", "validate", "demo"):
        assert command in result.stdout
    usage = subprocess.run(
        [sys.executable, "-m", "dsh_codegen", "sdk", "--lang", "go", "--catalog", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert usage.returncode == 2 and "invalid choice: 'go'" in usage.stderr


@pytest.mark.once
def test_registry_source_with_a_real_tool_registry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "real_registry_mod.py").write_text(
        "from dsh_codegen.registry import ToolOutput, ToolRegistry, define_tool\n"
        "async def _echo(args, run):\n"
        "    return args['text']\n"
        "registry = ToolRegistry()\n"
        "registry.register(define_tool(name='echo', description='Echo the text.',\n"
        "    parameters={'text': {'type': 'string', 'required': True}},\n"
        "    output=ToolOutput(schema={'type': 'string'}, render=lambda args, value: [{'type': 'text', 'text': value}]),\n"
        "    execute=_echo))\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    code, stdout, stderr = _run(capsys, "sdk", "--lang", "py", "--registry", "real_registry_mod:registry")
    assert (code, stderr) == (0, "")
    assert "class EchoArgs(TypedDict):\n    text: str\n" in stdout
    assert '    async def echo(self, args: EchoArgs) -> str:\n        """Echo the text."""\n' in stdout
