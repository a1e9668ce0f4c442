"""Our keyword vectors (tests/schema/vectors, the JSON-Schema-Test-Suite file shape), on the running twin.

``vectors/*.json`` hold 2020-12 semantics and are checked against
``jsonschema.Draft202012Validator`` as the oracle as well as our validator.
``vectors/dialect/*.json`` pin where docs/schema.md decides differently from Python
``jsonschema`` (decimal ``multipleOf``, ECMA-262 ``pattern`` meaning) or opts in
(``formats.json`` runs with ``formats=True``); there our vectors are the spec.
Every invalid case must also produce at least one violation, rooted at ``value``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dsh_codegen.schema import compile_validator

HERE = Path(__file__).parent / "vectors"


def _cases(folder: Path) -> list[Any]:
    out = []
    for path in sorted(folder.glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            for test in group["tests"]:
                out.append(
                    pytest.param(
                        path.stem,
                        group["schema"],
                        test["data"],
                        test["valid"],
                        id=f"{path.stem}: {group['description']}: {test['description']}",
                    )
                )
    return out


SUITE = _cases(HERE)
DIALECT = _cases(HERE / "dialect")


def test_every_keyword_file_is_present() -> None:
    names = {path.stem for path in HERE.glob("*.json")}
    assert len(SUITE) > 140
    for keyword in (
        "type",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "items",
        "prefixItems",
        "minItems",
        "uniqueItems",
        "contains",
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
        "propertyNames",
        "dependentRequired",
        "anyOf",
        "oneOf",
        "allOf",
        "ref",
        "anchor",
        "boolean_schema",
        "annotations",
    ):
        assert keyword in names


def _check(schema: Any, data: Any, valid: bool, formats: bool = False) -> None:
    validator = compile_validator(schema, formats=formats)
    assert validator.is_valid(data) is valid
    found = validator.violations(data)
    if valid:
        assert found == []
    else:
        assert found and all('"value' in v.message for v in found), found


@pytest.mark.parametrize(("file", "schema", "data", "valid"), SUITE)
def test_vector(file: str, schema: Any, data: Any, valid: bool) -> None:
    assert jsonschema.Draft202012Validator(schema).is_valid(data) is valid, "the vector disagrees with the oracle"
    _check(schema, data, valid)


@pytest.mark.parametrize(("file", "schema", "data", "valid"), DIALECT)
def test_dialect_vector(file: str, schema: Any, data: Any, valid: bool) -> None:
    _check(schema, data, valid, formats=file == "formats")


def test_formats_are_annotations_by_default() -> None:
    validator = compile_validator({"format": "email"})
    assert validator.is_valid("not an email")
    assert [str(v) for v in compile_validator({"format": "email"}, formats=True).violations("x")] == [
        '"value" must match format "email"'
    ]
