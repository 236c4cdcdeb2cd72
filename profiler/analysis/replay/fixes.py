"""The fixes the runtime rules advise, as changes of records (`Fix`es) a replay can price.

Each builder turns "what the finding's message tells the user to do" into
records that no longer happen or happen differently:

* `keep_resident`: a region keeps the buffer on the device, so the
  per-launch copies go, and with them the device allocation and free each
  launch made for it (the region allocates once) and the syncs the wasted
  downloads forced; a region call (entry, exit, `update_host`) none of
  whose records happen any more is not made at all, and takes with it the
  least host time ever seen before such a call at its line (offload_core's
  own work for the call; the rest of the time before it is the program's);
* `hoist`: a copy made once instead of N times (the first one stays);
* `page_lock`: the copies still happen, at the pinned rate
  (`profiler.analysis.pinned`);
* `drop_syncs`: the host no longer waits there: the syncs go, and the
  downloads they waited for no longer hold the host; a library's own read
  (`loss.item()`, `float(x)` in a CUPTI trace: a download made by a
  CUDA call, not by offload_core) is moved out of the loop, so the
  downloads go too, with the host time of their calls;
* `pack`: several small copies become one, paying the fixed cost once;
* `fuse`: a loop of kernel launches becomes one launch (a fused kernel, a
  captured graph): the kernels' time stays (on NumPy less each call's
  calibrated fixed cost), the host's work to issue each launch after the
  first goes.

A library's copy call (CUPTI traces: no launch or region index) costs
the host more than its record shows: CuPy stages a pageable upload
through pinned memory with a host memcpy before the CUDA call, PyTorch
dispatches `.item()`. So a dropped copy takes with it the least host time
ever seen before a copy of the same direction at its line (the call's
own work; the least, so that other work before it is not counted), as a
dropped region call does (`_call_machinery`).

On a backend whose host thread does the copying itself (NumPy) a copy
cannot stop holding the host and page-locking changes nothing, so
`drop_syncs` keeps the downloads blocking and `page_lock` gives None.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ...trace.columns import NULL
from ...trace.model import Run
from ...trace.records import KINDS
from ..pinned import PinnedRate
from .schedule import ALL, Fix
from .timeline import HOST_EXECUTED

_ALLOC, _FREE, _H2D, _D2H, _SYNC, _ENTER, _EXIT = (
    KINDS.index(k) for k in ("alloc", "free", "h2d", "d2h", "sync", "region_enter", "region_exit"))


def hoist(records: Iterable[int], action: str = "upload once", run: Run | None = None) -> Fix:
    """The records are not made again (the first of each repeated copy is not among them).

    With `run`, dropped library copy calls take their host time with them (`_library_calls`).
    """
    drop = frozenset(records)
    return Fix(action, drop, host_cut=_library_calls(run, drop) if run is not None else {})


def keep_resident(run: Run, records: Iterable[int], action: str = "keep resident") -> Fix:
    """Drop `records` (wasted copies and the syncs they forced) and the allocations and frees behind them.

    A buffer kept resident is allocated once and freed once. For each
    buffer (its host address, else its parameter name) whose per-launch
    copies are dropped, the launches concerned are those with a dropped
    copy of it, the launch before them that kept its upload and the launch
    after them that kept its download; of these, only the first allocates
    it and only the last frees it. So an input buffer (uploaded, never
    copied back) loses its frees as well as its allocations, and an output
    buffer its allocations as well as its frees; on the NumPy backend an
    allocation commits fresh pages and a free may give them back to the
    operating system, which is what a naive loop spends most on beside the
    copies. A region entered again for an upload that is dropped (a region
    inside a loop, hoisted) allocates and frees nothing either.
    """
    c = run.columns
    drop = set(records)
    kind, launch, region = c.kind.tolist(), c.launch.tolist(), c.region.tolist()
    array, param = c.array.tolist(), c.param.tolist()

    def keys(i: int) -> tuple[tuple[int, bool], tuple[int, bool]]:
        # a copy names its buffer by host address and by parameter name; an allocation by the first it has
        return (array[i], True), (param[i], False)

    def buffer(i: int) -> tuple[int, bool]:
        return (array[i], True) if array[i] != NULL else (param[i], False)

    def in_region(i: int) -> bool:
        return bool(launch[i] == NULL and region[i] != NULL)

    region_uploads = {(region[i], key) for i in drop if kind[i] == _H2D and in_region(i) for key in keys(i)}
    dropped: dict[tuple[int, bool], set[int]] = {}  # buffer -> launches whose copy of it is dropped
    kept_up: dict[tuple[int, bool], list[int]] = {}  # buffer -> launches that still upload it
    kept_down: dict[tuple[int, bool], list[int]] = {}
    for i, k in enumerate(kind):
        if (k == _H2D or k == _D2H) and launch[i] != NULL:
            for key in keys(i):
                if i in drop:
                    dropped.setdefault(key, set()).add(launch[i])
                else:
                    (kept_up if k == _H2D else kept_down).setdefault(key, []).append(launch[i])
    first_alloc: dict[tuple[int, bool], int] = {}  # buffer -> the one launch that still allocates it
    last_free: dict[tuple[int, bool], int] = {}
    span: dict[tuple[int, bool], set[int]] = {}
    for key, launches in dropped.items():
        lo, hi = min(launches), max(launches)
        before = max((n for n in kept_up.get(key, ()) if n < lo), default=None)
        after = min((n for n in kept_down.get(key, ()) if n > hi), default=None)
        concerned = launches | {n for n in (before, after) if n is not None}
        span[key] = concerned
        first_alloc[key], last_free[key] = min(concerned), max(concerned)
    if span or region_uploads:
        for i, k in enumerate(kind):
            if k != _ALLOC and k != _FREE:
                continue
            key = buffer(i)
            if in_region(i):
                if (region[i], key) in region_uploads:
                    drop.add(i)
            elif launch[i] != NULL and launch[i] in span.get(key, ()):
                if launch[i] != (first_alloc[key] if k == _ALLOC else last_free[key]):
                    drop.add(i)
    _drop_idle_regions(run, drop)
    return Fix(action, frozenset(drop), host_cut={**_library_calls(run, drop), **_call_machinery(run, drop)})


def _host_before(run: Run) -> list[int]:
    """Host time between where the host was known to be and each record, as recorded.

    After a copy recorded with a fingerprint, the time is the recorder's
    digest: none of it is the program's, so it counts as nothing. Array
    operations: a fix asks this of every record of a run.
    """
    c = run.columns
    if len(c) == 0:
        return []
    start = c.start_ns.astype(np.int64)
    end = start + c.duration_ns.astype(np.int64)
    reached = np.concatenate(([0], np.maximum.accumulate(np.maximum(end, 0))[:-1]))
    before = np.maximum(start - reached, 0)
    copied = np.isin(c.kind, (_H2D, _D2H)) & (c.fingerprint >= 0)
    before[1:][copied[:-1]] = 0
    return before.tolist()


def _library_calls(run: Run, drop: Iterable[int]) -> dict[int, int]:
    """Each dropped library copy (no launch or region index) -> the least host time seen before a copy like it.

    "Like it": the same direction at the same line, anywhere in the run
    (the kept first one included), so a cut never exceeds what the cheapest
    such call cost the host.
    """
    c = run.columns
    kind, launch, region, site = c.kind.tolist(), c.launch.tolist(), c.region.tolist(), c.site.tolist()
    wanted = {(site[i], kind[i]) for i in drop
              if kind[i] in (_H2D, _D2H) and launch[i] == NULL and region[i] == NULL and site[i] != NULL}
    if not wanted:
        return {}
    before = _host_before(run)
    least: dict[tuple[int, int], int] = {}
    for i, k in enumerate(kind):
        key = (site[i], k)
        if key in wanted and launch[i] == NULL and region[i] == NULL:
            least[key] = min(least.get(key, before[i]), before[i])
    return {i: least[(site[i], kind[i])] for i in drop if (site[i], kind[i]) in least and least[(site[i], kind[i])] > 0
            and launch[i] == NULL and region[i] == NULL}


def _drop_idle_regions(run: Run, drop: set[int]) -> None:
    """Add the entry and exit records of regions whose every copy, allocation, free and sync is dropped."""
    c = run.columns
    kind, launch, region = c.kind.tolist(), c.launch.tolist(), c.region.tolist()
    work: dict[int, bool] = {}  # region -> whether any of its own records still happens
    for i, k in enumerate(kind):
        if launch[i] == NULL and region[i] != NULL and k not in (_ENTER, _EXIT):
            work[region[i]] = work.get(region[i], False) or i not in drop
    idle = {r for r, busy in work.items() if not busy}
    drop.update(i for i, k in enumerate(kind) if k in (_ENTER, _EXIT) and region[i] in idle and launch[i] == NULL)


def _call_machinery(run: Run, drop: set[int]) -> dict[int, int]:
    """First record of each region call that no longer happens -> the least host time seen before a call like it.

    A region call is a run of consecutive records of one region (no launch
    index) at one line: its entry, its exit, an `update_host`.
    """
    c = run.columns
    n = len(c)
    if n == 0:
        return {}
    launch, region, site, kind = c.launch.tolist(), c.region.tolist(), c.site.tolist(), c.kind.tolist()
    calls: list[list[int]] = []
    for i in range(n):
        if launch[i] != NULL or region[i] == NULL:
            continue
        last = calls[-1][-1] if calls else -2
        if last == i - 1 and region[last] == region[i] and site[last] == site[i]:
            calls[-1].append(i)
        else:
            calls.append([i])
    before = _host_before(run)
    least: dict[tuple[int, tuple[int, ...]], int] = {}
    for call in calls:
        shape = (site[call[0]], tuple(kind[i] for i in call))
        least[shape] = min(least.get(shape, before[call[0]]), before[call[0]])
    return {call[0]: least[(site[call[0]], tuple(kind[i] for i in call))]
            for call in calls if all(i in drop for i in call)}


def page_lock(run: Run, copies: Sequence[int], rate: PinnedRate | None) -> Fix | None:
    """The copies at the pinned rate (never slower than they were); None where that cannot be priced."""
    if rate is None or run.meta.backend in HOST_EXECUTED:
        return None
    c = run.columns
    durations = {i: min(int(c.duration_ns[i]), rate.copy_ns(int(c.nbytes[i]))) for i in copies}
    return Fix("page-lock", durations=durations)


def drop_syncs(run: Run, syncs: Iterable[int]) -> Fix:
    """The syncs are not made, and the downloads each one waited for (since the sync before it) do not block.

    Downloads a library made itself (no launch or region index: a scalar
    read through CUDA) are moved out of the loop with their syncs: they go,
    with their calls' host time (`_library_calls`).
    """
    dropped = frozenset(syncs)
    if run.meta.backend in HOST_EXECUTED or not dropped:
        return Fix("drop sync", dropped)
    c = run.columns
    kind, launch, region = c.kind.tolist(), c.launch.tolist(), c.region.tolist()
    released: set[int] = set()
    reads: set[int] = set()
    pending: list[int] = []
    for i, k in enumerate(kind):
        if k == _D2H:
            pending.append(i)
        elif k == _SYNC:
            if i in dropped:
                for p in pending:
                    (reads if launch[p] == NULL and region[p] == NULL else released).add(p)
            pending = []
    drop = dropped | reads
    return Fix("drop sync", frozenset(drop), nonblocking=frozenset(released), host_cut=_library_calls(run, reads))


def fuse(run: Run, launches: Sequence[int]) -> Fix:
    """The launches as one: the first takes their kernel time; the others, and the host work before each, go.

    On a GPU the kernels' device time all stays (as in a captured graph,
    each kernel still runs). Where the host runs the kernels itself
    (NumPy), each call also costs a fixed overhead that one call pays
    once: the calibrated cost of launching an empty kernel (`launch_us`),
    at most the shortest of the launches, goes for every launch after the
    first. Without a calibration nothing more goes.
    """
    if len(launches) < 2:
        return Fix("fuse launches")
    c = run.columns
    rest = frozenset(launches[1:])
    durations = c.duration_ns[list(launches)]
    total = int(durations.sum())
    link = run.meta.link
    if run.meta.backend in HOST_EXECUTED and link is not None and link.launch_us:
        fixed = min(int(durations.min()), int(link.launch_us * 1e3))
        total -= fixed * len(rest)
    return Fix("fuse launches", rest, {launches[0]: total}, host_cut={i: ALL for i in rest})


def pack(run: Run, runs: Sequence[Sequence[int]]) -> Fix:
    """Each run of small copies as one copy: the first stays, taking the run's time less the others' fixed cost.

    The fixed cost of a copy is taken as the shortest copy's time in the
    run (small copies are all fixed cost), as OFF505's time lost is.
    """
    c = run.columns
    drop: set[int] = set()
    durations: dict[int, int] = {}
    for r in runs:
        if len(r) < 2:
            continue
        times = [int(c.duration_ns[i]) for i in r]
        durations[r[0]] = sum(times) - (len(r) - 1) * min(times)
        drop.update(r[1:])
    return Fix("pack", frozenset(drop), durations)

