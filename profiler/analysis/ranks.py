"""A job's ranks side by side: totals per rank and for the job, the slowest rank, findings with their ranks.

Each rank's figures are its own trace's (`Job.rank_run`) summarised as any
run is, so a rank's row and a single-process report of the same program
agree to the byte. Which rank is slowest is decided on the time a rank
spent on its own work: copies, kernels and waits for its device. Time in
collectives is left out, because a collective lasts until the last rank
arrives: the rank that makes the others wait spends the least time there.

Findings are found per rank (a mistake in a training loop is made by
every rank), then the rules that need the ranks side by side run on the
job's trace (`detectors.distributed`), and the ranks' findings are folded: findings of one rule at one line with equal
counts and bytes on several ranks are one finding naming those ranks,
whose time lost adds up over them and whose expected saving is the
largest of theirs (ranks run side by side, so the job saves what its
slowest affected rank saves). Findings that differ between ranks stay
apart, each naming its rank.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

from ..trace.job import Job
from ..trace.records import Link
from .summary import Flow, Totals, totals

if TYPE_CHECKING:
    from .detectors import Finding


@dataclass(frozen=True)
class RankSummary:
    """One rank: its place, the device it used, its totals, its busy time and when its last operation ended."""

    rank: int
    device: str
    processes: int
    totals: Totals
    #: measured copy, kernel and sync time of the rank (its own work and its device's)
    busy_ns: int
    #: end of the rank's last recorded operation, on the job's clock
    end_ns: int
    #: the rank's collectives: how many, their payload, their time (mostly waiting for the other ranks)
    collectives: Flow = Flow()


@dataclass(frozen=True)
class JobSummary:
    """Every rank's summary, the job's totals, and the slowest rank (None for a job of no recorded work)."""

    ranks: tuple[RankSummary, ...]
    job: Totals
    world_size: int
    missing: tuple[int, ...]

    @property
    def slowest(self) -> RankSummary | None:
        """The rank with the most busy time (the lowest rank number among equals); None when none did any work."""
        busy = [r for r in self.ranks if r.busy_ns > 0]
        return max(busy, key=lambda r: (r.busy_ns, -r.rank)) if busy else None

    @property
    def fastest(self) -> RankSummary | None:
        busy = [r for r in self.ranks if r.busy_ns > 0]
        return min(busy, key=lambda r: (r.busy_ns, r.rank)) if busy else None

    @property
    def busy_ns(self) -> int:
        """The job's busy time: its ranks' added up (the job row of the rank tables)."""
        return sum(r.busy_ns for r in self.ranks)

    @property
    def collectives(self) -> Flow:
        """The job's collectives: its ranks' added up (each rank's side of a collective counts once per rank)."""
        return sum((r.collectives for r in self.ranks), Flow())

    def imbalance(self) -> float | None:
        """The slowest rank's busy time over the fastest's (1.0: balanced); None with fewer than two busy ranks."""
        slow, fast = self.slowest, self.fastest
        if slow is None or fast is None or slow is fast or fast.busy_ns == 0:
            return None
        return slow.busy_ns / fast.busy_ns


def summarise(job: Job, link: Link | None = None) -> JobSummary:
    """The job's per-rank and whole-job totals."""
    from ..trace.columns import exact_sum, saturating_add

    rows = []
    for rank, run in job.rank_runs().items():
        t = totals(run, link)
        c = run.columns
        end = int(saturating_add(c.start_ns, c.duration_ns).max()) if len(c) else 0
        met = c.kind_mask("collective")
        collectives = Flow(int(met.sum()), exact_sum(c.nbytes[met]), exact_sum(c.duration_ns[met]))
        rows.append(RankSummary(rank, job.rank_info(rank).device, len(run.meta.processes), t,
                                t.h2d.ns + t.d2h.ns + t.launches.ns + t.syncs.ns, end, collectives))
    return JobSummary(tuple(rows), totals(job.run, link), job.world_size, job.missing)


def job_findings(job: Job, link: Link | None = None, per_rank: dict[int, Sequence[Finding]] | None = None
                 ) -> list[Finding]:
    """The findings of every rank, folded across ranks (see the module's docstring), largest expected saving first.

    A finding's `records` index the job's trace. `per_rank` gives the
    ranks' findings where the caller found them already.
    """
    import numpy as np

    from .detectors import detect, detect_job_rules
    from .detectors.base import rank as order

    of_records = job.rank_of_records()
    folded: dict[tuple[object, ...], Finding] = {}
    for rank, run in job.rank_runs().items():
        indices = np.flatnonzero(of_records == rank)
        found = per_rank[rank] if per_rank is not None else detect(run, link=link)
        for f in found:
            mine = replace(f, ranks=(rank,), records=tuple(int(i) for i in indices[list(f.records)]),
                           wall_ns=job.run.meta.wall_ns)
            key = (f.code, f.site, f.count, f.nbytes)
            held = folded.get(key)
            folded[key] = mine if held is None else _fold(held, mine)
    claimed = frozenset(i for f in folded.values() for i in f.records)
    whole = detect_job_rules(job, link=link, claimed=claimed)
    kept = [f for f in folded.values() if not any(_superseded(f, s, job) for s in whole if s.code == "OFF510")]
    return sorted([*kept, *whole], key=order)


def _superseded(f: Finding, stall: Finding, job: Job) -> bool:
    """Whether a rank's sync finding is the same sync that a stall (OFF510) blames: one line, one fix, said once.

    The stall is the better account: in a job the others' wait at the
    collective is what the sync costs, not the late rank's own wait.
    """
    records = job.run.records
    return (f.site == stall.site and bool(f.ranks) and set(f.ranks) <= set(stall.ranks)
            and all(records[i].kind == "sync" for i in f.records))


def _fold(a: Finding, b: Finding) -> Finding:
    def add(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    from .detectors.base import lost_text

    saving = None if a.expected_saving_ns is None and b.expected_saving_ns is None else max(
        a.expected_saving_ns or 0, b.expected_saving_ns or 0)
    lost, modelled = add(a.lost_ns, b.lost_ns), add(a.modelled_lost_ns, b.modelled_lost_ns)
    message = a.message
    said = lost_text(a.lost_ns, a.modelled_lost_ns, a.link)
    if message.endswith(said):  # the time lost the message ends with is the ranks' together, as `lost_ns` is
        message = message[:len(message) - len(said)] + lost_text(lost, modelled, a.link)
    return replace(a, ranks=a.ranks + b.ranks, records=tuple(sorted(a.records + b.records)),
                   lost_ns=lost, modelled_lost_ns=modelled, expected_saving_ns=saving, message=message)


def ranks_text(ranks: Sequence[int]) -> str:
    """`rank 2`, `ranks 0-3`, `ranks 0, 2, 5`: runs of consecutive ranks as ranges."""
    if not ranks:
        return ""
    ordered = sorted(set(ranks))
    if len(ordered) == 1:
        return f"rank {ordered[0]}"
    spans: list[str] = []
    start = prev = ordered[0]
    for r in ordered[1:] + [None]:  # type: ignore[list-item]
        if r is not None and r == prev + 1:
            prev = r
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    return "ranks " + ", ".join(spans)
