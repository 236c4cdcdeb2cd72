"""The CuPy backend: NVIDIA (CUDA) and AMD (ROCm/HIP) GPUs through one code path.

Device arrays come from CuPy's memory pool (a private, capped pool when a
`capacity` is given, so out-of-memory handling is testable). Copies and
launches are issued on CuPy's current stream, so they order with the user's
own CuPy work. Copies go through `memcpyAsync` directly from and into the
caller's arrays: hot and large host buffers are page-locked in place
(`cupy_pinning`), so the DMA runs at the pinned rate with no staging copy,
and results land in memory the caller already touched (a fresh NumPy array
would first take a page fault per 4 KiB). Non-contiguous host arrays are
gathered into (or scattered from) CuPy's pinned staging pool.

An asynchronous upload from page-locked memory reads the host bytes after
the call returns, so the backend records a fence after it and
`settle_uploads()` waits for that fence (not for the kernels) before
control returns to the user. Timings are CUDA/HIP events, resolved when the
event bus is flushed at the next synchronisation; a recorded launch gets
its own pair only when `launchtiming` samples it (one in 32 per kernel).

Only this module and `cupy_pinning`/`cupy_probe` import CuPy, and only when
the backend is selected.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import cupy
import numpy as np
from cupy.cuda import runtime as rt

from ..errors import BackendError, DeviceMemoryError
from ..events import BUS
from ..kernels import Kernel, PyKernel, RawKernel
from ..launchtiming import LaunchTimer, every_from_env
from ..residency import PresentTable, extent_bounds
from .base import Backend
from .cupy_pinning import HostPinning



@dataclass(slots=True)
class DeviceTiming:
    """An interval between two recorded events on the device."""

    backend: CupyBackend
    start: Any
    end: Any

    def ready(self) -> bool:
        return bool(self.end.done)

    def resolve(self) -> tuple[int, int]:
        self.end.synchronize()
        be = self.backend
        duration = int(cupy.cuda.get_elapsed_time(self.start, self.end) * 1e6)
        start = be._host_ns(self.start)
        be._events.append(self.start)
        be._events.append(self.end)
        timer = be.timer
        if timer is not None:  # the launch timer's model of the stream moves past this copy
            timer.ended(start + duration)
        return start, duration


class CupyBackend(Backend):
    """A CUDA or ROCm device through CuPy."""

    name = "cupy"
    native_only = True
    host_clock = False

    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and capacity <= 0:
            raise ValueError("CupyBackend capacity must be a positive number of bytes")
        self.capacity = capacity
        if capacity is not None:
            self._pool = cupy.cuda.MemoryPool()
            self._pool.set_limit(size=capacity)
            self._malloc = self._pool.malloc
        else:
            self._pool = cupy.get_default_memory_pool()
            self._malloc = cupy.cuda.alloc
        self.in_use = 0
        self._counting = threading.Lock()  # launches of several threads allocate and free at once
        self.present = PresentTable()
        self.is_hip = bool(rt.is_hip)
        self._device_id = cupy.cuda.Device().id
        props = rt.getDeviceProperties(self._device_id)
        raw_name = props["name"]
        self._device_name = raw_name.decode() if isinstance(raw_name, bytes) else str(raw_name)
        self.pinning = HostPinning(rt, self._device_sync, enabled=os.environ.get("OFFLOAD_PIN", "1") != "0")
        self._small = self.pinning.min_bytes
        self.nvtx = os.environ.get("OFFLOAD_NVTX", "").strip() in ("1", "true", "yes", "on")
        self._nvtx = None
        if self.nvtx:
            try:
                from cupy.cuda import nvtx as nvtx_module

                self._nvtx = nvtx_module
            except Exception:
                warnings.warn("OFFLOAD_NVTX=1 but CuPy has no NVTX/rocTX support here; ranges are off", RuntimeWarning)
                self.nvtx = False
        self._fence: Any = None  # event after the last asynchronous upload
        #: work issued since the last wait (a blocking copy waits for all of it)
        self._issued = False
        self._upload_keep: list[Any] = []  # staging buffers read by uploads in flight
        self._scatter: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], Any]] = []
        self._events: list[Any] = []
        self._ref = cupy.cuda.Event()
        self._ref.record()
        self._ref.synchronize()
        self._ref_ns = time.perf_counter_ns()
        self.timer = LaunchTimer(self, every_from_env())

    # ------------------------------------------------------------ description
    @property
    def device(self) -> str:
        runtime = "ROCm/HIP" if self.is_hip else "CUDA"
        version = rt.runtimeGetVersion()
        limit = f", capacity {self.capacity} bytes" if self.capacity else ""
        return f"{self._device_name} ({runtime} runtime {version}, driver {rt.driverGetVersion()}, CuPy {cupy.__version__}{limit})"

    def is_device_array(self, value: object) -> bool:
        return isinstance(value, cupy.ndarray)

    def memory_in_use(self) -> int:
        return self.in_use

    # ---------------------------------------------------------------- memory
    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any], strides: tuple[int, ...]) -> Any:
        nbytes = math.prod(shape) * dtype.itemsize
        try:
            mem = self._malloc(nbytes)
        except cupy.cuda.memory.OutOfMemoryError:
            free, total = rt.memGetInfo()
            raise DeviceMemoryError(
                f"device out of memory: asked for {nbytes} bytes with {self.in_use} in use by offload_core "
                f"({free} of {total} free on the device); free device arrays or map fewer at once",
                nbytes,
                self.in_use,
            ) from None
        with self._counting:
            self.in_use += nbytes
        return cupy.ndarray(shape, dtype, memptr=mem, strides=strides)

    def free(self, dev: Any) -> None:
        # The memory goes back to the pool when the last reference dies; the
        # pool is stream-ordered, so kernels still queued are safe.
        with self._counting:
            self.in_use -= dev.nbytes

    def view(self, dev: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
        return cupy.ndarray(shape, dtype, memptr=dev.data + offset, strides=strides)

    def device_overlap(self, a: Any, b: Any) -> bool:
        if a.size == 0 or b.size == 0:
            return False
        alo, ahi = extent_bounds(a.data.ptr, a.shape, a.strides, a.itemsize)
        blo, bhi = extent_bounds(b.data.ptr, b.shape, b.strides, b.itemsize)
        return alo < bhi and blo < ahi

    # ---------------------------------------------------------------- copies
    def upload(self, host: np.ndarray[Any, Any], dev: Any) -> None:
        n = host.nbytes
        self._issued = True
        if n < self._small and host.base is None and not self.nvtx and host.flags.c_contiguous:
            # A small array NumPy allocated: never page-locked, so CuPy's plain
            # copy is both the fastest path and synchronous for the host.
            if n:
                dev.set(host)
            return
        if n == 0:
            return
        if self.nvtx:
            self._nvtx.RangePush(f"h2d {n} B")  # type: ignore[union-attr]
        stream = cupy.cuda.get_current_stream()
        if _same_layout(host, dev):
            locked = self.pinning.prepare(host)
            # CuPy's own call issues the memcpyAsync from the host pointer: small
            # copies cost exactly what CuPy's do, page-locked ones run async.
            dev.set(host, stream=stream)
            if locked:
                self._fence_after(stream)
        else:
            staging, view = self._staging(host)
            np.copyto(view, host)
            target = dev if _c_contiguous(dev) else cupy.empty(dev.shape, dev.dtype)
            target.set(view, stream=stream)
            if target is not dev:
                dev[...] = target  # device-side scatter into the strided view
            self._upload_keep.append(staging)
            self._fence_after(stream)
        if self.nvtx:
            self._nvtx.RangePop()  # type: ignore[union-attr]

    def download(self, dev: Any, host: np.ndarray[Any, Any]) -> None:
        n = host.nbytes
        if n < self._small and host.base is None and not self.nvtx and host.flags.c_contiguous:
            if n:
                # Exactly CuPy's blocking copy: it waits for everything issued
                # before it, so the synchronize() that follows has nothing to do.
                dev.get(out=host)
                self._issued = False
            return
        if n == 0:
            return
        self._issued = True
        if self.nvtx:
            self._nvtx.RangePush(f"d2h {n} B")  # type: ignore[union-attr]
        stream = cupy.cuda.get_current_stream()
        if _same_layout(host, dev):
            self.pinning.prepare(host)
            dev.get(stream=stream, out=host, blocking=False)  # lands at the next synchronize()
        else:
            source = dev if _c_contiguous(dev) else cupy.ascontiguousarray(dev)
            staging, view = self._staging(host)
            source.get(stream=stream, out=view, blocking=False)
            self._scatter.append((host, view, (staging, source)))
        if self.nvtx:
            self._nvtx.RangePop()  # type: ignore[union-attr]

    def pinned_empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
        """A host array in page-locked memory (CuPy's pinned pool); `offload-prof calibrate` measures the pinned rate with it."""
        dt = np.dtype(dtype)
        count = int(np.prod(shape))
        mem = cupy.cuda.alloc_pinned_memory(max(count * dt.itemsize, 1))
        return np.frombuffer(mem, dtype=dt, count=count).reshape(shape)

    def _staging(self, host: np.ndarray[Any, Any]) -> tuple[Any, np.ndarray[Any, Any]]:
        mem = cupy.cuda.alloc_pinned_memory(host.nbytes)
        view = np.frombuffer(mem, dtype=host.dtype, count=host.size).reshape(host.shape)
        return mem, view

    def _fence_after(self, stream: Any) -> None:
        fence = cupy.cuda.Event(disable_timing=True)
        fence.record(stream)
        self._fence = fence

    def settle_uploads(self) -> None:
        if self._fence is not None:
            self._fence.synchronize()
            self._fence = None
            self._upload_keep.clear()
            BUS.poll()  # the uploads' timings are known now

    def synchronize(self) -> None:
        if self._issued or self._scatter or self._fence is not None:
            cupy.cuda.get_current_stream().synchronize()
        self._issued = False
        self._fence = None
        if self._upload_keep:
            self._upload_keep.clear()
        if self._scatter:
            for host, view, _ in self._scatter:
                np.copyto(host, view)
            self._scatter.clear()

    def _device_sync(self) -> None:
        cupy.cuda.Device(self._device_id).synchronize()

    def is_pinned(self, host: np.ndarray[Any, Any]) -> bool:
        return self.pinning.is_locked(host)

    # --------------------------------------------------------------- kernels
    def check_kernel(self, kernel: Kernel) -> None:
        if isinstance(kernel, RawKernel) and self._device_id not in kernel.backend_cache:
            kernel.backend_cache[self._device_id] = self._compile(kernel)

    def _compile(self, kernel: RawKernel) -> Any:
        try:
            module = cupy.RawKernel(kernel.source, kernel.name, options=kernel.options)
            module.compile()
            return _Launcher.for_kernel(kernel, module)
        except cupy.cuda.compiler.CompileException as exc:
            log = str(exc)
            first = next((line.strip() for line in log.splitlines() if "error" in line.lower()), log.strip().splitlines()[0])
            error = BackendError(f"RawKernel '{kernel.name}' does not compile: {first}")
            error.log = log  # type: ignore[attr-defined]
            raise error from None
        except Exception as exc:  # e.g. the function name is not in the module
            raise BackendError(f"RawKernel '{kernel.name}' cannot be loaded: {str(exc).splitlines()[0]}") from None

    def launch(self, kernel: Kernel, args: Sequence[Any]) -> None:
        self._issued = True
        if self.nvtx:
            self._nvtx.RangePush(f"launch {kernel.name}")  # type: ignore[union-attr]
        try:
            if type(kernel) is PyKernel:
                result = kernel.fn(*args)
                if result is not None:
                    raise TypeError(
                        f"kernel '{kernel.name}' returned {type(result).__name__}; kernels return nothing and "
                        "write results through Out or InOut parameters"
                    )
                return
            assert isinstance(kernel, RawKernel)
            for i in kernel.array_indices:
                if not _c_contiguous(args[i]):
                    raise BackendError(
                        f"RawKernel '{kernel.name}': parameter '{kernel.params[i].name}' is not C-contiguous on the "
                        "device; a C kernel indexes it as a flat array: pass np.ascontiguousarray(...) or the whole "
                        "mapped array"
                    )
            grid, block = kernel.launch_dims(args)
            kernel.backend_cache[self._device_id](grid, block, args)
        finally:
            if self.nvtx:
                self._nvtx.RangePop()  # type: ignore[union-attr]

    # --------------------------------------------------------------- graphs
    def begin_capture(self) -> None:
        # Stream capture needs a stream other than the legacy default one.
        self._capture_stream = cupy.cuda.Stream(non_blocking=True)
        self._capture_stream.__enter__()
        self._capture_stream.begin_capture()

    def capture_launch(self, kernel: Kernel, args: Sequence[Any]) -> None:
        self.launch(kernel, args)

    def end_capture(self) -> Any:
        stream = self._capture_stream
        try:
            graph = stream.end_capture()
        finally:
            stream.__exit__(None, None, None)
        return graph

    def replay(self, handle: Any) -> None:
        self._issued = True
        handle.launch(stream=cupy.cuda.get_current_stream())

    # ----------------------------------------------------------- timing, NVTX
    def _event(self) -> Any:
        return self._events.pop() if self._events else cupy.cuda.Event()

    def mark(self) -> Any:
        ev = self._event()
        ev.record()
        return ev

    def since(self, mark: Any) -> DeviceTiming:
        end = self._event()
        end.record()
        return DeviceTiming(self, mark, end)

    def _host_ns(self, event: Any) -> int:
        return self._ref_ns + int(cupy.cuda.get_elapsed_time(self._ref, event) * 1e6)

    # the launch timer's device clock (offload_core.launchtiming.DeviceClock); mark() is above
    def passed(self, event: Any) -> bool:
        return bool(event.done)

    def wait(self, event: Any) -> None:
        event.synchronize()

    def at_ns(self, event: Any) -> int:
        return self._host_ns(event)

    def between_ns(self, start: Any, end: Any) -> int:
        return int(cupy.cuda.get_elapsed_time(start, end) * 1e6)

    def release(self, event: Any) -> None:
        self._events.append(event)

    def flush_events(self) -> None:
        BUS.flush()

    def range_push(self, name: str) -> None:
        if self._nvtx is not None:
            self._nvtx.RangePush(name)

    def range_pop(self) -> None:
        if self._nvtx is not None:
            self._nvtx.RangePop()


_C_TYPES: dict[np.dtype[Any], Any] = {
    np.dtype(t): c
    for t, c in (
        (np.bool_, ctypes.c_bool), (np.int8, ctypes.c_int8), (np.uint8, ctypes.c_uint8),
        (np.int16, ctypes.c_int16), (np.uint16, ctypes.c_uint16), (np.int32, ctypes.c_int32),
        (np.uint32, ctypes.c_uint32), (np.int64, ctypes.c_int64), (np.uint64, ctypes.c_uint64),
        (np.float32, ctypes.c_float), (np.float64, ctypes.c_double),
    )
}


class _Launcher:
    """Launches one compiled RawKernel through the driver with a reused parameter block.

    `cupy.RawKernel.__call__` converts every argument on every launch. The
    parameter types of an offload_core RawKernel are fixed by its `params`,
    so the pointer block `cuLaunchKernel` reads (one slot per parameter) is
    built once and only the slot values change per launch. The driver
    copies the parameters at launch time, so reusing the slots is safe.
    Kernels with parameter types this does not cover (complex scalars) use
    CuPy's own call.
    """

    def __init__(self, module: Any, kernel: RawKernel) -> None:
        self.module = module  # keeps the CUfunction alive
        self.function = module.kernel.ptr
        self.slots = [ctypes.c_void_p() if p.is_array else _C_TYPES[np.dtype(p.scalar)]() for p in kernel.params]
        self.block = (ctypes.c_void_p * max(len(self.slots), 1))(*[ctypes.addressof(slot) for slot in self.slots])
        self.block_ptr = ctypes.addressof(self.block)
        self.is_array = tuple(p.is_array for p in kernel.params)
        self.pairs = tuple(zip(self.slots, self.is_array))

    @classmethod
    def for_kernel(cls, kernel: RawKernel, module: Any) -> Any:
        usable = hasattr(cupy.cuda.driver, "launchKernel") and all(
            p.is_array or np.dtype(p.scalar) in _C_TYPES for p in kernel.params
        )
        if not usable:
            return lambda grid, block, args: module(grid, block, tuple(args))
        return cls(module, kernel)

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: Sequence[Any]) -> None:
        for (slot, is_array), value in zip(self.pairs, args):
            slot.value = value.data.ptr if is_array else value
        gx, gy, gz = (grid + (1, 1))[:3]
        bx, by, bz = (block + (1, 1))[:3]
        cupy.cuda.driver.launchKernel(
            self.function, gx, gy, gz, bx, by, bz, 0, cupy.cuda.get_current_stream().ptr, self.block_ptr, 0
        )


if hasattr(cupy.ndarray, "_c_contiguous"):  # CuPy's flag, read without building a flags object

    def _c_contiguous(a: Any) -> bool:
        return bool(a._c_contiguous)

else:  # pragma: no cover - older CuPy

    def _c_contiguous(a: Any) -> bool:
        return bool(a.flags.c_contiguous)


def _same_layout(host: np.ndarray[Any, Any], dev: Any) -> bool:
    """One flat memcpy moves the bytes: both contiguous in the same order."""
    flags = host.flags
    if flags.c_contiguous:
        return _c_contiguous(dev)
    return bool(flags.f_contiguous and dev.flags.f_contiguous and not _c_contiguous(dev))
