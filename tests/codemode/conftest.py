"""Every runtime test fails if a process started from the child script outlives it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _runtime_helpers import our_processes


@pytest.fixture(autouse=True)
def no_leaked_processes() -> Iterator[None]:
    before = set(our_processes())
    yield
    leaked = [line for line in our_processes() if line not in before]
    assert leaked == [], f"processes left behind: {leaked}"
