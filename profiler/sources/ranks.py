"""Ranks of a distributed job: who this process is (from the launcher's environment) and the device it used.

The launcher is torchrun (`torch.distributed.run`), or anything that
follows its convention: each worker gets `RANK`, `LOCAL_RANK` and
`WORLD_SIZE`, and its children inherit them. Nothing here launches
anything; a process only reads what its launcher told it, so the same
code serves a job recorded as a whole (`offload-prof run -- torchrun
...`: every worker is a child process recording itself) and one where
the launcher starts the profiler once per rank (`torchrun ... -m profiler
run ...`: every rank writes its own trace, and the merge of the job's
traces is `profiler.trace.job.merge_ranks`).

`job` tells one launch from another: torchrun's run id (a fresh uuid with
`--standalone`), its rendezvous address and its restart count, or
`OFFLOAD_PROF_JOB` where the user names the job.
"""

from __future__ import annotations

import fcntl
import hashlib
import heapq
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from datetime import datetime, timezone
from typing import Iterator, Mapping, Sequence

from ..trace.model import Run
from ..trace.records import Process, Rank, Record

#: the launcher's variables that make up a job's identity, in the order they are joined
_JOB_VARIABLES = ("TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT")


def rank_from_env(environ: Mapping[str, str] | None = None, device: str = "") -> Rank | None:
    """This process's `Rank` from `RANK`, `LOCAL_RANK` and `WORLD_SIZE`; None outside a job or where they make no sense.

    `LOCAL_RANK` defaults to `RANK` (one machine); values that are not
    integers, or a rank outside the world, mean no job (a stray variable
    of another tool), never an error.
    """
    env = os.environ if environ is None else environ
    try:
        rank = int(env["RANK"])
        world = int(env["WORLD_SIZE"])
        local = int(env.get("LOCAL_RANK", rank))
    except (KeyError, ValueError):
        return None
    if not (0 <= rank < world and 0 <= local):
        return None
    return Rank(rank, local, world, device, job_id(env))


def job_id(environ: Mapping[str, str]) -> str:
    """The identity of the launch this process belongs to: `OFFLOAD_PROF_JOB`, else torchrun's variables joined."""
    named = environ.get("OFFLOAD_PROF_JOB")
    if named:
        return named
    return "|".join(environ.get(k, "") for k in _JOB_VARIABLES).strip("|")


def current_device(backend: str | None = None) -> str:
    """The device this process's work ran on, as far as can be told without starting one: `cuda:1`, `cpu` or empty.

    PyTorch's current CUDA device where PyTorch initialised CUDA; else, for
    offload_core's NumPy backend (`backend`), the host; else CuPy's current
    device where CuPy is loaded; else, where PyTorch is loaded and never
    initialised CUDA, the host (a gloo job on the CPU: its tensors never
    left it). Nothing is imported or initialised that the program did not
    already use (asking an idle CUDA would create a context in a process
    that may never have wanted one).
    """
    torch = sys.modules.get("torch")
    torch_on_cpu = False
    try:
        if torch is not None:
            if torch.cuda.is_initialized():
                return f"cuda:{torch.cuda.current_device()}"
            torch_on_cpu = True
    except Exception:  # a torch build without CUDA, or one being torn down at exit
        pass
    if backend == "numpy":
        return "cpu"
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            return f"cuda:{cupy.cuda.runtime.getDevice()}"
        except Exception:
            return ""
    return "cpu" if torch_on_cpu else ""


def merge_ranks(runs: Sequence[Run]) -> Run:
    """One trace of a job from the traces its ranks wrote for themselves (`torchrun ... -m profiler run`).

    Each rank's trace counts its time from its own start; the merge puts
    them on one clock by their `started_at` (milliseconds apart at worst,
    where the ranks of a job recorded as a whole share the host's clock
    exactly) and keeps every process's records in order. Processes are
    numbered rank by rank; launch indices, region ids and buffer
    addresses are made unique as the merge of child processes does
    (`profiler.sources.merge`). The first rank's meta describes the job,
    with the longest wall time and every process.
    """
    from dataclasses import replace

    from .merge import ADDRESS_BITS, renumbered

    if not runs:
        raise ValueError("no rank traces to merge")
    ordered = sorted(runs, key=lambda r: min((p.rank.rank for p in r.meta.processes if p.rank is not None),
                                             default=0))
    starts = [_epoch_ns(r.meta.started_at) for r in ordered]
    t0 = min(starts)
    processes: list[Process] = []
    streams: list[list[Record]] = []
    launches = renumbered()
    regions = renumbered()
    wall = 0
    low_bits = (1 << ADDRESS_BITS) - 1
    for run, start in zip(ordered, starts):
        shift = start - t0
        base = len(processes)
        processes += run.meta.processes or [Process(None)]
        records = run.records
        launch_offset = launches.block(r.launch for r in records)
        region_offset = regions.block(r.region for r in records)
        streams.append([replace(
            r, start_ns=r.start_ns + shift, process=base + r.process,
            launch=None if r.launch is None else r.launch + launch_offset,
            region=None if r.region is None else r.region + region_offset,
            array=None if r.array is None else (r.array & low_bits) | ((base + r.process) << ADDRESS_BITS))
            for r in records])
        wall = max(wall, shift + run.meta.wall_ns)
    first = ordered[0].meta
    meta = replace(first, wall_ns=wall, processes=tuple(processes),
                   fingerprints=all(r.meta.fingerprints for r in ordered),
                   exit_code=next((r.meta.exit_code for r in ordered if r.meta.exit_code), 0),
                   outcome=next((r.meta.outcome for r in ordered if r.meta.outcome != "ok"), first.outcome))
    return Run(meta, tuple(heapq.merge(*streams, key=lambda r: r.start_ns)))


def _epoch_ns(started_at: str) -> int:
    """A trace's `started_at` (ISO 8601) as nanoseconds since the epoch; 0 where it cannot be read."""
    try:
        moment = datetime.fromisoformat(started_at)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1_000_000) * 1000


@contextmanager
def merge_lock(output: Path) -> Iterator[None]:
    """An exclusive lock, for this machine, on merging into `output` (a lock file in the temporary folder).

    The kernel drops the lock with the process, so a killed rank leaves
    nothing stale; the file is named by the output's resolved path and
    left in place (a waiting rank holds it open).
    """
    key = hashlib.sha1(str(output.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    path = Path(tempfile.gettempdir()) / f"offload-prof-merge-{key}.lock"
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
