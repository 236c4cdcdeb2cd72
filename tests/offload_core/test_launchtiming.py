"""Sampled launch timing: one launch in `every` per kernel gets device events, the rest the kernel's latest time.

The timer's device is played by `FakeDevice`: each recorded event gets a
time the test chooses, so what the timer measures, estimates and places
is known exactly. The end-to-end test runs `offload()` in a region on a
NumPy backend that pretends to be a device (device events instead of the
host clock) and counts the events it was asked to record.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pytest

import offload_core
from offload_core import events, offload, region
from offload_core.backends.base import HostTiming
from offload_core.backends.numpy_backend import NumpyBackend
from offload_core.events import BUS
from offload_core.launchtiming import SAMPLE_EVERY, LaunchTimer, every_from_env

from .kit import daxpy


class FakeEvent:
    def __init__(self, t: int, done: bool) -> None:
        self.t = t
        self.done = done


class FakeDevice:
    """A device clock whose events complete at the times in `schedule` (host ns), in order; `now` otherwise."""

    def __init__(self) -> None:
        self.schedule: list[int] = []
        self.recorded = 0
        self.released = 0
        self.pending = False  # events recorded while True are not yet reached by the device
        self.now = 1_000_000
        self.marked: list[FakeEvent] = []

    def mark(self) -> FakeEvent:
        self.recorded += 1
        t = self.schedule.pop(0) if self.schedule else self.now
        event = FakeEvent(t, not self.pending)
        self.marked.append(event)
        return event

    def passed(self, event: FakeEvent) -> bool:
        return event.done

    def wait(self, event: FakeEvent) -> None:
        event.done = True

    def at_ns(self, event: FakeEvent) -> int:
        return event.t

    def between_ns(self, start: FakeEvent, end: FakeEvent) -> int:
        return end.t - start.t

    def release(self, event: FakeEvent) -> None:
        self.released += 1


@pytest.fixture
def got() -> Iterator[list[events.Event]]:
    out: list[events.Event] = []
    events.flush()  # nothing another test left waiting
    unsubscribe = events.subscribe(out.append)
    yield out
    unsubscribe()


def launch(timer: LaunchTimer, kernel: str, issued: int, n: int = 0) -> None:
    token = timer.start(kernel)
    timer.finish(kernel, token, issued, n, None, "batched", None)


def test_one_launch_in_every_is_sampled_and_the_rest_take_its_time(got: list[events.Event]) -> None:
    dev = FakeDevice()
    timer = LaunchTimer(dev, every=4)
    for i in range(10):
        dev.pending = True  # the stream is busy: no correction for the host's time in the launch call
        dev.schedule = [10_000 * i, 10_000 * i + 700 + i]  # a sample's start and end events
        launch(timer, "a", 10_000 * i, i)
        dev.schedule = []
    events.flush()
    assert dev.recorded == 2 * 3 and dev.released == 6, "launches 0, 4 and 8 only"
    assert [e.duration_ns for e in got] == [700, 700, 700, 700, 704, 704, 704, 704, 708, 708]
    assert [e.launch for e in got] == list(range(10)) and timer.estimates == 7
    assert all(e.kind == "launch" and e.kernel == "a" for e in got)


def test_each_kernel_is_sampled_on_its_own_count(got: list[events.Event]) -> None:
    dev = FakeDevice()
    dev.pending = True
    timer = LaunchTimer(dev, every=100)
    for kernel, length in (("a", 50), ("b", 3000), ("a", 0), ("b", 0)):
        dev.schedule = [0, length] if length else []
        launch(timer, kernel, 0)
    events.flush()
    assert [(e.kernel, e.duration_ns) for e in got] == [("a", 50), ("b", 3000), ("a", 50), ("b", 3000)]


def test_estimates_queue_one_after_the_other_on_the_device(got: list[events.Event]) -> None:
    dev = FakeDevice()
    timer = LaunchTimer(dev, every=8)
    dev.pending = True
    dev.schedule = [1000, 1500]  # the sample runs 1000-1500
    launch(timer, "k", 900)
    for issued in (1100, 1200, 5000):  # issued while the device was busy, then after it went idle
        launch(timer, "k", issued)
    assert got == [], "estimates wait behind the sample still on the device"
    events.flush()
    assert [(e.start_ns, e.duration_ns) for e in got] == [(1000, 500), (1500, 500), (2000, 500), (5000, 500)]


def test_once_the_device_reached_the_sample_estimates_stop_queueing(got: list[events.Event]) -> None:
    dev = FakeDevice()
    timer = LaunchTimer(dev, every=8)
    dev.pending = True
    dev.schedule = [1000, 1500]
    launch(timer, "k", 900)  # the sample, 1000-1500, not reached yet
    launch(timer, "k", 1100)  # looks, finds it pending: queued behind it
    assert got == [] and BUS.queued == 2
    for event in dev.marked:
        event.done = True  # the device passes the sample's end
    launch(timer, "k", 1200)  # every other launch looks: this one does not
    assert got == [] and BUS.queued == 3
    launch(timer, "k", 1300)  # looks: delivers the three queued, then goes out at once itself
    assert BUS.queued == 0, "no flush needed"
    assert [(e.start_ns, e.duration_ns) for e in got] == [(1000, 500), (1500, 500), (2000, 500), (2500, 500)]
    assert dev.recorded == 2, "estimates record no device events"


def test_an_idle_stream_takes_the_launch_call_off_the_sample(got: list[events.Event]) -> None:
    dev = FakeDevice()
    timer = LaunchTimer(dev, every=1)
    token = timer.start("k")
    assert token is not None
    _, before = token
    dev.schedule = [token[0].t + 1_000_000]  # the end event, 1 ms after the start event
    timer.finish("k", (token[0], before - 6000), 0, 0, None, "batched", None)  # 6 µs and more in the call
    events.flush()
    assert len(got) == 1 and 1000 <= got[0].duration_ns <= 1_000_000 - 6000, "at least the 6 µs in the call come off"
    token = timer.start("k")
    assert token is not None
    dev.schedule = [token[0].t + 2000]  # a kernel shorter than the host's time in the call
    timer.finish("k", (token[0], token[1] - 6000), 0, 1, None, "batched", None)
    events.flush()
    assert got[1].duration_ns == 1000, "never shorter than an empty kernel"


def test_exact_timing_times_every_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLOAD_LAUNCH_TIMING", "exact")
    assert every_from_env() == 1
    monkeypatch.setenv("OFFLOAD_LAUNCH_TIMING", "")
    assert every_from_env() == SAMPLE_EVERY
    monkeypatch.setenv("OFFLOAD_LAUNCH_TIMING", "fast")
    with pytest.raises(ValueError, match="OFFLOAD_LAUNCH_TIMING='fast' is not a launch timing; choose 'sampled' or 'exact'"):
        every_from_env()
    with pytest.raises(ValueError, match="every >= 1"):
        LaunchTimer(FakeDevice(), every=0)


class DeviceLike(NumpyBackend):
    """The NumPy backend with device events instead of the host clock, counting the events it records."""

    host_clock = False

    def __init__(self, every: int) -> None:
        super().__init__()
        self.clock = FakeDevice()
        self.timer = LaunchTimer(self.clock, every)

    def mark(self) -> Any:
        self.clock.now += 10
        return self.clock.mark()

    def since(self, mark: Any) -> HostTiming:
        self.clock.now += 10
        end = self.clock.mark()
        return HostTiming(mark.t, end.t - mark.t)

    def passed(self, event: Any) -> bool:
        return True


def test_offload_in_a_region_records_few_device_events(got: list[events.Event]) -> None:
    from profiler.sources.recorder import Recorder

    be = DeviceLike(every=8)
    previous = offload_core.get_backend()
    offload_core.set_backend(be)
    try:
        y, x = np.zeros(64), np.ones(64)
        with Recorder() as rec, region(x, y):
            for _ in range(40):
                offload(daxpy, y, x, 2.0)
    finally:
        offload_core.set_backend(previous)
    launches = [e for e in got if e.kind == "launch"]
    assert len(launches) == 40 and [e.launch for e in launches] == sorted(e.launch for e in launches)
    copies = sum(e.kind in ("h2d", "d2h") for e in got)
    assert be.clock.recorded == 2 * copies + 2 * 5, "two events per copy and per sampled launch (1 in 8), none else"
    assert np.allclose(y, 80.0)
    run = rec.run()
    assert run.meta.estimated == ("launch.start_ns", "launch.duration_ns")
    assert sum(r.kind == "launch" for r in run.records) == 40
    assert not BUS.queued
