"""The pinned rate a page-lock fix is priced at: the run's own pinned copies, else a link profile."""

from __future__ import annotations

import pytest

from profiler.analysis.pinned import MIN_WITNESS_BYTES, pinned_rate
from profiler.model import Link
from profiler.trace.link import resolve

from ..timelines import Timeline as Hand


def test_the_runs_own_large_pinned_copies_are_the_witnesses() -> None:
    h = Hand()
    h.copy("d2h", 0, 1_000, nbytes=20_000_000)  # 20 GB/s
    h.copy("d2h", 1_000, 3_000, nbytes=100_000_000)  # 33 GB/s: together 120 MB in 4 ms
    h.copy("d2h", 4_000, 1_000, nbytes=MIN_WITNESS_BYTES - 1)  # too small to tell the bandwidth
    h.copy("h2d", 5_000, 1_000, nbytes=50_000_000, pinned=False)  # pageable: no witness
    rate = pinned_rate(h.run(6_000), "d2h")
    assert rate is not None and rate.measured and rate.gbps == pytest.approx(30.0) and rate.latency_ns == 0
    assert rate.describe() == "30 GB/s (measured on this run's 2 pinned D2H copies)"
    assert rate.copy_ns(30_000_000) == 1_000_000


def test_without_witnesses_the_recordings_link_then_the_shipped_profile() -> None:
    h = Hand()
    h.copy("h2d", 0, 5_000, nbytes=10 << 20, pinned=False)
    run = h.run(5_000)
    pcie = resolve("pcie5-x16")
    rate = pinned_rate(run, "h2d")
    assert rate is not None and not rate.measured and rate.source == "modelled on pcie5-x16"
    assert (rate.gbps, rate.latency_ns) == (pcie.h2d_pinned_gbps, int(pcie.latency_us * 1e3))
    mine = Link("local-cupy", 6.0, 3.0, 40.0, 41.0, latency_us=8.0)
    rate = pinned_rate(run, "h2d", mine)
    assert rate is not None and (rate.gbps, rate.source) == (40.0, "modelled on local-cupy")
    # a calibration where pinned memory could not be had says nothing of the pinned rate: the default stands in
    rate = pinned_rate(run, "h2d", Link("no-pinning", 6.0, 3.0))
    assert rate is not None and (rate.gbps, rate.source) == (pcie.h2d_pinned_gbps, "modelled on pcie5-x16")
