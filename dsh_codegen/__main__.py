"""``python -m dsh_codegen`` is the ``dsh-codegen`` command."""

from __future__ import annotations

import sys

from dsh_codegen.cli import main

if __name__ == "__main__":
    sys.exit(main())
