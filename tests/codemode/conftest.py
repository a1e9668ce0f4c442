"""Every runtime test fails if a process started from the child script outlives it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _runtime_helpers import leaked_processes, our_processes


@pytest.fixture(autouse=True)
def no_leaked_processes() -> Iterator[None]:
    before = our_processes()
    yield
    leaked = leaked_processes(before)
    assert leaked == [], f"processes left behind: {leaked}"
