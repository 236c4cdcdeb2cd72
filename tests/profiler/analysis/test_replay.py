"""The replay: the unchanged program gives back its own times; fixes save what the timeline says they save.

Hand-built timelines pin down the edges one by one (overlap on two
streams, two copy engines, a sync that drains the queue, an asynchronous
copy hidden behind compute, blocking copies, the host's own work), then
recorded programs, the suite's recordings and CUPTI captures check that
replaying a real trace unchanged gives back its wall time and every
device operation's start.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from offload_core.suite import run_suite
from profiler.analysis.replay import (Fix, Timeline, drop_syncs, fuse, hoist, keep_resident, pack, page_lock, replay,
                                      replayed_wall, saving)
from profiler.analysis.replay.schedule import ALL
from profiler.analysis.replay.timeline import DEVICE, ENGINE_NAMES
from profiler.analysis.pinned import pinned_rate
from profiler.model import Link, Run
from profiler.sources.cupti.convert import convert
from profiler.sources.recorder import Recorder

from ..sources.cupti.captures import Builder
from ..kit import PROGRAMS, ROOT, record
from .test_detectors import NAIVE_LOOP
from ..timelines import US
from ..timelines import Timeline as Hand

DATA = ROOT / "tests" / "data"


def assert_replays_itself(run: Run) -> Timeline:
    """Replaying `run` unchanged gives its wall time and every device operation's start and end."""
    tl = Timeline.of(run)
    s = replay(tl)
    assert s.wall_ns == run.meta.wall_ns == replayed_wall(tl, recorded=True)
    c = run.columns
    for i in range(len(tl)):
        if tl.role[i] == DEVICE:
            assert (s.start[i], s.end[i]) == (int(c.start_ns[i]), int(c.start_ns[i] + c.duration_ns[i])), i
    return tl


# ------------------------------------------------------------------ hand-built timelines
def test_an_async_copy_hidden_behind_compute_saves_nothing() -> None:
    h = Hand()
    h.kernel(0, 10_000)
    hidden = h.copy("h2d", 2_000, 4_000)  # pinned, on a side stream: runs under the kernel
    k2 = h.kernel(10_000, 10_000)
    run = h.run(20_100)
    tl = assert_replays_itself(run)
    assert tl.streams == 2 and tl.stream[hidden] != tl.stream[k2], "the copy overlapped the kernel: another stream"
    assert saving(tl, hoist([hidden])) == 0, "its 4 ms were never on the critical path"
    assert saving(tl, Fix("shorter", durations={hidden: 1_000 * US})) == 0
    assert saving(tl, Fix("slower", durations={hidden: 12_000 * US})) == 0, "it was not waited for: no edge to k2"


def test_a_copy_in_line_with_compute_saves_its_time() -> None:
    h = Hand()
    h.kernel(0, 10_000)
    copy = h.copy("h2d", 10_000, 4_000)  # one stream: after the kernel, before the next
    h.kernel(14_000, 10_000)
    tl = assert_replays_itself(h.run(24_000))
    assert tl.streams == 1
    assert saving(tl, hoist([copy])) == 4_000 * US


def test_two_copy_engines_run_both_ways_at_once() -> None:
    h = Hand()
    up = h.copy("h2d", 0, 5_000)
    down = h.copy("d2h", 0, 4_000)  # overlaps the upload: another engine, another stream
    k = h.kernel(5_000, 3_000)  # waited for the upload (the stream that ended when it started)
    tl = assert_replays_itself(h.run(8_000))
    assert [ENGINE_NAMES[tl.lane_engine[tl.lane[i]]] for i in (up, down)] == ["H2D copy engine", "D2H copy engine"]
    assert tl.stream[up] == tl.stream[k] != tl.stream[down]
    assert saving(tl, hoist([down])) == 0, "hidden behind the upload"
    assert saving(tl, hoist([up])) == 4_000 * US, "the kernel runs beside the download, which ends at 4 ms"
    assert saving(tl, hoist([up, down])) == 5_000 * US


def test_two_overlapping_copies_of_one_direction_get_two_lanes() -> None:
    h = Hand()
    a = h.copy("h2d", 0, 4_000)
    b = h.copy("h2d", 1_000, 4_000)
    tl = assert_replays_itself(h.run(5_000))
    assert tl.lane[a] != tl.lane[b] and tl.lane_engine[tl.lane[a]] == tl.lane_engine[tl.lane[b]]
    assert saving(tl, hoist([b])) == 1_000 * US, "the first copy ends at 4 ms"


def sync_drains_the_queue() -> tuple[Run, int]:
    """Three kernels queued at once, a sync that waits 29 ms for them, then 5 ms of host work before the next."""
    h = Hand()
    for n in range(3):
        h.kernel(10_000 * n, 10_000)  # issued at once; each queued behind the one before
    sync = h.sync(1_000, 29_000)
    h.kernel(35_000, 10_000)
    return h.run(45_000), sync


