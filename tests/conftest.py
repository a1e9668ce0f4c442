"""Suite-wide settings.

The whole suite runs twice (``make test``): compiled, then with
``DSH_CODEGEN_PURE_PYTHON=1``. Tests marked ``once`` do not depend on the twin
and run only in the compiled pass. Hypothesis prints a reproduction blob for
every failure, and the seed is printed in the run header.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dsh",
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("DSH_HYPOTHESIS_PROFILE", "dsh"))


def pytest_report_header() -> list[str]:
    import dsh_codegen

    return [f"dsh_codegen backend: {dsh_codegen.backend()}"]
