"""`offload-prof export --chrome TRACE...`: Chrome Trace Event JSON, for Perfetto and chrome://tracing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import check_writable, load_trace, model_link

NAME = "export"
HELP = "convert traces to Chrome Trace Event JSON for Perfetto"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", metavar="TRACE", help="one or more traces (several become separate processes)")
    p.add_argument("--chrome", action="store_true", required=True,
                   help="write Chrome Trace Event JSON (opens in Perfetto and chrome://tracing)")
    p.add_argument("-o", "--output", help="output file (default: the first trace's name with .chrome.json)")


def execute(args: argparse.Namespace) -> int:
    from ..outputs.chrome import export
    from ..outputs.report import analyse

    runs = [load_trace(t) for t in args.traces]
    out = Path(args.output) if args.output else Path(args.traces[0]).with_suffix("").with_suffix(".chrome.json")
    check_writable(out)
    analysed = [analyse(run, model_link(run, None, False)) for run in runs]
    export(runs, out, findings=[f for f, _ in analysed], verdicts=[v for _, v in analysed])
    print(f"offload-prof: wrote {out} ({len(runs)} run(s)); open it at https://ui.perfetto.dev", file=sys.stderr)
    return 0
