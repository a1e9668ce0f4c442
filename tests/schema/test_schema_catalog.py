"""The shared benchmark catalog: every schema is in the subset, every argument set gets its verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dsh_codegen.schema import assert_object_json_schema, assert_supported_json_schema, compile_validator

DATA = Path(__file__).resolve().parents[2] / "bench" / "data"
CATALOG: list[dict[str, Any]] = json.loads((DATA / "catalog60.json").read_text())
ARGS: list[dict[str, Any]] = json.loads((DATA / "catalog60_args.json").read_text())


def test_catalog_shape() -> None:
    assert 55 <= len(CATALOG) <= 65
    assert [tool["name"] for tool in CATALOG] == [entry["name"] for entry in ARGS]
    assert len({tool["name"] for tool in CATALOG}) == len(CATALOG)


@pytest.mark.parametrize("tool", CATALOG, ids=[tool["name"] for tool in CATALOG])
def test_catalog_tool(tool: dict[str, Any]) -> None:
    assert_object_json_schema(tool["parameters"])
    assert_supported_json_schema(tool["output_schema"])
    entry = ARGS[CATALOG.index(tool)]
    validator = compile_validator(tool["parameters"])
    oracle = jsonschema.Draft202012Validator(tool["parameters"])
    for args in entry["valid"]:
        assert validator.is_valid(args) and oracle.is_valid(args)
        assert validator.validate_args(args) == []
    for args in entry["invalid"]:
        assert not validator.is_valid(args) and not oracle.is_valid(args)
        violations = validator.validate_args(args)
        assert violations
        assert all(not v.message.startswith('"value') for v in violations)
