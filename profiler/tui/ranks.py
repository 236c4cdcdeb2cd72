"""The Ranks view's detail pane: which rank is slowest, and the highlighted rank in a sentence.

The table above it gives every rank's figures; what a user opens the
view for is which rank held the job back, so the pane leads with
`report`'s own "slowest" line for each job (the rank with the most busy
time and its ratio to the fastest: `phrases.slowest_line`), then
the ranks the world had but the trace has not, then the highlighted row
and how many findings Enter would list for it.

Built as rich `Text` (no Textual), so it is tested as plain text.
"""

from __future__ import annotations

from rich.text import Text

from ..analysis.ranks import JobSummary, ranks_text
from ..phrases import slowest_line
from ..units import fmt_ns, plural
from .session import Session


def ranks_detail(session: Session, rank: int | None, findings: int | None) -> Text:
    """The pane for the row of `rank` (None: the job's row).

    `findings` is how many findings Enter would list (None: the detectors
    are still running).
    """
    out = Text()
    named = session.paired
    for t in session.jobs:
        assert t.job is not None
        head = f"{t.name}: " if named else ""
        out.append(head + slowest_line(t.job) + "\n", style="bold")
        if t.job.missing:
            out.append(f"{head}no trace of {ranks_text(t.job.missing)} of world size {t.job.world_size}: "
                       "not recorded\n", style="yellow")
    for t in session.jobs:
        assert t.job is not None
        out.append(f"{t.name}: " if named else "", style="bold")
        out.append(row_sentence(t.job, rank) + "\n")
    out.append(_enter_hint(rank, findings), style="dim italic")
    return out


def row_sentence(s: JobSummary, rank: int | None) -> str:
    """`rank 1: cuda:1, 1 process; busy 190 µs; 8 collectives, 16.6 ms in them; last end 3.76 s`."""
    if rank is None:
        return (f"job: {plural(len(s.ranks), 'rank', 'ranks')}; busy {fmt_ns(s.busy_ns)} in all; "
                f"{plural(s.collectives.count, 'collective', 'collectives')}, {fmt_ns(s.collectives.ns)} in them; "
                f"wall {fmt_ns(s.job.wall_ns)}")
    r = next((r for r in s.ranks if r.rank == rank), None)
    if r is None:
        return f"rank {rank}: not in this job"
    return (f"rank {r.rank}: {r.device or 'no device named'}, {plural(r.processes, 'process', 'processes')}; "
            f"busy {fmt_ns(r.busy_ns)}; {plural(r.collectives.count, 'collective', 'collectives')}, "
            f"{fmt_ns(r.collectives.ns)} in them; last end {fmt_ns(r.end_ns)}")


def _enter_hint(rank: int | None, findings: int | None) -> str:
    if rank is None:
        return "Enter lists every finding"
    if findings is None:
        return f"Enter lists rank {rank}'s findings (the detectors are still running)"
    if findings == 0:
        return f"rank {rank} has no findings"
    return f"Enter lists rank {rank}'s {plural(findings, 'finding', 'findings')}"
