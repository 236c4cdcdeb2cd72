"""N launches of a small DAXPY outside any region (nine records each: allocs, copies, launch, sync, frees), for
benchmarks/recording_memory.py; `forever` launches until it is stopped.

    launch_loop.py N | forever
"""

from __future__ import annotations

import sys

import numpy as np

from offload_core import In, InOut, kernel, offload


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


def main(argv: list[str]) -> None:
    x, y = np.ones(8), np.zeros(8)
    n = -1 if argv[0] == "forever" else int(argv[0])
    done = 0
    while done != n:
        offload(daxpy, y, x, 1.0)
        done += 1


if __name__ == "__main__":
    main(sys.argv[1:])
