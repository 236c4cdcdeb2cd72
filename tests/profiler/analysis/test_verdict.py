"""The run's verdict: the four parts add up to the wall time, the largest names the run, idle time has a line."""

from __future__ import annotations

import pytest

from profiler.analysis.verdict import Verdict, verdict
from profiler.model import Run

from ..kit import ROOT
from ..timelines import US
from ..timelines import Timeline as Hand

DATA = ROOT / "tests" / "data"


def judged(run: Run) -> Verdict:
    v = verdict(run)
    assert v is not None
    assert v.kernel_ns + v.copy_ns + v.wait_idle_ns + v.host_idle_ns == v.wall_ns == run.meta.wall_ns
    assert v.busy_ns == v.kernel_ns + v.copy_ns
    return v


def test_the_naive_stencil_is_transfer_bound_and_the_batched_one_host_bound() -> None:
    naive = judged(Run.load(DATA / "stencil.naive.json"))
    assert naive.kind == "transfer-bound" and naive.copies == 62 and naive.copy_bytes == 24_800_000
    assert naive.summary().startswith("transfer-bound: device busy 91%, copies 75%")
    assert naive.allocations == 122, "on the NumPy backend the per-launch device arrays count with the copies"
    assert ("copies ran 75% of the wall time with no kernel beside them (62 copies, 24.8 MB, and their device arrays' "
            "122 allocations and frees)") in naive.evidence()
    batched = judged(Run.load(DATA / "stencil.batched.json"))
    assert batched.kind == "host-bound" and batched.wait_idle_ns == 0, "the NumPy backend has no queue to drain"
    assert batched.launches == 31
    ends = sum(c.ns for c in batched.causes if c.site is None)
    assert batched.launch_interval_ns == (batched.wall_ns - ends) // 31 < batched.wall_ns // 31, \
        "the rate between the first and the last device operation, not over the wall time"
    assert "31 launches, one per 82.2 µs of device activity" in batched.evidence()
    assert "most after the last device operation (630 µs), then before stencil.py:30 (460 µs, 15 times)" \
        in batched.evidence(), "the end is larger, but the line behind the idle time is named too"
    assert batched.short() == "host-bound (idle 51%)"


def test_kernels_back_to_back_are_device_bound() -> None:
    h = Hand()
    for n in range(10):
        h.kernel(1_000 * n + 5, 1_000)
    v = judged(h.run(10_010))
    assert v.kind == "device-bound" and v.kernel_ns == 10_000 * US and v.mean_kernel_ns == 1_000 * US
    assert v.evidence() == "kernels ran 100% of the wall time (10 launches, 1 ms on average)"


def test_tiny_kernels_issued_slowly_are_host_bound_and_charged_to_the_launching_line() -> None:
    h = Hand()
    for n in range(100):
        h.kernel(50 * n + 45, 5, line=12)  # 45 µs of host work before each 5 µs kernel
    v = judged(h.run(5_000))
    assert v.kind == "host-bound" and v.share(v.host_idle_ns) == pytest.approx(0.9)
    cause = v.causes[0]
    assert (cause.site is not None and cause.site.line, cause.reason, cause.count) == (12, "host", 99)
    assert cause.ns == 99 * 45 * US
    assert "100 launches, one per 49.5 µs of device activity, kernels 5 µs on average; most before app.py:12 (4.46 ms, 99 times)" in v.evidence("/w")


def item_loop(work_us: float) -> Run:
    """Each step: a 1 ms kernel (line 8), `.item()` (line 9: a small download and a wait), then host work."""
    h = Hand()
    t = 0.0
    for _ in range(10):
        h.kernel(t + 5, 1_000, line=8)
        h.copy("d2h", t + 1_005, 5, line=9, nbytes=4)
        h.sync(t + 10, 1_000, line=9)  # the host waits from just after the launch until the copy is done
        h.kernel(t + 1_010 + work_us, 1, line=11)  # the next thing the host issues, after its own work
        t += 1_011 + work_us
    return h.run(t)


def test_a_wait_per_step_that_drains_the_queue_is_sync_bound_and_charged_to_the_wait() -> None:
    v = judged(item_loop(work_us=3_000))
    assert v.kind == "sync-bound" and v.syncs == 10
    assert v.wait_idle_ns == 10 * 3_000 * US
    top = v.causes[0]
    assert (top.site is not None and top.site.line, top.reason, top.count) == (9, "wait", 10), \
        "the line that made the host wait, not line 11 that launched after the gap"
    assert "(10 syncs); most after app.py:9 (30 ms, 10 times)" in v.evidence("/w")


def test_the_same_gap_without_a_wait_is_the_hosts() -> None:
    h = Hand()
    for n in range(10):
        h.kernel(4_000 * n, 1_000, line=8)
        h.kernel(4_000 * n + 3_999, 1, line=11)  # 3 ms of host work, but nothing waited for the device
    v = judged(h.run(40_000))
    assert v.kind == "host-bound" and v.wait_idle_ns == 0
    assert v.causes[0].site is not None and v.causes[0].site.line == 11 and v.causes[0].reason == "host"


def test_a_blocking_download_that_waited_for_queued_kernels_drains_the_queue() -> None:
    h = Hand()
    for n in range(5):
        t = 6_000 * n
        h.kernel(t, 1_000, line=8)
        h.kernel(t + 1_000, 1_000, line=8)  # queued behind the first
        h.copy("d2h", t + 2_000, 100, line=9, pinned=False)  # cudaMemcpy to pageable memory: the host waits
        h.kernel(t + 5_100, 900, line=8)  # 3 ms of host work after the copy returned
    v = judged(h.run(30_000))
    waits = [c for c in v.causes if c.reason == "wait"]
    assert waits and waits[0].site is not None and waits[0].site.line == 9 and waits[0].ns == 5 * 3_000 * US


def test_idle_time_before_the_first_and_after_the_last_operation() -> None:
    h = Hand()
    h.kernel(2_000, 1_000)
    v = judged(h.run(10_000))
    reasons = {c.reason: c.ns for c in v.causes}
    assert reasons == {"start-up": 2_000 * US, "end": 7_000 * US}
    assert v.kind == "host-bound"


def test_a_run_without_device_work_has_no_verdict() -> None:
    h = Hand()
    h.add("alloc", 0, 10, nbytes=8)
    assert verdict(h.run(100)) is None
    assert verdict(Hand().run(0)) is None


def test_each_verdict_says_what_kind_of_change_helps() -> None:
    naive = judged(Run.load(DATA / "stencil.naive.json"))
    assert naive.remedy().startswith("copy less or hide the copies: keep arrays on the device")
    device = Hand()
    for n in range(10):
        device.kernel(1_000 * n + 10, 1_000, line=8)
    assert judged(device.run(10_010)).remedy().startswith("the kernels are the limit")
    assert judged(item_loop(work_us=3_000)).remedy().startswith("wait less: keep the values the host reads")


@pytest.mark.parametrize(("gap_us", "launch_bound"), [(45, True), (450, False)])
def test_a_host_bound_run_is_told_to_launch_less_or_to_move_its_own_work(gap_us: int, launch_bound: bool) -> None:
    """Tiny kernels every 50 µs: the launch rate is the limit; every 455 µs: the host's own work between them."""
    h = Hand()
    for n in range(100):
        h.kernel((gap_us + 5) * n + gap_us, 5, line=12)
    v = judged(h.run((gap_us + 5) * 100))
    assert v.kind == "host-bound"
    assert v.remedy().startswith("issue fewer, larger launches") is launch_bound
    assert v.remedy().startswith("the host's own work between device operations") is not launch_bound
