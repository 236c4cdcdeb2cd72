"""Totals of records whose numbers are huge: every sum is exact, never an int64 that wrapped round to a negative.

A trace may hold any value up to 2^63-1 in a record (the columns are int64); two such records add up to more
than int64 holds, and NumPy's integer sums wrap silently. Each total is checked against the same sum in Python
integers over the records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler.analysis.launches import launch_table
from profiler.analysis.summary import by_kernel, by_site, totals
from profiler.analysis.verdict import verdict
from profiler.cli import main
from profiler.model import Meta, Record, Run, Site
from profiler.trace.link import SHIPPED_DIR, load_link

BIG = 2**62
LINK = load_link(SHIPPED_DIR / "pcie5-x16.yaml")
KINDS = ("h2d", "h2d", "d2h", "d2h", "d2h", "launch", "launch", "sync", "sync")


def huge_run() -> Run:
    meta = Meta(backend="numpy", device="host", mode="batched", started_at="2026-01-01T00:00:00+00:00",
                wall_ns=2**63 - 1, argv=("app.py",), cwd="/w")
    site = Site("/w/app.py", 1, "<module>", "offload(k, x)", 1)
    return Run(meta, tuple(Record(kind, i, BIG + i, BIG + i, site=site, kernel="k", launch=i // 2, array=1)
                           for i, kind in enumerate(KINDS)))


def exact(run: Run, kind: str, field: str) -> int:
    return sum(getattr(r, field) for r in run.records if r.kind == kind)


def test_totals_per_site_and_per_kernel_are_exact() -> None:
    run = huge_run()
    t = totals(run, LINK)
    for kind, flow in (("h2d", t.h2d), ("d2h", t.d2h), ("launch", t.launches), ("sync", t.syncs)):
        assert (flow.nbytes, flow.ns) == (exact(run, kind, "nbytes"), exact(run, kind, "duration_ns")), kind
        assert flow.modelled_ns is not None and flow.modelled_ns >= 0, kind
    assert t.copies.nbytes == exact(run, "h2d", "nbytes") + exact(run, "d2h", "nbytes") > 2**64
    (site,) = by_site(run, LINK)
    assert (site.h2d.nbytes, site.d2h.ns) == (t.h2d.nbytes, t.d2h.ns)
    assert site.h2d.modelled_ns == t.h2d.modelled_ns and site.d2h.modelled_ns == t.d2h.modelled_ns
    (kernel,) = by_kernel(run, LINK)
    assert kernel.launches.ns == exact(run, "launch", "duration_ns")


def test_the_verdict_and_the_launch_table_are_exact() -> None:
    run = huge_run()
    v = verdict(run)
    assert v is not None
    assert v.sync_ns == exact(run, "sync", "duration_ns") and v.sync_ns > 0
    assert v.copy_bytes == exact(run, "h2d", "nbytes") + exact(run, "d2h", "nbytes")
    assert all(x >= 0 for x in (v.kernel_ns, v.copy_ns, v.wait_idle_ns, v.host_idle_ns, v.busy_ns))
    table = launch_table(run, LINK)
    assert all(int(x) >= 0 for x in (*table.h2d_bytes.tolist(), *table.d2h_ns.tolist()))


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_reports_show_no_negative_total(tmp_path: Path, fmt: str) -> None:
    trace = huge_run().save(tmp_path / "huge.json")
    out = tmp_path / f"report.{fmt}"
    assert main(["report", str(trace), "--format", fmt, "-o", str(out)]) == 0
    text = out.read_text()
    if fmt == "json":
        data = json.loads(text)
        for kind in ("h2d", "d2h", "launches", "syncs"):
            assert all(v is None or v >= 0 for v in data["totals"][kind].values()), (kind, data["totals"][kind])
        assert data["totals"]["h2d"]["nbytes"] == 2 * BIG + 1
        assert data["verdict"]["copy_bytes"] == 5 * BIG + 10
    else:
        assert " -9.22e" not in text and ">-9.22e" not in text and "-200.0%" not in text and "-100%" not in text
