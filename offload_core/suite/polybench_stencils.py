"""RAJAPerf's Polybench stencils: JACOBI_1D, JACOBI_2D, HEAT_3D.

Each rep is one time step of two sweeps, A -> B and B -> A, over the
interior; the boundary is never written, which is why both arrays are
`InOut` (an `Out` parameter would be copied back whole, boundary
included, without ever having been uploaded). RAJAPerf's develop branch
folds Polybench's time-step loop into the reps, so "reps" here are time
steps.

Defaults (RAJAPerf develop, src/polybench/POLYBENCH_*.cpp and .hpp):

* JACOBI_1D: N = size + 2 points, default size 1,000,000 (N 1,000,002),
  1600 reps; B[i] = 0.33333 * (A[i-1] + A[i] + A[i+1]) and back.
* JACOBI_2D: N = int(sqrt(size) + 2 + sqrt(2) - 1), default size
  1000 * 1000 (N 1002), 2000 reps; 0.2 times the 5-point sum.
* HEAT_3D: N = int(cbrt(size) + 2 + cbrt(3) - 1), default size
  100^3 (N 102), 400 reps; the 7-point heat stencil with weight 0.125.

A and B are both initialised by initData (A first), the checksum is that
of A plus that of B, and the tolerance is normal for all three.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from ..annotations import Access, In, InOut
from ..kernels import RawKernel
from .checksum import array_checksum, combine
from .data import DataInit
from .spec import Benchmark, Problem, Step, blocks, grid_1d

F8 = np.float64
I8 = np.int64

_JACOBI_1D_C = r"""
extern "C" __global__ void jacobi_1d_1(const double* A, double* B, long long N) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < N - 1) B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
}
extern "C" __global__ void jacobi_1d_2(double* A, const double* B, long long N) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < N - 1) A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1]);
}
"""

_JACOBI_2D_C = r"""
#define J2D(src, dst) \
  long long j = 1 + (long long)blockIdx.x * blockDim.x + threadIdx.x; \
  long long i = 1 + (long long)blockIdx.y * blockDim.y + threadIdx.y; \
  if (i < N - 1 && j < N - 1) \
    dst[j + i * N] = 0.2 * (src[j + i * N] + src[j - 1 + i * N] + src[j + 1 + i * N] + \
                            src[j + (i + 1) * N] + src[j + (i - 1) * N]);
extern "C" __global__ void jacobi_2d_1(const double* A, double* B, long long N) { J2D(A, B) }
extern "C" __global__ void jacobi_2d_2(double* A, const double* B, long long N) { J2D(B, A) }
"""

_HEAT_3D_C = r"""
#define H3D(src, dst) \
  long long k = 1 + (long long)blockIdx.x * blockDim.x + threadIdx.x; \
  long long j = 1 + (long long)blockIdx.y * blockDim.y + threadIdx.y; \
  long long i = 1 + (long long)blockIdx.z; \
  if (i < N - 1 && j < N - 1 && k < N - 1) { \
    long long c = k + N * (j + N * i); \
    dst[c] = 0.125 * (src[c + N * N] - 2.0 * src[c] + src[c - N * N]) + \
             0.125 * (src[c + N] - 2.0 * src[c] + src[c - N]) + \
             0.125 * (src[c + 1] - 2.0 * src[c] + src[c - 1]) + src[c]; \
  }
