"""The environment the savings benchmarks measure in: one BLAS thread, and a C allocator that keeps freed memory.

Two things make a NumPy-backend naive run slower than its records show,
and neither is what the benchmarks check: BLAS threads fighting other
processes for the cores of a shared machine, and glibc giving every large
freed array back to the operating system, so the next launch's fresh
device twin pays a page fault per page again, inside the copy or the
kernel that first writes it (a GPU's allocator pools device memory
instead). `ensure()` re-runs the script once with `OPENBLAS_NUM_THREADS`,
`OMP_NUM_THREADS`, `MKL_NUM_THREADS` set to 1 and, unless the default
allocator is asked for, glibc's `MALLOC_MMAP_THRESHOLD_` and
`MALLOC_TRIM_THRESHOLD_` raised so freed memory is kept and reused; the
settings are read at process start, hence the re-run. `describe()` names
them for the table's header.
"""

from __future__ import annotations

import os
import sys

THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
POOLED = {"MALLOC_MMAP_THRESHOLD_": str(1 << 32), "MALLOC_TRIM_THRESHOLD_": str(1 << 34)}
_MARK = "OFFLOAD_BENCH_QUIET_ENV"


def ensure(pooled: bool) -> None:
    """Re-run this script in the benchmark environment, unless it already runs in it."""
    wanted = {**THREADS, **(POOLED if pooled else {})}
    if os.environ.get(_MARK) == ("pooled" if pooled else "default"):
        return
    env = {k: v for k, v in os.environ.items() if k not in POOLED}
    env.update(wanted)
    env[_MARK] = "pooled" if pooled else "default"
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def describe() -> str:
    allocator = "glibc keeping freed memory (pooled)" if os.environ.get(_MARK) == "pooled" else "default allocator"
    return f"1 BLAS thread, {allocator}"
