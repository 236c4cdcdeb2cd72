"""A host-bound loop of tiny kernels in plain PyTorch or CuPy, for timing what recording adds per launch.

    python benchmarks/programs/tiny_loop.py torch|cupy [--steps 5000] [--rounds 3]

Each step is `y += 1e-3 * x` on 64 elements: two kernels of a
microsecond or two, so the loop runs at the host's launch rate and any
per-launch cost of a recording shows in full
(`benchmarks/cupti_breakdown.py --program "tiny_loop.py torch"`).

Prints one JSON line: {"program", "lib", "steps", "loop_s"}; `loop_s` is
the fastest of `--rounds` loops, each between device syncs, after a
warm-up of 200 steps.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("lib", choices=("torch", "cupy"))
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    sync: Callable[[], Any]
    try:
        if args.lib == "torch":
            import torch

            x, y = torch.ones(64, device="cuda"), torch.zeros(64, device="cuda")
            sync = torch.cuda.synchronize
        else:
            import cupy as cp

            x, y = cp.ones(64), cp.zeros(64)
            sync = cp.cuda.Device().synchronize
    except Exception as exc:  # no library, or no GPU
        print(f"tiny_loop: needs {args.lib} and a CUDA GPU ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2

    def loop(steps: int) -> None:
        for _ in range(steps):
            y.__iadd__(1e-3 * x)
        sync()

    loop(200)
    best = float("inf")
    for _ in range(max(args.rounds, 1)):
        start = time.perf_counter()
        loop(args.steps)
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"program": "tiny_loop", "lib": args.lib, "steps": args.steps, "loop_s": round(best, 4)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
