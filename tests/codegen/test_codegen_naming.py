"""Naming and literals: every escape path with hostile input (house rule 7, docs/contributing.md)."""

from __future__ import annotations

import ast
import json

import pytest

from dsh_codegen.codegen._literals import (
    code_string,
    collapse,
    escape_controls,
    md_code,
    md_text,
    py_comment,
    py_docstring,
    py_literal,
    ts_jsdoc,
    ts_literal,
)
from dsh_codegen.codegen._naming import (
    CLASS_NAME_CAP,
    ClassNamer,
    camel_case,
    is_py_field_name,
    is_py_method_name,
    ts_key,
)

pytestmark = pytest.mark.once

HOSTILE = [
    'q"uote',
    "back\\slash",
    "new\nline",
    "cr\rlf",
    "nul\x00",
    "surr\ud800",
    "low\udc00",
    "*/",
    "/*",
    '"""',
    "'''",
    "sep\u2028para\u2029",
    "del\x7f",
    "c1\x85\x9b",
    "tab\t",
    "ü工🙂",
    "\\x00",
    "\\u0041",
    "#",
    "",
    " ",
    "`",
    "${x}",
]


@pytest.mark.parametrize(
    ("name", "camel"),
    [
        ("read_file", "ReadFile"),
        ("my-mcp.tool", "MyMcpTool"),
        ("1st-tool", "Tool1stTool"),
        ("---", "Tool"),
        ("__proto__", "Proto"),
        ("list", "List"),
        ("工具", "工具"),
        ("a__b", "AB"),
        ("x.y-z_w", "XYZW"),
        ("", "Tool"),
        ("ｆｕｌｌ", "Full"),
        ("9", "Tool9"),
    ],
)
def test_camel_case(name: str, camel: str) -> None:
    assert camel_case(name) == camel
    assert camel.isidentifier()


@pytest.mark.parametrize("name", HOSTILE + ["class", "None", "__debug__", "match", "1x", "ﬁle"])
def test_camel_case_always_gives_an_identifier(name: str) -> None:
    result = camel_case(name)
    assert result.isidentifier() and result[0] != "_"


@pytest.mark.parametrize(
    ("name", "method", "field"),
    [
        ("read_file", True, True),
        ("match", True, True),
        ("type", True, True),
        ("case", True, True),
        ("_", False, True),
        ("_private", False, True),
        ("__dunder__", False, True),
        ("__x", False, False),
        ("class", False, False),
        ("None", False, False),
        ("__debug__", False, False),
        ("my-tool", False, False),
        ("ﬁle", False, False),
        ("ünï", True, True),
        ("1x", False, False),
        ("", False, False),
        ("async", False, False),
        ("print", True, True),
    ],
)
def test_python_name_rules(name: str, method: bool, field: bool) -> None:
    assert is_py_method_name(name) is method
    assert is_py_field_name(name) is field


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("read_file", "read_file"),
        ("$x", "$x"),
        ("__proto__", "__proto__"),
        ("my-mcp.tool", '"my-mcp.tool"'),
        ("ü", '"ü"'),
        ("a\nb", '"a\\nb"'),
        ("s\ud800", '"s\\ud800"'),
        ("", '""'),
    ],
)
def test_typescript_keys(name: str, key: str) -> None:
    assert ts_key(name) == key


def test_class_names_are_capped_with_per_base_counters() -> None:
    namer = ClassNamer(["Taken"])
    assert namer.allocate("Taken") == "Taken2"
    long = "A" * 500
    names = [namer.allocate(long) for _ in range(5)]
    assert names[0] == "A" * CLASS_NAME_CAP
    assert names[1:] == ["A" * CLASS_NAME_CAP + str(n) for n in range(2, 6)]
    namer.reserve(["B3"])
    assert [namer.allocate("B") for _ in range(3)] == ["B", "B2", "B4"]
    # A suffixed name can itself be a base: its own counter, skipping taken names.
    assert namer.allocate("B2") == "B22"


def test_class_namer_is_not_a_linear_probe() -> None:
    namer = ClassNamer()
    for _ in range(20_000):
        namer.allocate("Same")
    assert namer._next["Same"] == 20_001


@pytest.mark.parametrize("text", HOSTILE)
def test_code_strings_are_valid_in_json_typescript_and_python(text: str) -> None:
    literal = code_string(text)
    assert "\n" not in literal and "\r" not in literal and "\u2028" not in literal and "\x85" not in literal
    literal.encode("utf-8")  # no lone surrogates in the text itself
    assert ast.literal_eval(literal) == text
    assert json.loads(literal) == text


@pytest.mark.parametrize("text", HOSTILE)
def test_comment_text_stays_on_one_line_and_encodes(text: str) -> None:
    for rendered in (ts_jsdoc(text), py_comment(text), py_docstring(text)):
        if rendered is None:
            assert collapse(text) is None
            continue
        rendered.encode("utf-8")
        assert len(rendered.splitlines()) == 1
        assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in rendered)
    jsdoc = ts_jsdoc(text)
    assert jsdoc is None or "*/" not in jsdoc


@pytest.mark.parametrize("text", HOSTILE)
def test_docstrings_are_inert(text: str) -> None:
    doc = py_docstring(text)
    if doc is None:
        return
    source = f'def f():\n    """{doc}"""\n'
    tree = ast.parse(source)
    assert len(tree.body) == 1
    assert ast.get_docstring(tree.body[0], clean=False) == escape_controls(collapse(text) or "")  # type: ignore[arg-type]


def test_description_escaping_rules() -> None:
    assert collapse("  a \n\t b  ") == "a b"
    assert collapse("   ") is None and collapse(None) is None and collapse(3) is None
    assert escape_controls("a\x00b\x7fc\x9bd\ud800") == "a\\x00b\\x7fc\\x9bd\\ud800"
    assert ts_jsdoc("a */ b") == "a *\\/ b"
    assert py_docstring('say "hi" \\ ') == 'say \\"hi\\" \\\\'


def test_literals() -> None:
    assert ts_literal("a") == '"a"' and ts_literal(None) == "null" and ts_literal(True) == "true"
    assert ts_literal(2.0) == "2" and ts_literal(float("nan")) is None and ts_literal(-0.0) is None
    assert ts_literal([1]) is None and ts_literal(10**5000) is None
    assert py_literal(2.0) == "2" and py_literal(1.5) is None and py_literal(False) == "False"
    assert py_literal(None) == "None" and py_literal(2**70) == str(2**70)


def test_markdown_text_is_inert() -> None:
    assert (
        md_text("# heading <b>*x*</b> [l](u) `c` | ~")
        == "\\# heading \\<b\\>\\*x\\*\\</b\\> \\[l\\](u) \\`c\\` \\| \\~"
    )
    assert md_text("1. one") == "1\\. one" and md_text("- item") == "\\- item" and md_text("+ x") == "\\+ x"
    # The control becomes the text \x00, whose backslash Markdown then needs escaped.
    assert md_text("a\nb\x00") == "a b\\\\x00"
    assert md_text("   ") == ""


def test_markdown_code_spans() -> None:
    assert md_code("read_file") == "`read_file`"
    assert md_code("a`b") == '``"a`b"``'
    assert md_code("new\nline") == '`"new\\nline"`'
    assert md_code("`x") == '``"`x"``'
