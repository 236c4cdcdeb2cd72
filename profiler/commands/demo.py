"""`offload-prof demo`: record the RAJAPerf suite on the naive and the batched path and open them side by side.

The recording is `profiler.sources.suite.record_suite`; this module picks
its defaults and shows the result as `tui` does (the TUI, or the
comparison as text without a terminal).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ProfilerError
from .common import add_view_arguments, show

NAME = "demo"
HELP = "record the RAJAPerf suite on the naive and the batched path and open them side by side"

#: small enough for a few seconds on the NumPy backend, varied enough to show every view
DEFAULT_KERNELS = ("TRIAD", "DAXPY", "JACOBI_2D", "GEMM", "ATAX")
DEFAULT_SIZE_FACTOR = 0.2
DEFAULT_REPS = 50


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernels", nargs="+", default=list(DEFAULT_KERNELS), metavar="NAME",
                   help=f"suite kernels or groups (Stream, Basic, Apps, Polybench, all); default: {' '.join(DEFAULT_KERNELS)}")
    p.add_argument("--size-factor", type=float, default=DEFAULT_SIZE_FACTOR,
                   help="problem size as a fraction of RAJAPerf's default (default: %(default)s)")
    p.add_argument("--reps", type=int, default=DEFAULT_REPS, help="reps per kernel (default: %(default)s)")
    p.add_argument("--backend", choices=("auto", "numpy", "cupy"), help="backend (default: OFFLOAD_BACKEND or auto)")
    p.add_argument("-o", "--output", default="offload-demo.json",
                   help="trace name: writes NAME.naive.json and NAME.batched.json (default: %(default)s)")
    p.add_argument("--fingerprints", action="store_true",
                   help="digest copied bytes (enables OFF502/OFF503; adds a pass over every copy to the wall time)")
    add_view_arguments(p)
    p.epilog = "Opens the TUI on both traces; without a terminal (or with --no-tui) prints the comparison."


def execute(args: argparse.Namespace) -> int:
    import offload_core
    from offload_core.errors import OffloadError

    from ..sources.suite import record_suite

    if not args.size_factor > 0 or args.reps < 1:
        raise ProfilerError("--size-factor must be positive and --reps at least 1")
    output = Path(args.output)
    if output.is_dir():
        raise ProfilerError(f"{output}: is a directory; give a trace name such as {output / 'demo.json'}")
    try:
        if args.backend:
            offload_core.set_backend(args.backend)
    except (OffloadError, ValueError) as exc:
        raise ProfilerError(str(exc)) from None
    result = record_suite(args.kernels, args.size_factor, args.reps, fingerprints=args.fingerprints, output=output,
                          command=["offload-prof", *args.raw_argv],
                          progress=lambda m: print(f"offload-prof demo: {m}", file=sys.stderr, flush=True))
    naive, batched = (str(p) for p in result.paths)
    for run, path in ((result.naive, naive), (result.batched, batched)):
        launches = sum(1 for r in run.records if r.kind == "launch")
        print(f"offload-prof demo: wrote {path} ({len(run.records):,} records, {launches:,} launches)",
              file=sys.stderr)
    print(f"offload-prof demo: open them again with: offload-prof tui {naive} {batched}", file=sys.stderr, flush=True)
    return show([result.naive, result.batched], [naive, batched], args)
