"""Layer 2, the schema core: the JSON-Schema subset, the authoring DSL and the compiled validator.

Re-exports only (see DESIGN.md and docs/schema.md).
"""

from dsh_codegen.schema._compile import assert_object_json_schema, assert_supported_json_schema
from dsh_codegen.schema._dsl import (
    JsonSchema,
    JsonValue,
    ParameterSchemaSpec,
    PropertySchemaSpec,
    ValueSchemaSpec,
    parameter_schema_spec_to_json_schema,
    value_schema_spec_to_json_schema,
)
from dsh_codegen.schema._errors import JsonSchemaError, ToolArgsError
from dsh_codegen.schema._shared import Violation
from dsh_codegen.schema._validator import (
    CompiledValidator,
    compile_validator,
    validate_args,
    validate_json_schema_value,
)

__all__ = [
    "CompiledValidator",
    "JsonSchema",
    "JsonSchemaError",
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
    "validate_args",
    "validate_json_schema_value",
    "value_schema_spec_to_json_schema",
]