def test_a_sync_drains_the_queue_and_dropping_it_lets_the_host_run_ahead() -> None:
    run, sync = sync_drains_the_queue()
    tl = assert_replays_itself(run)
    assert tl.queued[1] and tl.queued[2] and not tl.queued[4], "the last kernel waited for the host, not the device"
    fixed = replay(tl, drop_syncs(run, [sync]))
    assert fixed.start[4] == 30_000 * US, "issued while the device was still busy: it starts when the third ends"
    assert saving(tl, drop_syncs(run, [sync])) == 5_000 * US, "the device no longer idles while the host works"


def test_a_blocking_pageable_download_holds_the_host_until_it_ends() -> None:
    h = Hand()
    h.kernel(0, 10_000)
    down = h.copy("d2h", 10_000, 2_000, pinned=False)  # cudaMemcpy into pageable memory: the host waits for it
    h.kernel(15_000, 1_000)  # 3 ms of host work after the copy returned
    tl = assert_replays_itself(h.run(16_000))
    assert tl.blocking[down] and tl.queued[down]
    faster = page_lock(h.run(16_000), [down], pinned_rate(h.run(16_000), "d2h"))
    assert faster is not None and faster.durations[down] < 2_000 * US
    assert saving(tl, faster) == 2_000 * US - faster.durations[down], "the host resumes earlier by what the copy saves"
    assert saving(tl, Fix("no wait", nonblocking=frozenset({down}))) == 3_000 * US, \
        "not waiting, the host's 3 ms of work run while the device is busy: the next kernel queues behind the copy"


def test_on_the_numpy_backend_the_host_does_everything_in_turn() -> None:
    h = Hand(backend="numpy")
    a = h.copy("h2d", 0, 3_000)
    h.kernel(3_500, 1_000)
    b = h.copy("d2h", 4_600, 2_000)
    h.sync(6_700, 5)
    run = h.run(7_000)
    tl = assert_replays_itself(run)
    assert all(tl.blocking[i] for i in (a, b))
    assert saving(tl, hoist([a])) == 3_000 * US and saving(tl, hoist([a, b])) == 5_000 * US
    assert page_lock(run, [a], pinned_rate(run, "h2d")) is None, "a host memcpy has no pinned rate"
    assert drop_syncs(run, [3]).nonblocking == frozenset(), "the host does the copy: it cannot stop waiting for it"


def test_the_end_of_the_run_waits_for_the_device() -> None:
    h = Hand()
    h.kernel(0, 50_000)  # the host issues, then has nothing more to do
    k = h.kernel(50_000, 40_000)
    tl = assert_replays_itself(h.run(91_000))
    assert saving(tl, Fix("half", durations={k: 20_000 * US})) == 20_000 * US


def test_the_machinery_of_one_launch_goes_with_its_records() -> None:
    h = Hand(backend="numpy")
    h.add("alloc", 100, 10, 10, launch=0, array=1, nbytes=8)
    up = h.copy("h2d", 200, 100, 10, launch=0, array=1)  # 90 µs of offload_core's own work before it
    h.kernel(400, 50, launch=0)
    h.add("free", 500, 5, 10, launch=0, array=1, nbytes=8)
    h.kernel(1_000, 50, launch=1)  # 495 µs of the program's work before it
    run = h.run(1_100)
    tl = assert_replays_itself(run)
    assert tl.joined[up] and not tl.joined[4]
    assert saving(tl, hoist([up])) == 190 * US, "the copy and the 90 µs that prepared it"
    assert saving(tl, hoist([4])) == 50 * US, "the program's own work before another call stays"
    assert saving(tl, Fix("no host", host_cut={4: ALL})) == 495 * US
    assert saving(tl, Fix("less host", host_cut={4: 100 * US})) == 100 * US


# ------------------------------------------------------------------ the fixes
def test_keep_resident_drops_the_per_launch_allocations_and_frees_too(tmp_path: Path) -> None:
    run = record(NAIVE_LOOP, tmp_path)
    copies = [i for i, r in enumerate(run.records) if r.is_copy]
    ups = [i for i in copies if run.records[i].kind == "h2d"]
    downs = [i for i in copies if run.records[i].kind == "d2h"]
    wasted = ups[2:] + downs[:-1]  # y and x go up once, y comes back once
    fix = keep_resident(run, wasted)
    kinds = [run.records[i].kind for i in sorted(fix.drop)]
    assert kinds.count("alloc") == 2 * 19 and kinds.count("free") == 2 * 19, "each buffer allocated and freed once"
    assert all(run.records[i].launch != 0 or run.records[i].kind != "alloc" for i in fix.drop)
    assert all(run.records[i].launch != 19 or run.records[i].kind != "free" for i in fix.drop)
    tl = Timeline.of(run)
    dropped = sum(run.records[i].duration_ns for i in fix.drop)
    assert saving(tl, fix) >= dropped, "at least the records' own time, and their launches' machinery"


