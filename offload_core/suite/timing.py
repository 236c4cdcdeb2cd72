"""Clocks around the rep loop, and the peak bandwidth the results are held against.

RAJAPerf times a kernel as: synchronise the device, start a timer, run
all reps, synchronise, stop. The suite does the same; on the host the
timer is `time.perf_counter`, on a GPU it is a pair of device events
around the rep loop (`cupy_baseline.DeviceClock`), with a device-wide
synchronisation before and after, so that the time is the device's.

"Peak" is measured, not taken from a datasheet: the best of several large
device-to-device copies (on the NumPy backend, `np.copyto` between two
large host arrays), counted as bytes read plus bytes written, which is how
RAJAPerf counts a kernel's traffic too. A kernel's achieved bandwidth
divided by it says how close to the memory system the kernel runs.
"""

from __future__ import annotations

import time
from statistics import median
from typing import Callable, Protocol, Sequence

import numpy as np

#: Bytes per array of the host peak measurement: large enough to leave the caches.
HOST_PEAK_BYTES = 128 * 2**20


class Clock(Protocol):
    """Times one rep loop: `start()` before it, `stop()` after it returns seconds."""

    def start(self) -> None: ...

    def stop(self) -> float: ...


class HostClock:
    """perf_counter between two calls of `sync` (the backend's synchronize)."""

    def __init__(self, sync: Callable[[], None] = lambda: None) -> None:
        self._sync = sync
        self._t0 = 0.0

    def start(self) -> None:
        self._sync()
        self._t0 = time.perf_counter()

    def stop(self) -> float:
        self._sync()
        return time.perf_counter() - self._t0


def host_peak_bandwidth(nbytes: int = HOST_PEAK_BYTES, repeats: int = 5) -> float:
    """Best np.copyto bandwidth between two `nbytes` arrays, in bytes per second (read + write)."""
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # first touch of dst's pages is not a copy
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / best


def middle(samples: Sequence[float]) -> float:
    """The median of the timed passes (RAJAPerf reports min/avg/max over passes; the median resists outliers)."""
    return float(median(samples))
