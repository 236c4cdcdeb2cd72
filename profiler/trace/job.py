"""A distributed job as a view of one trace: its processes grouped by rank.

A job is not a second kind of trace. Every process of a recorded run is
listed in `Meta.processes`, and a process started by torchrun (or a
launcher of the same convention) carries its `Rank`; the records of a
rank are the records of its processes (its worker and the processes the
worker started, which inherit its rank). So the merged view of a job is
an ordinary trace of several processes, and the trace of one rank is the
part of it whose processes hold that rank (`rank_run`), itself an
ordinary trace: every analysis of a run applies to a rank unchanged, and
the job's consumers (report, compare, gate, export) add what is new: a
rank column, totals per rank and for the job, the slowest rank.

Processes without a rank (the launcher itself, which records nothing
unless it uses a device) belong to no rank; their records count for the
job only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

from .model import Run
from .records import Rank

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Job:
    """The ranks of one trace: `run` is the merged view, `ranks` the rank numbers its processes hold, in order."""

    run: Run

    @cached_property
    def ranks(self) -> tuple[int, ...]:
        return tuple(sorted({p.rank.rank for p in self.run.meta.processes if p.rank is not None}))

    @property
    def world_size(self) -> int:
        """The job's world size as its ranks were told it (the largest, should they disagree)."""
        return max((p.rank.world_size for p in self.run.meta.processes if p.rank is not None), default=0)

    @property
    def missing(self) -> tuple[int, ...]:
        """Ranks of the world that left no process in the trace (killed before recording, or not recorded)."""
        return tuple(sorted(set(range(self.world_size)) - set(self.ranks)))

    def rank_info(self, rank: int) -> Rank:
        """The `Rank` of `rank`'s first process that names a device (else its first process)."""
        held = [p.rank for p in self.run.meta.processes if p.rank is not None and p.rank.rank == rank]
        if not held:
            raise KeyError(f"no process of rank {rank}")
        return next((r for r in held if r.device), held[0])

    def rank_of_records(self) -> np.ndarray:
        """The rank of every record (-1: a process of no rank), as a NumPy array over `run.records`."""
        import numpy as np

        table = np.array([-1 if p.rank is None else p.rank.rank for p in self.run.meta.processes] or [-1],
                         dtype=np.int64)
        return table[self.run.columns.process]

    def rank_run(self, rank: int) -> Run:
        """The trace of one rank: the records of its processes, in order, on the job's clock.

        Its processes are renumbered from 0 (the rank's own first), its
        `meta.device` is the device the rank used where one was named.
        """
        from .columns import Columns, RecordTable

        if rank not in self.ranks:
            raise KeyError(f"no process of rank {rank}")
        import numpy as np

        processes = self.run.meta.processes
        keep = [i for i, p in enumerate(processes) if p.rank is not None and p.rank.rank == rank]
        renumber = np.full(max(len(processes), 1), -1, dtype=np.int32)
        renumber[keep] = np.arange(len(keep), dtype=np.int32)
        c = self.run.columns
        mask = np.isin(c.process, keep)
        picked = {name: getattr(c, name)[mask] for name in
                  ("kind", "start_ns", "duration_ns", "nbytes", "pinned", "kernel", "launch", "param", "array",
                   "site", "region", "mode", "fingerprint", "device", "peer")}
        columns = Columns(**picked, process=renumber[c.process[mask]], kernels=c.kernels, params=c.params,
                          modes=c.modes, fingerprints=c.fingerprints, sites=c.sites)
        info = self.rank_info(rank)
        meta = replace(self.run.meta, processes=tuple(processes[i] for i in keep),
                       device=info.device or self.run.meta.device)
        return Run(meta, RecordTable(columns))

    def rank_runs(self) -> dict[int, Run]:
        """Every rank's trace, by rank."""
        return {r: self.rank_run(r) for r in self.ranks}


def job_of(run: Run) -> Job | None:
    """The job `run` holds, or None when no process of it had a rank (a program run on its own)."""
    job = Job(run)
    return job if job.ranks else None