def test_a_region_call_that_no_longer_happens_takes_its_least_machinery_with_it() -> None:
    h = Hand(backend="numpy")
    t = 0.0
    downs, syncs = [], []
    for n in range(5):
        h.kernel(t, 100, launch=n, region=1)
        gap = 50 + 10 * n  # offload_core's update_host work, plus the program's own, before the download
        downs.append(h.copy("d2h", t + 100 + gap, 20, line=20, region=1))
        syncs.append(h.add("sync", t + 120 + gap, 1, 20, region=1))
        t += 200 + gap
    run = h.run(t)
    tl = assert_replays_itself(run)
    assert tl.joined[syncs[0]] and not tl.joined[downs[0]]
    fix = keep_resident(run, downs[:4] + syncs[:4], "copy back once")
    assert fix.host_cut == {d: 50 * US for d in downs[:4]}, "the least time ever seen before update_host"
    assert saving(tl, fix) == 4 * (20 + 1 + 50) * US


def test_a_region_entered_in_a_loop_and_hoisted_is_not_entered_again() -> None:
    h = Hand(backend="numpy")
    t = 0.0
    for n in range(3):
        h.add("region_enter", t + 30, 1, 15, region=n)
        h.add("alloc", t + 31, 1, 15, region=n, array=0xB000, nbytes=8)
        up = h.copy("h2d", t + 32, 100, line=15, region=n, array=0xB000)
        h.kernel(t + 140, 50, launch=n, region=n)
        h.add("free", t + 200, 1, 15, region=n, array=0xB000, nbytes=8)
        h.add("region_exit", t + 200, 2, 15, region=n)
        t += 202
    run = h.run(t)
    tl = assert_replays_itself(run)
    ups = [i for i, r in enumerate(run.records) if r.kind == "h2d"]
    fix = keep_resident(run, ups[1:], "upload once")
    kinds = sorted(run.records[i].kind for i in fix.drop)
    assert kinds == sorted(["region_enter", "alloc", "h2d", "free", "region_exit"] * 2)
    assert up == ups[-1] and saving(tl, fix) > 2 * 100 * US


def test_page_lock_prices_copies_at_the_runs_own_pinned_rate() -> None:
    h = Hand(backend="cupti")
    h.copy("h2d", 0, 1_000, nbytes=50_000_000)  # 50 MB in 1 ms: 50 GB/s from pinned memory
    slow = h.copy("h2d", 1_000, 8_000, nbytes=50_000_000, pinned=False)
    run = h.run(9_000)
    rate = pinned_rate(run, "h2d")
    assert rate is not None and rate.measured and rate.gbps == pytest.approx(50.0)
    assert "measured on this run's 1 pinned H2D copy" in rate.describe()
    fix = page_lock(run, [slow], rate)
    assert fix is not None and fix.durations == {slow: 1_000 * US}
    assert saving(Timeline.of(run), fix) == 7_000 * US
    default = pinned_rate(Run(run.meta, run.records[1:]), "h2d")  # no pinned copy to measure: the shipped profile
    assert default is not None and not default.measured and default.source == "modelled on pcie5-x16"


def test_drop_syncs_releases_the_downloads_each_sync_waited_for() -> None:
    """offload_core's copies back (a launch index): the syncs go, the downloads stay but no longer hold the host."""
    h = Hand(backend="cupy")
    syncs, downs = [], []
    for n in range(3):
        h.kernel(100 * n, 20, launch=n)
        downs.append(h.copy("d2h", 100 * n + 20, 5, line=9, nbytes=8, pinned=False, launch=n))
        syncs.append(h.sync(100 * n + 25, 5, line=9))
    fix = drop_syncs(h.run(300), syncs[1:])
    assert fix.drop == frozenset(syncs[1:]) and fix.nonblocking == frozenset(downs[1:]) and not fix.host_cut


def test_drop_syncs_moves_a_library_read_out_of_the_loop_with_its_call() -> None:
    """`loss.item()` per step (CUPTI): the reads go with their syncs, and so does the host time of each call."""
    h = Hand()
    syncs, downs = [], []
    for n in range(3):
        t = 100 * n
        h.kernel(t, 20)  # issued at t, the host then works 40 µs on the step (line 10) ...
        downs.append(h.copy("d2h", t + 60 + 5 * (n == 1), 2, line=9, nbytes=4, pinned=False))  # ... then reads
        syncs.append(h.sync(t + 62 + 5 * (n == 1), 3, line=9))
    run = h.run(300)
    fix = drop_syncs(run, syncs[1:])
    assert fix.drop == frozenset(syncs[1:] + downs[1:]) and fix.nonblocking == frozenset()
    assert fix.host_cut == {downs[1]: 40 * US, downs[2]: 40 * US}, "the least host time seen before a read at line 9"
    assert saving(Timeline.of(run), fix) == 2 * (40 + 2 + 3) * US, "the 5 µs more before the second read stay"


