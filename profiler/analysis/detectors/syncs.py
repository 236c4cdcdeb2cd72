"""OFF507: the host waits for the device between one launch and the next, every time.

A sync is attributed to its cause: the call site of the download that
needed it (an `InOut`/`Out` copy-back, `update_host`), or its own site
(a region exit). Syncs already blamed on a copy finding (their downloads
were wasted) are skipped. A cause fires when it synchronised between at
least `min_count` pairs of launches and in at least `min_fraction` of the
launch intervals it spans: the device drains its queue each time and no
copy or launch can overlap the next.
"""

from __future__ import annotations

from collections import defaultdict

from ...trace.records import Site
from .base import Context, Draft


def sync_per_launch(ctx: Context) -> None:
    """OFF507: a sync between (nearly) every two consecutive launches."""
    min_count = int(ctx.option("OFF507", "min_count"))
    min_fraction = float(ctx.option("OFF507", "min_fraction"))
    records = ctx.records
    launches = 0
    cause: Site | None = None
    seen_cause = False
    entries: dict[Site | None, list[tuple[int, int]]] = defaultdict(list)
    for i, r in enumerate(records):
        if r.kind == "launch":
            launches += 1
        elif r.kind == "d2h":
            cause, seen_cause = r.site, True
        elif r.kind == "sync":
            site = cause if seen_cause else r.site
            cause, seen_cause = None, False
            if not ctx.claimed(i):
                entries[site].append((i, launches))
    total = launches
    for site, found in entries.items():
        mid = [(i, n) for i, n in found if 0 < n < total]  # a launch before it and one after it
        intervals = {n for _, n in mid}
        if len(intervals) < min_count:
            continue
        span = max(intervals) - min(intervals) + 1
        if len(intervals) / span < min_fraction:
            continue
        idxs = [i for i, _ in mid]
        link = ctx.link
        modelled = None if link is None or link.sync_us is None else int(len(idxs) * link.sync_us * 1e3)
        ctx.add(Draft(
            "OFF507", site, len(idxs), 0,
            {"launches": span + 1, "fraction": f"{100 * len(intervals) / span:.0f}%"},
            idxs, sum(records[i].duration_ns for i in idxs), modelled, explicit_lost=True,
        ))
