"""What turning a CUPTI capture into trace records costs, on a capture shaped like a PyTorch training epoch.

`offload-prof run --source cupti` converts the capture after the program
ends (`profiler.sources.cupti.convert`), and the user waits for it: one
epoch of PyTorch's word_language_model leaves about 360,000 activity
records (335,000 kernels, 24,500 memsets, 1,700 copies and as many syncs).
This script builds a synthetic capture of that shape (no GPU needed):
`--steps` steps of `--launches` kernels, of which `--sampled` (a fraction)
have a call site as launch-site sampling leaves them, `--memsets` memsets
with their calls, and a `.item()` (a pageable D2H copy and a stream sync)
per step; then it times `convert(..., infer_launch_sites=True)` and, as
`finish s`, everything `offload-prof run` does with the capture after the
program ends: conversion, the merge with (here: no) child processes, the
summary line's counts and writing the trace to a temporary file. A table
on stdout; nothing is asserted.

    python benchmarks/cupti_convert.py [--steps 1700] [--launches 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from profiler.model import Meta, Process, Run  # noqa: E402
from profiler.sources.cupti.activity import ApiCall, Capture, Copy, Kernel, Memset, Sync  # noqa: E402
from profiler.sources.cupti.convert import convert  # noqa: E402
from profiler.sources.merge import merge  # noqa: E402


def capture(steps: int, launches: int, memsets: int, sampled: float, seed: int = 1) -> Capture:
    """A capture of `steps` training steps as the CUPTI source records them with sampled launch sites."""
    rng = random.Random(seed)
    names = [f"_ZN2at6native{n}kernelEv" for n in range(60)]
    calls: dict[int, ApiCall] = {}
    kernels: list[Kernel] = []
    sets: list[Memset] = []
    copies: list[Copy] = []
    syncs: list[Sync] = []
    t, corr = 1000, 0
    for _ in range(steps):
        for j in range(launches):
            corr += 1
            t += 20_000
            if rng.random() < sampled:
                calls[corr] = ApiCall(corr, "cudaLaunchKernel_v7000", "launch", ("/w/model.py", 50, "forward"), (1, 2))
            kernels.append(Kernel(corr, names[j % len(names)], t, t + 4000, 7, 0))
        for _ in range(memsets):
            corr += 1
            t += 5000
            calls[corr] = ApiCall(corr, "cuMemsetD8Async", "memset", ("/w/main.py", 186, "train"), (1, 3))
            sets.append(Memset(corr, 4096, "device", t, t + 1000))
        corr += 1
        t += 30_000
        calls[corr] = ApiCall(corr, "cudaMemcpyAsync_v3020", "copy", ("/w/main.py", 196, "train"), (5, 6),
                              dst=0x10, count=4, enter_ns=t)
        copies.append(Copy(corr, corr, "d2h", "device", "pageable", 4, t + 100, t + 2000))
        corr += 1
        calls[corr] = ApiCall(corr, "cudaStreamSynchronize_v3020", "sync", ("/w/main.py", 196, "train"), (5, 6),
                              enter_ns=t + 2100)
        syncs.append(Sync(corr, "stream", t + 2100, t + 2500))
    return Capture(0, t + 1000, calls, tuple(copies), tuple(sets), tuple(kernels), tuple(syncs), 0, ())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1700, help="training steps (default: 1700)")
    parser.add_argument("--launches", type=int, default=200, help="kernels per step (default: 200)")
    parser.add_argument("--memsets", type=int, default=15, help="memsets per step (default: 15)")
    parser.add_argument("--sampled", type=float, default=0.01,
                        help="fraction of launches with a call site (default: 0.01)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds; the fastest is shown (default: 3)")
    args = parser.parse_args()
    if args.steps < 1 or args.launches < 0 or args.memsets < 0 or not 0 <= args.sampled <= 1 or args.repeats < 1:
        parser.error("--steps and --repeats must be at least 1, --launches and --memsets at least 0, "
                     "--sampled within [0, 1]")
    cap = capture(args.steps, args.launches, args.memsets, args.sampled)
    n = len(cap.kernels) + len(cap.memsets) + len(cap.copies) + len(cap.syncs)
    best = finish = float("inf")
    inferred = records = 0
    meta = Meta("cupti", "synthetic", "batched", "", cap.t1 - cap.t0)
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(args.repeats):
            print(f"cupti_convert: round {round_ + 1}/{args.repeats} ...", file=sys.stderr, flush=True)
            began = time.perf_counter()
            out = convert(cap, infer_launch_sites=True)
            converted = time.perf_counter()
            run = merge(Run(meta, out.records), Process(1, 0, "main", ("train.py",)), 0, [])
            counts = [int(run.columns.kind_mask(k).sum()) for k in ("h2d", "d2h", "launch")]  # type: ignore[arg-type]
            run.save(Path(folder) / "t.json")
            ended = time.perf_counter()
            best, finish = min(best, converted - began), min(finish, ended - began)
            inferred, records = out.inferred_sites, len(out.records)
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {platform.machine()}, "
          f"fastest of {args.repeats}")
    print(f"{'activities':>10} {'records':>8} {'lent sites':>10} {'convert s':>10} {'µs/record':>10} {'finish s':>9}")
    print(f"{n:>10,} {records:>8,} {inferred:>10,} {best:>10.2f} {best / max(records, 1) * 1e6:>10.1f} "
          f"{finish:>9.2f}")
    print(f"(H2D, D2H, launches: {counts[0]:,}, {counts[1]:,}, {counts[2]:,})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
