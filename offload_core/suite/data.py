"""RAJAPerf's data initialisation, reproduced value for value.

RAJAPerf fills its arrays deterministically so that every variant of a
kernel starts from the same numbers and their checksums can be compared,
across variants and across machines. Two facts shape this module:

* The fill depends on the *order* of the calls: `initData` uses the factor
  0.2 or 0.1 depending on whether an internal counter is even or odd, and
  every initialisation (constant fills and scalars included) bumps that
  counter. The counter is reset before each kernel's `setUp`. `DataInit`
  is that counter; each benchmark builds its arrays through one, in
  RAJAPerf's order.
* `initDataRandValue` (FIR's input) draws from the C library's `rand()`
  after `srand(4793)`. To get RAJAPerf's numbers on any platform, glibc's
  generator (the additive-feedback TYPE_3 one behind `rand()` on Linux,
  where RAJAPerf is run) is reimplemented here from its published
  definition; a test checks it against the real `rand()` where glibc is
  present.

Source of the facts: LLNL/RAJAPerf src/common/DataUtils.cpp (`initData`,
`initDataConst`, `initDataRandValue`, `incDataInitCount`) and
src/common/KernelBase.cpp (`execute` resets the counter before `setUp`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

#: glibc's RAND_MAX.
RAND_MAX = 2147483647
#: The seed RAJAPerf passes to srand() before every random fill.
RAJAPERF_SEED = 4793


class DataInit:
    """RAJAPerf's initialisation calls, with the call counter they share."""

    def __init__(self) -> None:
        self.count = 0

    def _factor(self) -> float:
        return 0.1 if self.count % 2 else 0.2

    def real(self, n: int) -> np.ndarray:
        """`initData(Real_ptr)`: factor*(i + 1.1)/(i + 1.12345), in double, as C evaluates it."""
        i = np.arange(n, dtype=np.float64)
        values = self._factor() * (i + 1.1) / (i + 1.12345)
        self.count += 1
        return values

    def const(self, n: int, value: float = 0.0) -> np.ndarray:
        """`initDataConst`: every entry `value` (still counts as an initialisation)."""
        self.count += 1
        return np.full(n, value, dtype=np.float64)

    def rand_value(self, n: int) -> np.ndarray:
        """`initDataRandValue`: rand()/RAND_MAX after srand(4793)."""
        self.count += 1
        return glibc_rand(RAJAPERF_SEED, n).astype(np.float64) / float(RAND_MAX)

    def scalar(self) -> float:
        """`initData(Real_type&)`: factor*1.1/1.12345."""
        value = self._factor() * 1.1 / 1.12345
        self.count += 1
        return value


def glibc_rand(seed: int, n: int) -> np.ndarray:
    """The first `n` values glibc's `rand()` returns after `srand(seed)` (int64 array, read-only)."""
    return _glibc_rand(seed, n)


@lru_cache(maxsize=8)
def _glibc_rand(seed: int, n: int) -> np.ndarray:
    # glibc TYPE_3: 34 state words seeded by the Park-Miller LCG (Schrage's
    # method, modulus 2^31 - 1), then r[k] = r[k-31] + r[k-3] (mod 2^32); the
    # first 310 outputs are discarded and each output is r[k] >> 1.
    r = [0] * (34 + 310 + n)
    r[0] = seed if seed != 0 else 1
    for i in range(1, 31):
        hi, lo = divmod(r[i - 1], 127773)
        word = 16807 * lo - 2836 * hi
        r[i] = word + 2147483647 if word < 0 else word
    for i in range(31, 34):
        r[i] = r[i - 31]
    mask = 0xFFFFFFFF
    for k in range(34, len(r)):
        r[k] = (r[k - 31] + r[k - 3]) & mask
    result = np.array(r[344:], dtype=np.int64) >> 1
    result.flags.writeable = False
    return result
