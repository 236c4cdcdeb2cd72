"""Plain CuPy with the classic transfer mistakes; the GPU tests know every copy it makes.

Each copying line ends with a `# site: NAME` marker the tests look up.
"""

import numpy as np

import cupy as cp
import cupyx

STEPS = 20
N = 1 << 18  # 1 MiB of float32
BIG = 8 << 20  # 32 MiB of float32


def main() -> None:
    x = np.arange(N, dtype=np.float32)  # the same input on every step
    acc = cp.zeros(N, dtype=cp.float32)  # site: zeros
    total = 0.0
    for step in range(STEPS):
        d = cp.asarray(x)  # site: asarray
        acc += d * 0.5
        total += acc[:4].sum().item()  # site: item
    big = np.ones(BIG, dtype=np.float32)
    dev = cp.empty(BIG, dtype=cp.float32)
    for i in range(3):
        big[0] = i  # new contents each time: a needed upload, but from pageable memory
        dev.set(big)  # site: pageable
    pinned = cupyx.empty_pinned(BIG, dtype=np.float32)
    pinned[:] = 1.0
    for i in range(3):
        pinned[0] = i
        dev.set(pinned)  # site: pinned
    result = cp.asnumpy(acc)  # site: result
    print(f"total {total:.1f}, result[1] {result[1]:.1f}")


if __name__ == "__main__":
    main()
