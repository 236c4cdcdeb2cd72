"""The two-stage sum the reduction kernels (DOT, PI_REDUCE) share, in CUDA/HIP C and in NumPy.

A reduction on a GPU needs either atomics or a second pass. The suite uses
a second pass: stage one has each block of a fixed-size grid fold its
grid-stride share of the terms into one partial sum (a shared-memory tree,
no warp-level tricks, so it compiles unchanged under NVRTC and hipRTC and
does not care whether a warp has 32 or 64 lanes); stage two is a single
block that folds the partials and writes the result. Unlike an atomicAdd
on a double this is deterministic, so the checksums of repeated runs are
identical and the comparison against the NumPy variant is not blurred by
summation order changing from run to run.

The NumPy fallback of stage one assigns the terms to partials exactly as
the grid-stride loop does, so the partial arrays of both backends hold the
same sums (up to rounding order).
"""

from __future__ import annotations

import numpy as np

from .spec import BLOCK, blocks

#: Most blocks stage one launches; beyond this each thread just strides further.
MAX_PARTIALS = 1024

#: C: BLOCK, and `block_sum(v)`, the sum of `v` over the threads of a block (every thread gets it).
BLOCK_SUM_C = rf"""
#define BLOCK {BLOCK}
__device__ double block_sum(double v) {{
  __shared__ double s[BLOCK];
  s[threadIdx.x] = v;
  __syncthreads();
  for (unsigned int w = BLOCK / 2; w > 0; w >>= 1) {{
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }}
  double total = s[0];
  __syncthreads();
  return total;
}}
"""


def partial_count(n: int) -> int:
    """How many blocks (and partial sums) stage one uses for `n` terms."""
    return min(blocks(n), MAX_PARTIALS)


def grid_of_partials(**named: object) -> tuple[int]:
    """`grid=` for stage one: one block per partial sum."""
    partial = named["partial"]
    return (int(partial.shape[0]),)  # type: ignore[attr-defined]


def block_partials(terms: np.ndarray, partial: np.ndarray) -> None:
    """partial[b] = the sum of terms[i] over the i that block b's grid-stride loop visits."""
    parts = partial.shape[0]
    span = BLOCK * parts
    rounds = -(-terms.shape[0] // span)
    padded = np.zeros(rounds * span, dtype=np.float64)
    padded[: terms.shape[0]] = terms
    partial[...] = padded.reshape(rounds, parts, BLOCK).sum(axis=(0, 2))
