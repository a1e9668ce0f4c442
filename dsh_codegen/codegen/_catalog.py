"""Tool catalogs: the entry type, loading from JSON, and the canonical form.

A catalog is a list of :class:`ToolSchemaEntry`. Renderers sort it by name
themselves, so callers may pass any order. The canonical form (compact JSON of
the entries sorted by name, each entry's key order kept) is what the header of
a generated file hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh_codegen.codegen._jsontext import JsonTextError, dumps_compact
from dsh_codegen.json import format_path, quote_path

__all__ = [
    "CatalogError",
    "ToolSchemaEntry",
    "canonical_catalog_json",
    "catalog_from_json",
    "catalog_sha256",
    "load_catalog",
    "read_catalog_json",
    "sorted_catalog",
]


class CatalogError(ValueError):
    """Raised when a catalog file or value is not a list of tool entries.

    The message names the source (a file path or ``<catalog>``) and the JSON
    path of the offending part, e.g. ``tools.json: "[3].name" must be a string``.
    """

    def __init__(self, source: str, message: str) -> None:
        super().__init__(f"{source}: {message}")
        self.source = source
        self.detail = message


@dataclass(frozen=True, slots=True)
class ToolSchemaEntry:
    """One tool as the code generator sees it.

    ``parameters`` and ``output_schema`` are JSON-Schema values (normally
    inside the supported subset); anything else degrades to ``unknown`` /
    ``Any`` when rendered. ``output_schema=None`` means the tool returns any
    JSON value. ``name`` and ``description`` must be strings (checked here so
    that every renderer can rely on it).
    """

    name: str
    description: str
    parameters: Any
    output_schema: Any = None

    def __post_init__(self) -> None:
        if type(self.name) is not str:
            raise TypeError(f"ToolSchemaEntry.name must be a str, got {type(self.name).__name__}")
        if type(self.description) is not str:
            raise TypeError(
                f"ToolSchemaEntry({self.name!r}).description must be a str, got {type(self.description).__name__}"
            )


_FIELDS = ("name", "description", "parameters", "output_schema")


def _reject_constant(token: str) -> Any:
    # json.loads accepts NaN/Infinity by default; they are not JSON.
    raise ValueError(f"{token} is not valid JSON")


def catalog_from_json(data: object, *, source: str = "<catalog>") -> list[ToolSchemaEntry]:
    """Build a catalog from a parsed JSON value (a list of tool objects).

    Each item is an object with a string ``name``, an optional string
    ``description`` (default ``""``), an optional ``parameters`` object
    (default ``{"type": "object"}``) and an optional ``output_schema`` object
    (absent or ``null``: any JSON). Unknown keys are rejected so that typos do
    not silently drop a schema. Duplicate names are rejected.

    Raises :class:`CatalogError` naming ``source`` and the JSON path.
    """
    if not isinstance(data, list):
        raise CatalogError(source, f"the catalog must be a JSON array of tool objects, got {_kind(data)}")
    entries: list[ToolSchemaEntry] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(data):
        where = format_path([index])
        if not isinstance(item, dict):
            raise CatalogError(source, f"{quote_path(where)} must be an object, got {_kind(item)}")
        for key in item:
            if key not in _FIELDS:
                raise CatalogError(
                    source,
                    f"{quote_path(format_path([index, str(key)]))} is not a catalog field "
                    f"(known: {', '.join(_FIELDS)})",
                )
        name = item.get("name")
        if not isinstance(name, str):
            raise CatalogError(source, f"{quote_path(format_path([index, 'name']))} must be a string")
        if name in seen:
            raise CatalogError(
                source,
                f"{quote_path(format_path([index, 'name']))} repeats the tool name {quote_path(name)} "
                f"already used at {quote_path(format_path([seen[name]]))}",
            )
        seen[name] = index
        description = item.get("description", "")
        if not isinstance(description, str):
            raise CatalogError(source, f"{quote_path(format_path([index, 'description']))} must be a string")
        parameters = item.get("parameters", {"type": "object"})
        if not isinstance(parameters, dict):
            raise CatalogError(source, f"{quote_path(format_path([index, 'parameters']))} must be an object")
        output_schema = item.get("output_schema")
        if output_schema is not None and not isinstance(output_schema, dict):
            raise CatalogError(source, f"{quote_path(format_path([index, 'output_schema']))} must be an object or null")
        entries.append(ToolSchemaEntry(name, description, parameters, output_schema))
    return entries


def load_catalog(path_or_text: str | os.PathLike[str]) -> list[ToolSchemaEntry]:
    """Load a catalog from a file path or from JSON text.

    A ``PathLike`` is always a path. A ``str`` whose first non-blank character
    is ``[`` is JSON text; any other ``str`` is a path. Raises
    :class:`CatalogError` naming the file (or ``<catalog>`` for text) and the
    JSON path; an unreadable file raises it too (with the OS reason).
    """
    source, document = read_catalog_json(path_or_text)
    return catalog_from_json(document, source=source)


def read_catalog_json(path_or_text: str | os.PathLike[str], *, openers: str = "[") -> tuple[str, object]:
    """``(source, document)``: the parsed JSON of a catalog given as a path or as JSON text.

    A ``PathLike`` is always a path. A ``str`` whose first non-blank character
    is one of ``openers`` is the JSON text itself (source ``<catalog>``); any
    other ``str`` is a path, read as strict UTF-8. The JSON is parsed strictly
    (no ``NaN``/``Infinity``); the document is returned as parsed, unchecked
    (:func:`catalog_from_json` checks a catalog's shape; other formats, such as
    an MCP ``tools/list`` answer, have their own readers).

    Raised errors: :class:`CatalogError` naming the file (or ``<catalog>``):
    unreadable, not UTF-8, or invalid JSON with its line and column.
    """
    source, text = read_catalog_text(path_or_text, openers=openers)
    return source, parse_json_text(text, source)


def read_catalog_text(path_or_text: str | os.PathLike[str], *, openers: str) -> tuple[str, str]:
    """``(source, text)`` of a catalog given as a path or as JSON text.

    A ``str`` whose first non-blank character is one of ``openers`` is the
    text itself (source ``<catalog>``); anything else is a path, read as
    strict UTF-8. Raised errors: :class:`CatalogError` naming the file.
    """
    if isinstance(path_or_text, str) and path_or_text.lstrip()[:1] in tuple(openers):
        return "<catalog>", path_or_text
    path = Path(path_or_text)
    source = str(path)
    try:
        return source, path.read_text(encoding="utf-8")
    except OSError as error:
        raise CatalogError(source, f"cannot read the catalog: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise CatalogError(source, f"the catalog is not UTF-8 text ({error.reason} at byte {error.start})") from None


def parse_json_text(text: str, source: str) -> object:
    """Parse JSON text strictly (no NaN/Infinity); errors name ``source``, line and column."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise CatalogError(source, f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}") from None
    except ValueError as error:
        raise CatalogError(source, f"invalid JSON: {error}") from None
    except RecursionError:
        # The stdlib parser recurses; report the limit instead of a traceback.
        raise CatalogError(source, "invalid JSON: nesting is too deep for the JSON parser") from None


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _sort_key(entry: ToolSchemaEntry) -> tuple[str, str]:
    # Names are unique in a registry; the second key only makes duplicate
    # names (a hand-built list) order-independent too.
    try:
        tie = dumps_compact(_entry_value(entry))
    except JsonTextError:
        tie = ""
    return (entry.name, tie)


