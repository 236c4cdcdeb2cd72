"""OFF504 and OFF505: copies that are slow because of how they are made, not whether.

Neither claims records: a large pageable copy or a small one may well be
needed; what is lost is the difference to the same bytes moved well (from
pinned memory; in one piece). OFF504 is skipped on backends listed in its
`skip_backends` option (by default the NumPy backend, where every copy is
a host memcpy and offload_core's CuPy backend would stage through pinned
memory anyway). Its measured time lost is each copy's measured duration
against the pinned rate (`profiler.analysis.pinned`: the run's own pinned
copies of that direction when it made large ones, else the link the run
was recorded with, else the shipped profile), so a CUPTI trace, which
measures every copy, always says what was lost. OFF505 counts runs of
small copies from one call site with no launch between them: those could
have been one copy.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from ...trace.records import DIRECTION_NAMES, Direction, Link, Record, Site
from ...units import fmt_bytes, parse_size
from ..pinned import PinnedRate, pinned_rate
from ..replay import Fix, pack, page_lock
from ..replay.timeline import HOST_EXECUTED
from .base import Context, Draft, names


def large_pageable_copy(ctx: Context) -> None:
    """OFF504: pageable copies of at least `min_bytes`."""
    run = ctx.run
    if run.meta.backend in tuple(ctx.option("OFF504", "skip_backends") or ()):
        return
    min_bytes = parse_size(ctx.option("OFF504", "min_bytes"), "OFF504 min_bytes")
    records = ctx.records
    groups: dict[tuple[Site | None, Direction], list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        kind = r.kind
        if (kind == "h2d" or kind == "d2h") and not r.pinned and r.nbytes >= min_bytes and not ctx.claimed(i):
            groups[(r.site, kind)].append(i)
    host_run = run.meta.backend in HOST_EXECUTED  # its copies are memcpys: no pinned rate applies to them
    for (site, kind), idxs in groups.items():
        rs = [records[i] for i in idxs]
        rate = None if host_run else pinned_rate(run, kind, run.meta.link)
        lost = None if rate is None else sum(max(r.duration_ns - rate.copy_ns(r.nbytes), 0) for r in rs)
        modelled = _pinned_gain(rs, kind, ctx.link)
        if rate is not None:
            pinned = rate.describe()
        elif ctx.link is not None and ctx.link.bandwidth_gbps(kind, True) != ctx.link.bandwidth_gbps(kind, False):
            pinned = f"{ctx.link.bandwidth_gbps(kind, True):g} GB/s"
        else:
            pinned = "pinned bandwidth"
        ctx.add(Draft(
            "OFF504", site, len(idxs), sum(r.nbytes for r in rs),
            {"direction": DIRECTION_NAMES[kind], "arrays": names(r.param for r in rs),
             "min_size": _size_text(ctx.option("OFF504", "min_bytes")), "pinned": pinned},
            [], lost, modelled, explicit_lost=True, fix=_page_lock(ctx, idxs, rate),
        ))


def _page_lock(ctx: Context, idxs: list[int], rate: PinnedRate | None) -> Callable[[list[int]], Fix | None]:
    # a function, not a lambda in the loop: each draft keeps its own copies and rate
    return lambda _: page_lock(ctx.run, idxs, rate)


def _pinned_gain(rs: list[Record], kind: Direction, link: Link | None) -> int | None:
    """Time pinned memory would save the copies `rs` (all of `kind`) on the modelled `link`: pageable minus pinned."""
    if link is None:
        return None
    if link.bandwidth_gbps(kind, True) == link.bandwidth_gbps(kind, False):
        return None  # no pinned figure: nothing to compare against
    gain = sum(link.copy_ns(kind, r.nbytes, False) - link.copy_ns(kind, r.nbytes, True) for r in rs)
    return max(gain, 0)


def many_small_copies(ctx: Context) -> None:
    """OFF505: runs of at least `min_run` copies of at most `max_bytes` with no launch between."""
    max_bytes = parse_size(ctx.option("OFF505", "max_bytes"), "OFF505 max_bytes")
    min_run = int(ctx.option("OFF505", "min_run"))
    records = ctx.records
    runs: dict[tuple[Site | None, Direction], list[list[int]]] = defaultdict(list)
    current: dict[tuple[Site | None, Direction], list[int]] = defaultdict(list)

    def close() -> None:
        for key, idxs in current.items():
            if len(idxs) >= min_run:
                runs[key].append(idxs)
        current.clear()

    for i, r in enumerate(records):
        kind = r.kind
        if kind == "launch":
            close()
        elif (kind == "h2d" or kind == "d2h") and r.nbytes <= max_bytes and not ctx.claimed(i):
            current[(r.site, kind)].append(i)
    close()

    latency = ctx.link.latency_us * 1e3 if ctx.link is not None else None
    for (site, kind), found in runs.items():
        idxs = [i for run in found for i in run]
        lost = sum((len(run) - 1) * min(records[i].duration_ns for i in run) for run in found)
        modelled = None if latency is None else int(sum((len(run) - 1) * latency for run in found))
        ctx.add(Draft(
            "OFF505", site, len(idxs), sum(records[i].nbytes for i in idxs),
            {"direction": DIRECTION_NAMES[kind], "runs": len(found), "max_size": _size_text(ctx.option("OFF505", "max_bytes")),
             "arrays": names(records[i].param for i in idxs)},
            [i for run in found for i in run[1:]], lost, modelled, explicit_lost=True,
            fix=_pack(ctx, found),
        ))


def _pack(ctx: Context, runs: list[list[int]]) -> Callable[[list[int]], Fix | None]:
    return lambda _: pack(ctx.run, runs)


def _size_text(option: object) -> str:
    """A size option as the catalog (or the user) wrote it: `8 MiB` stays `8 MiB`."""
    return option if isinstance(option, str) else fmt_bytes(int(option))  # type: ignore[call-overload]
