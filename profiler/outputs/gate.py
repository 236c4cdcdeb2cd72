"""The CI gate: a run against a baseline and a budget, as small checks with one-line failures.

Each check is an object whose `fails()` returns None or the one plain line
that says what failed (the shape of pytest-benchmark's compare-fail
checks): exact per-flow checks (count and bytes of the copies per call
site, kernel and direction), time checks with an explicit tolerance, and
budget limits. `evaluate` runs them all and never stops at the first
failure, so one CI run lists everything that regressed. With the GitHub
format the run's runtime findings are annotated on their lines too
(warnings, and notices for findings not worth a warning), each titled
with its fix and expected saving; they never change the exit status. Counts and bytes
are exact both ways by default: fewer copies than the baseline also fails,
with a hint to accept the improvement with `--update-baseline`, so that a
baseline never silently drifts from what the code does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, Protocol, Sequence

from offload_core.github import annotation

from ..analysis.detectors import Finding
from ..analysis.summary import Flow, totals
from ..phrases import saving_text
from ..trace.job import job_of
from ..trace.model import Run
from ..trace.records import DIRECTION_NAMES, Direction, relative_file
from ..units import fmt_bytes, fmt_ns, plural
from .baseline import Baseline, FlowKey
from .budget import Budget, Limit, SiteBudget, Tolerance

#: why a check failed: more copies (or new ones), fewer (to accept), a budget limit, a time tolerance
FailureKind = Literal["regression", "improvement", "budget", "time"]


@dataclass(frozen=True)
class Failure:
    """A failed check: the line to print, and where to annotate it."""

    message: str
    file: str | None = None
    line: int | None = None
    kind: FailureKind = "regression"


class Check(Protocol):
    def fails(self) -> Failure | None: ...


@dataclass(frozen=True)
class FlowCheck:
    """Exact count and bytes of one flow against the baseline."""

    key: FlowKey
    current: Flow | None
    base: Flow | None
    line: int | None
    allow_fewer: bool = False

    def fails(self) -> Failure | None:
        cur, base = self.current or Flow(), self.base or Flow()
        if (cur.count, cur.nbytes) == (base.count, base.nbytes):
            return None
        where = self.key.label()
        file = self.key.file or None
        if self.base is None:
            return Failure(f"new copies: {where}: {plural(cur.count, 'copy', 'copies')}, {fmt_bytes(cur.nbytes)} "
                           "(not in the baseline)",
                           file, self.line)
        fewer = cur.count <= base.count and cur.nbytes <= base.nbytes
        if fewer and self.allow_fewer:
            return None
        if self.current is None:
            return Failure(f"copies gone: {where}: the baseline has {plural(base.count, 'copy', 'copies')}, "
                           f"{fmt_bytes(base.nbytes)}; "
                           "accept with --update-baseline", file, self.line, "improvement")
        diff = f"count {cur.count} (baseline {base.count}), bytes {fmt_bytes(cur.nbytes)} (baseline {fmt_bytes(base.nbytes)})"
        if fewer:
            return Failure(f"fewer copies: {where}: {diff}; accept with --update-baseline", file, self.line, "improvement")
        return Failure(f"more copies: {where}: {diff}", file, self.line)


@dataclass(frozen=True)
class TimeCheck:
    """A time of the run against the baseline's, within a tolerance."""

    tolerance: Tolerance
    current_ns: int
    base_ns: int

    def fails(self) -> Failure | None:
        allowed = self.tolerance.allowed(self.base_ns)
        if self.current_ns <= allowed:
            return None
        over = f" ({100 * (self.current_ns / self.base_ns - 1):+.0f}%)" if self.base_ns else ""
        return Failure(f"{self.tolerance.field} time {fmt_ns(self.current_ns)} exceeds the baseline's "
                       f"{fmt_ns(self.base_ns)}{over} beyond the tolerance of {self.tolerance.describe()}",
                       kind="time")


@dataclass(frozen=True)
class LimitCheck:
    """A count or byte total against an absolute budget limit."""

    what: str
    value: int
    limit: int
    unit: Literal["count", "bytes"]
    source: str

    def fails(self) -> Failure | None:
        if self.value <= self.limit:
            return None
        show = fmt_bytes if self.unit == "bytes" else str
        return Failure(f"over budget: {self.what} {self.unit} {show(self.value)} > {show(self.limit)} ({self.source})",
                       kind="budget")


