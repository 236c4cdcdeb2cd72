"""Device times of recorded launches without two device events per launch.

Timing every launch on a GPU with a pair of device events cost 15.5 µs
per launch on the H200 machine (two event records, their queueing, two
elapsed-time queries), twice the 7.4 µs launch itself. A loop of
launches repeats the same few kernels, whose device times barely change,
so a `LaunchTimer` times one launch in `every` of each kernel (the first
one always) with a pair of events (a `Sample`), and gives the others (an
`Estimate`) the kernel's latest sampled time, placed on the device's
timeline by a one-stream model: a launch starts when it was issued or
when the device finished the previous operation, whichever is later
(`device_end`, moved on by every resolved sample, estimate and timed
copy). An estimated launch costs the host a counter, a clock read and an
event; nothing is asked of the device.

A sampled launch issued on an idle stream is measured from its start
event, recorded before the launch call, so the interval includes the
host's time in that call; when the start event has already completed by
the time the call returns (the stream was idle), that host time is taken
off (what is left is the kernel to within about a microsecond, and never
less than `MIN_KERNEL_NS`; CUPTI measures kernels exactly). Without the correction a host-bound loop of
tiny kernels looks device-bound.

`OFFLOAD_LAUNCH_TIMING=exact` times every launch with its own events, as
before (`every` = 1). The trace says which of its figures are estimates
(`profiler`'s `Meta.estimated`); `estimates` counts them.
"""

from __future__ import annotations

import os
from time import perf_counter_ns
from typing import Any, Protocol

from .events import BUS
from .sites import Site

#: one launch in this many of each kernel is timed with device events (the first always)
SAMPLE_EVERY = 32
#: the least a corrected sample is taken to last: an empty kernel's time on the device is about this
MIN_KERNEL_NS = 1000
TIMINGS = ("sampled", "exact")


def every_from_env() -> int:
    """`OFFLOAD_LAUNCH_TIMING`: `sampled` (default, one launch in `SAMPLE_EVERY` per kernel) or `exact` (every launch)."""
    raw = os.environ.get("OFFLOAD_LAUNCH_TIMING", "sampled").strip().lower() or "sampled"
    if raw not in TIMINGS:
        raise ValueError(f"OFFLOAD_LAUNCH_TIMING={raw!r} is not a launch timing; choose 'sampled' or 'exact'")
    return SAMPLE_EVERY if raw == "sampled" else 1


class DeviceClock(Protocol):
    """The device events a `LaunchTimer` needs (the CuPy backend's CUDA/HIP events)."""

    def mark(self) -> Any:
        """Record an event now, on the stream launches go to."""
        ...

    def passed(self, event: Any) -> bool:
        """Whether the device has reached `event` (without waiting)."""
        ...

    def wait(self, event: Any) -> None: ...

    def at_ns(self, event: Any) -> int:
        """When the device reached `event`, on the host's `perf_counter_ns` clock."""
        ...

    def between_ns(self, start: Any, end: Any) -> int: ...

    def release(self, event: Any) -> None:
        """`event` is no longer needed (back to a pool)."""
        ...


class LaunchTimer:
    """Samples launch device times per kernel and estimates the rest; one per device backend.

    The bus resolves timings in issue order, so the model's `device_end`
    is advanced in issue order too, and an estimate always finds the
    samples issued before it already resolved.
    """

    def __init__(self, clock: DeviceClock, every: int = SAMPLE_EVERY) -> None:
        if every < 1:
            raise ValueError("a launch timer samples every launch at most (every >= 1)")
        self.clock = clock
        self.every = every
        self.counts: dict[str, int] = {}
        #: kernel -> the device time of its latest resolved sample
        self.latest: dict[str, int] = {}
        #: when the device finished the last operation the model has placed (host clock)
        self.device_end = 0
        #: launches given an estimated time so far
        self.estimates = 0

    def start(self, kernel: str, *, exact: bool = False) -> tuple[Any, int] | None:
        """Before a launch: a start event when this launch is to be sampled, else None."""
        n = self.counts.get(kernel, 0)
        self.counts[kernel] = n + 1
        if n % self.every and not exact:
            return None
        return self.clock.mark(), perf_counter_ns()

    def finish(self, kernel: str, token: tuple[Any, int] | None, issued_ns: int, launch: int | None,
               site: Site | None, mode: str, region: int | None) -> None:
        """After the launch call: emit its event, timed by the sample or estimated."""
        if token is not None:
            start, before = token
            in_call = perf_counter_ns() - before
            idle = self.clock.passed(start)
            BUS.emit_timed(Sample(self, kernel, start, self.clock.mark(), in_call if idle else 0), kind="launch",
                           kernel=kernel, launch=launch, callsite=site, mode=mode, region=region)
            return
        self.estimates += 1
        queued = BUS.queued
        if queued and self.estimates & 1:
            # A sample is still on the bus, so this estimate would queue behind it as an
            # object resolved later (the slow path). A host-bound loop's device has
            # usually finished that sample a launch or two after it was issued: deliver
            # what is ready (one event query, every other launch while anything waits).
            BUS.poll()
            queued = BUS.queued
        duration = self.latest.get(kernel)
        if duration is not None and not queued:
            begin = self.place(issued_ns, duration)  # nothing queued before it: place it now, no timing object
            BUS.emit_row(("launch", 0, False, begin, duration, kernel, launch, None, None, site, mode, region, None))
            return
        BUS.emit_timed(Estimate(self, kernel, issued_ns), kind="launch", kernel=kernel, launch=launch, callsite=site,
                       mode=mode, region=region)

    def place(self, issued_ns: int, duration: int) -> int:
        """Where an operation of `duration` issued at `issued_ns` starts on the one-stream model; moves it on."""
        begin = issued_ns if issued_ns > self.device_end else self.device_end
        self.device_end = begin + duration
        return begin

    def ended(self, end_ns: int) -> None:
        """A measured operation (a sample, a timed copy) ended on the device at `end_ns`."""
        self.device_end = end_ns


class Sample:
    """A sampled launch: device events around it; its time becomes the kernel's latest."""

    __slots__ = ("timer", "kernel", "start", "end", "correction")

    def __init__(self, timer: LaunchTimer, kernel: str, start: Any, end: Any, correction: int) -> None:
        self.timer = timer
        self.kernel = kernel
        self.start = start
        self.end = end
        self.correction = correction

    def ready(self) -> bool:
        return self.timer.clock.passed(self.end)

    def resolve(self) -> tuple[int, int]:
        clock = self.timer.clock
        clock.wait(self.end)
        span = clock.between_ns(self.start, self.end)
        duration = max(span - self.correction, min(span, MIN_KERNEL_NS))
        end = clock.at_ns(self.end)
        clock.release(self.start)
        clock.release(self.end)
        self.timer.latest[self.kernel] = duration
        self.timer.ended(end)
        return end - duration, duration


class Estimate:
    """An unsampled launch: the kernel's latest sampled time, placed after what the device did before it."""

    __slots__ = ("timer", "kernel", "issued")

    def __init__(self, timer: LaunchTimer, kernel: str, issued: int) -> None:
        self.timer = timer
        self.kernel = kernel
        self.issued = issued

    def ready(self) -> bool:
        return True  # resolved in issue order: every sample issued before it has been resolved first

    def resolve(self) -> tuple[int, int]:
        duration = self.timer.latest.get(self.kernel, 0)
        return self.timer.place(self.issued, duration), duration
