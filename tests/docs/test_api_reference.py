"""The API reference (docs/api/) documents every public name, and the docs site names every page (issue 39)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"

pytestmark = pytest.mark.once

#: Each public package with an ``__all__``, and the API page that documents it.
PAGES = {
    "dsh_codegen.json": "json.md",
    "dsh_codegen.schema": "schema.md",
    "dsh_codegen.codegen": "codegen.md",
    "dsh_codegen.registry": "registry.md",
    "dsh_codegen.registry.views": "views.md",
    "dsh_codegen.registry.cancel": "cancel.md",
    "dsh_codegen.registry.policies": "policies.md",
    "dsh_codegen.registry.scheduler": "scheduler.md",
    "dsh_codegen.registry.code_runtime": "code_runtime.md",
    "dsh_codegen.codemode": "codemode.md",
    "dsh_codegen.adapters": "adapters.md",
    "dsh_codegen.otel": "otel.md",
}


def _documented(page: str) -> list[str]:
    return re.findall(r"^::: ([\w.]+)$", (API / page).read_text(encoding="utf-8"), re.MULTILINE)


@pytest.mark.parametrize("package", sorted(PAGES))
def test_every_public_name_of_a_package_has_its_entry(package: str) -> None:
    names = importlib.import_module(package).__all__
    assert _documented(PAGES[package]) == [f"{package}.{name}" for name in names], (
        f"docs/api/{PAGES[package]} must list `::: {package}.<name>` for each name of {package}.__all__, in order"
    )


def test_every_top_level_name_is_documented_once() -> None:
    import dsh_codegen

    documented = {entry.rsplit(".", 1)[1] for page in PAGES.values() for entry in _documented(page)}
    documented |= {entry.rsplit(".", 1)[1] for entry in _documented("index.md")}
    assert set(dsh_codegen.__all__) <= documented, sorted(set(dsh_codegen.__all__) - documented)
    # Every public package of the source tree is in the table above.
    packages = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
        for path in (ROOT / "dsh_codegen").rglob("__init__.py")
        if not any(part.startswith("_") for part in path.relative_to(ROOT / "dsh_codegen").parts[:-1])
    }
    public_modules = {
        "dsh_codegen.registry.views",
        "dsh_codegen.registry.cancel",
        "dsh_codegen.registry.policies",
        "dsh_codegen.registry.scheduler",
        "dsh_codegen.registry.code_runtime",
    }
    assert packages - {"dsh_codegen", "dsh_codegen.registry.pipeline"} | public_modules == set(PAGES)


def test_the_site_lists_every_page() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {str(path.relative_to(ROOT / "docs")) for path in (ROOT / "docs").rglob("*.md")}
    listed = set(re.findall(r":\s+([\w/.-]+\.md)$", config, re.MULTILINE))
    assert pages == listed, (pages - listed, listed - pages)
