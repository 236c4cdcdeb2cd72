"""The program the TUI's test traces were recorded from (see make_traces.py).

A heat-diffusion loop: two stencil launches per step inside one region,
then a scaling launch. On the naive path every launch copies.
"""

import numpy as np

from offload_core import In, InOut, Out, kernel, offload, region


@kernel
def smooth(dst: Out[np.float64], src: In[np.float64]) -> None:
    dst[0] = src[0]
    dst[-1] = src[-1]
    dst[1:-1] = (src[:-2] + src[1:-1] + src[2:]) * (1.0 / 3.0)


@kernel
def scale(u: InOut[np.float64], a: float) -> None:
    u *= a


def main(n: int = 50_000, steps: int = 15) -> float:
    u = np.zeros(n)
    u[n // 2] = 1.0e6
    scratch = np.empty_like(u)
    with region(u, Out(scratch)):
        for _ in range(steps):
            offload(smooth, scratch, u)
            offload(smooth, u, scratch)
        offload(scale, u, 0.5)
    return float(u.sum())


if __name__ == "__main__":
    print(main())
