"""The execution pipeline, one module per stage group; :mod:`._run` declares the order."""

from dsh_codegen.registry.pipeline._hooks import CallSettle, run_hooked
from dsh_codegen.registry.pipeline._reads import RegistryReads
from dsh_codegen.registry.pipeline._run import PIPELINE_STAGES, run_pipeline

__all__ = ["PIPELINE_STAGES", "CallSettle", "RegistryReads", "run_hooked", "run_pipeline"]
