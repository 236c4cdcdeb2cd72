"""OFF507: the host waits for the device between launches, on every iteration of a loop.

A sync is attributed to its cause (`profiler.analysis.waits`): the call
site of the download that needed it (an `InOut`/`Out` copy-back,
`update_host`), or its own site (a region exit). Syncs already blamed on a copy finding (their downloads
were wasted) are skipped. A cause fires when it synchronised between at
least `min_count` pairs of launches and in at least `min_fraction` of the
launch intervals it spans: the device drains its queue each time and no
copy or launch can overlap the next.

The fraction is 0 by default: a scalar read once per training step waits
once in every 70-500 launches, and whether that wait costs anything
depends on what the host does after it, not on how rare it is. The replay
prices dropping the waits (the device no longer idles while the host
queues the next step), and materiality makes a wait that costs little
info. A raised fraction keeps only waits every few launches.

A wait that is the program's own measurement (the CUDA event timing idiom,
`end.synchronize()` before `start.elapsed_time(end)`; a `synchronize()`
before a host clock is read) is no mistake: without it the figure is
wrong (`profiler.analysis.measurements`). Such a sync is skipped when it
is its own cause, that is when no download since the previous sync asked
for it.
"""

from __future__ import annotations

from collections import defaultdict

from ...trace.records import Site
from ..replay import drop_syncs
from ..measurements import is_measurement
from ..waits import sync_causes
from .base import Context, Draft


def sync_per_launch(ctx: Context) -> None:
    """OFF507: a sync between (nearly) every two consecutive launches."""
    min_count = int(ctx.option("OFF507", "min_count"))
    min_fraction = float(ctx.option("OFF507", "min_fraction"))
    records = ctx.records
    causes = sync_causes(ctx.run.columns)
    launches = 0
    measurement: dict[Site, bool] = {}  # per sync site: a timing idiom's wait? (asked once: a timing loop syncs
                                        # thousands of times at one line)
    entries: dict[Site | None, list[tuple[int, int]]] = defaultdict(list)
    for i, r in enumerate(records):
        if r.kind == "launch":
            launches += 1
        elif r.kind == "sync" and not ctx.claimed(i):
            cause = causes[i]
            if cause is not None and cause == r.site:
                if cause not in measurement:
                    measurement[cause] = is_measurement(cause)
                if measurement[cause]:
                    continue
            entries[cause].append((i, launches))
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
            {"launches": span + 1, "fraction": f"{100 * len(intervals) / span:.0f}%", "every": _every(span, len(intervals))},
            idxs, sum(records[i].duration_ns for i in idxs), modelled, explicit_lost=True,
            fix=lambda claimed: drop_syncs(ctx.run, claimed),
        ))


def _every(span: int, waits: int) -> str:
    """Launches per wait, as a reader wants it: "1", "12", "5.5"."""
    every = span / waits
    return f"{every:.0f}" if every >= 10 or every == int(every) else f"{every:.1f}"
