"""RAJAPerf's data initialisation: factors by call order, constant fills, glibc rand()."""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

import numpy as np
import pytest

from offload_core.suite.data import RAND_MAX, DataInit, glibc_rand


def test_real_alternates_factor_by_call_count_starting_at_0_2() -> None:
    init = DataInit()
    first, second, third = init.real(4), init.real(4), init.real(4)
    i = np.arange(4.0)
    assert np.array_equal(first, 0.2 * (i + 1.1) / (i + 1.12345))
    assert np.array_equal(second, 0.1 * (i + 1.1) / (i + 1.12345))
    assert np.array_equal(third, first)
    assert init.count == 3


def test_constant_fills_and_scalars_also_advance_the_counter() -> None:
    init = DataInit()
    zeros = init.const(3)
    assert np.array_equal(zeros, np.zeros(3)) and zeros.dtype == np.float64
    assert init.real(1)[0] == 0.1 * 1.1 / 1.12345  # second call: factor 0.1
    assert init.scalar() == 0.2 * 1.1 / 1.12345  # third call: factor 0.2
    assert init.count == 3


def test_first_values_of_real_match_the_formula_exactly_at_a_large_index() -> None:
    values = DataInit().real(1_000_001)
    assert values[1_000_000] == 0.2 * (1_000_000 + 1.1) / (1_000_000 + 1.12345)


def _glibc() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or None)


@pytest.mark.skipif(_glibc() is None, reason="needs glibc's rand() to compare with")
def test_glibc_rand_reproduces_the_c_library() -> None:
    libc = _glibc()
    assert libc is not None
    libc.srand(4793)
    expected = [libc.rand() for _ in range(5000)]
    assert glibc_rand(4793, 5000).tolist() == expected
    libc.srand(1)
    expected = [libc.rand() for _ in range(100)]
    assert glibc_rand(1, 100).tolist() == expected


def test_rand_value_is_rand_over_rand_max_in_unit_interval() -> None:
    init = DataInit()
    values = init.rand_value(10_000)
    assert np.array_equal(values, glibc_rand(4793, 10_000) / float(RAND_MAX))
    assert values.min() >= 0.0 and values.max() <= 1.0
    assert 0.45 < values.mean() < 0.55
    assert init.count == 1


def test_rand_sequence_is_read_only_so_the_cache_cannot_be_corrupted() -> None:
    seq = glibc_rand(4793, 10)
    with pytest.raises(ValueError):
        seq[0] = 0
