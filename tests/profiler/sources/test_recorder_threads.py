"""The recorder under threads: events arrive on the emitting threads; nothing is lost, doubled or torn.

offload_core calls subscribers on the thread that issues each operation,
so a threaded program feeds the recorder from many threads at once. The
contract (profiler.sources.recorder): the hot path is one atomic
`list.append`; `start`, `stop` and `run` are serialised by the recorder's
lock; `run` while threads record is a consistent snapshot.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from offload_core import offload
from profiler.sources import recorder as recorder_module
from profiler.sources.recorder import Recorder

from ...offload_core.kit import daxpy

THREADS = 4
LAUNCHES = 25
N = 256


def test_launches_on_many_threads_are_all_recorded_while_snapshots_are_taken() -> None:
    barrier = threading.Barrier(THREADS + 1)
    snapshots: list[int] = []
    errors: list[BaseException] = []

    def work() -> None:
        x, y = np.ones(N), np.zeros(N)  # each thread its own arrays: no claims to wait for
        barrier.wait()
        try:
            for _ in range(LAUNCHES):
                offload(daxpy, y, x, 1.0)
            assert (y == LAUNCHES).all()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    with Recorder() as rec:
        workers = [threading.Thread(target=work) for _ in range(THREADS)]
        for t in workers:
            t.start()
        barrier.wait()
        while any(t.is_alive() for t in workers):
            snapshots.append(len(rec.run().records))  # from another thread, while they record
            time.sleep(0.001)
        for t in workers:
            t.join()
    assert not errors, errors
    run = rec.run()
    launches = [r for r in run.records if r.kind == "launch"]
    assert len(launches) == THREADS * LAUNCHES
    assert len({r.launch for r in launches}) == THREADS * LAUNCHES, "launch numbers are unique across threads"
    assert sum(r.kind == "h2d" for r in run.records) == 2 * THREADS * LAUNCHES
    assert sum(r.kind == "d2h" for r in run.records) == THREADS * LAUNCHES
    assert len(run.records) == 9 * THREADS * LAUNCHES, "nine events per naive launch, none lost or doubled"
    assert snapshots == sorted(snapshots) and all(n <= len(run.records) for n in snapshots)
    for array in {r.array for r in run.records if r.kind == "h2d" and r.param == "y"}:
        # one thread's records keep their order: its uploads of y start one after the other
        starts = [r.start_ns for r in run.records if r.array == array and r.kind == "h2d"]
        assert starts == sorted(starts)


def test_two_threads_starting_one_recorder_subscribe_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real = recorder_module.get_backend

    def slow_backend():  # type: ignore[no-untyped-def]
        time.sleep(0.2)  # both threads are inside start() at once
        return real()

    monkeypatch.setattr(recorder_module, "get_backend", slow_backend)
    rec = Recorder()
    outcomes: list[str] = []

    def start() -> None:
        try:
            rec.start()
            outcomes.append("started")
        except RuntimeError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        offload(daxpy, np.zeros(N), np.ones(N), 1.0)
    finally:
        rec.stop()
        rec.stop()  # stopping twice is harmless
    assert sorted(outcomes) == ["started", "this recorder is already recording"]
    assert sum(r.kind == "launch" for r in rec.run().records) == 1, "one subscription: the launch is recorded once"
