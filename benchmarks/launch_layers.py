"""Where a recorded offload() launch spends its host time, one layer at a time.

Run on a GPU with CuPy: python benchmarks/launch_layers.py [--launches N] [--repeats R]

`benchmarks/launch.py` gives the totals (bare launch, offload(), recorded);
this script peels them apart on the same DAXPY RawKernel, both arrays
resident in a region, so that a regression can be traced to its layer:

* `bare cupy.RawKernel`: CuPy's own call;
* `launcher`: offload_core's compiled launcher (`_Launcher`) alone;
* `be.launch`: the backend's launch (contiguity checks, dimensions, the launcher);
* `offload()`: the whole unrecorded launch (plan lookup, scalars, ids);
* `offload() recorded`: with the profiler's `Recorder` subscribed;
* the recorded launch's pieces on their own: `callsite()`, the launch
  timer's `start` + `finish` (sampled device timing), and one bus row.

It also counts how many recorded launches took the slow path (an
`Estimate` object queued behind a sample still pending on the bus) rather
than the direct one. µs per launch, median of the repeats; a table on
stdout; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import offload_core  # noqa: E402
from offload_core import launchtiming, offload, region  # noqa: E402
from offload_core.backends import cupy_usable  # noqa: E402
from offload_core.events import BUS, callsite  # noqa: E402
from profiler.sources.recorder import Recorder  # noqa: E402

from launch import N, RAW, SOURCE  # noqa: E402  (the same kernel as launch.py)


def per_call_us(fn: Callable[[], Any], sync: Callable[[], None], calls: int, repeats: int) -> float:
    for _ in range(200):
        fn()
    sync()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10_000, help="launches per sample (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="samples; the median is shown (default: %(default)s)")
    args = parser.parse_args()
    if not cupy_usable():
        print("launch_layers: needs CuPy and a GPU", file=sys.stderr)
        return 2
    import cupy

    be = offload_core.set_backend("cupy")
    sync = cupy.cuda.get_current_stream().synchronize
    n, r = args.launches, args.repeats
    bare = cupy.RawKernel(SOURCE, "daxpy")
    grid, block = ((N + 255) // 256,), (256,)
    y, x = np.zeros(N), np.ones(N)
    rows: list[tuple[str, float]] = []
    slow = 0

    class Counted(launchtiming.Estimate):
        def __init__(self, *a: Any, **kw: Any) -> None:
            nonlocal slow
            slow += 1
            super().__init__(*a, **kw)

    with region(x, y):
        yd, xd = be.present.by_id[id(y)].device, be.present.by_id[id(x)].device
        a, nn = np.float64(2.0), np.int32(N)
        dev_args = [yd, xd, a, nn]
        offload(RAW, y, x, 2.0, N)  # compiles and plans
        launcher = RAW.backend_cache[be._device_id]
        rows.append(("bare cupy.RawKernel", per_call_us(lambda: bare(grid, block, (yd, xd, a, nn)), sync, n, r)))
        rows.append(("launcher", per_call_us(lambda: launcher(grid, block, dev_args), sync, n, r)))
        rows.append(("be.launch", per_call_us(lambda: be.launch(RAW, dev_args), sync, n, r)))
        rows.append(("offload()", per_call_us(lambda: offload(RAW, y, x, 2.0, N), sync, n, r)))
        saved = launchtiming.Estimate
        launchtiming.Estimate = Counted  # type: ignore[misc]
        try:
            samples = []
            for _ in range(r):
                with Recorder() as rec:
                    samples.append(per_call_us(lambda: offload(RAW, y, x, 2.0, N), sync, n, 1))
                rec.raw.clear()
            rows.append(("offload() recorded", statistics.median(samples)))
        finally:
            launchtiming.Estimate = saved  # type: ignore[misc]
        recorded_launches = r * (n + 200)
        rows.append(("  piece: callsite()", per_call_us(lambda: callsite(1), sync, n, r)))
        timer = be.timer
        if timer is not None:
            with Recorder() as rec:
                def timed() -> None:
                    token = timer.start("piece")
                    timer.finish("piece", token, time.perf_counter_ns(), 0, None, "batched", None)
                rows.append(("  piece: timer start+finish", per_call_us(timed, sync, n, r)))
                row = ("launch", 0, False, 0, 0, "piece", 0, None, None, None, "batched", None, None)
                rows.append(("  piece: one bus row", per_call_us(lambda: BUS.emit_row(row), sync, n, r)))
            rec.raw.clear()
    print(f"# {time.strftime('%Y-%m-%d')}  {be.device}  CuPy {cupy.__version__}  NumPy {np.__version__}  "
          f"Python {sys.version.split()[0]}")
    print(f"# command: python benchmarks/launch_layers.py --launches {n} --repeats {r}")
    width = max(len(name) for name, _ in rows)
    for name, us in rows:
        print(f"{name:<{width}}  {us:8.2f} µs")
    print(f"recorded launches that queued an Estimate (slow path): {slow} of {recorded_launches} "
          f"({slow / recorded_launches:.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
