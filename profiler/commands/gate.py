"""`offload-prof gate RUN --baseline BASE [--budget FILE]`: CI fails on copy regressions (0 pass, 1 regression, 2 bad input)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..errors import ProfilerError
from .common import load_trace

if TYPE_CHECKING:
    from ..trace.model import Run

NAME = "gate"
HELP = "fail CI on copy regressions against a baseline and a budget (exit 0 pass, 1 regression, 2 bad input)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="the trace to check")
    p.add_argument("--baseline", help="baseline file (or a trace) to compare counts and bytes with, exactly")
    p.add_argument("--budget", help="YAML budget: absolute limits and time tolerances")
    p.add_argument("--time", action="append", default=[], metavar="FIELD:TOL",
                   help="also gate a time on the baseline, e.g. copy:20%% or wall:5ms (repeatable)")
    p.add_argument("--allow-fewer", action="store_true", help="pass when copies went down (default: exact both ways)")
    p.add_argument("--update-baseline", action="store_true", help="write the run's baseline to --baseline and pass")
    p.add_argument("--allow-empty", action="store_true",
                   help="accept a trace of no records (default: refused, exit 2: the recording saw nothing)")
    p.add_argument("--format", choices=("text", "github", "json"), default="text", help="output format (default: %(default)s)")


def execute(args: argparse.Namespace) -> int:
    from ..outputs.baseline import Baseline
    from ..outputs.budget import load_budget, parse_tolerance
    from ..outputs.gate import checks_for, evaluate, render

    run = load_trace(args.run)
    if not run.records and not args.allow_empty:
        raise ProfilerError(f"{args.run}: the trace holds no records, so there is nothing to gate{_unrecorded(run)}; "
                            "pass --allow-empty if an empty trace is expected")
    if args.update_baseline:
        if not args.baseline:
            raise ProfilerError("--update-baseline needs --baseline PATH to write")
        baseline = Baseline.from_run(run)
        path = baseline.save(args.baseline)
        print(f"offload-prof: wrote baseline {path} ({len(baseline.flows)} flows)", file=sys.stderr)
        return 0
    if not args.baseline and not args.budget:
        raise ProfilerError("gate needs --baseline BASE and/or --budget FILE to check the run against")
    base = Baseline.load(args.baseline) if args.baseline else None
    budget = load_budget(args.budget) if args.budget else None
    tolerances = [parse_tolerance(t) for t in args.time]
    if (tolerances or (budget is not None and budget.times)) and base is None:
        raise ProfilerError("time tolerances compare with a baseline; pass --baseline")
    result = evaluate(checks_for(run, base, budget, tolerances, args.allow_fewer))
    sys.stdout.write(render(result, args.format))
    return result.exit_code


def _unrecorded(run: Run) -> str:
    """Why a trace may be empty: the child processes its recording could not follow, if it names any."""
    missed = [p for p in run.meta.processes if not p.recorded]
    if not missed:
        return ""
    return f" ({len(missed)} child process{'es' if len(missed) > 1 else ''} not recorded: {missed[0].label()}: {missed[0].note})"
