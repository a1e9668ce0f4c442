"""Layer package: re-exports only (see DESIGN.md)."""

__all__: list[str] = []
