"""RAJAPerf's Stream group: ADD, COPY, DOT, MUL, TRIAD.

Each kernel is one `RawKernel`: the CUDA/HIP source that both the
hand-written CuPy baseline and the offload variants launch, its parameters'
ownership, and a NumPy fallback with the same arithmetic (same operation
order, so the NumPy backend reproduces the C results bit for bit where no
fused multiply-add intervenes).

Defaults (RAJAPerf develop, src/stream/*.cpp): problem size 1,000,000 for
all five; reps ADD 1000, COPY 1800, DOT 2000, MUL 1800, TRIAD 1000;
checksum tolerance ADD/MUL/TRIAD tight, COPY zero, DOT normal. DOT's
checksum is the dot product accumulated over all reps (`m_dot += dot`).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..annotations import Access, In, InOut, Out
from ..kernels import RawKernel
from .checksum import array_checksum
from .data import DataInit
from .reduction import BLOCK_SUM_C, block_partials, grid_of_partials, partial_count
from .spec import Benchmark, Problem, Step, grid_1d

F8 = np.float64
I8 = np.int64

_ELEMENTWISE_C = r"""
extern "C" __global__ void stream_add(double* c, const double* a, const double* b, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void stream_copy(double* c, const double* a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i];
}
extern "C" __global__ void stream_mul(double* b, const double* c, double alpha, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = alpha * c[i];
}
extern "C" __global__ void stream_triad(double* a, const double* b, const double* c, double alpha, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + alpha * c[i];
}
"""

_DOT_C = BLOCK_SUM_C + r"""
extern "C" __global__ void dot_partial(double* partial, const double* a, const double* b, long long n) {
  double v = 0.0;
  for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * BLOCK)
    v += a[i] * b[i];
  double s = block_sum(v);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
