"""A corpus of tool schemas in the shapes real tool publishers emit, generated from signatures.

Each tool is written once as an abstract signature (parameters with a type,
a default, a description and constraints); three emitters render it the way
pydantic (``model_json_schema``), zod-to-json-schema and a hand-written MCP
server would publish it. Nothing here is copied from those projects: the
emitters reproduce the *shapes* (pydantic's ``title`` on every property,
``anyOf`` with ``null`` for ``Optional``, ``$defs``/``$ref`` for nested models
and enums; zod's root ``$schema``, ``additionalProperties: false`` and
``exclusiveMinimum`` for ``.positive()``; MCP's terse ``description``-heavy
objects with ``enum``, ``minimum`` and ``format``).

Use :func:`corpus` for ``(name, schema, valid_args, invalid_args)`` tuples.
Every valid argument set matches its schema and every invalid one does not,
under JSON Schema 2020-12 (the schema tests check that against ``jsonschema``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CorpusCase", "corpus"]

JsonDict = dict[str, Any]
#: (name, schema, valid argument sets, invalid argument sets)
CorpusCase = tuple[str, JsonDict, list[JsonDict], list[JsonDict]]


# --- abstract types ---------------------------------------------------------------------------


@dataclass(frozen=True)
class T:
    """An abstract parameter type: ``kind`` is str/int/float/bool/list/dict/literal/model/union/optional."""

    kind: str
    of: tuple[Any, ...] = ()  # element type(s), literal values, union members
    model: Model | None = None
    constraints: tuple[tuple[str, Any], ...] = ()  # JSON Schema keyword, value


@dataclass(frozen=True)
class P:
    name: str
    type: T
    required: bool = True
    default: Any = None
    description: str = ""


@dataclass(frozen=True)
class Model:
    name: str
    fields: tuple[P, ...]
    recursive_field: str | None = None  # a field holding a list of this model
    closed: bool = False


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: tuple[P, ...]
    extra_valid: tuple[JsonDict, ...] = field(default=())


def s(**constraints: Any) -> T:
    return T("str", constraints=tuple(constraints.items()))


def i(**constraints: Any) -> T:
    return T("int", constraints=tuple(constraints.items()))


def f(**constraints: Any) -> T:
    return T("float", constraints=tuple(constraints.items()))


B = T("bool")


def lst(of: T, **constraints: Any) -> T:
    return T("list", (of,), constraints=tuple(constraints.items()))


def opt(of: T) -> T:
    return T("optional", (of,))


def lit(*values: Any) -> T:
    return T("literal", values)


def union(*members: T) -> T:
    return T("union", members)


def mapping(of: T) -> T:
    return T("dict", (of,))


def model(m: Model) -> T:
    return T("model", model=m)


# --- the signatures ----------------------------------------------------------------------------

_ADDRESS = Model(
    "Address", (P("street", s(minLength=1)), P("city", s()), P("zip", s(pattern="^[0-9]{5}$"), required=False))
)
_LABEL = Model("Label", (P("name", s(maxLength=50)), P("color", s(pattern="^#[0-9a-fA-F]{6}$"), required=False)))
_TREE = Model("TreeNode", (P("name", s()), P("size", i(minimum=0), required=False)), recursive_field="children")
_FILTER = Model("Filter", (P("field", s()), P("op", lit("eq", "ne", "lt", "gt")), P("value", union(s(), f(), B))))
_EDIT = Model("Edit", (P("old_text", s()), P("new_text", s())), closed=True)
_RANGE = Model("LineRange", (P("start", i(minimum=1)), P("end", i(minimum=1))))
_ATTENDEE = Model("Attendee", (P("email", s(format="email")), P("optional", B, required=False, default=False)))

TOOLS: tuple[Tool, ...] = (
    Tool(
        "read_file",
        "Read a text file from the workspace.",
        (
            P("path", s(minLength=1), description="Path relative to the workspace root"),
            P("offset", i(minimum=0), False, 0),
            P("limit", i(minimum=1, maximum=10000), False, 2000),
        ),
    ),
    Tool(
        "write_file",
        "Write a text file, replacing it.",
        (P("path", s(minLength=1)), P("content", s()), P("create_dirs", B, False, True)),
    ),
    Tool(
        "edit_file",
        "Apply exact-text edits to a file.",
        (P("path", s()), P("edits", lst(model(_EDIT), minItems=1)), P("dry_run", B, False, False)),
    ),
    Tool(
        "list_directory",
        "List entries of a directory.",
        (P("path", s()), P("recursive", B, False, False), P("max_depth", opt(i(minimum=1, maximum=20)), False)),
    ),
    Tool(
        "search_files",
        "Find files by glob.",
        (P("pattern", s(minLength=1)), P("exclude", lst(s()), False), P("case_sensitive", B, False, True)),
    ),
    Tool(
        "grep",
        "Search file contents with a regular expression.",
        (
            P("regex", s()),
            P("paths", lst(s(), minItems=1, uniqueItems=True)),
            P("context_lines", i(minimum=0, maximum=10), False, 0),
        ),
    ),
    Tool(
        "run_command",
        "Run a shell command in the sandbox.",
        (
            P("command", s(minLength=1, maxLength=4096)),
            P("timeout_s", f(exclusiveMinimum=0, maximum=600), False, 30.0),
            P("env", mapping(s()), False),
        ),
    ),
    Tool(
        "http_get",
        "Fetch a URL.",
        (
            P("url", s(format="uri", pattern="^https?://")),
            P("headers", mapping(s()), False),
            P("max_bytes", i(minimum=1), False, 1048576),
        ),
    ),
    Tool(
        "web_search",
        "Search the web.",
        (
            P("query", s(minLength=1, maxLength=400)),
            P("count", i(minimum=1, maximum=20), False, 10),
            P("freshness", opt(lit("day", "week", "month")), False),
        ),
    ),
    Tool(
        "get_weather",
        "Current weather for a city.",
        (P("city", s()), P("units", lit("metric", "imperial"), False, "metric")),
    ),
    Tool(
        "get_forecast",
        "Forecast by coordinates.",
        (
            P("latitude", f(minimum=-90, maximum=90)),
            P("longitude", f(minimum=-180, maximum=180)),
            P("days", i(minimum=1, maximum=14), False, 3),
        ),
    ),
    Tool(
        "create_issue",
        "Open an issue in a repository.",
        (
            P("owner", s()),
            P("repo", s()),
            P("title", s(minLength=1, maxLength=256)),
            P("body", opt(s()), False),
            P("labels", lst(s(), uniqueItems=True), False),
            P("assignees", lst(s(), maxItems=10), False),
        ),
    ),
    Tool(
        "list_issues",
        "List repository issues.",
        (
            P("owner", s()),
            P("repo", s()),
            P("state", lit("open", "closed", "all"), False, "open"),
            P("page", i(minimum=1), False, 1),
            P("per_page", i(minimum=1, maximum=100), False, 30),
        ),
    ),
    Tool(
        "update_issue",
        "Update an issue.",
        (
            P("owner", s()),
            P("repo", s()),
            P("issue_number", i(minimum=1)),
            P("title", opt(s()), False),
            P("state", opt(lit("open", "closed")), False),
            P("labels", opt(lst(model(_LABEL))), False),
        ),
    ),
    Tool(
        "create_pull_request",
        "Open a pull request.",
        (P("owner", s()), P("repo", s()), P("head", s()), P("base", s()), P("title", s()), P("draft", B, False, False)),
    ),
    Tool(
        "merge_pull_request",
        "Merge a pull request.",
        (
            P("owner", s()),
            P("repo", s()),
            P("pull_number", i(minimum=1)),
            P("merge_method", lit("merge", "squash", "rebase"), False, "merge"),
        ),
    ),
    Tool(
        "get_file_contents",
        "Read a file at a git ref.",
        (P("owner", s()), P("repo", s()), P("path", s()), P("ref", opt(s()), False)),
    ),
    Tool(
        "send_email",
        "Send an email.",
        (
            P("to", lst(s(format="email"), minItems=1)),
            P("subject", s(maxLength=200)),
            P("body", s()),
            P("cc", lst(s(format="email")), False),
        ),
    ),
    Tool(
        "schedule_meeting",
        "Create a calendar event.",
        (
            P("title", s()),
            P("start", s(format="date-time")),
            P("duration_minutes", i(minimum=5, maximum=480, multipleOf=5)),
            P("attendees", lst(model(_ATTENDEE)), False),
        ),
    ),
    Tool(
        "create_contact",
        "Add a contact.",
        (
            P("name", s()),
            P("phone", opt(s(pattern="^\\+?[0-9 ()-]{7,20}$")), False),
            P("address", opt(model(_ADDRESS)), False),
        ),
    ),
    Tool(
        "query_database",
        "Run a read-only SQL query.",
        (
            P("sql", s(minLength=1)),
            P("params", lst(union(s(), f(), B, T("null"))), False),
            P("row_limit", i(minimum=1, maximum=5000), False, 100),
        ),
    ),
    Tool(
        "filter_records",
        "Filter records of a table.",
        (
            P("table", s()),
            P("filters", lst(model(_FILTER))),
            P("order_by", opt(s()), False),
            P("descending", B, False, False),
        ),
    ),
    Tool(
        "create_table",
        "Create a table.",
        (
            P("name", s(pattern="^[a-z_][a-z0-9_]*$")),
            P("columns", mapping(lit("text", "integer", "real", "blob"))),
            P("if_not_exists", B, False, True),
        ),
    ),
    Tool(
        "upload_document",
        "Store a document.",
        (
            P("filename", s(maxLength=255)),
            P("content_base64", s()),
            P("mime_type", s(), False, "application/octet-stream"),
            P("tags", lst(s(maxLength=32), maxItems=20), False),
        ),
    ),
    Tool(
        "summarize",
        "Summarize text.",
        (
            P("text", s(minLength=1)),
            P("max_words", i(minimum=10, maximum=1000), False, 150),
            P("style", lit("bullets", "paragraph"), False, "paragraph"),
        ),
    ),
    Tool(
        "translate",
        "Translate text.",
        (
            P("text", s()),
            P("target_language", s(pattern="^[a-z]{2}(-[A-Z]{2})?$")),
            P("source_language", opt(s()), False),
        ),
    ),
    Tool(
        "generate_image",
        "Generate an image.",
        (
            P("prompt", s(minLength=1, maxLength=1000)),
            P("size", lit("256x256", "512x512", "1024x1024"), False, "1024x1024"),
            P("n", i(minimum=1, maximum=4), False, 1),
        ),
    ),
    Tool(
        "set_reminder",
        "Set a reminder.",
        (P("text", s()), P("at", s(format="date-time")), P("repeat", opt(lit("daily", "weekly")), False)),
    ),
    Tool(
        "add_todo",
        "Add a to-do item.",
        (
            P("title", s(maxLength=120)),
            P("priority", i(minimum=1, maximum=5), False, 3),
            P("due", opt(s(format="date")), False),
        ),
    ),
    Tool(
        "move_files",
        "Move files.",
        (P("sources", lst(s(), minItems=1)), P("destination", s()), P("overwrite", B, False, False)),
    ),
    Tool(
        "diff_files",
        "Diff two files.",
        (P("left", s()), P("right", s()), P("context", i(minimum=0), False, 3), P("ranges", lst(model(_RANGE)), False)),
    ),
    Tool(
        "browse_tree", "Describe a tree of nodes.", (P("root", model(_TREE)), P("max_nodes", i(minimum=1), False, 1000))
    ),
    Tool(
        "convert_units",
        "Convert a quantity.",
        (P("value", f()), P("from_unit", s()), P("to_unit", s()), P("precision", i(minimum=0, maximum=12), False, 4)),
    ),
    Tool(
        "compute_stats",
        "Statistics of a series.",
        (P("values", lst(f(), minItems=1)), P("percentiles", lst(f(minimum=0, maximum=100)), False)),
    ),
    Tool(
        "resolve_dns",
        "Resolve a hostname.",
        (P("hostname", s(format="hostname")), P("record_type", lit("A", "AAAA", "MX", "TXT"), False, "A")),
    ),
    Tool(
        "ping_host",
        "Ping a host.",
        (P("host", union(s(format="ipv4"), s(format="hostname"))), P("count", i(minimum=1, maximum=10), False, 4)),
    ),
    Tool(
        "kv_set",
        "Store a key.",
        (
            P("key", s(minLength=1, maxLength=128)),
            P("value", T("any")),
            P("ttl_seconds", opt(i(exclusiveMinimum=0)), False),
        ),
    ),
    Tool("kv_get", "Read a key.", (P("key", s(minLength=1)),)),
    Tool("noop", "Does nothing; takes no arguments.", ()),
    Tool(
        "label_items",
        "Attach labels to items.",
        (P("item_ids", lst(i(minimum=1), uniqueItems=True, minItems=1)), P("labels", lst(model(_LABEL), minItems=1))),
    ),
)


# --- emitters ------------------------------------------------------------------------------------


def _title(name: str) -> str:
    return " ".join(part.capitalize() for part in name.split("_"))


class _Pydantic:
    """pydantic v2 ``model_json_schema()`` shapes."""

    style = "pydantic"

    def __init__(self) -> None:
        self.defs: dict[str, JsonDict] = {}

    def type(self, t: T, title: str | None) -> JsonDict:
        out = self._bare(t)
        if title is not None and "$ref" not in out:
            out = {**out, "title": title}
        return out

    def _bare(self, t: T) -> JsonDict:
        if t.kind in ("str", "int", "float", "bool", "null"):
            out: JsonDict = {
                "type": {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "null": "null"}[
                    t.kind
                ]
            }
            out.update(t.constraints)
            return out
        if t.kind == "any":
            return {}
        if t.kind == "list":
            return {"type": "array", "items": self._bare(t.of[0]), **dict(t.constraints)}
        if t.kind == "dict":
            return {"type": "object", "additionalProperties": self._bare(t.of[0])}
        if t.kind == "literal":
            name = "".join(str(v).capitalize() for v in t.of)[:40] or "Empty"
            self.defs.setdefault(name, {"enum": list(t.of), "title": name, "type": "string"})
            return {"$ref": f"#/$defs/{name}"}
        if t.kind == "optional":
            return {"anyOf": [self._bare(t.of[0]), {"type": "null"}]}
        if t.kind == "union":
            return {"anyOf": [self._bare(member) for member in t.of]}
        assert t.model is not None
        self.model(t.model)
        return {"$ref": f"#/$defs/{t.model.name}"}

    def model(self, m: Model) -> None:
        if m.name in self.defs:
            return
        self.defs[m.name] = {}  # placeholder: recursion refers to it
        schema = self.object(m.fields, m.name)
        if m.recursive_field:
            schema["properties"][m.recursive_field] = {
                "items": {"$ref": f"#/$defs/{m.name}"},
                "title": _title(m.recursive_field),
                "type": "array",
            }
        if m.closed:
            schema["additionalProperties"] = False
        self.defs[m.name] = schema

    def object(self, params: tuple[P, ...], title: str) -> JsonDict:
        props: JsonDict = {}
        required = []
        for p in params:
            prop = self.type(p.type, _title(p.name))
            if p.description:
                prop["description"] = p.description
            if not p.required:
                prop["default"] = p.default
            else:
                required.append(p.name)
            props[p.name] = prop
        out: JsonDict = {"properties": props}
        if required:
            out["required"] = required
        out["title"] = title
        out["type"] = "object"
        return out

    def tool(self, tool: Tool) -> JsonDict:
        schema = self.object(tool.params, f"{tool.name}Arguments")
        if self.defs:
            schema = {"$defs": self.defs, **schema}
        return schema


class _Zod:
    """zod-to-json-schema shapes (its default draft-07 target)."""

    style = "zod"

    def type(self, t: T) -> JsonDict:
        if t.kind in ("str", "int", "float", "bool", "null"):
            out: JsonDict = {
                "type": {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "null": "null"}[
                    t.kind
                ]
            }
            out.update(t.constraints)
            return out
        if t.kind == "any":
            return {}
        if t.kind == "list":
            return {"type": "array", "items": self.type(t.of[0]), **dict(t.constraints)}
        if t.kind == "dict":
            return {"type": "object", "additionalProperties": self.type(t.of[0])}
        if t.kind == "literal":
            return {"type": "string", "enum": list(t.of)}
        if t.kind == "optional":
            inner = self.type(t.of[0])
            if set(inner) == {"type"} and isinstance(inner["type"], str):
                return {"type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]}
        if t.kind == "union":
            return {"anyOf": [self.type(member) for member in t.of]}
        assert t.model is not None
        return self.model(t.model, depth=0)

    def model(self, m: Model, depth: int) -> JsonDict:
        out = self.object(m.fields)
        if m.recursive_field:
            # zod-to-json-schema points recursion at the first occurrence's path
            out["properties"][m.recursive_field] = {"type": "array", "items": {"$ref": "#/properties/root"}}
        return out

    def object(self, params: tuple[P, ...]) -> JsonDict:
        props: JsonDict = {}
        required = []
        for p in params:
            prop = self.type(p.type)
            if p.description:
                prop["description"] = p.description
            if not p.required and p.default is not None:
                prop["default"] = p.default
            if p.required:
                required.append(p.name)
            props[p.name] = prop
        out: JsonDict = {"type": "object", "properties": props}
        if required:
            out["required"] = required
        out["additionalProperties"] = False
        return out

    def tool(self, tool: Tool) -> JsonDict:
        schema = self.object(tool.params)
        return {**schema, "$schema": "http://json-schema.org/draft-07/schema#"}


class _Mcp:
    """Hand-written MCP server shapes: terse, description-heavy, open objects."""

    style = "mcp"

    def type(self, t: T) -> JsonDict:
        if t.kind in ("str", "int", "float", "bool", "null"):
            out: JsonDict = {
                "type": {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "null": "null"}[
                    t.kind
                ]
            }
            out.update(t.constraints)
            return out
        if t.kind == "any":
            return {"description": "Any JSON value"}
        if t.kind == "list":
            return {"type": "array", "items": self.type(t.of[0]), **dict(t.constraints)}
        if t.kind == "dict":
            return {"type": "object", "additionalProperties": self.type(t.of[0])}
        if t.kind == "literal":
            return {"type": "string", "enum": list(t.of)}
        if t.kind == "optional":
            inner = self.type(t.of[0])
            if isinstance(inner.get("type"), str):
                return {**inner, "type": [inner["type"], "null"]}
            return {"oneOf": [inner, {"type": "null"}]}
        if t.kind == "union":
            return (
                {"oneOf": [self.type(member) for member in t.of]}
                if _disjoint(t.of)
                else {"anyOf": [self.type(member) for member in t.of]}
            )
        assert t.model is not None
        out = self.object(t.model.fields)
        if t.model.recursive_field:
            out["properties"][t.model.recursive_field] = {"type": "array", "items": {"$ref": "#/$defs/node"}}
        return out

    def object(self, params: tuple[P, ...]) -> JsonDict:
        props: JsonDict = {}
        required = []
        for p in params:
            prop = self.type(p.type)
            prop.setdefault("description", p.description or _title(p.name))
            if p.required:
                required.append(p.name)
            props[p.name] = prop
        out: JsonDict = {"type": "object", "properties": props}
        if required:
            out["required"] = required
        return out

    def tool(self, tool: Tool) -> JsonDict:
        schema = self.object(tool.params)
        if any(p.type.model is not None and p.type.model.recursive_field for p in tool.params):
            tree = next(p.type.model for p in tool.params if p.type.model is not None and p.type.model.recursive_field)
            node = self.object(tree.fields)
            node["properties"][tree.recursive_field] = {"type": "array", "items": {"$ref": "#/$defs/node"}}
            schema["$defs"] = {"node": node}
        return schema


def _disjoint(members: tuple[T, ...]) -> bool:
    kinds = [m.kind for m in members]
    return len(set(kinds)) == len(kinds) and not ({"int", "float"} <= set(kinds))


# --- sample arguments ----------------------------------------------------------------------------

_FORMAT_SAMPLES = {
    "email": "ada@example.com",
    "uri": "https://example.com/a",
    "date-time": "2026-12-01T10:00:00Z",
    "date": "2026-12-01",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
}


def _sample(t: T, variant: int) -> Any:
    """A value of ``t`` meeting its constraints (``variant`` picks among a few)."""
    c = dict(t.constraints)
    if t.kind == "str":
        if "format" in c:
            return _FORMAT_SAMPLES[c["format"]]
        if "pattern" in c:
            return {
                "^[0-9]{5}$": "12345",
                "^#[0-9a-fA-F]{6}$": "#a0b1c2",
                "^https?://": "https://example.com",
                "^\\+?[0-9 ()-]{7,20}$": "+1 555 0100",
                "^[a-z_][a-z0-9_]*$": "users",
                "^[a-z]{2}(-[A-Z]{2})?$": "de-CH",
            }[c["pattern"]]
        text = ["alpha", "a longer piece of text", "ünïcode ✓"][variant % 3]
        return text[: c.get("maxLength", len(text))] or "x"
    if t.kind == "int":
        low = c.get("minimum", c.get("exclusiveMinimum", -1) + 1)
        value = max(low, [5, 10, 1][variant % 3])
        value = min(value, c.get("maximum", value))
        if "multipleOf" in c:
            value -= value % c["multipleOf"]
            value = max(value, low + (-low) % c["multipleOf"])
        return value
    if t.kind == "float":
        value = [2.5, 10.0, 0.5][variant % 3]
        if "maximum" in c:
            value = min(value, c["maximum"])
        if "minimum" in c:
            value = max(value, c["minimum"])
        return value
    if t.kind == "bool":
        return variant % 2 == 0
    if t.kind == "null":
        return None
    if t.kind == "any":
        return [{"nested": [1, "two", None]}, 3, "text"][variant % 3]
    if t.kind == "list":
        count = max(c.get("minItems", 0), 1 + variant % 2)
        count = min(count, c.get("maxItems", count))
        items = [_sample(t.of[0], variant + k) for k in range(count)]
        if c.get("uniqueItems"):
            unique: list[Any] = []
            for item in items:
                if item not in unique:
                    unique.append(item)
            items = unique
        return items
    if t.kind == "dict":
        return {"alpha": _sample(t.of[0], variant), "beta": _sample(t.of[0], variant + 1)}
    if t.kind == "literal":
        return t.of[variant % len(t.of)]
    if t.kind == "optional":
        return None if variant % 2 else _sample(t.of[0], variant)
    if t.kind == "union":
        return _sample(t.of[variant % len(t.of)], variant)
    assert t.model is not None
    return _model_sample(t.model, variant, depth=2)


def _model_sample(m: Model, variant: int, depth: int) -> JsonDict:
    out = {p.name: _sample(p.type, variant) for p in m.fields if p.required or variant % 2 == 0}
    if m.recursive_field and depth > 0:
        out[m.recursive_field] = [_model_sample(m, variant + 1, depth - 1)]
    return out


def _valid(tool: Tool) -> list[JsonDict]:
    sets = []
    for variant in range(3):
        sets.append({p.name: _sample(p.type, variant) for p in tool.params if p.required or variant != 1})
    return sets


def _wrong_type(t: T) -> Any:
    if t.kind in ("str", "literal"):
        return 12345
    if t.kind in ("int", "float"):
        return "not a number"
    if t.kind == "bool":
        return "yes"
    if t.kind == "list":
        return {"not": "a list"}
    if t.kind in ("dict", "model"):
        return ["not", "an", "object"]
    if t.kind == "optional":
        return _wrong_type(t.of[0]) if t.of[0].kind != "any" else None
    return None


def _violating(t: T) -> Any:
    """A value of the right type that breaks one of ``t``'s constraints, or None."""
    c = dict(t.constraints)
    if t.kind == "str":
        if "minLength" in c:
            return ""
        if "maxLength" in c:
            return "x" * (c["maxLength"] + 1)
        if "pattern" in c:
            return "!!"
    if t.kind in ("int", "float"):
        if "minimum" in c:
            return c["minimum"] - 1
        if "exclusiveMinimum" in c:
            return c["exclusiveMinimum"]
        if "maximum" in c:
            return c["maximum"] + 1
    if t.kind == "int":
        return 1.5
    if t.kind == "literal":
        return "not-a-choice"
    if t.kind == "list" and "minItems" in c:
        return []
    if t.kind == "list" and "maxItems" in c:
        return [_sample(t.of[0], k) for k in range(c["maxItems"] + 1)]
    return None