def test_a_library_upload_dropped_takes_its_staging_with_it() -> None:
    """CuPy stages `cp.asarray(host)` through pinned memory on the host before the copy call: that time goes too."""
    h = Hand()
    ups = []
    for n in range(4):
        t = 1000 * n
        h.kernel(t, 10, line=5)  # x.fill(step)
        ups.append(h.copy("h2d", t + 10 + 300 + 20 * n, 50, line=6, nbytes=128 << 20))  # 300+ µs of host staging
        h.kernel(t + 380 + 20 * n, 10, line=6)
    run = h.run(4000)
    fix = hoist(ups[1:], run=run)
    assert fix.host_cut == {i: 300 * US for i in ups[1:]}, "the least staging time seen at line 6, not the largest"
    assert hoist(ups[1:]).host_cut == {}, "without the run, only the copies go"
    assert keep_resident(run, ups[1:]).host_cut == fix.host_cut


def test_pack_keeps_one_copy_paying_the_fixed_cost_once() -> None:
    h = Hand()
    small = [h.copy("h2d", 100 * n, 10 + n, nbytes=64) for n in range(4)]
    run = h.run(500)
    fix = pack(run, [small])
    assert fix.drop == frozenset(small[1:])
    assert fix.durations == {small[0]: (10 + 11 + 12 + 13 - 3 * 10) * US}


def test_fuse_merges_launches_and_the_host_work_between_them() -> None:
    h = Hand()
    ks = [h.kernel(100 * n, 5) for n in range(10)]  # the host needs 95 µs per launch: host-bound
    run = h.run(1_000)
    tl = Timeline.of(run)
    fix = fuse(run, ks)
    assert fix.durations == {ks[0]: 50 * US} and fix.drop == frozenset(ks[1:]) == frozenset(fix.host_cut)
    assert replayed_wall(tl, fix) == (50 + 95) * US, "one 50 µs kernel, then what the run did after its last launch"


def _with_link(run: Run, **figures: float) -> Run:
    return Run(replace(run.meta, link=Link("calibrated", 8.0, 8.0, **figures)), run.records)


def test_fixes_are_priced_on_the_program_without_the_recordings_cost() -> None:
    h = Hand()
    ks = [h.kernel(100 * n, 5) for n in range(10)]  # 95 µs of host work per launch, 30 of them CUPTI's
    run = _with_link(h.run(1_000), cupti_launch_us=30.0, recorded_launch_us=70.0)
    tl = assert_replays_itself(run)
    assert tl.recording == [0, 60 * US] + [30 * US] * 8, "the first launch has no gap: its cost goes to the next"
    assert replayed_wall(tl) == (1_000 - 10 * 30) * US, "unrecorded, each launch came 70 µs after the last"
    assert replayed_wall(tl, fuse(run, ks)) == (50 + 95) * US, "one 50 µs kernel, then what the run did after it"
    assert replayed_wall(tl, fuse(run, ks), recorded=True) == (10 * 30 + 95) * US, \
        "as recorded, the fused loop still pays every launch's 30 µs of recording"
    bare = h.run(1_000)
    assert Timeline.of(bare).recording == [0] * 10 and replayed_wall(Timeline.of(bare), fuse(bare, ks)) == 145 * US


def test_the_recordings_cost_on_the_critical_path_is_not_a_saving() -> None:
    """A scalar read whose callbacks cost 10 µs per record: the copy's are made at its call, while the kernel still
    runs; the sync's lie within its span, after the wait, while the device idles. Dropping the sync saves the rest."""
    h = Hand(backend="cupti")
    for step in range(5):
        t = 200 * step
        h.kernel(t, 100)  # the device's work of the step
        h.copy("d2h", t + 100, 1, nbytes=4, line=13, pinned=False)  # the read: queued behind the kernel, blocking
        h.sync(t + 20, 81 + 40, line=13)  # entered right after the launch; returns 40 µs after the copy
    run = _with_link(h.run(1_000), cupti_launch_us=0.0, cupti_event_us=10.0)
    tl = assert_replays_itself(run)
    assert tl.queued[1] and tl.gap[1] == 20 * US, \
        "the read was issued when its call began (the sync's start), not when the copy started after the kernel"
    syncs = [i for i, r in enumerate(run.records) if r.kind == "sync"]
    fix = drop_syncs(run, syncs[:-1])
    # a step took 200 µs; 10 of them were the recording of the sync while the device idled (the copy's was hidden
    # by the kernel); unrecorded and without the sync, the device runs the kernels back to back
    assert saving(tl, fix) == 4 * (200 - 10 - 100) * US
    assert replayed_wall(tl) == (1_000 - 5 * 10) * US
    assert tl.recording[1] == 10 * US, "the copy's callbacks ran at its call, before the host waited in it"
    assert tl.cost_recording[2] == 10 * US and tl.recording[3] == 0, "the sync's lie within its span, after the wait"


