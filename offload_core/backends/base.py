"""The backend interface: what offload_core needs from a device.

A backend owns device memory, moves bytes between a host NumPy array and a
device array, runs kernels, and measures time. It also owns the *present
table* of the region machinery, because which host arrays are resident is a
fact about that device's memory: switching backends with arrays mapped
would strand them, so `set_backend` refuses to.

The interface is deliberately small and synchronous in shape. A GPU backend
may issue copies and launches asynchronously on a stream; it then returns
`Timing`s that resolve later (see `offload_core.events`) and makes host
arrays valid no later than `synchronize()`. Every copy goes into or out of
an array the caller owns, never a fresh one, so a GPU backend can pin or
register the caller's buffer and write results back without first-touch
page faults.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..events import Timing
    from ..kernels import Kernel
    from ..launchtiming import LaunchTimer
    from ..residency import PresentTable


@dataclass(frozen=True, slots=True)
class HostTiming:
    """An interval measured on the host clock: ready at once."""

    start_ns: int
    duration_ns: int

    def ready(self) -> bool:
        return True

    def resolve(self) -> tuple[int, int]:
        return self.start_ns, self.duration_ns


def device_layout(host: np.ndarray[Any, Any]) -> tuple[int, ...]:
    """Strides for a device twin of `host`.

    A contiguous host array (C or Fortran order) gets the same strides, so a
    view into it maps to the same byte offsets on the device and region
    lookups of sub-views are exact. Anything else gets a compact C layout:
    only `nbytes` cross the bus, never the gaps of a strided view.
    """
    if host.flags.c_contiguous or not host.flags.f_contiguous:
        return _c_strides(host.shape, host.itemsize)
    return _f_strides(host.shape, host.itemsize)


def _c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _f_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    strides = []
    step = itemsize
    for n in shape:
        strides.append(step)
        step *= max(n, 1)
    return tuple(strides)


class Backend(ABC):
    """A device offload_core can run on."""

    #: "numpy" or "cupy": what `OFFLOAD_BACKEND` selects.
    name: str
    present: PresentTable

    @property
    @abstractmethod
    def device(self) -> str:
        """A human description of the device, for reports."""

    def is_device_array(self, value: object) -> bool:
        """True for an array already on this device, which launches use in place."""
        return False

    @abstractmethod
    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any], strides: tuple[int, ...]) -> Any:
        """Allocate an uninitialised device array; `DeviceMemoryError` when out of memory."""

    @abstractmethod
    def free(self, dev: Any) -> None:
        """Return a device array's memory."""

    @abstractmethod
    def upload(self, host: np.ndarray[Any, Any], dev: Any) -> None:
        """Copy `host` into `dev` (same shape and dtype)."""

    @abstractmethod
    def download(self, dev: Any, host: np.ndarray[Any, Any]) -> None:
        """Copy `dev` into the caller's `host` array (same shape and dtype)."""

    @abstractmethod
    def view(self, dev: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
        """A view into `dev`'s memory at a byte offset, as a host view is into its buffer."""

    @abstractmethod
    def check_kernel(self, kernel: Kernel) -> None:
        """Raise `BackendError` if this backend cannot run `kernel` (before any copy)."""

    @abstractmethod
    def launch(self, kernel: Kernel, args: Sequence[Any]) -> None:
        """Run `kernel` on device arrays and exact-typed scalars."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait until every issued copy and launch has finished."""

    def is_pinned(self, host: np.ndarray[Any, Any]) -> bool:
        """Whether copies of `host` use page-locked memory (for the events)."""
        return False

    #: OFFLOAD_NVTX=1: name each launch, copy and region on profiler timelines
    nvtx: bool = False
    #: the device cannot hold arrays of non-native byte order (CuPy)
    native_only: bool = False
    #: `mark()`/`since()` are the host clock (no device events to wait for)
    host_clock: bool = True
    #: a device backend's sampler of recorded launches' device times (`offload_core.launchtiming`); None on the host
    timer: LaunchTimer | None = None

    def mark(self) -> Any:
        """Start a device-side interval (copies, launches); `since(mark)` ends it."""
        return time.perf_counter_ns()

    def since(self, mark: Any) -> Timing:
        now = time.perf_counter_ns()
        return HostTiming(mark, now - mark)

    @staticmethod
    def host_mark() -> int:
        """Start a host-side interval (allocations, frees, syncs): what the host waited."""
        return time.perf_counter_ns()

    @staticmethod
    def host_since(mark: int) -> Timing:
        now = time.perf_counter_ns()
        return HostTiming(mark, now - mark)

    def settle_uploads(self) -> None:
        """Return only once the host arrays of issued uploads may be modified again.

        An asynchronous upload from page-locked memory reads the host bytes
        after the call returns; offload_core calls this before control goes
        back to user code, so a host write right after `offload()` can never
        race the copy. Kernels already issued keep running.
        """

    def flush_events(self) -> None:
        """Deliver events whose device timings are now known (no-op on the host)."""

    def range_push(self, name: str) -> None:
        """Open a named range on the profiler timeline (NVTX/rocTX), when `nvtx` is on."""

    def range_pop(self) -> None:
        """Close the innermost range opened by `range_push`."""

    # Launch-sequence capture (offload_core.capture). The default records the
    # launches and replays them by launching each again: the host-side
    # "equivalent" of a device graph, for backends that have none.
    def begin_capture(self) -> None:
        self._captured: list[tuple[Kernel, list[Any]]] = []

    def capture_launch(self, kernel: Kernel, args: Sequence[Any]) -> None:
        self._captured.append((kernel, list(args)))

    def end_capture(self) -> Any:
        captured, self._captured = self._captured, []
        return captured

    def replay(self, handle: Any) -> None:
        for kernel, args in handle:
            self.launch(kernel, args)

    def device_overlap(self, a: Any, b: Any) -> bool:
        """Whether two device arrays passed to one launch may share memory."""
        return False

    def memory_in_use(self) -> int:
        """Bytes of device memory this backend holds for offload_core."""
        return 0
