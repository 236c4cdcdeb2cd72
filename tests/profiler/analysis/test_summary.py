"""Summaries are pure functions of a Run: totals, per call site and per kernel."""

from __future__ import annotations

from pathlib import Path

from profiler.analysis.summary import Flow, by_kernel, by_site, totals
from profiler.model import Link, Record, Run

from ..kit import record

PROGRAM = """\
import numpy as np
from offload_core import offload, region
from tests.offload_core.kit import daxpy, scale

x = np.ones(1000)
y = np.zeros(1000)
for _ in range(3):
    offload(daxpy, y, x, 1.0)
with region(y):
    offload(scale, y, 2.0)
"""


def test_totals(tmp_path: Path) -> None:
    run = record(PROGRAM, tmp_path)
    t = totals(run)
    assert (t.h2d.count, t.h2d.nbytes) == (7, 7 * 8000)  # 3 launches x (y, x) + the region's y
    assert (t.d2h.count, t.d2h.nbytes) == (4, 4 * 8000)  # 3 launches + the region exit
    assert (t.launches.count, t.syncs.count, t.regions) == (4, 4, 1)
    assert t.copies == t.h2d + t.d2h and t.copies.count == 11
    assert t.h2d.modelled_ns is None, "no link, nothing modelled"
    assert 0 < t.copy_share < 1


def test_modelled_costs_follow_the_link(tmp_path: Path) -> None:
    run = record(PROGRAM, tmp_path)
    link = Link("l", h2d_pageable_gbps=8.0, d2h_pageable_gbps=4.0, latency_us=10.0, sync_us=1.0)
    t = totals(run, link)
    assert t.h2d.modelled_ns == 7 * (10_000 + 1000)
    assert t.d2h.modelled_ns == 4 * (10_000 + 2000)
    assert t.syncs.modelled_ns == 4 * 1000


def test_by_site(tmp_path: Path) -> None:
    run = record(PROGRAM, tmp_path)
    sites = {s.site.line: s for s in by_site(run) if s.site is not None}
    assert set(sites) == {8, 9, 10}
    assert (sites[8].h2d.count, sites[8].d2h.count, sites[8].launches, sites[8].syncs, sites[8].kernels) == (6, 3, 3, 3, ("daxpy",))
    assert (sites[9].h2d.count, sites[9].d2h.count) == (1, 1), "the region's copies belong to its with line"
    assert (sites[10].copies.count, sites[10].launches) == (0, 1)
    ordered = [s.copies.ns for s in by_site(run)]
    assert ordered == sorted(ordered, reverse=True)


def test_by_kernel_counts_only_launch_copies(tmp_path: Path) -> None:
    run = record(PROGRAM, tmp_path)
    kernels = {k.kernel: k for k in by_kernel(run)}
    assert kernels["daxpy"].launches.count == 3 and kernels["daxpy"].h2d.count == 6 and kernels["daxpy"].d2h.count == 3
    assert kernels["daxpy"].syncs.count == 3
    assert kernels["scale"].launches.count == 1 and kernels["scale"].h2d.count == 0


def test_flow_arithmetic() -> None:
    assert Flow(1, 2, 3) + Flow(4, 5, 6) == Flow(5, 7, 9, None)
    assert Flow(1, 2, 3, 10) + Flow(1, 1, 1) == Flow(2, 3, 4, 10)


def test_an_empty_run_sums_to_nothing() -> None:
    from ..synth import LINK, synthetic_run

    empty = Run(synthetic_run(1).meta, ())
    t = totals(empty, LINK)
    assert (t.h2d, t.d2h, t.launches, t.syncs, t.regions) == (Flow(0, 0, 0, 0),) * 4 + (0,)
    assert by_site(empty) == () and by_kernel(empty) == ()


# ----------------------------------------------------------------------------
# The summaries are NumPy reductions over run.columns; these references compute
# the same figures one record at a time, as the definitions read.
def modelled_ns(r: Record, link: Link) -> int:
    """What one record costs on `link`: copies by size, launches and syncs by overhead."""
    if r.kind == "h2d" or r.kind == "d2h":
        return link.copy_ns(r.kind, r.nbytes, r.pinned)
    if r.kind == "launch":
        return int((link.launch_us or 0.0) * 1e3) + r.duration_ns
    if r.kind == "sync":
        return int((link.sync_us or 0.0) * 1e3)
    return 0


def _ref_flow(records, link):  # type: ignore[no-untyped-def]
    rs = list(records)
    return Flow(len(rs), sum(r.nbytes for r in rs), sum(r.duration_ns for r in rs),
                None if link is None else sum(modelled_ns(r, link) for r in rs))


def _ref_by_site(run, link):  # type: ignore[no-untyped-def]
    order = {}
    for r in run.records:
        if r.kind in ("h2d", "d2h", "launch", "sync"):
            order.setdefault(r.site, []).append(r)
    out = []
    for site, rs in order.items():
        kernels = tuple(dict.fromkeys(r.kernel for r in rs if r.kind == "launch" and r.kernel is not None))
        out.append((site, _ref_flow((r for r in rs if r.kind == "h2d"), link), _ref_flow((r for r in rs if r.kind == "d2h"), link),
                    sum(r.kind == "launch" for r in rs), sum(r.kind == "sync" for r in rs), kernels))
    key = lambda s: (-(s[1].ns + s[2].ns), -(s[1].nbytes + s[2].nbytes), ("", 0) if s[0] is None else (s[0].file, s[0].line))  # noqa: E731
    return sorted(out, key=key)


def test_columnar_summaries_match_record_by_record_definitions() -> None:
    from ..synth import LINK, synthetic_run

    run = synthetic_run(4000, seed=7)
    for link in (None, LINK):
        t = totals(run, link)
        for kind, flow in (("h2d", t.h2d), ("d2h", t.d2h), ("launch", t.launches), ("sync", t.syncs), ("alloc", t.allocs)):
            assert flow == _ref_flow((r for r in run.records if r.kind == kind), link), kind
        assert t.regions == sum(r.kind == "region_enter" for r in run.records)
        got = [(s.site, s.h2d, s.d2h, s.launches, s.syncs, s.kernels) for s in by_site(run, link)]
        assert got == _ref_by_site(run, link)
        kernels = {k.kernel: k for k in by_kernel(run, link)}
        names = {r.kernel for r in run.records if r.kernel is not None}
        assert set(kernels) == names
        for name in names:
            mine = [r for r in run.records if r.kernel == name]
            k = kernels[name]
            assert (k.launches, k.h2d, k.d2h, k.syncs) == tuple(
                _ref_flow((r for r in mine if r.kind == kind), link) for kind in ("launch", "h2d", "d2h", "sync"))
