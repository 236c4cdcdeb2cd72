"""`offload-prof merge RANK_TRACE ... -o JOB`: the traces a job's ranks wrote for themselves, as one job trace.

Where every rank of a job writes into one folder, its last rank merges
the job itself (`run`); ranks on several machines each write their own
trace there, and this command merges them once they are gathered. Every
trace must be a rank of one job (the same world size and job identity),
each rank once; anything else is bad input, said in one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ProfilerError
from .common import check_writable, load_trace, save_trace

NAME = "merge"
HELP = "merge the traces a distributed job's ranks wrote for themselves into one job trace"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", metavar="RANK_TRACE", help="one trace per rank (job.rank0.json ...)")
    p.add_argument("-o", "--output", required=True, help="the job's trace, its missing folders created")


def execute(args: argparse.Namespace) -> int:
    from ..sources.ranks import merge_ranks

    out = Path(args.output)
    check_writable(out)
    runs = []
    seen: dict[int, str] = {}
    jobs: set[tuple[str, int]] = set()
    for path in args.traces:
        run = load_trace(path)
        ranked = [p.rank for p in run.meta.processes if p.rank is not None]
        if not ranked:
            raise ProfilerError(f"{path}: not the trace of a rank (no process has a rank)")
        mine = {r.rank for r in ranked}
        if len(mine) > 1:
            raise ProfilerError(f"{path}: holds {len(mine)} ranks already (a job's trace); give the ranks' own traces")
        rank = mine.pop()
        if rank in seen:
            raise ProfilerError(f"{path}: rank {rank} again (also in {seen[rank]})")
        seen[rank] = path
        jobs.add((ranked[0].job, ranked[0].world_size))
        runs.append(run)
    if len(jobs) > 1:
        raise ProfilerError("the traces are of different jobs (job identity or world size differ): "
                            + "; ".join(f"{job or '(unnamed)'} of world size {size}" for job, size in sorted(jobs)))
    (_, world), = jobs
    save_trace(merge_ranks(runs), out)
    missing = sorted(set(range(world)) - set(seen))
    more = f"; no trace of rank(s) {', '.join(map(str, missing))}" if missing else ""
    print(f"offload-prof: wrote {out} ({len(runs)} rank(s) of world size {world}{more})", file=sys.stderr)
    return 0
