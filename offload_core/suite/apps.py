"""RAJAPerf's FIR filter (Apps group), in two forms: as written, and with its reduction rewritten.

FIR computes out[i] = sum_j coeff[j] * in[i+j] over RAJAPerf's 16
coefficients. Those coefficients have a structure: each is either 3 or -1,
so coeff = -1 + 4 * [j in S] with S = {0, 5, 10, 15}, and the reduction
can be rewritten exactly as

    out[i] = 4 * (in[i] + in[i+5] + in[i+10] + in[i+15]) - sum_j in[i+j]

which needs one multiplication instead of sixteen and no coefficient
array. FIR is the straightforward accumulation; FIR_ALG is the rewrite.
Both read the same input and agree to rounding (their checksums are
compared against the same tolerance), so the pair shows how much of the
kernel's time is arithmetic rather than memory traffic. The decomposition
is derived from the coefficient array when this module is imported, so
the rewrite cannot silently drift from the coefficients.

Defaults (src/apps/FIR.cpp, FIR.hpp, RAJAPerf develop): problem size
1,000,000 outputs, 160 reps, input of size + 15 values from
initDataRandValue (rand() after srand(4793)), output initialised to 0,
checksum of the output, tolerance normal.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..annotations import Access, In, Out
from ..kernels import RawKernel
from .checksum import array_checksum
from .data import DataInit
from .spec import Benchmark, Problem, Step, grid_1d

F8 = np.float64
I8 = np.int64

#: RAJAPerf's FIR_COEFF.
COEFFICIENTS = (3.0, -1.0, -1.0, -1.0, -1.0, 3.0, -1.0, -1.0, -1.0, -1.0, 3.0, -1.0, -1.0, -1.0, -1.0, 3.0)
COEFFLEN = len(COEFFICIENTS)


def _decompose(coeff: tuple[float, ...]) -> tuple[float, float, tuple[int, ...]]:
    """(base, spike, taps) with coeff[j] = base + spike * [j in taps]."""
    base = min(coeff)
    taps = tuple(j for j, c in enumerate(coeff) if c != base)
    spikes = {coeff[j] - base for j in taps}
    if len(spikes) != 1:
        raise ValueError("FIR_ALG needs coefficients taking exactly two values")
    return base, spikes.pop(), taps


BASE, SPIKE, TAPS = _decompose(COEFFICIENTS)
# The CUDA source below spells the rewrite out; refuse to run if it no longer matches.
assert (BASE, SPIKE, TAPS) == (-1.0, 4.0, (0, 5, 10, 15)), (BASE, SPIKE, TAPS)

_FIR_C = r"""
extern "C" __global__ void fir(double* out, const double* in, const double* coeff, long long coefflen, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double sum = 0.0;
    for (long long j = 0; j < coefflen; ++j) sum += coeff[j] * in[i + j];
    out[i] = sum;
  }
}
extern "C" __global__ void fir_alg(double* out, const double* in, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const double* x = in + i;
    double window = 0.0;
    for (int j = 0; j < 16; ++j) window += x[j];
    out[i] = 4.0 * (x[0] + x[5] + x[10] + x[15]) - window;
  }
}
"""


def _fir(out: np.ndarray, inp: np.ndarray, coeff: np.ndarray, coefflen: np.int64, n: np.int64) -> None:
    m = int(n)
    acc = coeff[0] * inp[0:m]
    for j in range(1, int(coefflen)):
        acc += coeff[j] * inp[j : j + m]
    out[...] = acc


def _fir_alg(out: np.ndarray, inp: np.ndarray, n: np.int64) -> None:
    m = int(n)
    window = inp[0:m].copy()
    for j in range(1, COEFFLEN):
        window += inp[j : j + m]
    taps = inp[TAPS[0] : TAPS[0] + m] + inp[TAPS[1] : TAPS[1] + m]
    for t in TAPS[2:]:
        taps += inp[t : t + m]
    np.subtract(SPIKE * taps, window, out=out)


FIR_K = RawKernel(_FIR_C, "fir", [("out", Out[F8]), ("in", In[F8]), ("coeff", In[F8]), ("coefflen", I8), ("n", I8)],
                  grid=grid_1d("n"), block=256, cpu=_fir)
FIR_ALG_K = RawKernel(_FIR_C, "fir_alg", [("out", Out[F8]), ("in", In[F8]), ("n", I8)],
                      grid=grid_1d("n"), block=256, cpu=_fir_alg)


def _checksum(arrays: Mapping[str, np.ndarray]) -> np.longdouble:
    return array_checksum(arrays["out"])


def _arrays(n: int) -> dict[str, np.ndarray]:
    init = DataInit()
    return {"in": init.rand_value(n + COEFFLEN - 1), "out": init.const(n)}


def _fir_problem(n: int) -> Problem:
    arrays = _arrays(n)
    arrays["coeff"] = np.array(COEFFICIENTS)
    access = {"in": Access.IN, "out": Access.OUT, "coeff": Access.IN}
    step = Step(FIR_K, ("out", "in", "coeff", I8(COEFFLEN), I8(n)))
    return Problem(n, arrays, access, (step,), 8 * COEFFLEN + 8 * (n + COEFFLEN - 1) + 8 * n, _checksum)


def _fir_alg_problem(n: int) -> Problem:
    arrays = _arrays(n)
    step = Step(FIR_ALG_K, ("out", "in", I8(n)))
    return Problem(n, arrays, {"in": Access.IN, "out": Access.OUT}, (step,), 8 * (n + COEFFLEN - 1) + 8 * n, _checksum)


_SOURCES = ("LLNL/RAJAPerf src/apps/FIR.cpp, FIR.hpp",)

BENCHMARKS = (
    Benchmark("FIR", "Apps", 1_000_000, 160, "normal", _fir_problem, _SOURCES,
              "out[i] = sum_j coeff[j] * in[i+j], 16 coefficients, as written"),
    Benchmark("FIR_ALG", "Apps", 1_000_000, 160, "normal", _fir_alg_problem, _SOURCES,
              "FIR with the reduction rewritten: 4 * (4 taps) - (16-wide window sum)"),
)
