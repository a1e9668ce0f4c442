"""``python -m dsh_codegen.codemode.child``: one Code Mode run over this process's stdin and stdout.

Any command that reaches a Python with ``dsh_codegen`` installed (``docker exec -i``,
``kubectl exec -i``, ``ssh``, a namespace launcher) can run a program for a host's
``CommandRuntime`` this way. Frames in on stdin, frames out on stdout, the program's
raw output on stderr, its exit status as this process's exit code; the protocol is
docs/codemode-protocol.md. The child is ``_child.py``'s ``stdio`` role (the same file
the local runtime runs, standard library only), so the two can never drift apart;
``python -I -S <that file> stdio`` is the same child without importing this package.
"""

from __future__ import annotations

if __name__ == "__main__":
    from dsh_codegen.codemode._child import stdio

    stdio()
