"""The NumPy backend: host memory plays the device, and every copy is real.

It is the embedded default and what CI runs, so it must behave like a GPU
in everything that can be counted: each device array is a separate
allocation, each H2D or D2H is a real `memcpy` of exactly `nbytes`, timed on
the host clock, and kernels only ever see the device twins, never the
caller's arrays. A bug that reads a host array directly, or forgets a copy
back, shows up here as a wrong answer, not only on a GPU.

Device memory is committed when it is allocated, as `cudaMalloc` commits
it: `empty` writes a byte in each page, so the page faults a fresh
allocation costs (every allocation the C library takes from the operating
system) are paid there, inside the launch's `alloc` record, and not in
whichever copy or kernel first writes the array; the launch drops its
last reference to a temporary inside its `free` record, so what giving the
memory back costs is there too. A fix that keeps an array resident drops
those records, and the replay prices what they cost (docs/profiler.md,
"What a fix saves"). When the C library reuses memory it kept, the pages
are already there and the writes cost about a microsecond per 2 MiB.

An optional `capacity` (bytes; `OFFLOAD_NUMPY_CAPACITY` in the environment)
makes device memory finite, so out-of-memory handling is testable without
a GPU.
"""

from __future__ import annotations

import math
import mmap
import os
import threading
from typing import Any, Sequence

import numpy as np

from ..errors import BackendError, DeviceMemoryError
from ..kernels import Kernel
from ..residency import PresentTable
from .base import Backend


#: bytes of a memory page: writing one byte in each commits a fresh allocation's memory
_PAGE = mmap.PAGESIZE


def _capacity_from_env() -> int | None:
    raw = os.environ.get("OFFLOAD_NUMPY_CAPACITY", "").strip()
    if not raw:
        return None
    try:
        value = int(float(raw))
    except ValueError:
        raise BackendError(f"OFFLOAD_NUMPY_CAPACITY={raw!r} is not a number of bytes") from None
    if value <= 0:
        raise BackendError(f"OFFLOAD_NUMPY_CAPACITY={raw!r} must be positive")
    return value


class NumpyBackend(Backend):
    """Host memory as a device."""

    name = "numpy"

    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and capacity <= 0:
            raise ValueError("NumpyBackend capacity must be a positive number of bytes")
        self.capacity = capacity if capacity is not None else _capacity_from_env()
        self.in_use = 0
        self._counting = threading.Lock()  # launches of several threads allocate and free at once
        self.present = PresentTable()

    @property
    def device(self) -> str:
        limit = f", capacity {self.capacity} bytes" if self.capacity else ""
        return f"host memory via NumPy {np.__version__}{limit}"

    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any], strides: tuple[int, ...]) -> Any:
        nbytes = math.prod(shape) * dtype.itemsize
        with self._counting:  # check and reserve in one step, so two threads cannot both take the last bytes
            if self.capacity is not None and self.in_use + nbytes > self.capacity:
                raise DeviceMemoryError(
                    f"device out of memory: asked for {nbytes} bytes with {self.in_use} of "
                    f"{self.capacity} in use; free device arrays or map fewer at once",
                    nbytes,
                    self.in_use,
                )
            self.in_use += nbytes
        try:
            # One flat byte buffer per allocation, viewed with the requested
            # strides, so that `view()` can address any byte of it.
            raw = np.empty(max(nbytes, 1), dtype=np.uint8)
            raw[::_PAGE] = 0  # commit the pages now, as cudaMalloc does (module docstring)
        except MemoryError:
            with self._counting:
                self.in_use -= nbytes
            raise DeviceMemoryError(
                f"device out of memory: asked for {nbytes} bytes with {self.in_use} in use",
                nbytes,
                self.in_use,
            ) from None
        return np.ndarray(shape, dtype=dtype, buffer=raw, offset=0, strides=strides)

    def free(self, dev: Any) -> None:
        with self._counting:
            self.in_use -= dev.nbytes

    def upload(self, host: np.ndarray[Any, Any], dev: Any) -> None:
        np.copyto(dev, host, casting="no")

    def download(self, dev: Any, host: np.ndarray[Any, Any]) -> None:
        np.copyto(host, dev, casting="no")

    def view(self, dev: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
        return np.ndarray(shape, dtype=dtype, buffer=dev.base, offset=offset, strides=strides)

    def check_kernel(self, kernel: Kernel) -> None:
        if kernel.host_body is None:
            raise BackendError(
                f"{type(kernel).__name__} '{kernel.name}' has no cpu= fallback, so it cannot run on the "
                "NumPy backend; pass cpu=... or use the CuPy backend (OFFLOAD_BACKEND=cupy)"
            )

    def launch(self, kernel: Kernel, args: Sequence[Any]) -> None:
        body = kernel.host_body
        assert body is not None  # check_kernel ran first
        result = body(*args)
        if result is not None:
            raise TypeError(
                f"kernel '{kernel.name}' returned {type(result).__name__}; kernels return nothing and "
                "write results through Out or InOut parameters"
            )

    def synchronize(self) -> None:
        """Every NumPy operation has finished by the time it returns."""

    def memory_in_use(self) -> int:
        return self.in_use
