"""`offload-prof gate RUN --baseline BASE [--budget FILE]`: CI fails on copy regressions (0 pass, 1 regression, 2 bad input).

Exit 1 means one thing only: the run copied differently from its baseline
or beyond its budget. Everything that makes the comparison meaningless is
bad input, exit 2, before any check runs: a run whose target raised, was
interrupted or exited non-zero (it stopped short of the program's copies;
`--allow-failed-target`), a run from another command, mode or backend
than its baseline (`--allow-mismatch`), and a trace of no records or a
gate with nothing to check (`--allow-empty`).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Callable

from ..errors import ProfilerError
from .common import abandon_stdout, check_writable, load_trace, write_stdout

if TYPE_CHECKING:
    from ..outputs.baseline import Baseline
    from ..outputs.gate import GateResult
    from ..trace.model import Run

NAME = "gate"
HELP = "fail CI on copy regressions against a baseline and a budget (exit 0 pass, 1 regression, 2 bad input)"

#: a `--format` of the gate: (the checks' result, the run gated, `--report-url`) -> the gate's output
GateWriter = Callable[["GateResult", "Run", "str | None"], str]


def _text(result: GateResult, run: Run, report_url: str | None) -> str:
    from ..outputs.gate import render

    return render(result, "text", (), report_url)


def _github(result: GateResult, run: Run, report_url: str | None) -> str:
    """The failures as GitHub annotations, with the run's runtime findings annotated too."""
    from ..analysis.diagnosis import analyse
    from ..outputs.gate import finding_annotations, render
    from .common import model_link

    annotations = finding_annotations(run, analyse(run, model_link(run, None, False))[0], report_url)
    return render(result, "github", annotations, report_url)


def _json(result: GateResult, run: Run, report_url: str | None) -> str:
    from ..outputs.gate import render

    return render(result, "json", (), report_url)


#: `--format` -> the writer of the gate's output in it (the option's choices are this table's keys)
FORMATS: dict[str, GateWriter] = {"text": _text, "github": _github, "json": _json}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="the trace to check")
    p.add_argument("--baseline", help="baseline file (or a trace) to compare counts and bytes with, exactly")
    p.add_argument("--budget", help="YAML budget: absolute limits and time tolerances")
    p.add_argument("--time", action="append", default=[], metavar="FIELD:TOL",
                   help="also gate a time on the baseline, e.g. copy:20%% or wall:5ms (repeatable)")
    p.add_argument("--allow-fewer", action="store_true", help="pass when copies went down (default: exact both ways)")
    p.add_argument("--update-baseline", action="store_true",
                   help="write the run's baseline to --baseline and pass (how a baseline is first made)")
    p.add_argument("--allow-failed-target", action="store_true",
                   help="gate (or make a baseline of) a run whose target raised, was interrupted or exited non-zero")
    p.add_argument("--allow-mismatch", action="store_true",
                   help="compare a run with a baseline of another command, mode or backend")
    p.add_argument("--allow-empty", action="store_true",
                   help="accept a trace of no records, or a gate with nothing to check (default: refused, exit 2)")
    p.add_argument("--rank", default="all", metavar="all|job|N",
                   help="for a distributed job: gate every rank's copies apart (all), their sums (job) or one rank's "
                        "(default: %(default)s; outside a job every choice gates the whole run)")
    p.add_argument("--format", choices=tuple(FORMATS), default="text",
                   help="output format (default: %(default)s); github also annotates the run's runtime findings")
    p.add_argument("--report-url", default=os.environ.get("OFFLOAD_PROF_REPORT_URL") or None, metavar="URL",
                   help="with --format github: link every annotation to this HTML report (e.g. the URL of the "
                        "artifact CI uploaded `report --format html` as; default: $OFFLOAD_PROF_REPORT_URL)")
    p.epilog = ("Make the baseline once with --update-baseline (commit it), then gate later runs against it. "
                "Exit 2 also for a failed target, a baseline of another command, mode or backend, or nothing to "
                "check; the --allow-* options accept those.")