def test_a_host_bound_scalar_reads_recording_is_not_a_saving() -> None:
    """CuPy's `float(res)` every step of a host-bound loop (CUPTI): the copy's callbacks lie before it, in the host
    time the dropped read takes with it, and the nested driver call's within the sync's span; neither is saved.

    Unrecorded, a step is 12 µs of the program, a kernel, the read's call (5 µs), its 1 µs copy and a 2 µs sync:
    moving the read out of the loop saves 8 µs a step. Recorded, each record costs 10 µs more: the copy starts 15 µs
    after the kernel was issued, and the sync, which waits for nothing, spans 12 µs.
    """
    h = Hand(backend="cupti")
    for step in range(5):
        k = 40 * step + 12
        h.kernel(k, 3)
        h.copy("d2h", k + 15, 1, nbytes=8, line=9, pinned=False)
        h.sync(k + 16, 12, line=9)
    run = _with_link(h.run(200), cupti_launch_us=0.0, cupti_event_us=10.0)
    tl = assert_replays_itself(run)
    syncs = [i for i, r in enumerate(run.records) if r.kind == "sync"]
    assert saving(tl, drop_syncs(run, syncs[:-1])) == 4 * 8 * US, "the read's call, copy and sync, not their recording"
    assert replayed_wall(tl) == 5 * 20 * US, "a step unrecorded: 12 + 5 + 1 + 2 µs"
    assert tl.recording[1] == 10 * US and tl.cost_recording[2] == 10 * US
    bare = Timeline.of(Run(replace(run.meta, link=None), run.records))
    assert saving(bare, drop_syncs(run, syncs[:-1])) == 4 * (12 + 1 + 12) * US, \
        "uncalibrated: the least host time seen before a read, its copy and its sync, recording and all"


def _item_per_step(exits_ns: tuple[int, int]) -> Run:
    """PyTorch's `.item()` every step of a device-bound loop (CUPTI): a 100 µs kernel, its 1 µs pinned download, the
    sync the read entered 20 µs in, whose span ends 2 µs after the copy; then the tracer's exit callbacks and 10 µs
    of the program before the next launch, 18 µs in all. Calibrated at 5 µs a record."""
    h = Hand(backend="cupti")
    for step in range(5):
        t = 121 * step
        h.kernel(t, 100)
        h.copy("d2h", t + 100, 1, nbytes=4, line=13)
        h.sync(t + 20, 83, line=13)
    run = _with_link(h.run(5 * 121), cupti_launch_us=0.0, cupti_event_us=5.0)
    return Run(replace(run.meta, exits_ns=exits_ns), run.records)


def test_the_exit_callbacks_the_tracer_timed_lie_after_the_wait() -> None:
    """The calibrated average puts 2 of a sync's 5 µs in its span and 3 after it; the tracer timed 8 µs of exit
    callbacks after each wait: that much lies after the sync, where it delays the next launch of a device-bound loop,
    and the read's saving is priced without it."""
    guessed, timed = (assert_replays_itself(_item_per_step(e)) for e in ((0, 0), (8_000, 0)))
    run = _item_per_step((8_000, 0))
    syncs = [i for i, r in enumerate(run.records) if r.kind == "sync"]
    launches = [i for i, r in enumerate(run.records) if r.kind == "launch"]
    assert [guessed.recording[k] for k in launches[1:]] == [3 * US] * 4
    assert [timed.recording[k] for k in launches[1:]] == [8 * US] * 4
    assert [timed.cost_recording[k] for k in syncs] == [2 * US] * 5, "the span's share stays the calibrated one"
    assert replayed_wall(guessed) == (5 * 121 - 4 * (2 + 3) - 2) * US
    assert replayed_wall(timed) == (5 * 121 - 4 * (2 + 8) - 2) * US
    fix = drop_syncs(run, syncs[:-1])
    assert saving(timed, fix) == 4 * (121 - 100 - 2 - 8) * US, "the step's 10 µs of the program and the 1 µs copy"
    assert saving(guessed, fix) == 4 * (121 - 100 - 2 - 3) * US


