"""linter: LibCST checks for transfer and ownership anti-patterns (see docs/design.md).

`offload-lint` (or `python -m linter`) is the command; `linter.cli.main` its
entry point. The package reads the rule catalog through
`offload_core.catalog` and never imports the profiler or Textual.
"""

from __future__ import annotations

from . import interrupt

if interrupt.as_command():  # first of all: Ctrl-C while the command loads is one line (see interrupt.py)
    interrupt.install()

from importlib import metadata  # noqa: E402

try:
    __version__ = metadata.version("offload-guard")
except metadata.PackageNotFoundError:  # a source tree that was not installed
    __version__ = "0.0.0+unknown"
