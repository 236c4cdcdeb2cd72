"""The replay's predicted savings against the truth, on the RAJAPerf suite: "keep it resident".

Run: python benchmarks/savings_truth.py [--kernels Stream DAXPY ...] [--size-factor 0.25] [--reps 10] [--repeats 9]
     (on a GPU: OFFLOAD_BACKEND=cupy python benchmarks/savings_truth.py ...)

For each kernel, on the active backend:

* **predicted**: the kernel's naive path (`run_once` with
  `set_mode("naive")`, the region maps nothing, every launch copies) is
  recorded with the profiler's `Recorder` (no fingerprints); the runtime
  rules find its per-launch copies (OFF501), and the replay prices their
  fix, all of them together (`keep_resident` of every OFF501 finding's
  records: the copies, the syncs they forced, the per-launch allocations
  and frees);
* **measured**: the same problem run unrecorded on both paths
  (`offload_variant`, region entry and exit included, launches one by
  one); the truth is the naive time minus the batched time.

Each round records once and times each path once, so drift on a busy
machine hits prediction and truth alike; the figures are medians over
`--repeats` rounds: of the per-round difference naive - batched, and of
the predictions. `spread` is the interquartile range of the differences;
a kernel whose spread exceeds its saving cannot be checked on this
machine and is marked `noise` (its kernels take long beside the copies
they save).

`error` is predicted/measured - 1; the target is within 25%. The script
re-runs itself with one BLAS thread and an allocator that keeps freed
memory (`quiet_env.py`: on the NumPy backend a fresh device twin
otherwise pays its page faults in the kernel that first writes it, which
no record shows; `--default-allocator` measures that way). A table on
stdout; nothing is asserted.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import quiet_env  # noqa: E402

from offload_core import get_backend, set_mode  # noqa: E402
from offload_core.suite import select  # noqa: E402
from offload_core.suite.timing import HostClock  # noqa: E402
from offload_core.suite.variants import offload_variant, run_once  # noqa: E402
from profiler.analysis.detectors import detect  # noqa: E402
from profiler.analysis.replay import Timeline, keep_resident, saving  # noqa: E402
from profiler.sources.recorder import Recorder  # noqa: E402

TARGET = 0.25


def predicted(bench, size_factor: float, reps: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """(ms saved by keeping every OFF501 finding's buffers resident, how many findings) on a naive recording."""
    problem = bench.problem(size_factor)
    set_mode("naive")
    try:
        with Recorder() as rec:
            run_once(problem, reps)
    finally:
        set_mode("batched")
    run = rec.run()
    found = [f for f in detect(run) if f.code == "OFF501"]
    timeline = Timeline.of(run)
    union = keep_resident(run, [i for f in found for i in f.records])
    return saving(timeline, union) / 1e6, len(found)


def timed(bench, size_factor: float, reps: int, mode: str) -> float:  # type: ignore[no-untyped-def]
    """Total ms of one unrecorded run of the path `mode` (region entry and exit included)."""
    problem = bench.problem(size_factor)
    set_mode(mode)
    try:
        return offload_variant(problem, reps, HostClock(get_backend().synchronize), graphs=False).total_s * 1e3
    finally:
        set_mode("batched")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", nargs="*", default=None, help="kernel names or groups (default: all)")
    p.add_argument("--size-factor", type=float, default=0.25)
    p.add_argument("--reps", type=int, default=10, help="reps per run (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=9, help="rounds per kernel (medians; default: %(default)s)")
    p.add_argument("--default-allocator", action="store_true",
                   help="measure with the C library's default allocator (see benchmarks/quiet_env.py)")
    args = p.parse_args(argv)
    quiet_env.ensure(pooled=not args.default_allocator)
    be = get_backend()
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, NumPy {np.__version__}, "
          f"backend {be.name} ({be.device}), {platform.machine()}: size factor {args.size_factor}, "
          f"{args.reps} reps, medians of {args.repeats}; {quiet_env.describe()}")
    head = f"{'kernel':10s} {'size':>9s} {'naive ms':>9s} {'batched ms':>10s} {'measured':>9s} {'spread':>7s} " \
           f"{'predicted':>9s} {'findings':>8s} {'error':>7s}  target"
    print(head)
    print("-" * len(head))
    errors = []
    for bench in select(args.kernels):
        runs, naives, batcheds = [], [], []
        for _ in range(args.repeats):
            runs.append(predicted(bench, args.size_factor, args.reps))
            naives.append(timed(bench, args.size_factor, args.reps, "naive"))
            batcheds.append(timed(bench, args.size_factor, args.reps, "batched"))
        together = statistics.median(r[0] for r in runs)
        differences = [n - b for n, b in zip(naives, batcheds)]
        truth = statistics.median(differences)
        quartiles = statistics.quantiles(differences, n=4) if len(differences) > 1 else [truth, truth, truth]
        spread = quartiles[2] - quartiles[0]
        error = together / truth - 1 if truth > 0 else float("nan")
        if spread > abs(truth):
            ok = "noise"
        else:
            errors.append(abs(error))
            ok = "ok" if abs(error) <= TARGET else "MISSED"
        print(f"{bench.name:10s} {bench.problem(args.size_factor).size:9d} {statistics.median(naives):9.2f} "
              f"{statistics.median(batcheds):10.2f} {truth:9.2f} {spread:7.2f} {together:9.2f} {runs[0][1]:8d} "
              f"{100 * error:+6.1f}%  {ok}")
    within = sum(e <= TARGET for e in errors)
    median_error = f"{100 * statistics.median(errors):.1f}%" if errors else "-"
    print(f"\n{within} of {len(errors)} kernels measurable here within {100 * TARGET:.0f}% (median |error| "
          f"{median_error}); measured = median over rounds of naive - batched (unrecorded), spread = its "
          "interquartile range ('noise' where it exceeds the saving), predicted = median replayed saving of keeping "
          "every OFF501 finding's buffers resident, on the naive trace")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