def test_offload_cores_recorder_has_its_own_figures_per_launch_and_per_event() -> None:
    h = Hand(backend="cupy")
    up = h.copy("h2d", 10, 5, launch=0)
    k = h.kernel(40, 5, launch=0)
    sync = h.sync(60, 1)
    later = h.kernel(80, 5, launch=1)
    run = _with_link(h.run(100), recorded_launch_us=4.0, recorded_event_us=2.0, cupti_launch_us=50.0)
    tl = assert_replays_itself(run)
    assert (tl.recording[up], tl.recording[k], tl.recording[sync], tl.recording[later]) == (2 * US, 4 * US, 0, 6 * US), \
        "CUPTI's figure is not offload_core's recorder's; the sync is recorded when it returns: after its wait"
    # the kernel's gap (30 µs after the upload was issued) is its launch's machinery: it goes with the kernel, but
    # for the 4 µs of recording; the launch still returns only once its 5 µs upload has landed (offload_core settles it)
    assert replayed_wall(tl, Fix("drop", frozenset({k}))) == replayed_wall(tl) - (30 - 4 - 5) * US


def test_a_queued_launchs_recording_cost_is_charged_to_the_next_gap() -> None:
    h = Hand()
    h.kernel(0, 50)
    h.kernel(51, 50)  # queued: no host gap of its own
    wait = h.sync(120, 1)
    run = _with_link(h.run(200), cupti_launch_us=10.0)
    tl = assert_replays_itself(run)
    assert tl.recording[wait] == 20 * US, "both launches' cost lands in the only gap the host had"


def test_fusing_host_executed_launches_saves_each_calls_calibrated_fixed_cost() -> None:
    h = Hand(backend="numpy")
    ks = [h.kernel(100 * n, 5 + n) for n in range(10)]  # the host runs each kernel: 5 to 14 µs
    run = h.run(1_000)
    assert fuse(run, ks).durations == {ks[0]: 95 * US}, "uncalibrated: all the kernels' time stays"
    calibrated = _with_link(run, launch_us=3.0)
    assert fuse(calibrated, ks).durations == {ks[0]: (95 - 9 * 3) * US}, "3 µs of each later call goes"
    assert fuse(_with_link(run, launch_us=30.0), ks).durations == {ks[0]: (95 - 9 * 5) * US}, \
        "never more than the shortest launch"
    gpu = Hand()
    gk = [gpu.kernel(100 * n, 5) for n in range(10)]
    assert fuse(_with_link(gpu.run(1_000), launch_us=3.0), gk).durations == {gk[0]: 50 * US}, \
        "on a GPU each kernel still runs: its device time stays"


# ------------------------------------------------------------------ real traces replay themselves
@pytest.mark.parametrize("name", ["stencil.naive.json", "stencil.batched.json"])
def test_the_test_data_traces_replay_themselves(name: str) -> None:
    assert_replays_itself(Run.load(DATA / name))


def test_recorded_programs_replay_themselves(tmp_path: Path) -> None:
    assert_replays_itself(record(NAIVE_LOOP, tmp_path))
    heat = (PROGRAMS / "heat.py").read_text().replace("__main__", "__never__")
    both = "\nimport numpy as _np\nheat(_np.ones(512), 3)\noffload_core.set_mode('naive')\nheat(_np.ones(512), 3)\n"
    assert_replays_itself(record("import offload_core\n" + heat + both, tmp_path, name="heat_run.py"))


@pytest.mark.parametrize("mode", ["naive", "batched"])
def test_the_suites_recordings_replay_themselves(mode: str) -> None:
    with Recorder() as rec:
        run_suite(["Stream", "JACOBI_1D", "ATAX"], size_factor=0.002, mode=mode, reps=3)
    assert_replays_itself(rec.run())


def _cupti_run(b: Builder) -> Run:
    from profiler.model import Meta

    meta = Meta(backend="cupti", device="test", mode="batched", started_at="2026-01-01T00:00:00Z", wall_ns=b.t + 1000)
    return Run(meta, convert(b.capture()).records)


def test_cupti_captures_replay_themselves() -> None:
    b = Builder()
    for step in range(5):
        b.h2d(7, 1 << 20, host=0xA000, fp=f"b{step}", kind="pinned")
        b.kernel(8)
        b.d2h(9, 4, host=0x7F00, sync=True)  # blocking: convert adds the wait before it
        b.h2d(10, 1 << 24, host=0xB000, kind="pageable", sync=True)
        b.kernel(11)
        b.sync(12)
    assert_replays_itself(_cupti_run(b))


@pytest.mark.parametrize("backend", ["numpy", "cupy", "cupti"])
def test_odd_traces_replay_themselves(backend: str) -> None:
    """Random records (overlaps, out-of-order host times, nulls everywhere) still give back their own times."""
    from dataclasses import replace

    from ..synth import synthetic_run

    for seed in (1, 2, 3):
        run = synthetic_run(3_000, seed=seed)
        assert_replays_itself(Run(replace(run.meta, backend=backend), run.records))


