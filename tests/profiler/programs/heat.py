"""The demo's heat-diffusion loop as a stand-alone program: the profiler's dogfood example.

`python tests/profiler/programs/heat.py [POINTS] [STEPS]` runs the batched
path; `OFFLOAD_MODE=naive` the naive one, with no change to the code.
"""

import sys

import numpy as np

from offload_core import Out, offload, region
from offload_core.demo import smooth


def heat(u: np.ndarray, steps: int) -> None:
    scratch = np.empty_like(u)
    with region(u, Out(scratch)):
        for _ in range(steps):
            offload(smooth, scratch, u)
            offload(smooth, u, scratch)


def main() -> int:
    points = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    u = np.zeros(points)
    u[points // 2] = 1.0e6
    heat(u, steps)
    print(f"heat: {points} points, {2 * steps} launches, total {u.sum():.6g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
