"""Per-launch host overhead of offload() inside a region, against a bare CuPy launch.

Run: python benchmarks/launch.py [--launches N] [--repeats R]

The kernel is a DAXPY over 1024 doubles, so the device finishes each launch
long before the host issues the next one and the loop measures host cost
only. Rows (median of repeats, µs per launch, wall time of N launches and a
final synchronize):

* bare cupy.RawKernel launch of the CUDA source;
* offload() of the same source as an offload_core RawKernel, both arrays
  resident in a region (no copies);
* the same recorded by the profiler's `Recorder` (what `offload-prof run`
  does): on a GPU one launch in 32 per kernel is timed with device events
  and the others get the kernel's sampled time (offload_core.launchtiming;
  issue 13's target: at most 2 µs more than unrecorded on the H200);
* the same recorded with every launch timed by its own pair of device
  events (`OFFLOAD_LAUNCH_TIMING=exact`, `offload-prof run --every-launch`);
* a CuPy elementwise expression called directly, and the same expression
  as an @kernel body through offload().

On a machine without CuPy the NumPy backend rows are printed instead.
Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import offload_core  # noqa: E402
from offload_core import In, InOut, RawKernel, kernel, offload, region  # noqa: E402
from offload_core.backends import cupy_usable  # noqa: E402
from profiler.sources.recorder import Recorder  # noqa: E402

SOURCE = r"""
extern "C" __global__ void daxpy(double* y, const double* x, double a, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""
N = 1024


def cpu_daxpy(y: Any, x: Any, a: Any, n: Any) -> None:
    y[:n] += a * x[:n]


RAW = RawKernel(SOURCE, "daxpy", params=[("y", InOut[np.float64]), ("x", In[np.float64]), ("a", np.float64), ("n", np.int32)],
                grid=(N + 255) // 256, block=256, cpu=cpu_daxpy)


@kernel
def py_daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


def per_launch_us(fn: Callable[[], None], sync: Callable[[], None], launches: int, repeats: int) -> float:
    for _ in range(200):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(launches):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / launches * 1e6)
    return statistics.median(samples)


def recorded(be: Any, every: int | None, sync: Callable[[], None], args: argparse.Namespace) -> float:
    """µs per launch while the profiler's Recorder records (`every`: the launch timer's sampling, None as set)."""
    y, x = np.zeros(N), np.ones(N)
    timer = be.timer
    saved = timer.every if timer is not None else None
    if timer is not None and every is not None:
        timer.every = every
    samples: list[float] = []
    try:
        with region(x, y):
            for _ in range(args.repeats):
                with Recorder() as rec:  # one recording per sample: its events are built into a Run afterwards
                    samples.append(per_launch_us(lambda: offload(RAW, y, x, 2.0, N), sync, args.launches, 1))
                rec.raw.clear()
    finally:
        if timer is not None and saved is not None:
            timer.every = saved
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description="Per-launch overhead of offload() against bare CuPy.")
    parser.add_argument("--launches", type=int, default=20_000, help="launches per sample (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=7, help="samples; the median is shown (default: %(default)s)")
    args = parser.parse_args()
    rows: list[tuple[str, float]] = []
    if cupy_usable():
        import cupy

        be = offload_core.set_backend("cupy")
        sync = cupy.cuda.get_current_stream().synchronize
        bare = cupy.RawKernel(SOURCE, "daxpy")
        yd, xd = cupy.zeros(N), cupy.ones(N)
        a, n = np.float64(2.0), np.int32(N)
        grid, block = ((N + 255) // 256,), (256,)
        rows.append(("bare cupy.RawKernel launch", per_launch_us(lambda: bare(grid, block, (yd, xd, a, n)), sync, args.launches, args.repeats)))
        rows.append(("cupy elementwise y += a * x", per_launch_us(lambda: yd.__iadd__(2.0 * xd), sync, args.launches, args.repeats)))
    else:
        be = offload_core.get_backend()

        def sync() -> None:
            pass

    y, x = np.zeros(N), np.ones(N)
    with region(x, y):
        rows.append(("offload(RawKernel) in a region", per_launch_us(lambda: offload(RAW, y, x, 2.0, N), sync, args.launches, args.repeats)))
        rows.append(("offload(RawKernel) in a region, recorded", recorded(be, None, sync, args)))
        if be.timer is not None:
            rows.append(("offload(RawKernel) in a region, recorded, every launch timed", recorded(be, 1, sync, args)))
        rows.append(("offload(@kernel y += a * x) in a region", per_launch_us(lambda: offload(py_daxpy, y, x, 2.0), sync, args.launches, args.repeats)))
    print(f"# {time.strftime('%Y-%m-%d')}  backend {be.name}: {be.device}  Python {platform.python_version()}  NumPy {np.__version__}")
    print(f"# command: python benchmarks/launch.py --launches {args.launches} --repeats {args.repeats}")
    width = max(len(r[0]) for r in rows)
    print(f"{'launch':<{width}}  {'µs/launch':>10}")
    for name, us in rows:
        print(f"{name:<{width}}  {us:10.2f}")
    by = dict(rows)
    added = by["offload(RawKernel) in a region, recorded"] - by["offload(RawKernel) in a region"]
    line = f"\nrecording adds {added:.2f} µs per launch (target on the H200: <= 2 µs)"
    if "offload(RawKernel) in a region, recorded, every launch timed" in by:
        exact = by["offload(RawKernel) in a region, recorded, every launch timed"] - by["offload(RawKernel) in a region"]
        line += f"; timing every launch with device events adds {exact:.2f} µs"
    print(line)
    if "bare cupy.RawKernel launch" in by:
        extra = by["offload(RawKernel) in a region"] - by["bare cupy.RawKernel launch"]
        extra_py = by["offload(@kernel y += a * x) in a region"] - by["cupy elementwise y += a * x"]
        print(f"offload() adds {extra:.2f} µs to a bare RawKernel launch (target: <= 2 µs) and {extra_py:.2f} µs to "
              "the elementwise expression")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
