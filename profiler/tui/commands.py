"""The `tui` and `demo` subcommands of `offload-prof`, registered with `profiler.cli.command`.

They live beside the TUI rather than in `profiler.cli` so that the CLI
module stays the same size whatever the TUI grows into; `profiler.cli`
imports this module once to register them. Textual is imported only when
a TUI is about to start, so `offload-prof --help`, `compare` and the demo's
text mode never load it.

Without a terminal (stdout or stdin not a TTY, as under `make demo | cat`,
in CI or in a pipe) or with `--no-tui`, both print the text report the TUI
would open on: `compare` for two traces (then the headline sentence),
`report` for one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from ..cli import command, configure
from ..errors import ProfilerError


def _view_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--link", help="model copy costs on this link profile (name or file; default on NumPy runs: pcie5-x16)")
    p.add_argument("--no-model", action="store_true", help="show measured figures only")
    p.add_argument("--no-tui", action="store_true", help="print the comparison as text instead of opening the TUI")


def _tui_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", metavar="TRACE", help="one trace, or two: NAIVE BATCHED (any first and second run)")
    _view_options(p)
    p.epilog = ("Keys: 1-5 views, / filter, s sort, ? help, Ctrl+P commands, q quit. "
                "Without a terminal it prints `offload-prof compare` (or `report`) instead.")


@command("tui", "browse one trace, or the naive and batched traces side by side, in a terminal UI")
@configure(_tui_options)
def cmd_tui(args: argparse.Namespace) -> int:
    from ..trace.model import Run

    if len(args.traces) > 2:
        raise ProfilerError(f"tui shows one or two traces, got {len(args.traces)}")
    runs = [Run.load(p) for p in args.traces]
    return show(runs, list(args.traces), args)


def show(runs: Sequence[Any], paths: Sequence[str], args: argparse.Namespace) -> int:
    """Open the TUI on `runs` (each the trace file at its path), or print their text report where no TUI can run."""
    from ..demo import interactive
    from ..trace.link import model_for

    link = None if args.no_model else model_for(runs[0], args.link)[0]
    if args.no_tui or not interactive():
        if not args.no_tui:
            print("offload-prof: no terminal, printing the comparison as text (open it with `offload-prof tui "
                  + " ".join(paths) + "`)", file=sys.stderr)
        sys.stdout.write(text_report(runs, paths, link))
        return 0
    from .app import run_app
    from .session import Session

    return run_app(Session.build(runs, paths, link, from_files=True))


def text_report(runs: Sequence[Any], paths: Sequence[str], link: Any) -> str:
    """`compare` for two runs plus the headline's ratio sentence; `report` for one."""
    from ..analysis.detectors import detect
    from ..outputs.report import render_compare, render_report
    from ..analysis.summary import totals
    from .headline import modelled_clause, ratio_sentence
    from .session import run_names

    if len(runs) == 1:
        return render_report(runs[0], detect(runs[0], link=link), path=paths[0], link=link)
    text = render_compare(runs[0], runs[1], detect(runs[0], link=link), detect(runs[1], link=link),
                          paths=(paths[0], paths[1]), link=link)
    named = [(name, totals(run, link)) for name, run in zip(run_names(runs), runs)]
    clause = modelled_clause(named, link)
    return text + "\n" + ratio_sentence(named) + "\n" + (clause + "\n" if clause else "")


# ------------------------------------------------------------------ demo
def _demo_options(p: argparse.ArgumentParser) -> None:
    from ..demo import DEFAULT_KERNELS, DEFAULT_REPS, DEFAULT_SIZE_FACTOR

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
    _view_options(p)
    p.epilog = "Opens the TUI on both traces; without a terminal (or with --no-tui) prints the comparison."


@command("demo", "record the RAJAPerf suite on the naive and the batched path and open them side by side")
@configure(_demo_options)
def cmd_demo(args: argparse.Namespace) -> int:
    import offload_core
    from offload_core.errors import OffloadError

    from ..demo import record_suite

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
