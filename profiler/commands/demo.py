"""`offload-prof demo`: record the RAJAPerf suite on the naive and the batched path and open them side by side.

The recording is `profiler.sources.suite.record_suite`; this module picks
its defaults and shows the result as `tui` does (the TUI, or the
comparison as text without a terminal). Each path is recorded several
times (`--repeats`) and the median kept, so that the time ratio the
headline shows does not follow one moment's machine load; the headline
gives the range over the repeats beside it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ProfilerError
from .common import add_view_arguments, check_writable, show

NAME = "demo"
HELP = "record the RAJAPerf suite on the naive and the batched path and open them side by side"

#: small enough for a few seconds on the NumPy backend, varied enough to show every view
DEFAULT_KERNELS = ("TRIAD", "DAXPY", "JACOBI_2D", "GEMM", "ATAX")
DEFAULT_SIZE_FACTOR = 0.2
DEFAULT_REPS = 20
#: recordings of each path; the median is kept and the range shown
DEFAULT_REPEATS = 5


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernels", nargs="+", default=list(DEFAULT_KERNELS), metavar="NAME",
                   help=f"suite kernels or groups (Stream, Basic, Apps, Polybench, all); default: {' '.join(DEFAULT_KERNELS)}")
    p.add_argument("--size-factor", type=float, default=DEFAULT_SIZE_FACTOR,
                   help="problem size as a fraction of RAJAPerf's default (default: %(default)s)")
    p.add_argument("--reps", type=int, default=DEFAULT_REPS, help="reps per kernel (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                   help="record each path this many times, keep the median and show the range (default: %(default)s)")
    p.add_argument("--backend", choices=("auto", "numpy", "cupy"), help="backend (default: OFFLOAD_BACKEND or auto)")
    p.add_argument("-o", "--output", default="offload-demo.json",
                   help="trace name: writes NAME.naive.json and NAME.batched.json, creating missing folders "
                        "(default: %(default)s)")
    p.add_argument("--fingerprints", action="store_true",
                   help="digest copied bytes (enables OFF502/OFF503; adds a pass over every copy to the wall time)")
    add_view_arguments(p)
    p.epilog = "Opens the TUI on both traces; without a terminal (or with --no-tui) prints the comparison."


def execute(args: argparse.Namespace) -> int:
    import offload_core
    from offload_core.errors import OffloadError

    from ..sources.suite import record_suite
    from ..units import plural

    if not args.size_factor > 0 or args.reps < 1 or args.repeats < 1:
        raise ProfilerError("--size-factor must be positive and --reps and --repeats at least 1")
    output = Path(args.output)
    if output.is_dir():
        raise ProfilerError(f"{output}: is a directory; give a trace name such as {output / 'demo.json'}")
    from ..trace.tracefile import both_paths

    for path in both_paths(output):  # the two files demo writes, each checked as it is (a symlink, a device)
        check_writable(path)
    try:
        if args.backend:
            offload_core.set_backend(args.backend)
    except (OffloadError, ValueError) as exc:
        raise ProfilerError(str(exc)) from None
    result = record_suite(args.kernels, args.size_factor, args.reps, repeats=args.repeats,
                          fingerprints=args.fingerprints, output=output,
                          command=["offload-prof", *args.raw_argv],
                          progress=lambda m: print(f"offload-prof demo: {m}", file=sys.stderr, flush=True))
    naive, batched = (str(p) for p in result.paths)
    for run, path in ((result.naive, naive), (result.batched, batched)):
        launches = sum(1 for r in run.records if r.kind == "launch")
        kept = f"; the median of {args.repeats} repeats" if args.repeats > 1 else ""
        print(f"offload-prof demo: wrote {path} ({plural(len(run.records), 'record')}, "
              f"{plural(launches, 'launch', 'launches')}{kept})", file=sys.stderr)
    print(f"offload-prof demo: open them again with: offload-prof tui {naive} {batched}", file=sys.stderr, flush=True)
    return show([result.naive, result.batched], [naive, batched], args)
