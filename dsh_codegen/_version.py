"""The package version, in one place: pyproject.toml reads it, CHANGELOG.md names it (a test keeps them equal)."""

__version__ = "0.1.0"
