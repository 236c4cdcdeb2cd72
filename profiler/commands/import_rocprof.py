"""`offload-prof import-rocprof RESULTS`: rocprofv3 JSON output (AMD GPUs) as a trace."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import DEFAULT_TRACE, check_writable, save_trace

NAME = "import-rocprof"
HELP = "convert rocprofv3 JSON output (AMD GPUs) into a trace for report, compare and gate"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="rocprofv3 JSON output (--output-format json), e.g. out/HOST/PID_results.json")
    p.add_argument("-o", "--output", default=DEFAULT_TRACE, help="trace file to write (default: %(default)s)")
    p.add_argument("--pid", type=int, help="the process to import when the file holds several")
    p.epilog = ("Record with: rocprofv3 --kernel-trace --memory-copy-trace --hip-runtime-trace --output-format json "
                "-d out -- python app.py")


def execute(args: argparse.Namespace) -> int:
    from ..sources.rocprof import load_rocprof

    output = Path(args.output)
    check_writable(output)
    run = load_rocprof(args.results, pid=args.pid, command=["offload-prof", *args.raw_argv])
    save_trace(run, output)
    from ..units import plural

    kinds = {k: sum(1 for _ in run.of_kind(k)) for k in ("h2d", "d2h", "launch", "sync")}
    print(f"offload-prof: wrote {output} ({plural(len(run.records), 'record')}: {kinds['h2d']} H2D, {kinds['d2h']} D2H, "
          f"{plural(kinds['launch'], 'launch', 'launches')}, {plural(kinds['sync'], 'sync')}; {run.meta.device})",
          file=sys.stderr)
    return 0
