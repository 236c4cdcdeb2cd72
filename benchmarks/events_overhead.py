"""What the event bus costs a launch: unobserved, observed, and the branch itself.

Run: python benchmarks/events_overhead.py [--launches N] [--repeats R]

Launches a tiny DAXPY (8 elements, so the kernel body costs almost nothing)
inside a region, where a launch makes no copies, and prints the median
per-launch time of:

* the kernel body called directly (no offload_core at all),
* offload() with no subscriber (the only event cost is `if BUS.subscribers:`),
* offload() with one subscriber that does nothing,
* the subscriber check alone, timed in isolation.

A table on stdout; nothing is asserted (timings are noisy, so no test
depends on them).
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

import offload_core  # noqa: E402
from offload_core import In, InOut, events, kernel, offload, region  # noqa: E402
from offload_core.events import BUS  # noqa: E402


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


def per_call_ns(fn: Callable[[], None], launches: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(launches):
            fn()
        samples.append((time.perf_counter_ns() - start) / launches)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20_000, help="launches per sample (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=7, help="samples; the median is shown (default: %(default)s)")
    args = parser.parse_args()

    backend = offload_core.get_backend()
    x = np.ones(8)
    y = np.zeros(8)
    body = daxpy.fn
    rows: list[tuple[str, float]] = []
    rows.append(("kernel body called directly", per_call_ns(lambda: body(y, x, 2.0), args.launches, args.repeats)))
    with region(x, y):
        rows.append(("offload() in a region, no subscriber", per_call_ns(lambda: offload(daxpy, y, x, 2.0), args.launches, args.repeats)))
        unsubscribe = events.subscribe(lambda e: None)
        try:
            rows.append(("offload() in a region, 1 no-op subscriber", per_call_ns(lambda: offload(daxpy, y, x, 2.0), args.launches, args.repeats)))
        finally:
            unsubscribe()

    def branch() -> None:
        if BUS.subscribers:
            raise AssertionError

    empty = per_call_ns(lambda: None, args.launches, args.repeats)
    rows.append(("`if BUS.subscribers:` alone (call overhead removed)", max(per_call_ns(branch, args.launches, args.repeats) - empty, 0.0)))

    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, NumPy {np.__version__}, "
          f"backend {backend.name}, {platform.processor() or platform.machine()}")
    width = max(len(name) for name, _ in rows)
    print(f"{'configuration':<{width}}  {'ns/launch':>10}")
    for name, ns in rows:
        print(f"{name:<{width}}  {ns:>10.0f}")
    unobserved = rows[1][1]
    observed = rows[2][1]
    print(f"\nobserving costs {observed - unobserved:.0f} ns per launch; unobserved, the event bus costs one branch "
          f"({rows[3][1]:.0f} ns) of the {unobserved - rows[0][1]:.0f} ns offload() adds to the kernel body")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
