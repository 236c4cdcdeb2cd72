"""The hand-written CuPy baseline, device-event clock and device peak bandwidth.

This is the only suite module that imports CuPy, and it does so inside
its functions: importing it (or `offload_core.suite`) loads no CuPy, so
the NumPy backend never needs it.

The baseline is what a careful CuPy programmer writes by hand: each array
the kernels read is copied to the device once with `cp.asarray`, outputs
are allocated with `cp.empty`, the rep loop launches the very CUDA source
the offload variants use through `cupy.RawKernel` with the same grid and
block, and afterwards every array a kernel wrote comes back once with
`.get(out=host)`, into the caller's own array. It is the Python analog of
RAJAPerf's Base_CUDA variant and of "hand-tuned CUDA" in the study the
project follows. `cupy_baseline_graph` is the same program with its rep
loop captured once as a CUDA/HIP graph by hand: what such a programmer
does next when CuPy's per-launch cost (about 5.5 µs on the H200 machine)
dominates short kernels.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

from ..annotations import Access
from .spec import Problem
from .variants import Pass

#: Bytes per buffer of the device peak measurement.
DEVICE_PEAK_BYTES = 256 * 2**20


@lru_cache(maxsize=None)
def compiled(source: str, name: str, options: tuple[str, ...]) -> Any:
    """One `cupy.RawKernel` per (source, name, options), compiled on first launch."""
    import cupy

    return cupy.RawKernel(source, name, options=options)


class DeviceClock:
    """Device events around the rep loop, with a device-wide synchronisation before and after.

    The events go on `stream` (the null stream by default), which orders
    them against work on every blocking stream, the baseline's and the
    offload backend's alike.
    """

    def __init__(self, stream: Any = None) -> None:
        import cupy

        self._cupy = cupy
        self._stream = stream
        self._start = cupy.cuda.Event()
        self._end = cupy.cuda.Event()
        #: the host-clock time of the last loop, for cross-checking the device figure
        self.host_s = 0.0
        self._t0 = 0.0

    def start(self) -> None:
        self._cupy.cuda.Device().synchronize()
        self._start.record(self._stream)
        self._t0 = time.perf_counter()

    def stop(self) -> float:
        self._end.record(self._stream)
        self._end.synchronize()
        self._cupy.cuda.Device().synchronize()
        self.host_s = time.perf_counter() - self._t0
        return float(self._cupy.cuda.get_elapsed_time(self._start, self._end)) / 1e3


def _upload(problem: Problem) -> tuple[dict[str, Any], list[tuple[Any, Any, Any, tuple[Any, ...]]]]:
    """The device arrays (inputs copied once, outputs allocated) and each step's (RawKernel, grid, block, args)."""
    import cupy

    device = {}
    for name, host in problem.arrays.items():
        if problem.access[name] is Access.OUT:
            device[name] = cupy.empty(host.shape, dtype=host.dtype)
        else:
            device[name] = cupy.asarray(host)
    calls = []
    for step in problem.steps:
        k = step.kernel
        args = step.bind(device)
        grid, block = k.launch_dims(args)
        calls.append((compiled(k.source, k.name, k.options), grid, block, args))
    return device, calls


def _download(problem: Problem, device: dict[str, Any]) -> None:
    """Every array a kernel wrote back once, into the caller's host array."""
    import cupy

    for name, host in problem.arrays.items():
        if problem.access[name] is not Access.IN:
            device[name].get(out=host)
    cupy.cuda.Device().synchronize()


def cupy_baseline(problem: Problem, reps: int, clock: Any) -> Pass:
    """Hand-written CuPy: copy in once, launch the RawKernel source, copy back once."""
    t0 = time.perf_counter()
    device, calls = _upload(problem)
    clock.start()
    for _ in range(reps):
        for raw, grid, block, args in calls:
            raw(grid, block, args)
    loop = clock.stop()
    _download(problem, device)
    return Pass(loop, time.perf_counter() - t0)


def cupy_baseline_graph(problem: Problem, reps: int, clock: Any) -> Pass:
    """Hand-written CuPy with the whole rep loop captured once as a CUDA/HIP graph, launched once.

    The launches are recorded by CuPy's stream capture on a stream of their
    own (capture needs one other than the legacy default stream) and the
    graph is launched on the null stream, where the uploads ran and where
    the clock's events are recorded, so it is ordered after the uploads and
    timed like the baseline. Capturing and instantiating the graph are
    setup, outside the timed loop like compilation; `total_s` includes
    them. Each kernel's module is loaded before the capture starts.
    """
    import cupy

    t0 = time.perf_counter()
    device, calls = _upload(problem)
    for raw, _, _, _ in calls:
        raw.attributes  # reading them compiles and loads the kernel now, not while capturing
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            for _ in range(reps):
                for raw, grid, block, args in calls:
                    raw(grid, block, args)
        except BaseException:
            try:
                stream.end_capture()  # leave capture mode before the error propagates
            except Exception:  # the capture is broken already; the first error is the one to report
                pass
            raise
        graph = stream.end_capture()
    clock.start()
    graph.launch(stream=cupy.cuda.Stream.null)
    loop = clock.stop()
    _download(problem, device)
    return Pass(loop, time.perf_counter() - t0)


def device_peak_bandwidth(nbytes: int = DEVICE_PEAK_BYTES, repeats: int = 10) -> float:
    """Best device-to-device copy bandwidth, bytes per second (read + write)."""
    import cupy

    src = cupy.ones(nbytes // 8, dtype=cupy.float64)
    dst = cupy.empty_like(src)
    stream = cupy.cuda.get_current_stream()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    dst.data.copy_from_device_async(src.data, src.nbytes, stream)
    stream.synchronize()
    best = float("inf")
    for _ in range(repeats):
        start.record(stream)
        dst.data.copy_from_device_async(src.data, src.nbytes, stream)
        end.record(stream)
        end.synchronize()
        best = min(best, float(cupy.cuda.get_elapsed_time(start, end)) / 1e3)
    return 2 * src.nbytes / best


def versions() -> dict[str, str]:
    """CuPy, CUDA/HIP runtime and driver versions, for the report's metadata."""
    import cupy

    rt = cupy.cuda.runtime
    info = {"cupy": cupy.__version__, "runtime": str(rt.runtimeGetVersion()), "driver": str(rt.driverGetVersion())}
    info["platform"] = "rocm" if getattr(rt, "is_hip", False) else "cuda"
    try:
        props = rt.getDeviceProperties(cupy.cuda.Device().id)
        name = props.get("name", b"")
        info["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # device properties are decoration for the report, not a requirement
        pass
    return info
