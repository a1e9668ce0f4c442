"""The execution pipeline, one module per stage group; :mod:`._run` declares the order."""

from dsh_codegen.registry.pipeline._hooks import CallSettle, run_hooked
from dsh_codegen.registry.pipeline._run import PIPELINE_STAGES, run_pipeline

__all__ = ["PIPELINE_STAGES", "CallSettle", "run_hooked", "run_pipeline"]
