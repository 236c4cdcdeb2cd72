"""`offload-lint server`: the linter as a Language Server over stdio, for editors.

The protocol side needs pygls (the `lsp` extra: `pip install
'offload-guard[lsp]'`); this module checks for it before anything imports
it, so that without it the command says so in one line and exits 2, and
`import linter.server` loads neither pygls nor LibCST. The server itself
is in app.py; positions.py converts positions, projects.py finds each
document's configuration and lints it, messages.py turns findings into
diagnostics, code actions and hover text.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

DEBOUNCE_MS = 300


def _milliseconds(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--debounce-ms needs a whole number of milliseconds, got {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"--debounce-ms cannot be negative, got {n}")
    return n


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="offload-lint server",
        description="Run offload-lint as a Language Server on stdin/stdout (for editors): diagnostics on open and "
        "change, code actions for the fixes, hover text from the rule catalog. Configuration: the nearest "
        "pyproject.toml with [tool.offload-lint] above each file, as for `offload-lint`.",
    )
    p.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default and only transport)")
    p.add_argument("--debounce-ms", type=_milliseconds, default=DEBOUNCE_MS, metavar="MS",
                   help=f"lint this long after the last change (default: {DEBOUNCE_MS})")
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        sys.stderr.write("offload-lint: the language server needs pygls; install it with "
                         "`pip install 'offload-guard[lsp]'`\n")
        return 2
    from .app import serve

    return serve(args.debounce_ms / 1000)
