"""RAJAPerf kernels in offload_core: hand-written baseline vs ownership-derived batched vs naive copies.

The suite reproduces, in Python, the measurement the project starts from:
how close do kernels whose copies follow from ownership annotations come
to hand-written code that copies once, and how much does copying on every
launch cost? Fifteen kernels of LLNL's RAJA Performance Suite (Stream:
ADD, COPY, DOT, MUL, TRIAD; Basic: DAXPY, PI_REDUCE; Apps: FIR and its
rewrite FIR_ALG; Polybench: JACOBI_1D, JACOBI_2D, HEAT_3D, GEMM, 2MM,
ATAX) are defined once, with RAJAPerf's default sizes, reps, data
initialisation and checksum, as CUDA/HIP source plus a NumPy fallback,
and run three ways (`variants.py`).

    offload-bench --size-factor 0.05            # the table
    offload-bench --kernels stream --json r.json
    from offload_core.suite import run_suite    # one untimed run, for a trace
    run_suite(["TRIAD"], size_factor=0.1, mode="naive")

Importing this package loads no CuPy: the CuPy baseline imports it only
when the CuPy backend is active.
"""

from __future__ import annotations

from .registry import BENCHMARKS, GROUPS, NAMES, select
from .runner import KernelResult, SuiteResult, SuiteRun, measure, run_suite
from .spec import Benchmark, Problem, Step
from .variants import VARIANTS

__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "GROUPS",
    "KernelResult",
    "NAMES",
    "Problem",
    "Step",
    "SuiteResult",
    "SuiteRun",
    "VARIANTS",
    "measure",
    "run_suite",
    "select",
]
