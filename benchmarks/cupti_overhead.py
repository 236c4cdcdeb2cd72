"""What recording with CUPTI costs a plain CuPy program: small and large copies, traced and not.

Run on an NVIDIA GPU with the cupti extra:
    python benchmarks/cupti_overhead.py [--small 10000] [--large-mib 256] [--large-reps 10] [--repeats 5]

Workloads (plain CuPy, no offload_core):

* `small H2D`: a loop of `cp.asarray(x)` of a 1 KiB array (CuPy stages it
  through its pinned pool, then one cudaMemcpyAsync),
* `small D2H`: a loop of `d.get()` of a 1 KiB array (a copy and a stream sync),
* `large H2D pageable` / `pinned`: `dev.set(big)` of a large array,
* `large D2H pageable`: `dev.get(out=host)`.

Each is timed untraced, under `CuptiRecorder(fingerprints=False)` (what
`offload-prof run --source cupti --no-fingerprints` does; the issue's
targets, at most 2x for the small-copy loop and under 5% for large
copies, are for it, as the offload recorder's targets are for its
no-fingerprint mode) and under `CuptiRecorder()` (the default: the host
bytes of every copy are digested for OFF502/OFF503: one XXH3 pass with
xxhash, a blake2b pass at 0.3-1 GB/s without it). Traced times include starting and stopping the recording
(subscribing, the final device sync and activity flush); decoding the
records and building the `Run` afterwards is timed separately, per record.
An empty recording (start and stop around nothing) is timed too: `fixed`
is that cost, which a program pays once, and `marginal` the ratio without
it, (traced - fixed) / untraced, which is what recording costs per copy
in a longer run. Rounds rotate the order of the configurations; each
figure is the fastest round. A table on stdout; nothing is asserted.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from profiler.errors import ProfilerError  # noqa: E402
from profiler.sources.cupti import CuptiRecorder  # noqa: E402

SMALL_TARGET = 2.0  # traced / untraced wall time
LARGE_TARGET = 1.05


def workloads(cp: object, small: int, large_mib: int, large_reps: int) -> dict[str, tuple[Callable[[], None], int, float]]:
    """name -> (run once, copies per run, target ratio)."""
    import cupyx

    cupy = cp  # type: ignore[assignment]
    x = np.arange(256, dtype=np.float32)
    d = cupy.asarray(x)  # type: ignore[attr-defined]
    n = large_mib << 18  # float32 elements
    big = np.ones(n, dtype=np.float32)
    pinned = cupyx.empty_pinned(n, dtype=np.float32)
    pinned[:] = 1.0
    dev = cupy.empty(n, dtype=cupy.float32)  # type: ignore[attr-defined]
    host = np.empty(n, dtype=np.float32)
    sync = cupy.cuda.Device().synchronize  # type: ignore[attr-defined]

    def small_h2d() -> None:
        for _ in range(small):
            cupy.asarray(x)  # type: ignore[attr-defined]
        sync()

    def small_d2h() -> None:
        for _ in range(small):
            d.get()
        sync()

    def large_h2d() -> None:
        for _ in range(large_reps):
            dev.set(big)
        sync()

    def large_h2d_pinned() -> None:
        for _ in range(large_reps):
            dev.set(pinned)
        sync()

    def large_d2h() -> None:
        for _ in range(large_reps):
            dev.get(out=host)
        sync()

    return {
        "small H2D": (small_h2d, small, SMALL_TARGET),
        "small D2H": (small_d2h, small, SMALL_TARGET),
        "large H2D pageable": (large_h2d, large_reps, LARGE_TARGET),
        "large H2D pinned": (large_h2d_pinned, large_reps, LARGE_TARGET),
        "large D2H pageable": (large_d2h, large_reps, LARGE_TARGET),
    }


def traced(fn: Callable[[], None], fingerprints: bool, keep: list[CuptiRecorder]) -> Callable[[], None]:
    def go() -> None:
        rec = CuptiRecorder(fingerprints=fingerprints).start()
        try:
            fn()
        finally:
            rec.stop()
        keep[:] = [rec]
    return go


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10_000, help="copies in each small-copy loop (default: %(default)s)")
    parser.add_argument("--large-mib", type=int, default=256, help="MiB per large copy (default: %(default)s)")
    parser.add_argument("--large-reps", type=int, default=10, help="large copies per run (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds; the fastest is shown (default: %(default)s)")
    parser.add_argument("--only", help="comma-separated workload names to run (default: all)")
    args = parser.parse_args()
    try:
        import cupy as cp
    except ImportError:
        print("cupti_overhead: needs CuPy and an NVIDIA GPU", file=sys.stderr)
        return 2
    try:  # fail before any timing when CUPTI cannot run here
        CuptiRecorder(fingerprints=False).start().stop()
    except ProfilerError as exc:
        print(f"cupti_overhead: {exc}", file=sys.stderr)
        return 2
    loads = workloads(cp, args.small, args.large_mib, args.large_reps)
    if args.only:
        wanted = {w.strip() for w in args.only.split(",")}
        loads = {k: v for k, v in loads.items() if k in wanted}
    dev = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else dev
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, CuPy {cp.__version__}, {dev}, "
          f"fastest of {args.repeats} rounds; traced = CuptiRecorder start + loop + stop")
    empty = []
    for _ in range(max(args.repeats, 3)):
        empty.append(timed(lambda: CuptiRecorder(fingerprints=False).start().stop()))
    fixed = min(empty)
    print(f"# fixed cost of a recording (start + stop around nothing): {fixed:.2f} ms")
    head = (f"{'workload':<20} {'copies':>6} {'off ms':>9} {'cupti ms':>9} {'ratio':>6} {'marginal':>8} {'µs/copy':>8} "
            f"{'target':>7} {'+fp ms':>9} {'ratio':>6} {'records':>7} {'build ns/rec':>12}")
    print(head)
    print("-" * len(head))
    misses = []
    for name, (fn, copies, target) in loads.items():
        last: list[CuptiRecorder] = []
        configs = {"off": fn, "cupti": traced(fn, False, last), "fp": traced(fn, True, [])}
        for f in configs.values():  # warm-up: pools, pinned pages, CUPTI's first attach
            f()
        best = {k: float("inf") for k in configs}
        names = list(configs)
        for i in range(args.repeats):
            for k in names[i % 3:] + names[: i % 3]:
                best[k] = min(best[k], timed(configs[k]))
        start = time.perf_counter_ns()
        records = len(last[0].run().records)
        build = (time.perf_counter_ns() - start) / max(records, 1)
        ratio, fp_ratio = best["cupti"] / best["off"], best["fp"] / best["off"]
        marginal = (best["cupti"] - fixed) / best["off"]
        ok = ratio <= target
        if not ok:
            misses.append(name)
        goal = f"<={target:g}x" if target >= 2 else f"<={100 * (target - 1):.0f}%"
        print(f"{name:<20} {copies:>6} {best['off']:>9.2f} {best['cupti']:>9.2f} {ratio:>5.2f}x {marginal:>7.3f}x "
              f"{(best['cupti'] - fixed - best['off']) * 1e3 / copies:>8.2f} {goal:>7}{' ' if ok else '!'}"
              f"{best['fp']:>9.2f} {fp_ratio:>5.2f}x {records:>7} {build:>12.0f}")
    print("\n'ratio' is traced/untraced wall time without fingerprints (the targets' mode), start and stop included; "
          "'marginal' leaves the fixed cost out; 'µs/copy' is the marginal cost per copy; '+fp' digests every "
          "copied byte (the default of `offload-prof run`); 'build' decodes the records and makes the Run")
    print("targets met" if not misses else f"targets missed (marked !): {', '.join(misses)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