extern "C" __global__ void heat_3d_1(const double* A, double* B, long long N) { H3D(A, B) }
extern "C" __global__ void heat_3d_2(double* A, const double* B, long long N) { H3D(B, A) }
"""

# 2-D and 3-D launches: 32 x 8 thread blocks over the fastest two dimensions.
_BX, _BY = 32, 8


def _grid_2d(N: np.int64, **_: object) -> tuple[int, int]:
    return (blocks(int(N) - 2, _BX), blocks(int(N) - 2, _BY))


def _grid_3d(N: np.int64, **_: object) -> tuple[int, int, int]:
    return (blocks(int(N) - 2, _BX), blocks(int(N) - 2, _BY), max(1, int(N) - 2))


def _jacobi_1d(src: np.ndarray, dst: np.ndarray) -> None:
    dst[1:-1] = 0.33333 * (src[:-2] + src[1:-1] + src[2:])


def _jacobi_2d(src: np.ndarray, dst: np.ndarray, n: int) -> None:
    s, d = src.reshape(n, n), dst.reshape(n, n)
    d[1:-1, 1:-1] = 0.2 * (s[1:-1, 1:-1] + s[1:-1, :-2] + s[1:-1, 2:] + s[2:, 1:-1] + s[:-2, 1:-1])


def _heat_3d(src: np.ndarray, dst: np.ndarray, n: int) -> None:
    s, d = src.reshape(n, n, n), dst.reshape(n, n, n)
    c = s[1:-1, 1:-1, 1:-1]
    twice = 2.0 * c
    d[1:-1, 1:-1, 1:-1] = (0.125 * (s[2:, 1:-1, 1:-1] - twice + s[:-2, 1:-1, 1:-1])
                           + 0.125 * (s[1:-1, 2:, 1:-1] - twice + s[1:-1, :-2, 1:-1])
                           + 0.125 * (s[1:-1, 1:-1, 2:] - twice + s[1:-1, 1:-1, :-2]) + c)


J1_1 = RawKernel(_JACOBI_1D_C, "jacobi_1d_1", [("A", In[F8]), ("B", InOut[F8]), ("N", I8)],
                 grid=grid_1d("N"), block=256, cpu=lambda A, B, N: _jacobi_1d(A, B))
J1_2 = RawKernel(_JACOBI_1D_C, "jacobi_1d_2", [("A", InOut[F8]), ("B", In[F8]), ("N", I8)],
                 grid=grid_1d("N"), block=256, cpu=lambda A, B, N: _jacobi_1d(B, A))
J2_1 = RawKernel(_JACOBI_2D_C, "jacobi_2d_1", [("A", In[F8]), ("B", InOut[F8]), ("N", I8)],
                 grid=_grid_2d, block=(_BX, _BY), cpu=lambda A, B, N: _jacobi_2d(A, B, int(N)))
J2_2 = RawKernel(_JACOBI_2D_C, "jacobi_2d_2", [("A", InOut[F8]), ("B", In[F8]), ("N", I8)],
                 grid=_grid_2d, block=(_BX, _BY), cpu=lambda A, B, N: _jacobi_2d(B, A, int(N)))
H3_1 = RawKernel(_HEAT_3D_C, "heat_3d_1", [("A", In[F8]), ("B", InOut[F8]), ("N", I8)],
                 grid=_grid_3d, block=(_BX, _BY, 1), cpu=lambda A, B, N: _heat_3d(A, B, int(N)))
H3_2 = RawKernel(_HEAT_3D_C, "heat_3d_2", [("A", InOut[F8]), ("B", In[F8]), ("N", I8)],
                 grid=_grid_3d, block=(_BX, _BY, 1), cpu=lambda A, B, N: _heat_3d(B, A, int(N)))


def _checksum(arrays: Mapping[str, np.ndarray]) -> np.longdouble:
    return combine([array_checksum(arrays["A"]), array_checksum(arrays["B"])])


def _problem(points: int, first: RawKernel, second: RawKernel, actual: int, bytes_per_rep: int, n: int) -> Problem:
    init = DataInit()
    arrays = {"A": init.real(points), "B": init.real(points)}
    steps = (Step(first, ("A", "B", I8(n))), Step(second, ("A", "B", I8(n))))
    return Problem(actual, arrays, {"A": Access.INOUT, "B": Access.INOUT}, steps, bytes_per_rep, _checksum, {"N": n})


def _jacobi_1d_problem(size: int) -> Problem:
    n = size + 2
    return _problem(n, J1_1, J1_2, n - 2, 2 * 8 * n + 2 * 8 * (n - 2), n)


def _jacobi_2d_problem(size: int) -> Problem:
    n = max(3, int(math.sqrt(size) + 2 + math.sqrt(2) - 1))
    return _problem(n * n, J2_1, J2_2, (n - 2) ** 2, 2 * 8 * (n * n - 4) + 2 * 8 * (n - 2) ** 2, n)


def _heat_3d_problem(size: int) -> Problem:
    n = max(3, int(float(np.cbrt(size)) + 2 + float(np.cbrt(3.0)) - 1))
    read = 2 * 8 * (n ** 3 - 12 * (n - 2) - 8)
    return _problem(n ** 3, H3_1, H3_2, (n - 2) ** 3, read + 2 * 8 * (n - 2) ** 3, n)


def _src(name: str) -> tuple[str, ...]:
    return (f"LLNL/RAJAPerf src/polybench/POLYBENCH_{name}.cpp, POLYBENCH_{name}.hpp",)


BENCHMARKS = (
    Benchmark("JACOBI_1D", "Polybench", 1_000_000, 1600, "normal", _jacobi_1d_problem, _src("JACOBI_1D"),
              "3-point Jacobi, A -> B -> A per rep"),
    Benchmark("JACOBI_2D", "Polybench", 1_000_000, 2000, "normal", _jacobi_2d_problem, _src("JACOBI_2D"),
              "5-point Jacobi on an N x N grid, A -> B -> A per rep"),
    Benchmark("HEAT_3D", "Polybench", 1_000_000, 400, "normal", _heat_3d_problem, _src("HEAT_3D"),
              "7-point heat equation on an N^3 grid, A -> B -> A per rep"),
)