def execute(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..outputs.baseline import Baseline
    from ..outputs.budget import load_budget, parse_tolerance
    from ..outputs.gate import checks_for, evaluate, mismatches, target_failure

    run = load_trace(args.run)
    failure = target_failure(run)
    if failure and not args.allow_failed_target:
        raise ProfilerError(f"{args.run}: the recorded target {failure}, so it may have stopped short of the program's "
                            "copies; record a clean run, or pass --allow-failed-target")
    if not run.records and not args.allow_empty:
        raise ProfilerError(f"{args.run}: the trace holds no records, so there is nothing to gate{_unrecorded(run)}; "
                            "pass --allow-empty if an empty trace is expected")
    if args.update_baseline:
        if not args.baseline:
            raise ProfilerError("--update-baseline needs --baseline PATH to write")
        target = Path(args.baseline)
        check_writable(target, "baseline")
        baseline = Baseline.from_run(run)
        try:
            path = baseline.save(target)
        except OSError as exc:
            raise ProfilerError(f"{target}: cannot write baseline ({exc.strerror or exc})") from None
        print(f"offload-prof: wrote baseline {path} ({len(baseline.flows)} flow{'s' if len(baseline.flows) != 1 else ''})",
              file=sys.stderr)
        return 0
    if not args.baseline and not args.budget:
        raise ProfilerError("gate needs --baseline BASE and/or --budget FILE to check the run against "
                            "(make a baseline with --baseline BASE --update-baseline)")
    base = Baseline.load(args.baseline) if args.baseline else None
    if base is not None and not args.allow_mismatch:
        differ = mismatches(run, base)
        if differ:
            raise ProfilerError(f"{args.run} is not a run of what {args.baseline} was made from ({'; '.join(differ)}); "
                                "compare like with like, or pass --allow-mismatch")
    budget = load_budget(args.budget) if args.budget else None
    tolerances = [parse_tolerance(t) for t in args.time]
    if (tolerances or (budget is not None and budget.times)) and base is None:
        raise ProfilerError("time tolerances compare with a baseline; pass --baseline")
    rank = _rank_choice(args.rank, run, base)
    result = evaluate(checks_for(run, base, budget, tolerances, args.allow_fewer, rank))
    if result.checks == 0 and not args.allow_empty:
        raise ProfilerError("nothing to check: neither the run nor the baseline has copies, and no budget limit "
                            "applies; pass --allow-empty to accept that")
    text = FORMATS[args.format](result, run, args.report_url)
    try:
        write_stdout(text)
    except BrokenPipeError:  # the verdict stands whoever stopped reading it
        abandon_stdout()
    return result.exit_code


def _rank_choice(text: str, run: Run, base: Baseline | None) -> str:
    """`--rank` checked against the run: `all`, `job`, or a rank the run holds; a one-line error otherwise."""
    from ..trace.job import job_of

    if text in ("all", "job"):
        return text
    if not text.isdigit():
        raise ProfilerError(f"--rank: expected all, job or a rank number, got {text!r}")
    job = job_of(run)
    if job is None:
        raise ProfilerError(f"--rank {text}: the run is not a distributed job (no process has a rank)")
    if int(text) not in job.ranks:
        raise ProfilerError(f"--rank {text}: the job has no trace of rank {text} (its ranks: "
                            f"{', '.join(map(str, job.ranks))})")
    return str(int(text))


def _unrecorded(run: Run) -> str:
    """Why a trace may be empty: the child processes its recording could not follow, if it names any."""
    missed = [p for p in run.meta.processes if not p.recorded]
    if not missed:
        return ""
    return f" ({len(missed)} child process{'es' if len(missed) > 1 else ''} not recorded: {missed[0].label()}: {missed[0].note})"
