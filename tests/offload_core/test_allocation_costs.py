"""What allocating and freeing device memory costs is inside the `alloc` and `free` records, where a fix can price it.

On the NumPy backend a fresh allocation's first-touch page faults used to
fall in whichever copy or kernel first wrote the array, and the memory
went back to the C library (and maybe the operating system) after the
launch's `free` record, when its last reference died: the profiler's
"keep resident" fix could drop the records but not what they stood for.
"""

from __future__ import annotations

import sys
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from offload_core import In, events, offload, region
from offload_core.backends.numpy_backend import NumpyBackend
from offload_core.backends.base import device_layout

from .kit import copy

MiB = 1 << 20
STATM = Path("/proc/self/statm")


def resident_bytes() -> int:
    import mmap

    return int(STATM.read_text().split()[1]) * mmap.PAGESIZE


@pytest.mark.skipif(not STATM.exists() or not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_a_fresh_device_array_is_committed_when_it_is_allocated() -> None:
    """64 MiB is above glibc's largest mmap threshold: the memory comes fresh from the operating system."""
    be = NumpyBackend()
    a = np.ones(8 * MiB, dtype=np.float64)
    before = resident_bytes()
    dev = be.empty(a.shape, a.dtype, device_layout(a))
    committed = resident_bytes() - before
    be.upload(a, dev)
    touched = resident_bytes() - before - committed
    be.free(dev)
    assert committed >= 0.9 * a.nbytes, "allocating commits the pages, as cudaMalloc does"
    assert touched < 0.1 * a.nbytes, "the upload that first writes it then faults in nothing"


class _Watch:
    """Whether each freed device array was already gone when its `free` record was issued."""

    def __init__(self, be: Any) -> None:
        self.refs: list[weakref.ref[Any]] = []
        self.gone_at_free: list[bool] = []
        real = be.free

        def free(dev: Any) -> None:
            self.refs.append(weakref.ref(dev.base if dev.base is not None else dev))
            real(dev)
        be.free = free

    def __call__(self, row: tuple[Any, ...]) -> None:
        if row[0] == "free":
            self.gone_at_free.append(self.refs[-1]() is None)


def test_a_launch_gives_its_temporaries_back_inside_their_free_records() -> None:
    import offload_core

    be = offload_core.get_backend()
    watch = _Watch(be)
    src, dst = np.ones(1024), np.zeros(1024)
    stop = events.watch(watch)
    try:
        offload(copy, dst, src)
    finally:
        stop()
    assert watch.gone_at_free == [True, True]
    assert (dst == 1).all()


def test_a_region_gives_its_arrays_back_inside_their_free_records() -> None:
    import offload_core

    be = offload_core.get_backend()
    watch = _Watch(be)
    src, dst = np.ones(1024), np.zeros(1024)
    stop = events.watch(watch)
    try:
        with region(In(src), dst):
            offload(copy, dst, src)
    finally:
        stop()
    assert watch.gone_at_free == [True, True]
    assert (dst == 1).all()
