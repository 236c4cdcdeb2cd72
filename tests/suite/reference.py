"""Independent reference computations for the suite's tests: RAJAPerf's formulas, written out plainly.

Nothing here uses the suite's own code paths: initial data is recomputed
from RAJAPerf's formula, results by direct NumPy expressions or explicit
loops, and checksums by a literal transcription of RAJAPerf's Kahan loop.
"""

from __future__ import annotations

import math

import numpy as np


def init(n: int, factor: float) -> np.ndarray:
    """RAJAPerf's initData values for a given factor (0.2 on even calls, 0.1 on odd ones)."""
    return np.array([factor * (i + 1.1) / (i + 1.12345) for i in range(n)])


def scalar(factor: float) -> float:
    return factor * 1.1 / 1.12345


def kahan_checksum(*arrays: np.ndarray) -> np.longdouble:
    """RAJAPerf's calcChecksum of each array, added up."""
    total = np.longdouble(0.0)
    for x in arrays:
        part = np.longdouble(0.0)
        carry = np.longdouble(0.0)
        for j, v in enumerate(np.ravel(x).tolist()):
            y = np.longdouble(abs(math.sin(j + 1.0)) + 0.5) * np.longdouble(v) - carry
            t = part + y
            carry = (t - part) - y
            part = t
        total += part
    return total


def rel(a: float | np.longdouble, b: float | np.longdouble) -> float:
    return float(abs(np.longdouble(a) - np.longdouble(b)) / abs(np.longdouble(b)))
