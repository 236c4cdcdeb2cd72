"""A multiprocessing pool used as programs use it, for benchmarks/children_runs.py.

    pool_loop.py METHOD WORKERS TASKS N   `with Pool(WORKERS) as pool:` maps TASKS tasks of N launches each; the
                                          pool's __exit__ ends its workers with SIGTERM. Prints `launched K`.
"""

from __future__ import annotations

import multiprocessing
import sys

import numpy as np

from offload_core import In, InOut, kernel, offload


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


def launch(n: int) -> int:
    x, y = np.ones(8), np.zeros(8)
    for _ in range(n):
        offload(daxpy, y, x, 1.0)
    return n


if __name__ == "__main__":
    method, workers, tasks, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with multiprocessing.get_context(method).Pool(workers) as pool:
        print(f"launched {sum(pool.map(launch, [n] * tasks))}", flush=True)