@dataclass(frozen=True)
class GateResult:
    checks: int
    failures: tuple[Failure, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


# ------------------------------------------------------ what the gate refuses
def target_failure(run: Run) -> str | None:
    """How the recorded target failed (`raised, exit 1`), or None when it ran to a clean end.

    A run that stopped early copied only part of what the program copies,
    so it can pass a budget or match nothing in a baseline by accident;
    the gate refuses it unless told otherwise.
    """
    m = run.meta
    if m.outcome == "exception":
        return f"raised an exception (exit {m.exit_code})"
    if m.outcome == "interrupted":
        return f"was interrupted (exit {m.exit_code})"
    if m.outcome == "exit" and m.exit_code != 0:
        return f"exited with status {m.exit_code}"
    return None


def mismatches(run: Run, baseline: Baseline) -> list[str]:
    """How the run differs from the run its baseline was taken from: command, mode, backend (empty: alike).

    A field the baseline does not record (an older or hand-written one)
    is not compared.
    """
    current = Baseline.from_run(run)
    out = []
    for name, mine, theirs in (("command", current.command, baseline.command), ("mode", current.mode, baseline.mode),
                               ("backend", current.backend, baseline.backend)):
        if theirs and mine != theirs:
            out.append(f"{name} {mine or '(none)'!r}, baseline {theirs!r}")
    return out


def checks_for(
    run: Run, baseline: Baseline | None, budget: Budget | None = None,
    tolerances: Sequence[Tolerance] = (), allow_fewer: bool = False, rank: str = "all",
) -> list[Check]:
    """The checks of `run` against `baseline` and `budget`; `rank` picks a job's flows (`Baseline.select`).

    With one rank chosen, the budget's launch and sync limits count that rank's alone.
    """
    current = Baseline.from_run(run).select(rank)
    if baseline is not None:
        baseline = baseline.select(rank)
    if rank not in ("all", "job"):
        job = job_of(run)
        if job is not None and int(rank) in job.ranks:
            run = job.rank_run(int(rank))
    checks: list[Check] = []
    if baseline is not None:
        for key in sorted(set(current.flows) | set(baseline.flows)):
            checks.append(FlowCheck(key, current.flows.get(key), baseline.flows.get(key),
                                    current.lines.get(key) or baseline.lines.get(key), allow_fewer))
        for tol in [*(budget.times if budget else ()), *tolerances]:
            checks.append(TimeCheck(tol, current.times.get(tol.field, 0), baseline.times.get(tol.field, 0)))
    if budget is not None:
        checks += _budget_checks(run, current, budget)
    return checks


def _budget_checks(run: Run, current: Baseline, budget: Budget) -> list[Check]:
    out: list[Check] = []
    t = totals(run)

    def limit(what: str, flow: Flow, lim: Limit) -> None:
        if lim.count is not None:
            out.append(LimitCheck(what, flow.count, lim.count, "count", budget.path))
        if lim.nbytes is not None:
            out.append(LimitCheck(what, flow.nbytes, lim.nbytes, "bytes", budget.path))

    for direction, lim in budget.totals.items():
        limit(DIRECTION_NAMES[direction], current.totals(direction), lim)
    if budget.launches is not None:
        out.append(LimitCheck("launches", t.launches.count, budget.launches, "count", budget.path))
    if budget.syncs is not None:
        out.append(LimitCheck("syncs", t.syncs.count, budget.syncs, "count", budget.path))
    for sb in budget.sites:
        for direction, lim in sb.limits.items():
            limit(f"{sb.match} {DIRECTION_NAMES[direction]}", _site_flow(current, sb, direction), lim)
    return out


def _site_flow(current: Baseline, sb: SiteBudget, direction: Direction) -> Flow:
    out = Flow()
    for key, f in current.flows.items():
        if key.direction == direction and sb.matches(key):
            out = out + f
    return out


def evaluate(checks: Sequence[Check]) -> GateResult:
    failures = tuple(f for f in (c.fails() for c in checks) if f is not None)
    return GateResult(len(checks), failures)


# ---------------------------------------------------------------- output
def finding_annotations(run: Run, findings: Sequence[Finding], report_url: str | None = None) -> list[str]:
    """A GitHub annotation per runtime finding, on its line, titled with its fix and expected saving.

    With `report_url` (the HTML report CI uploaded) each message ends with
    a link to that report, where the finding stands on the run's timeline.
    """
    out = []
    for f in findings:
        site = f.site
        message = f.message + (f" (HTML report: {report_url})" if report_url else "")
        out.append(annotation("warning" if f.severity == "warning" else "notice", message,
                              file=None if site is None else relative_file(site.file, run.meta.cwd),
                              line=None if site is None else site.line, col=None if site is None else site.column,
                              title=f"offload-prof {f.code}: {f.fix}, {saving_text(f)}"))
    return out


def render(result: GateResult, fmt: Literal["text", "github", "json"], annotations: Sequence[str] = (),
           report_url: str | None = None) -> str:
    """The gate's output; `annotations` (GitHub format only) are added before the verdict line.

    With `report_url`, the GitHub format's failures link to the HTML report,
    and one notice names it, so the run's summary page leads to it.
    """
    if fmt == "json":
        return json.dumps({
            "passed": result.passed, "checks": result.checks,
            "failures": [{"message": f.message, "kind": f.kind, "file": f.file, "line": f.line} for f in result.failures],
        }, indent=1) + "\n"
    lines = []
    link = f" (HTML report: {report_url})" if report_url and fmt == "github" else ""
    for f in result.failures:
        lines.append(f.message)
        if fmt == "github":
            lines.append(annotation("error", f.message + link, file=f.file or None,
                                    line=(f.line or 1) if f.file else None, title="offload-prof gate"))
    if fmt == "github":
        lines += annotations
        if report_url:
            lines.append(annotation("notice", f"HTML report of this run: {report_url}", title="offload-prof report"))
    verdict = "passed" if result.passed else f"FAILED: {len(result.failures)} of {plural(result.checks, 'check')}"
    lines.append(f"gate {verdict}" + (f" ({plural(result.checks, 'check')})" if result.passed else ""))
    return "\n".join(lines) + "\n"

