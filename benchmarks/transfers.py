"""Host<->device bandwidth: pinned memory, CuPy's default path, and offload_core's engine.

Run on a GPU machine: python benchmarks/transfers.py [--max-size 1GiB] [--min-time 0.2]

For each size from 4 KiB to 1 GiB and each direction, one run measures:

* pinned:   memcpyAsync from/to a buffer of CuPy's pinned pool (the ceiling);
* cupy:     CuPy's default copy of a pageable NumPy array (`d.set(h)`, `d.get(out=h)`);
* offload:  offload_core's engine on the same pageable array, steady state
            (the array has been copied before, so a hot buffer is page-locked);
* cold:     offload_core's first copy of a fresh (already touched) array,
            page-locking included: what a one-off copy costs.

Each figure is the median of repeated copies (synchronised before and after
each), in GB/s (1e9 bytes per second). The last columns are offload/pinned
and offload/cupy. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def human(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main() -> int:
    parser = argparse.ArgumentParser(description="Host<->device bandwidth: pinned, CuPy default, offload_core.")
    parser.add_argument("--min-size", default="4KiB", help="smallest size (default: %(default)s)")
    parser.add_argument("--max-size", default="1GiB", help="largest size (default: %(default)s)")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds of copies per measurement (default: %(default)s)")
    args = parser.parse_args()
    try:
        import cupy
        from cupy.cuda import runtime as rt
    except ImportError:
        print("transfers.py needs CuPy and a GPU (pip install -e '.[cuda12]')", file=sys.stderr)
        return 2
    import offload_core
    from offload_core.backends.cupy_backend import CupyBackend

    be = offload_core.set_backend(CupyBackend())
    stream = cupy.cuda.get_current_stream()

    def timed(op: Callable[[], None], nbytes: int) -> float:
        op()
        stream.synchronize()
        reps = max(3, min(1000, int(args.min_time * 20e9 / max(nbytes, 1))))
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter()
            op()
            stream.synchronize()
            samples.append(time.perf_counter() - t0)
        return nbytes / statistics.median(samples) / 1e9

    def sync_all() -> None:
        be.synchronize()

    sizes = []
    n = parse_size(args.min_size)
    while n <= parse_size(args.max_size):
        sizes.append(n)
        n *= 4
    print(f"# {time.strftime('%Y-%m-%d')}  {be.device}  NumPy {np.__version__}  Python {platform.python_version()}")
    print(f"# command: python benchmarks/transfers.py --min-size {args.min_size} --max-size {args.max_size} --min-time {args.min_time}")
    header = f"{'size':>8} {'dir':>4} {'pinned':>8} {'cupy':>8} {'offload':>8} {'cold':>8} {'off/pin':>8} {'off/cupy':>8}"
    print(header)
    for size in sizes:
        count = size // 8
        host = np.ones(count)  # offload_core's array (it may page-lock it)
        plain = np.ones(count)  # CuPy's array, never page-locked, so CuPy's figure is its own
        dev = cupy.empty(count)
        pinned_mem = cupy.cuda.alloc_pinned_memory(size)
        pinned = np.frombuffer(pinned_mem, np.float64, count)
        for direction in ("h2d", "d2h"):
            if direction == "h2d":
                pin = timed(lambda: rt.memcpyAsync(dev.data.ptr, pinned.ctypes.data, size, rt.memcpyHostToDevice, stream.ptr), size)
                default = timed(lambda: dev.set(plain), size)

                def ours() -> None:
                    be.upload(host, dev)
                    be.settle_uploads()
            else:
                pin = timed(lambda: rt.memcpyAsync(pinned.ctypes.data, dev.data.ptr, size, rt.memcpyDeviceToHost, stream.ptr), size)
                default = timed(lambda: dev.get(out=plain), size)

                def ours() -> None:
                    be.download(dev, host)
                    be.synchronize()
            mine = timed(ours, size)
            cold_samples = []
            for _ in range(3 if size >= (64 << 20) else 7):
                fresh = np.ones(count)  # touched, as a caller's array is
                stream.synchronize()
                t0 = time.perf_counter()
                if direction == "h2d":
                    be.upload(fresh, dev)
                    be.settle_uploads()
                else:
                    be.download(dev, fresh)
                    be.synchronize()
                cold_samples.append(time.perf_counter() - t0)
                del fresh
            cold = size / statistics.median(cold_samples) / 1e9
            print(f"{human(size):>8} {direction:>4} {pin:8.2f} {default:8.2f} {mine:8.2f} {cold:8.2f} {mine / pin:8.2f} {mine / default:8.2f}",
                  flush=True)
        del host, plain, dev, pinned, pinned_mem
    sync_all()
    print(f"# page-locked now: {be.pinning.registered_bytes} bytes; registration failures: {be.pinning.failures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