def _invalid(tool: Tool, style: str) -> list[JsonDict]:
    base = _valid(tool)[0]
    out: list[JsonDict] = []
    required = [p for p in tool.params if p.required]
    if required:
        broken = dict(base)
        del broken[required[0].name]
        out.append(broken)
    for p in tool.params:
        wrong = _wrong_type(p.type)
        if wrong is not None and p.type.kind != "any":
            out.append({**base, p.name: wrong})
            break
    for p in tool.params:
        bad = _violating(p.type)
        if bad is not None:
            out.append({**base, p.name: bad})
            break
    if style == "zod":
        out.append({**base, "unexpected_key": 1})  # zod objects are closed
    if not out:
        out.append(["arguments", "must", "be", "an", "object"])  # type: ignore[arg-type]
    return out


def corpus() -> list[CorpusCase]:
    """Every corpus case: 3 styles x the signatures in :data:`TOOLS` (deterministic)."""
    cases: list[CorpusCase] = []
    for tool in TOOLS:
        for emitter in (_Pydantic(), _Zod(), _Mcp()):
            schema = emitter.tool(tool)
            if emitter.style == "zod" and any(
                p.type.model is not None and p.type.model.recursive_field for p in tool.params
            ):
                root = next(p.name for p in tool.params if p.type.model is not None and p.type.model.recursive_field)
                schema = _retarget(schema, f"#/properties/{root}")
            cases.append(
                (f"{emitter.style}/{tool.name}", schema, copy.deepcopy(_valid(tool)), _invalid(tool, emitter.style))
            )
    return cases


def _retarget(schema: JsonDict, target: str) -> JsonDict:
    """Point zod's recursion refs (written against ``root``) at the real first occurrence."""
    text_stack: list[Any] = [schema]
    while text_stack:
        node = text_stack.pop()
        if isinstance(node, dict):
            if node.get("$ref") == "#/properties/root":
                node["$ref"] = target
            text_stack.extend(node.values())
        elif isinstance(node, list):
            text_stack.extend(node)
    return schema
