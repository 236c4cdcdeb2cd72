"""RAJAPerf's Polybench linear algebra: GEMM, 2MM, ATAX.

The CUDA kernels are RAJAPerf's Base_CUDA shape (one thread per output
element, the inner product as a loop), not a tuned GEMM: the suite
compares who moves the data, not whose matrix multiply is fastest, and
the baseline and the offload variants run the very same source. The NumPy
fallbacks use `matmul` (BLAS) for the inner products, so they agree with
the loops to rounding, within the normal tolerance.

Defaults (RAJAPerf develop, src/polybench/POLYBENCH_*.cpp and .hpp):

* GEMM: ni = nj = int(sqrt(size) + sqrt(2) - 1), nk = int(1200/1000 * ni),
  default size 1000 * 1000 (ni 1000, nk 1200), 4 reps, alpha 0.62,
  beta 1.002. RAJAPerf's body scales C by beta and then overwrites it with
  the dot product, so beta has no effect on the result; it is kept out of
  the kernel here. C = sum_k alpha * A[i,k] * B[k,j].
* 2MM: ni = nj = nl = int(sqrt(size) + sqrt(2) - 1), nk = int(1120/1000 * ni),
  default size 1000 * 1000, 2 reps, alpha 1.5, beta 1.2;
  tmp = alpha * A B, then D = beta + tmp C (the dot starts at beta).
* ATAX: N = int(sqrt(size) + sqrt(2) - 1), default size 1000 * 1000,
  100 reps; tmp = A x (zeroing y), then y += A^T tmp.

Initialisation order: GEMM A, B (initData), C (0); 2MM tmp, A, B, C
(initData), D (0); ATAX tmp, x, A (initData), y (0). Checksums: GEMM C,
2MM D, ATAX y; tolerance normal for all three.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from ..annotations import Access, In, InOut, Out
from ..kernels import RawKernel
from .checksum import array_checksum
from .data import DataInit
from .spec import Benchmark, Problem, Step, blocks, grid_1d

F8 = np.float64
I8 = np.int64

_GEMM_C = r"""
extern "C" __global__ void gemm(double* C, const double* A, const double* B, double alpha,
                                long long ni, long long nj, long long nk) {
  long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long i = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (i < ni && j < nj) {
    double dot = 0.0;
    for (long long k = 0; k < nk; ++k) dot += alpha * A[k + i * nk] * B[j + k * nj];
    C[j + i * nj] = dot;
  }
}
"""

_2MM_C = r"""
extern "C" __global__ void mm2_1(double* tmp, const double* A, const double* B, double alpha,
                                 long long ni, long long nj, long long nk) {
  long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long i = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (i < ni && j < nj) {
    double dot = 0.0;
    for (long long k = 0; k < nk; ++k) dot += alpha * A[k + i * nk] * B[j + k * nj];
    tmp[j + i * nj] = dot;
  }
}
extern "C" __global__ void mm2_2(double* D, const double* tmp, const double* C, double beta,
                                 long long ni, long long nl, long long nj) {
  long long l = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long i = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (i < ni && l < nl) {
    double dot = beta;
    for (long long j = 0; j < nj; ++j) dot += tmp[j + i * nj] * C[l + j * nl];
    D[l + i * nl] = dot;
  }
}
"""

_ATAX_C = r"""
extern "C" __global__ void atax_1(double* tmp, double* y, const double* A, const double* x, long long N) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N) {
    y[i] = 0.0;
    double dot = 0.0;
    for (long long j = 0; j < N; ++j) dot += A[j + i * N] * x[j];
    tmp[i] = dot;
  }
}
extern "C" __global__ void atax_2(double* y, const double* A, const double* tmp, long long N) {
  long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (j < N) {
    double dot = y[j];
    for (long long i = 0; i < N; ++i) dot += A[j + i * N] * tmp[i];
    y[j] = dot;
  }
}
"""

# RAJAPerf's Base_CUDA block for GEMM and 2MM: 32 threads along a row (j), block size / 32 = 8 rows (i).
_BX, _BY = 32, 8


def _grid_rows_cols(rows: str, cols: str):  # type: ignore[no-untyped-def]
    def grid(**named: object) -> tuple[int, int]:
        return (blocks(int(named[cols]), _BX), blocks(int(named[rows]), _BY))  # type: ignore[call-overload]

    return grid


def _gemm(C: np.ndarray, A: np.ndarray, B: np.ndarray, alpha: np.float64, ni: np.int64, nj: np.int64,
          nk: np.int64) -> None:
    out = C.reshape(int(ni), int(nj))
    np.matmul(A.reshape(int(ni), int(nk)), B.reshape(int(nk), int(nj)), out=out)
    out *= alpha


def _mm2_2(D: np.ndarray, tmp: np.ndarray, C: np.ndarray, beta: np.float64, ni: np.int64, nl: np.int64,
           nj: np.int64) -> None:
    out = D.reshape(int(ni), int(nl))
    np.matmul(tmp.reshape(int(ni), int(nj)), C.reshape(int(nj), int(nl)), out=out)
    out += beta


def _atax_1(tmp: np.ndarray, y: np.ndarray, A: np.ndarray, x: np.ndarray, N: np.int64) -> None:
    y[...] = 0.0
    np.matmul(A.reshape(int(N), int(N)), x, out=tmp)


def _atax_2(y: np.ndarray, A: np.ndarray, tmp: np.ndarray, N: np.int64) -> None:
    y += tmp @ A.reshape(int(N), int(N))


GEMM_K = RawKernel(_GEMM_C, "gemm", [("C", Out[F8]), ("A", In[F8]), ("B", In[F8]), ("alpha", F8), ("ni", I8),
                                     ("nj", I8), ("nk", I8)],
                   grid=_grid_rows_cols("ni", "nj"), block=(_BX, _BY), cpu=_gemm)
MM2_1_K = RawKernel(_2MM_C, "mm2_1", [("tmp", Out[F8]), ("A", In[F8]), ("B", In[F8]), ("alpha", F8), ("ni", I8),
                                      ("nj", I8), ("nk", I8)],
                    grid=_grid_rows_cols("ni", "nj"), block=(_BX, _BY), cpu=_gemm)
MM2_2_K = RawKernel(_2MM_C, "mm2_2", [("D", Out[F8]), ("tmp", In[F8]), ("C", In[F8]), ("beta", F8), ("ni", I8),
                                      ("nl", I8), ("nj", I8)],
                    grid=_grid_rows_cols("ni", "nl"), block=(_BX, _BY), cpu=_mm2_2)
ATAX_1_K = RawKernel(_ATAX_C, "atax_1", [("tmp", Out[F8]), ("y", Out[F8]), ("A", In[F8]), ("x", In[F8]), ("N", I8)],
                     grid=grid_1d("N"), block=256, cpu=_atax_1)
ATAX_2_K = RawKernel(_ATAX_C, "atax_2", [("y", InOut[F8]), ("A", In[F8]), ("tmp", In[F8]), ("N", I8)],
                     grid=grid_1d("N"), block=256, cpu=_atax_2)


def _of(name: str):  # type: ignore[no-untyped-def]
    def checksum(arrays: Mapping[str, np.ndarray]) -> np.longdouble:
        return array_checksum(arrays[name])

    return checksum


def _side(size: int) -> int:
    return max(1, int(math.sqrt(size) + math.sqrt(2) - 1))


def _gemm_problem(size: int) -> Problem:
    ni = nj = _side(size)
    nk = max(1, int(1200.0 / 1000 * ni))
    init = DataInit()
    arrays = {"A": init.real(ni * nk), "B": init.real(nk * nj), "C": init.const(ni * nj)}
    step = Step(GEMM_K, ("C", "A", "B", F8(0.62), I8(ni), I8(nj), I8(nk)))
    return Problem(ni * nj, arrays, {"A": Access.IN, "B": Access.IN, "C": Access.OUT}, (step,),
                   8 * (ni * nk + nj * nk + ni * nj), _of("C"), {"ni": ni, "nj": nj, "nk": nk})


def _2mm_problem(size: int) -> Problem:
    ni = nj = nl = _side(size)
    nk = max(1, int(1120.0 / 1000 * ni))
    init = DataInit()
    arrays = {"tmp": init.real(ni * nj), "A": init.real(ni * nk), "B": init.real(nk * nj),
              "C": init.real(nj * nl), "D": init.const(ni * nl)}
    access = {"tmp": Access.OUT, "A": Access.IN, "B": Access.IN, "C": Access.IN, "D": Access.OUT}
    steps = (Step(MM2_1_K, ("tmp", "A", "B", F8(1.5), I8(ni), I8(nj), I8(nk))),
             Step(MM2_2_K, ("D", "tmp", "C", F8(1.2), I8(ni), I8(nl), I8(nj))))
    moved = 8 * (ni * nk + nj * nk + ni * nj + nj * nl) + 8 * (ni * nj + ni * nl)
    return Problem(max(ni * nj, ni * nl), arrays, access, steps, moved, _of("D"),
                   {"ni": ni, "nj": nj, "nk": nk, "nl": nl})


def _atax_problem(size: int) -> Problem:
    n = _side(size)
    init = DataInit()
    arrays = {"tmp": init.real(n), "x": init.real(n), "A": init.real(n * n), "y": init.const(n)}
    access = {"tmp": Access.OUT, "x": Access.IN, "A": Access.IN, "y": Access.OUT}
    steps = (Step(ATAX_1_K, ("tmp", "y", "A", "x", I8(n))), Step(ATAX_2_K, ("y", "A", "tmp", I8(n))))
    moved = 8 * (2 * n + 2 * n * n) + 8 * 2 * n + 2 * 8 * n
    return Problem(n * n, arrays, access, steps, moved, _of("y"), {"N": n})


def _src(name: str) -> tuple[str, ...]:
    return (f"LLNL/RAJAPerf src/polybench/POLYBENCH_{name}.cpp, POLYBENCH_{name}.hpp",)


BENCHMARKS = (
    Benchmark("GEMM", "Polybench", 1_000_000, 4, "normal", _gemm_problem, _src("GEMM"), "C = alpha * A B"),
    Benchmark("2MM", "Polybench", 1_000_000, 2, "normal", _2mm_problem, _src("2MM"),
              "tmp = alpha * A B; D = beta + tmp C"),
    Benchmark("ATAX", "Polybench", 1_000_000, 100, "normal", _atax_problem, _src("ATAX"), "y = A^T (A x)"),
)
