"""RAJAPerf's Basic group, the two kernels the suite uses: DAXPY and PI_REDUCE.

DAXPY accumulates (`y += a * x` on every rep, from y = 0), so its checksum
depends on the number of reps, exactly as RAJAPerf's does. PI_REDUCE
integrates 4/(1+x^2) over [0, 1] with the midpoint rule and, like RAJAPerf,
overwrites its result on every rep (`m_pi = 4 * pi`); its checksum is
|pi|. It reads no arrays, so it has no bandwidth figure: it measures the
reduction and the launch overhead.

Defaults: DAXPY size 1,000,000, 500 reps (src/basic/DAXPY.cpp; tolerance
not set there, so KernelBase's default, normal); PI_REDUCE size 1,000,000,
50 reps, tolerance normal (src/basic/PI_REDUCE.cpp, PI_REDUCE.hpp).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..annotations import Access, In, InOut, Out
from ..kernels import RawKernel
from .checksum import array_checksum, scalar_checksum
from .data import DataInit
from .reduction import BLOCK_SUM_C, block_partials, grid_of_partials, partial_count
from .spec import Benchmark, Problem, Step, grid_1d

F8 = np.float64
I8 = np.int64

_DAXPY_C = r"""
extern "C" __global__ void daxpy(double* y, const double* x, double a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
"""

_PI_C = BLOCK_SUM_C + r"""
extern "C" __global__ void pi_partial(double* partial, double dx, long long n) {
  double v = 0.0;
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * BLOCK) {
    double x = ((double)i + 0.5) * dx;
    v += dx / (1.0 + x * x);
  }
  double s = block_sum(v);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
extern "C" __global__ void pi_finish(double* pi, const double* partial, long long parts) {
  double v = 0.0;
  for (long long i = threadIdx.x; i < parts; i += BLOCK) v += partial[i];
  double s = block_sum(v);
  if (threadIdx.x == 0) pi[0] = 4.0 * s;
}
"""


def _daxpy(y: np.ndarray, x: np.ndarray, a: np.float64, n: np.int64) -> None:
    y += a * x


def _pi_partial(partial: np.ndarray, dx: np.float64, n: np.int64) -> None:
    x = (np.arange(int(n), dtype=np.float64) + 0.5) * dx
    block_partials(dx / (1.0 + x * x), partial)


def _pi_finish(pi: np.ndarray, partial: np.ndarray, parts: np.int64) -> None:
    pi[0] = 4.0 * partial.sum()


DAXPY_K = RawKernel(_DAXPY_C, "daxpy", [("y", InOut[F8]), ("x", In[F8]), ("a", F8), ("n", I8)],
                    grid=grid_1d("n"), block=256, cpu=_daxpy)
PI_PARTIAL_K = RawKernel(_PI_C, "pi_partial", [("partial", Out[F8]), ("dx", F8), ("n", I8)],
                         grid=grid_of_partials, block=256, cpu=_pi_partial)
PI_FINISH_K = RawKernel(_PI_C, "pi_finish", [("pi", Out[F8]), ("partial", In[F8]), ("parts", I8)],
                        grid=1, block=256, cpu=_pi_finish)


def _daxpy_checksum(arrays: Mapping[str, np.ndarray]) -> np.longdouble:
    return array_checksum(arrays["y"])


def _daxpy_problem(n: int) -> Problem:
    init = DataInit()
    arrays = {"y": init.const(n), "x": init.real(n)}
    a = F8(init.scalar())
    return Problem(n, arrays, {"y": Access.INOUT, "x": Access.IN}, (Step(DAXPY_K, ("y", "x", a, I8(n))),),
                   24 * n, _daxpy_checksum)


def _pi_checksum(arrays: Mapping[str, np.ndarray]) -> np.longdouble:
    return scalar_checksum(arrays["pi"][0])


def _pi_problem(n: int) -> Problem:
    dx = F8(1.0 / float(n))
    parts = partial_count(n)
    arrays = {"partial": np.zeros(parts), "pi": np.zeros(1)}
    steps = (Step(PI_PARTIAL_K, ("partial", dx, I8(n))), Step(PI_FINISH_K, ("pi", "partial", I8(parts))))
    return Problem(n, arrays, {"partial": Access.OUT, "pi": Access.OUT}, steps, 0, _pi_checksum)


BENCHMARKS = (
    Benchmark("DAXPY", "Basic", 1_000_000, 500, "normal", _daxpy_problem,
              ("LLNL/RAJAPerf src/basic/DAXPY.cpp, DAXPY.hpp",), "y += a * x"),
    Benchmark("PI_REDUCE", "Basic", 1_000_000, 50, "normal", _pi_problem,
              ("LLNL/RAJAPerf src/basic/PI_REDUCE.cpp, PI_REDUCE.hpp",),
              "pi = 4 * sum(dx / (1 + x^2)), a two-stage reduction"),
)
