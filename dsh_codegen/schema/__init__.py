"""Layer 2, the schema core: the JSON-Schema subset, the authoring DSL and the compiled validator.

Re-exports only (house rule 4, docs/contributing.md; docs/schema.md). The names resolve on first
use (PEP 562): the compiled module ``dsh_codegen._schema_c`` imports this
package's ``_program`` and ``_dialect_walk`` while it initialises, so an eager re-export (which asks
the twin selector for that half-initialised module) would make importing
``dsh_codegen._schema_c`` first a circular import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh_codegen._lazy import lazy_exports

if TYPE_CHECKING:
    from dsh_codegen.schema._dsl import (
        JsonSchema,
        JsonSchemaNode,
        JsonSchemaObject,
        JsonValue,
        ParameterSchemaSpec,
        PropertySchemaSpec,
        ValueSchemaSpec,
        parameter_schema_spec_to_json_schema,
        value_schema_spec_to_json_schema,
    )
    from dsh_codegen.schema._errors import JsonSchemaError, ToolArgsError
    from dsh_codegen.schema._program import Violation
    from dsh_codegen.schema._strict_nulls import relax_strict_arguments
    from dsh_codegen.schema._validator import (
        ANNOTATION_KEYWORDS,
        CompiledValidator,
        assert_object_json_schema,
        assert_supported_json_schema,
        compile_validator,
        validate_args,
        validate_json_schema_value,
    )

#: Where each public name lives (the module under ``dsh_codegen.schema``). The layers above import
#: these names from here, never from the modules, so the modules may be renamed behind them.
_HOME: dict[str, str] = {
    "ANNOTATION_KEYWORDS": "_validator",
    "CompiledValidator": "_validator",
    "JsonSchema": "_dsl",
    "JsonSchemaError": "_errors",
    "JsonSchemaNode": "_dsl",
    "JsonSchemaObject": "_dsl",
    "JsonValue": "_dsl",
    "ParameterSchemaSpec": "_dsl",
    "PropertySchemaSpec": "_dsl",
    "ToolArgsError": "_errors",
    "ValueSchemaSpec": "_dsl",
    "Violation": "_program",
    "assert_object_json_schema": "_validator",
    "assert_supported_json_schema": "_validator",
    "compile_validator": "_validator",
    "parameter_schema_spec_to_json_schema": "_dsl",
    "relax_strict_arguments": "_strict_nulls",
    "validate_args": "_validator",
    "validate_json_schema_value": "_validator",
    "value_schema_spec_to_json_schema": "_dsl",
}

__all__: list[str] = [
    "ANNOTATION_KEYWORDS",
    "CompiledValidator",
    "JsonSchema",
    "JsonSchemaError",
    "JsonSchemaNode",
    "JsonSchemaObject",
    "JsonValue",
    "ParameterSchemaSpec",
    "PropertySchemaSpec",
    "ToolArgsError",
    "ValueSchemaSpec",
    "Violation",
    "assert_object_json_schema",
    "assert_supported_json_schema",
    "compile_validator",
    "parameter_schema_spec_to_json_schema",
    "relax_strict_arguments",
    "validate_args",
    "validate_json_schema_value",
    "value_schema_spec_to_json_schema",
]


__getattr__, __dir__ = lazy_exports(globals(), _HOME)
