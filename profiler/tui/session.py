"""What the TUI shows, computed once: the traces, their summaries, names, link, and (later) findings and verdicts.

The app never walks records itself: a `Session` holds each run with the
aggregates every view draws from (`analysis.summary.totals`, `by_kernel`,
`by_site`, and the columnar `LaunchTable`; for a distributed job its
ranks' `analysis.ranks.JobSummary`, the figures `report` prints), all
computed when the session is built, so switching views, sorting and
filtering never recompute them.
Findings come from `profiler.analysis.detectors.detect`, which needs the runs'
`Record` objects and their replayed timelines; for large traces that takes
seconds, so the app runs it in a worker thread and `set_findings` fills
them in when it is done, with the runs' verdicts (`analysis.verdict`),
which share the timeline.

No Textual here: the session is plain data and is tested as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..analysis.detectors import Finding
from ..analysis.diagnosis import analyse
from ..analysis.launches import LaunchTable, launch_table
from ..analysis.ranks import JobSummary, summarise
from ..analysis.summary import KernelSummary, SiteSummary, Totals, by_kernel, by_site, totals
from ..analysis.verdict import Verdict
from ..phrases import run_names, site_label
from ..trace.job import job_of
from ..trace.model import Run
from ..trace.records import Link, Site, relative_file


@dataclass(frozen=True, eq=False)
class Trace:
    """One run and its aggregates. `name` is how headings call it (naive, batched, first, ...).

    `job` is the run's ranks summarised when the run is a distributed job
    (the Ranks view draws it), None for a program run on its own.
    """

    run: Run
    path: str
    name: str
    totals: Totals
    launches: LaunchTable
    kernels: tuple[KernelSummary, ...]
    sites: tuple[SiteSummary, ...]
    job: JobSummary | None = None

    def site_label(self, site: Site | None, column: bool = False) -> str:
        """`file:line in function` (`file:line:column in function`), the file relative to the run's folder."""
        return site_label(site, self.run.meta.cwd, column)

    def source_file(self, site: Site) -> Path | None:
        """The file a call site names, where this machine has it.

        Tried in turn: the path as recorded, relative to the run's folder,
        to the trace file's folder, and to the current folder, so a trace
        copied to another checkout still finds its sources.
        """
        file = Path(site.file)
        candidates = [file] if file.is_absolute() else []
        rel = Path(relative_file(site.file, self.run.meta.cwd))
        if not rel.is_absolute():
            if self.run.meta.cwd:
                candidates.append(Path(self.run.meta.cwd) / rel)
            if self.path:
                candidates.append(Path(self.path).resolve().parent / rel)
            candidates.append(Path.cwd() / rel)
        return next((c for c in candidates if c.is_file()), None)


@dataclass(eq=False)
class Session:
    """The traces the app shows (one or two), the link modelled costs use, and the findings once known."""

    traces: tuple[Trace, ...]
    link: Link | None
    #: per trace, in order; None until the detectors have run
    findings: tuple[tuple[Finding, ...], ...] | None = field(default=None)
    #: the one-line reason detection failed, if it did
    findings_error: str | None = None
    #: per trace, what bounded the run (None: no device work); None until the detectors have run
    verdicts: tuple[Verdict | None, ...] | None = None
    #: whether every run is exactly the trace file at its path (so another process can load it)
    from_files: bool = False

    @classmethod
    def build(cls, runs: Sequence[Run], paths: Sequence[str], link: Link | None, *, from_files: bool = False) -> Session:
        """A session of `runs`; `from_files` promises that each run is what its path holds."""
        if not 1 <= len(runs) <= 2:
            raise ValueError("the TUI shows one or two traces")
        names = run_names(runs)
        traces = tuple(
            Trace(run, path, name, totals(run, link), launch_table(run, link), by_kernel(run, link), by_site(run, link),
                  _job_summary(run, link))
            for run, path, name in zip(runs, paths, names)
        )
        return cls(traces, link, from_files=from_files)

    @classmethod
    def load(cls, paths: Sequence[str], link: Link | None) -> Session:
        return cls.build([Run.load(p) for p in paths], paths, link, from_files=True)

    @property
    def paired(self) -> bool:
        return len(self.traces) == 2

    @property
    def records(self) -> int:
        return sum(len(t.run.records) for t in self.traces)

    def detect(self) -> Analysis:
        """Run the detectors and judge every trace (seconds for 10^6 records: call it off the UI thread)."""
        return analyse_runs([t.run for t in self.traces], self.link)

    def set_findings(self, analysis: Analysis) -> None:
        self.findings, self.verdicts = analysis
        self.findings_error = None

    def finding_count(self) -> int | None:
        return None if self.findings is None else sum(len(f) for f in self.findings)

    @property
    def jobs(self) -> tuple[Trace, ...]:
        """The traces that are distributed jobs (those the Ranks view shows), in order."""
        return tuple(t for t in self.traces if t.job is not None)


def _job_summary(run: Run, link: Link | None) -> JobSummary | None:
    job = job_of(run)
    return None if job is None else summarise(job, link)


#: per trace, its findings; and per trace, its verdict
Analysis = tuple[tuple[tuple[Finding, ...], ...], tuple[Verdict | None, ...]]


def analyse_runs(runs: Sequence[Run], link: Link | None) -> Analysis:
    """The findings and the verdict of each run."""
    done = [analyse(run, link) for run in runs]
    return tuple(tuple(f) for f, _ in done), tuple(v for _, v in done)


def detect_files(paths: Sequence[str], link: Link | None, conn: Any) -> None:
    """Child-process entry: load the traces, analyse them, send findings and verdicts (or the error) down `conn`.

    A detector pass over 10^6 records holds the interpreter for seconds; in
    another process it leaves the TUI's keys and frames alone.
    """
    try:
        result: Any = ("ok", analyse_runs([Run.load(p) for p in paths], link))
    except Exception as exc:  # reported in the Findings view, never a traceback on the terminal
        result = ("error", f"{type(exc).__name__}: {exc}")
    conn.send(result)
    conn.close()
