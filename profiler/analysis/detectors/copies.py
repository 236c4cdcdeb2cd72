"""OFF504 and OFF505: copies that are slow because of how they are made, not whether.

Neither claims records: a large pageable copy or a small one may well be
needed; what is lost is the difference to the same bytes moved well (from
pinned memory; in one piece). OFF504 is skipped on backends listed in its
`skip_backends` option (by default the NumPy backend, where every copy is
a host memcpy and offload_core's CuPy backend would stage through pinned
memory anyway). OFF505 counts runs of small copies from one call site with
no launch between them: those could have been one copy.
"""

from __future__ import annotations

from collections import defaultdict

from ...trace.records import DIRECTION_NAMES, Direction, Link, Record, Site
from ...units import fmt_bytes, parse_size
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
    measured = run.meta.link if run.meta.backend != "numpy" else None
    for (site, kind), idxs in groups.items():
        rs = [records[i] for i in idxs]
        lost = _pinned_gain(rs, kind, measured, actual=True)
        modelled = _pinned_gain(rs, kind, ctx.link, actual=False)
        pinned_bw = ctx.link.bandwidth_gbps(kind, True) if ctx.link else None
        ctx.add(Draft(
            "OFF504", site, len(idxs), sum(r.nbytes for r in rs),
            {"direction": DIRECTION_NAMES[kind], "arrays": names(r.param for r in rs),
             "min_size": _size_text(ctx.option("OFF504", "min_bytes")),
             "pinned": f"{pinned_bw:g} GB/s" if pinned_bw else "pinned bandwidth"},
            [], lost, modelled, explicit_lost=True,
        ))


def _pinned_gain(rs: list[Record], kind: Direction, link: Link | None, actual: bool) -> int | None:
    """Time pinned memory would have saved the copies `rs` (all of `kind`): measured durations (or modelled
    pageable ones) minus pinned."""
    if link is None:
        return None
    if link.bandwidth_gbps(kind, True) == link.bandwidth_gbps(kind, False):
        return None  # no pinned figure: nothing to compare against
    gain = 0
    for r in rs:
        pinned = link.copy_ns(kind, r.nbytes, True)
        gain += (r.duration_ns if actual else link.copy_ns(kind, r.nbytes, False)) - pinned
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
        ))


def _size_text(option: object) -> str:
    """A size option as the catalog (or the user) wrote it: `8 MiB` stays `8 MiB`."""
    return option if isinstance(option, str) else fmt_bytes(int(option))  # type: ignore[call-overload]
