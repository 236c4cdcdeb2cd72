"""The `offload-prof` commands, one module each, and `COMMANDS`, the list `profiler.cli` builds its parser from.

A command module holds `NAME`, `HELP`, `add_arguments(parser)` and
`execute(args) -> int` (the exit status), and imports only the standard
library and `profiler.errors` at module level: building the parser (for
`--help`, or to run any one command) must not load NumPy, Textual or the
offload_core runtime. Everything a command needs it imports when it runs.
Adding a command is one module and one entry below; nothing registers
itself by being imported.
"""

from __future__ import annotations

import argparse
from typing import Protocol

from . import calibrate, compare, demo, export, gate, import_rocprof, links, merge, recover, report, run, tui


class Command(Protocol):
    """What `profiler.cli` needs of a command module."""

    NAME: str
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def execute(self, args: argparse.Namespace) -> int: ...


#: in the order `offload-prof --help` lists them
COMMANDS: tuple[Command, ...] = (run, report, compare, export, calibrate, links, gate, merge, recover, import_rocprof, tui,
                                  demo)
