"""RAJAPerf's checksum: a weighted, compensated sum, and the tolerances it is judged by.

RAJAPerf reduces an output array to one number with
`sum_j (|sin(j+1)| + 0.5) * x[j]`: the weights break the symmetry a plain
sum would have (a permuted or shifted result would still match), and the
terms are accumulated in `long double` with Kahan compensation so that the
summation itself adds no error worth speaking of. The weight is computed in
`double` with the C library's `sin` (here `math.sin`, which calls it, so
the weights are bit for bit RAJAPerf's whatever SIMD code NumPy's own `sin`
uses on a machine); the product is taken in `long double`, because
RAJAPerf reads each element through a getter that returns it as a `long
double` (`calcChecksumImpl`, since its 2024 rewrite; before that the
product was a `double`).

A Python loop over 10^6 elements would take seconds, so the compensated
accumulation here is vectorised instead: a pairwise reduction in
`np.longdouble` that keeps the exact rounding error of every addition
(Knuth's TwoSum) and adds the errors back at the end. Its result agrees
with RAJAPerf's sequential Kahan loop to a few units in the last place of a
`long double` (checked in the tests against a literal Kahan loop); on
platforms where `long double` is `double` it is still a compensated sum.

Source of the facts: LLNL/RAJAPerf src/common/DataUtils.cpp
(`calcChecksum`), src/common/KernelBase.hpp (`addToChecksum`: arrays by
`calcChecksum`, scalars by their absolute value; the checksum accumulator
is itself a Kahan sum; `ChecksumTolerance`: zero 0, tight 1e-14,
normal 1e-10, loose 5e-6).
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

#: RAJAPerf's checksum tolerance classes (relative difference to the reference variant).
TOLERANCES: dict[str, float] = {"zero": 0.0, "tight": 1e-14, "normal": 1e-10, "loose": 5e-6}


class _Weights:
    """|sin(j+1)| + 0.5 for j = 0, 1, ..., computed once for the longest array seen and sliced after."""

    def __init__(self) -> None:
        self._values = np.zeros(0)

    def __call__(self, n: int) -> np.ndarray:
        if n > self._values.size:
            start = self._values.size
            more = np.fromiter((math.sin(j + 1.0) for j in range(start, max(n, 2 * start))), dtype=np.float64)
            values = np.concatenate([self._values, np.abs(more) + 0.5])
            values.flags.writeable = False
            self._values = values
        return self._values[:n]


#: The per-index weights |sin(j+1)| + 0.5, in double, with the C library's sin (read-only views).
weights = _Weights()


def compensated_sum(values: np.ndarray) -> np.longdouble:
    """Sum of `values` in long double, with every addition's rounding error added back."""
    s = np.asarray(values).astype(np.longdouble).ravel()
    if s.size == 0:
        return np.longdouble(0.0)
    errors: list[np.ndarray] = []
    while s.size > 1:
        if s.size % 2:
            s = np.append(s, np.longdouble(0.0))
        a, b = s[0::2], s[1::2]
        t = a + b
        bv = t - a
        errors.append((a - (t - bv)) + (b - bv))  # exact error of a + b (TwoSum)
        s = t
    total = s[0]
    if errors:
        total = total + np.concatenate(errors).sum(dtype=np.longdouble)
    return np.longdouble(total)


def array_checksum(values: np.ndarray) -> np.longdouble:
    """`calcChecksum(ptr, len)` of a flat float64 array: double weights times long-double values."""
    flat = np.ascontiguousarray(values, dtype=np.float64).ravel()
    return compensated_sum(weights(flat.size).astype(np.longdouble) * flat.astype(np.longdouble))


def scalar_checksum(value: float) -> np.longdouble:
    """`addToChecksum(val)` of a scalar result: its absolute value."""
    return np.longdouble(abs(float(value)))


def combine(parts: Iterable[np.longdouble]) -> np.longdouble:
    """A kernel's checksum from its parts (several output arrays), summed with compensation."""
    return compensated_sum(np.array(list(parts), dtype=np.longdouble))


def relative_difference(value: np.longdouble, reference: np.longdouble) -> float:
    """|value - reference| / |reference| (the absolute difference when the reference is 0), as RAJAPerf."""
    diff = abs(np.longdouble(value) - np.longdouble(reference))
    if reference == 0:
        return float(diff)
    return float(abs(diff / np.longdouble(reference)))


def exact_text(value: np.longdouble) -> str:
    """The shortest text that reads back as the same long double."""
    return np.format_float_scientific(np.longdouble(value), unique=True)
