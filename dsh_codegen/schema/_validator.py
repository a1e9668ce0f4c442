"""Selects the schema layer's twin and builds the public validation functions on it.

The only module of the layer that knows which twin runs (docs/index.md, "The twins"): with
the compiled twin, the dialect check is ``dsh_codegen._dialect_check_c`` (``_ext/_dialect_check_c.pyx``,
the mirror of ``_dialect_check.py``) and the validator ``dsh_codegen._schema_c`` (``_ext/_schema_c.pyx``,
the mirror of ``_validator_py.py``); with the pure twin, ``_dialect_check`` and ``_validator_py``.
``_backend`` loads both or neither. Type checkers always see the Python twin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_codegen._backend import load_compiled
from dsh_codegen.schema._dsl import (
    looks_like_parameter_spec,
    parameter_schema_spec_to_json_schema,
)
from dsh_codegen.schema._program import Violation

_check_c = load_compiled("_dialect_check_c")
_validator_c = load_compiled("_schema_c")
if TYPE_CHECKING or _check_c is None or _validator_c is None:
    from dsh_codegen.schema._dialect_check import (
        ANNOTATION_KEYWORDS,
        assert_object_json_schema,
        assert_supported_json_schema,
        compile_program,
    )
    from dsh_codegen.schema._validator_py import CompiledValidator
else:
    ANNOTATION_KEYWORDS = _check_c.ANNOTATION_KEYWORDS
    assert_object_json_schema = _check_c.assert_object_json_schema
    assert_supported_json_schema = _check_c.assert_supported_json_schema
    compile_program = _check_c.compile_program
    CompiledValidator = _validator_c.CompiledValidator

__all__ = [
    "ANNOTATION_KEYWORDS",
    "CompiledValidator",
    "assert_object_json_schema",
    "assert_supported_json_schema",
    "compile_program",
    "compile_validator",
    "validate_args",
    "validate_json_schema_value",
]


def compile_validator(schema: object, *, formats: bool = False) -> CompiledValidator:
    """Check ``schema`` against the tool-schema dialect and compile it once for reuse.

    ``formats=True`` makes ``format`` an assertion for the formats docs/schema.md
    lists (date-time, date, time, email, uri, uuid, ipv4, ipv6, hostname); by
    default it is an annotation, as 2020-12 says.

    Raised errors: :class:`~dsh_codegen.schema.JsonSchemaError` (``UNSUPPORTED_SCHEMA``)
    listing every violation when ``schema`` is outside the dialect.
    """
    return CompiledValidator(compile_program(schema, formats))


def validate_json_schema_value(schema: object, value: object, path: str = "value") -> list[Violation]:
    """One-shot :meth:`CompiledValidator.violations`: every violation of ``value``, rooted at ``path``.

    Raised errors: :class:`~dsh_codegen.schema.JsonSchemaError` for an unsupported
    ``schema``; never for any ``value``.
    """
    return compile_validator(schema).violations(value, path)


def validate_args(spec_or_schema: object, args: object) -> list[Violation]:
    """Every violation of tool arguments ``args`` (``[]`` when valid); total in ``args``.

    ``spec_or_schema`` is a :data:`ParameterSchemaSpec` (a mapping of property
    name to property spec; ``{}`` is the empty one) or a raw JSON schema (it
    declares ``type`` or ``oneOf``). A root-level violation names the root
    ``"arguments"`` (``"arguments" must be an object``); deeper paths are unrooted
    (``"config.host" must be a string``, ``missing required property "config.host"``).

    Raised errors: none for any ``args`` whatsoever (hostile objects, cycles,
    subclasses, huge ints all become violations); :class:`JsonSchemaError` when
    ``spec_or_schema`` itself is unsupported (a programming error, not bad input).
    """
    if looks_like_parameter_spec(spec_or_schema):
        schema: object = parameter_schema_spec_to_json_schema(spec_or_schema)  # type: ignore[arg-type]
    else:
        schema = spec_or_schema
    return compile_validator(schema).validate_args(args)
