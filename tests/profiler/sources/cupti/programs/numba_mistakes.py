"""Plain Numba CUDA: the input uploaded again on every launch; the GPU tests know every copy it makes.

Each copying line ends with a `# site: NAME` marker the tests look up.
"""

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30 overloads np.row_stack, which NumPy 2.5 removed
    np.row_stack = np.vstack

from numba import cuda  # noqa: E402

STEPS = 10
N = 1 << 16  # 512 KiB of float64


@cuda.jit
def scale(a, f):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < a.size:
        a[i] *= f


def main() -> None:
    x = np.arange(N, dtype=np.float64)
    for step in range(STEPS):
        d = cuda.to_device(x)  # site: to_device
        scale[N // 256, 256](d, 2.0)  # site: launch
    out = d.copy_to_host()  # site: result
    print(f"out[1] {out[1]:.1f}")


if __name__ == "__main__":
    main()
