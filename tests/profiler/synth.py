"""Synthetic runs for the columnar code: every field varied, None where the model allows it."""

from __future__ import annotations

import random

from profiler.model import KINDS, Link, Meta, Record, Run, Site

SITES = (Site("/w/app.py", 10, "loop", "offload(k, y, x)", 5), Site("/w/app.py", 20, "main", "with region(x):", 1),
         Site("/w/lib.py", 3, "step", "", 1), None)
LINK = Link("synthetic", h2d_pageable_gbps=6.3, d2h_pageable_gbps=2.7, h2d_pinned_gbps=54.0, latency_us=13.0,
            launch_us=4.0, sync_us=2.5)


def synthetic_run(n: int, seed: int = 1) -> Run:
    """`n` records, launches grouped as offload_core issues them, with odd cases mixed in."""
    rng = random.Random(seed)
    records = []
    t = 0
    launch = 0
    while len(records) < n:
        site = rng.choice(SITES)
        kernel = rng.choice(("daxpy", "triad", None))
        if rng.random() < 0.1:  # a region's own copy: no launch, a region id
            kind = rng.choice(("h2d", "d2h", "region_enter", "region_exit"))
            records.append(Record(kind, t, rng.randrange(0, 500), rng.randrange(0, 10**6) if kind in ("h2d", "d2h") else 0,
                                  rng.random() < 0.5, None, None, rng.choice(("x", None)), rng.choice((None, 2**40)),
                                  site, rng.randrange(0, 5), "batched", None))
            t += 1000
            continue
        for kind in rng.sample(("h2d", "alloc", "launch", "d2h", "sync", "free", "h2d"), rng.randrange(1, 7)):
            copy = kind in ("h2d", "d2h")
            records.append(Record(kind, t, rng.randrange(0, 10**4), rng.randrange(1, 10**7) if copy or kind == "alloc" else 0,
                                  copy and rng.random() < 0.3, kernel, launch, rng.choice(("y", "x", None)) if copy else None,
                                  rng.randrange(2**20, 2**47) if copy else None, site, rng.choice((None, 7)),
                                  rng.choice(("naive", "batched")), f"{rng.getrandbits(64):016x}" if copy and rng.random() < 0.7 else None))
            t += rng.randrange(1, 10**5)
        launch += rng.choice((1, 1, 1, 2))  # indices need not be dense
    meta = Meta(backend="numpy", device="host", mode="naive", started_at="2026-01-01T00:00:00+00:00", wall_ns=t + 5,
                fingerprints=True)
    return Run(meta, tuple(records[:n]))
