"""Who moves the data: exact copies of the batched and the naive variant, none for the NumPy baseline."""

from __future__ import annotations

import os

from offload_core import set_mode
from offload_core.suite.registry import BY_NAME
from offload_core.suite.timing import HostClock
from offload_core.suite.variants import host_baseline, offload_variant

from ..conftest import Recorder

SUITE_DIR = os.path.join("offload_core", "suite")


def _run(name: str, target: int, reps: int, mode: str) -> None:
    set_mode(mode)
    try:
        offload_variant(BY_NAME[name].build(target), reps, HostClock())
    finally:
        set_mode("batched")


def test_daxpy_batched_copies_once_naive_on_every_launch(rec: Recorder) -> None:
    n, reps, nbytes = 1000, 5, 8000
    _run("DAXPY", n, reps, "batched")
    assert [(kind, size) for kind, _, size in rec.copies()] == [("h2d", nbytes), ("h2d", nbytes), ("d2h", nbytes)]
    assert rec.count("launch") == reps
    rec.clear()
    _run("DAXPY", n, reps, "naive")
    assert rec.copies() == [("h2d", "y", nbytes), ("h2d", "x", nbytes), ("d2h", "y", nbytes)] * reps
    assert rec.count("launch") == reps and rec.count("sync") == reps and rec.count("alloc") == 2 * reps


def test_triad_output_is_never_uploaded(rec: Recorder) -> None:
    n, reps = 2000, 4
    _run("TRIAD", n, reps, "batched")
    assert (rec.count("h2d"), rec.bytes("h2d"), rec.count("d2h"), rec.bytes("d2h")) == (2, 2 * 8 * n, 1, 8 * n)
    rec.clear()
    _run("TRIAD", n, reps, "naive")
    assert (rec.count("h2d", "a"), rec.count("h2d", "b"), rec.count("h2d", "c")) == (0, reps, reps)
    assert (rec.count("d2h", "a"), rec.bytes("d2h")) == (reps, reps * 8 * n)


def test_jacobi_1d_naive_moves_both_arrays_through_both_sweeps(rec: Recorder) -> None:
    target, reps = 998, 3
    nbytes = 8 * (target + 2)
    _run("JACOBI_1D", target, reps, "batched")
    assert (rec.count("h2d"), rec.bytes("h2d"), rec.count("d2h"), rec.bytes("d2h")) == (2, 2 * nbytes, 2, 2 * nbytes)
    assert rec.count("launch") == 2 * reps
    rec.clear()
    _run("JACOBI_1D", target, reps, "naive")
    # sweep 1: A in, B in and back; sweep 2: A in and back, B in
    assert (rec.count("h2d"), rec.bytes("h2d")) == (4 * reps, 4 * reps * nbytes)
    assert (rec.count("d2h", "B"), rec.count("d2h", "A"), rec.bytes("d2h")) == (reps, reps, 2 * reps * nbytes)


def test_reduction_scratch_stays_on_the_device_when_batched(rec: Recorder) -> None:
    _run("DOT", 50_000, 10, "batched")
    parts = BY_NAME["DOT"].build(50_000).arrays["partial"].nbytes
    # a, b and the accumulator up once; the accumulator and the (Out) partials back once
    assert rec.count("h2d") == 3 and rec.count("d2h") == 2
    assert rec.bytes("d2h") == 8 + parts and rec.count("launch") == 20


def test_the_suite_driver_is_the_call_site_of_every_launch(rec: Recorder) -> None:
    _run("ADD", 100, 2, "naive")
    sites = {e.callsite.file for e in rec.events if e.kind in ("launch", "h2d", "d2h") and e.callsite}
    assert len(sites) == 1 and sites.pop().endswith(os.path.join(SUITE_DIR, "variants.py"))


def test_numpy_baseline_makes_no_offload_events(rec: Recorder) -> None:
    p = BY_NAME["TRIAD"].build(100)
    loop = host_baseline(p, 3, HostClock())
    assert rec.events == []
    assert loop.loop_s > 0 and loop.total_s >= loop.loop_s