def sorted_catalog(catalog: Iterable[ToolSchemaEntry]) -> list[ToolSchemaEntry]:
    """The entries sorted by name (code-point order), then by canonical text."""
    entries = list(catalog)
    if len({entry.name for entry in entries}) == len(entries):
        return sorted(entries, key=lambda entry: entry.name)
    return sorted(entries, key=_sort_key)


def _entry_value(entry: ToolSchemaEntry) -> dict[str, object]:
    return {
        "name": entry.name,
        "description": entry.description,
        "parameters": entry.parameters,
        "output_schema": entry.output_schema,
    }


def canonical_catalog_json(catalog: Iterable[ToolSchemaEntry]) -> str:
    """Compact JSON of the entries sorted by name, key order kept.

    Raises :class:`JsonTextError` (a ``ValueError``) naming the path of a part
    that is not lossless JSON (NaN, a cycle, a non-``str`` key, ...).
    """
    entries = sorted_catalog(catalog)
    return dumps_compact([_entry_value(entry) for entry in entries])


def catalog_sha256(catalog: Iterable[ToolSchemaEntry]) -> str:
    """Hex sha256 of :func:`canonical_catalog_json` encoded as UTF-8."""
    return hashlib.sha256(canonical_catalog_json(catalog).encode("utf-8")).hexdigest()
