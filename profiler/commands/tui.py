"""`offload-prof tui TRACE [TRACE]`: browse one trace, or the naive and batched traces side by side.

Without a terminal (stdout or stdin not a TTY, as in CI or a pipe) or with
`--no-tui`, it prints the text report the TUI would open on: `compare`
for two traces (then the headline sentence), `report` for one.
"""

from __future__ import annotations

import argparse

from ..errors import ProfilerError
from .common import add_view_arguments, load_trace, show

NAME = "tui"
HELP = "browse one trace, or the naive and batched traces side by side, in a terminal UI"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", metavar="TRACE", help="one trace, or two: NAIVE BATCHED (any first and second run)")
    add_view_arguments(p)
    p.epilog = ("Keys: 1-5 views, / filter, s sort, ? help, Ctrl+P commands, q quit. "
                "Without a terminal it prints `offload-prof compare` (or `report`) instead.")


def execute(args: argparse.Namespace) -> int:
    if len(args.traces) > 2:
        raise ProfilerError(f"tui shows one or two traces, got {len(args.traces)}")
    runs = [load_trace(p) for p in args.traces]
    return show(runs, list(args.traces), args)