extern "C" __global__ void dot_finish(double* dot, const double* partial, long long parts) {
  double v = 0.0;
  for (long long i = threadIdx.x; i < parts; i += BLOCK) v += partial[i];
  double s = block_sum(v);
  if (threadIdx.x == 0) dot[0] += s;
}
"""


def _add(c: np.ndarray, a: np.ndarray, b: np.ndarray, n: np.int64) -> None:
    np.add(a, b, out=c)


def _copy(c: np.ndarray, a: np.ndarray, n: np.int64) -> None:
    np.copyto(c, a)


def _mul(b: np.ndarray, c: np.ndarray, alpha: np.float64, n: np.int64) -> None:
    np.multiply(alpha, c, out=b)


def _triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, alpha: np.float64, n: np.int64) -> None:
    np.multiply(alpha, c, out=a)
    a += b


def _dot_partial(partial: np.ndarray, a: np.ndarray, b: np.ndarray, n: np.int64) -> None:
    block_partials(a * b, partial)


def _dot_finish(dot: np.ndarray, partial: np.ndarray, parts: np.int64) -> None:
    dot[0] += partial.sum()


ADD_K = RawKernel(_ELEMENTWISE_C, "stream_add", [("c", Out[F8]), ("a", In[F8]), ("b", In[F8]), ("n", I8)],
                  grid=grid_1d("n"), block=256, cpu=_add)
COPY_K = RawKernel(_ELEMENTWISE_C, "stream_copy", [("c", Out[F8]), ("a", In[F8]), ("n", I8)],
                   grid=grid_1d("n"), block=256, cpu=_copy)
MUL_K = RawKernel(_ELEMENTWISE_C, "stream_mul", [("b", Out[F8]), ("c", In[F8]), ("alpha", F8), ("n", I8)],
                  grid=grid_1d("n"), block=256, cpu=_mul)
TRIAD_K = RawKernel(_ELEMENTWISE_C, "stream_triad",
                    [("a", Out[F8]), ("b", In[F8]), ("c", In[F8]), ("alpha", F8), ("n", I8)],
                    grid=grid_1d("n"), block=256, cpu=_triad)
DOT_PARTIAL_K = RawKernel(_DOT_C, "dot_partial", [("partial", Out[F8]), ("a", In[F8]), ("b", In[F8]), ("n", I8)],
                          grid=grid_of_partials, block=256, cpu=_dot_partial)
DOT_FINISH_K = RawKernel(_DOT_C, "dot_finish", [("dot", InOut[F8]), ("partial", In[F8]), ("parts", I8)],
                         grid=1, block=256, cpu=_dot_finish)


def _of(name: str):  # type: ignore[no-untyped-def]
    def checksum(arrays: Mapping[str, np.ndarray]) -> np.longdouble:
        return array_checksum(arrays[name])

    return checksum


def _add_problem(n: int) -> Problem:
    init = DataInit()
    arrays = {"a": init.real(n), "b": init.real(n), "c": init.const(n)}
    return Problem(n, arrays, {"a": Access.IN, "b": Access.IN, "c": Access.OUT},
                   (Step(ADD_K, ("c", "a", "b", I8(n))),), 24 * n, _of("c"))


def _copy_problem(n: int) -> Problem:
    init = DataInit()
    arrays = {"a": init.real(n), "c": init.const(n)}
    return Problem(n, arrays, {"a": Access.IN, "c": Access.OUT}, (Step(COPY_K, ("c", "a", I8(n))),), 16 * n, _of("c"))


def _mul_problem(n: int) -> Problem:
    init = DataInit()
    arrays = {"b": init.const(n), "c": init.real(n)}
    alpha = F8(init.scalar())
    return Problem(n, arrays, {"b": Access.OUT, "c": Access.IN},
                   (Step(MUL_K, ("b", "c", alpha, I8(n))),), 16 * n, _of("b"))


def _triad_problem(n: int) -> Problem:
    init = DataInit()
    arrays = {"a": init.const(n), "b": init.real(n), "c": init.real(n)}
    alpha = F8(init.scalar())
    return Problem(n, arrays, {"a": Access.OUT, "b": Access.IN, "c": Access.IN},
                   (Step(TRIAD_K, ("a", "b", "c", alpha, I8(n))),), 24 * n, _of("a"))


def _dot_checksum(arrays: Mapping[str, np.ndarray]) -> np.longdouble:
    return np.longdouble(arrays["dot"][0])


def _dot_problem(n: int) -> Problem:
    init = DataInit()
    parts = partial_count(n)
    arrays = {"a": init.real(n), "b": init.real(n), "partial": np.zeros(parts), "dot": np.zeros(1)}
    access = {"a": Access.IN, "b": Access.IN, "partial": Access.OUT, "dot": Access.INOUT}
    steps = (Step(DOT_PARTIAL_K, ("partial", "a", "b", I8(n))), Step(DOT_FINISH_K, ("dot", "partial", I8(parts))))
    return Problem(n, arrays, access, steps, 16 * n + 16, _dot_checksum)


_SRC = "LLNL/RAJAPerf src/stream/{}.cpp, {}.hpp"

BENCHMARKS = (
    Benchmark("ADD", "Stream", 1_000_000, 1000, "tight", _add_problem, (_SRC.format("ADD", "ADD"),), "c = a + b"),
    Benchmark("COPY", "Stream", 1_000_000, 1800, "zero", _copy_problem, (_SRC.format("COPY", "COPY"),), "c = a"),
    Benchmark("DOT", "Stream", 1_000_000, 2000, "normal", _dot_problem, (_SRC.format("DOT", "DOT"),),
              "dot += sum(a * b), a two-stage reduction"),
    Benchmark("MUL", "Stream", 1_000_000, 1800, "tight", _mul_problem, (_SRC.format("MUL", "MUL"),), "b = alpha * c"),
    Benchmark("TRIAD", "Stream", 1_000_000, 1000, "tight", _triad_problem, (_SRC.format("TRIAD", "TRIAD"),),
              "a = b + alpha * c"),
)
