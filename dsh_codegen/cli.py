"""The ``dsh-codegen`` command (layer 7)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

__all__ = ["main"]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dsh-codegen", description="dsh_codegen command-line tools.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="run the main demonstration job")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "demo":
        from dsh_codegen._demo import run_demo

        return run_demo()
    raise AssertionError(f"unhandled command {args.command!r}")