def test_a_digested_copys_bytes_cost_the_recording_after_the_copy() -> None:
    """An upload recorded with a fingerprint: its digest lies in the host's time after it, at the calibrated rate."""
    h = Hand(backend="cupy")
    up = h.copy("h2d", 10, 5, nbytes=8_000_000, fingerprint="ab")
    k = h.kernel(200, 5)
    plain = h.copy("h2d", 300, 5, nbytes=8_000_000)
    k2 = h.kernel(500, 5)
    run = _with_link(h.run(600), recorded_event_us=2.0, digest_gbps=50.0)
    tl = assert_replays_itself(run)
    assert tl.recording[up] == 0 and tl.recording[plain] == 2 * US
    assert tl.recording[k] == (2 + 160) * US, "the event, and 8 MB digested at 50 GB/s, after the copy"
    assert tl.recording[k2] == 0, "no digest of a copy recorded without a fingerprint"
    assert replayed_wall(tl) == replayed_wall(tl, recorded=True) - (2 + 160 + 2) * US


def test_a_copy_a_cache_holds_is_digested_at_the_cached_rate() -> None:
    """`calibrate` digests 64 MiB (more than a cache holds: 6.5 GB/s on the H100 machine) and 4 MiB (held: 12 GB/s);
    a copy's bytes, just read by the copy, are digested at the rate of their size: the small buffer's up to 4 MiB, the
    large one's from 64 MiB, and between them the time per byte moves with log2 of the size."""
    h = Hand(backend="cupy")
    sizes = [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]
    ks = []
    for n, size in enumerate(sizes):
        h.copy("h2d", 100_000 * n, 5, nbytes=size, fingerprint=f"f{n}")
        ks.append(h.kernel(100_000 * n + 90_000, 5))
    run = _with_link(h.run(500_000), recorded_event_us=0.0, digest_gbps=4.0, digest_small_gbps=16.0)
    tl = assert_replays_itself(run)
    # 1/16 ns a byte up to 4 MiB, 1/4 from 64 MiB; 16 MiB lies half way in log2: 1/16 + (1/4 - 1/16) / 2 = 5/32
    assert [tl.recording[k] for k in ks] == [(1 << 20) // 16, (4 << 20) // 16, (16 << 20) * 5 // 32, (64 << 20) // 4,
                                             (256 << 20) // 4]
    assert replace(run.meta.link, digest_small_gbps=None).digest_ns(1 << 20) == (1 << 20) // 4, \
        "without the small buffer's figure, every size at the large one's rate"


def test_an_asynchronous_downloads_digest_lies_after_the_sync_that_makes_its_bytes_final() -> None:
    """`.item()` in PyTorch: a pinned download, then a sync; the tracer digests the bytes when the sync returns,
    but the copy's callbacks ran as its call was made, before the sync."""
    h = Hand(backend="cupti")
    h.kernel(0, 100)
    down = h.copy("d2h", 100, 1, nbytes=4_000, fingerprint="ab")  # pinned: the host does not wait for it
    wait = h.sync(20, 100)
    after = h.kernel(150, 10)
    run = _with_link(h.run(200), cupti_launch_us=0.0, cupti_event_us=5.0, digest_gbps=1.0)  # a 4 µs digest
    tl = assert_replays_itself(run)
    assert tl.recording[wait] == 5 * US, "the copy's callbacks lie before the sync; the sync's own cost does not"
    assert tl.cost_recording[wait] == 5 * US, "the sync's own cost lies in its span, after the wait (19 µs there)"
    assert tl.recording[after] == 4 * US and tl.recording[down] == 0, "the digest after the sync"


def _region_per_step(fingerprint: str | None, steps: int = 3) -> Run:
    """offload_core on a GPU: a region entered every step uploads 'w' (8 MB, page-locked: asynchronous), then a
    launch; 20 µs of the program's own work lie between the region's entry and the launch. Recorded with a
    fingerprint, the digest of the bytes (160 µs at 50 GB/s) runs while the 100 µs copy does, and hides the wait for
    it; without one, the trace shows the host waiting for the copy to land."""
    h = Hand(backend="cupy")
    t = 0
    digest = 160 if fingerprint else 0
    for n in range(steps):
        h.add("region_enter", t + 10, 1, 15, region=n)
        h.add("alloc", t + 12, 1, 15, region=n, array=0xB000, nbytes=8)
        h.copy("h2d", t + 14, 100, line=15, region=n, array=0xB000, nbytes=8_000_000, fingerprint=fingerprint)
        k = t + 14 + max(digest, 100) + 20
        h.kernel(k, 10, launch=n, region=n)
        h.add("free", k + 16, 1, 15, region=n, array=0xB000, nbytes=8)
        h.add("region_exit", k + 16, 2, 15, region=n)
        t = k + 50
    return _with_link(h.run(t), recorded_event_us=0.0, recorded_launch_us=0.0, digest_gbps=50.0)


@pytest.mark.parametrize("fingerprint", [None, "w"])
def test_offload_core_waits_for_its_page_locked_uploads_before_a_call_returns(fingerprint: str | None) -> None:
    """`settle_uploads`: the host goes on only once the upload landed, so hoisting it saves the copy's time, whether
    the trace shows the wait (no fingerprints) or the recorder's digest hid it (the replay sets the digest aside)."""
    run = _region_per_step(fingerprint)
    tl = assert_replays_itself(run)
    ups = [i for i, r in enumerate(run.records) if r.kind == "h2d"]
    kernels = [i for i, r in enumerate(run.records) if r.kind == "launch"]
    assert replayed_wall(tl) == 3 * (14 + 100 + 20 + 50) * US, "unrecorded, a step waits for its copy: 184 µs"
    fix = keep_resident(run, ups[1:], "upload once")
    # each hoisted step: the 100 µs wait for the copy, the entry, allocation and free (1 µs each) and the gaps of
    # the records of the region's calls (1 + 1 µs joined, and the least seen before such a call: 10 before the
    # entry, 6 before the free) go; the program's own 20 µs before the launch stay
    assert saving(tl, fix) == 2 * (100 + 3 + 2 + 10 + 6) * US
    assert all(tl.settles[i] for i in ups)
    assert [tl.settle_wait[k] for k in kernels] == [0 if fingerprint else 100 * US] * 3, \
        "the wait for the copy comes first in the launch's gap (after the digest that ran beside the copy)"


def test_a_launchs_own_upload_is_waited_for_once_the_kernel_is_issued() -> None:
    """offload() of a buffer with no region: alloc, upload, launch, then the wait for the upload, then the free."""
    h = Hand(backend="cupy")
    h.add("alloc", 0, 1, 10, launch=0, array=1, nbytes=8)
    up = h.copy("h2d", 2, 100, 10, launch=0, array=1)
    k = h.kernel(103, 10, launch=0)  # queued behind the copy: issued while it ran
    free = h.add("free", 110, 1, 10, launch=0, array=1, nbytes=8)  # after the wait for the copy (to 102)
    after = h.kernel(300, 10, launch=1)
    run = h.run(320)
    tl = assert_replays_itself(run)
    assert tl.queued[k] and tl.host_after[k] == 2 * US
    assert replayed_wall(tl, Fix("faster copy", durations={up: 10 * US})) == replayed_wall(tl) - 90 * US, \
        "the host waited for the copy: a faster one saves the host's time too"
    assert tl.settles[up] and tl.settle_wait[k] == -1 and tl.settle_wait[free] == 100 * US
    assert tl.settle_wait[after] == -1, "waited for once"


def test_another_processs_sync_does_not_bound_when_a_copy_was_issued() -> None:
    """A merged run's records are in order of time across processes, not in one process's issue order."""
    def run(sync_process: int) -> Run:
        h = Hand(backend="cupti")
        h.kernel(0, 100)
        h.copy("d2h", 100, 1, nbytes=4, pinned=False)  # queued behind the kernel, holds the host
        h.add("sync", 20, 90, 13, process=sync_process)
        return h.run(200)

    assert Timeline.of(run(0)).gap[1] == 20 * US, "its own process's sync: the read's call began at 20 µs"
    assert Timeline.of(run(1)).gap[1] == 0, "a sync of another process says nothing about this one's host"


@pytest.mark.parametrize("recorded", [False, True])
def test_a_fix_replayed_from_a_checkpoint_gives_the_whole_replays_wall(monkeypatch: pytest.MonkeyPatch,
                                                                        recorded: bool) -> None:
    """Fixes starting before, at, between and after saved states: the same wall time as replaying everything."""
    from profiler.analysis.replay import schedule

    run = Run.load(DATA / "stencil.naive.json")
    tl = Timeline.of(run)
    n = len(tl)
    fixes = [Fix("drop", drop=frozenset({i})) for i in range(n)]
    fixes += [Fix("shorter", durations={i: 1}) for i in range(0, n, 7)]
    fixes += [Fix("cut", host_cut={i: ALL}) for i in range(0, n, 5)]
    fixes += [Fix("nonblocking", nonblocking=frozenset({i, n - 1})) for i in range(0, n, 11)]
    full = [schedule._replay(tl, fix, None, None, recorded) for fix in fixes]  # from the first record, nothing saved
    monkeypatch.setattr(schedule, "CHECKPOINT_EVERY", 4)
    base = replayed_wall(tl, recorded=recorded)
    assert base == schedule._replay(tl, Fix("none"), None, None, recorded)
    assert len(schedule._CHECKPOINTS[tl][recorded]) == (n + 3) // 4
    assert [replayed_wall(tl, fix, recorded=recorded) for fix in fixes] == full
    assert any(wall != base for wall in full), "the fixes change the wall time"
