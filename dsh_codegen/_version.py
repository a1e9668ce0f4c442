"""The package version, in one place (kept equal to ``pyproject.toml``)."""

__version__ = "0.1.0"
