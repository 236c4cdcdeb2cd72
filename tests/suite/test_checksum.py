"""RAJAPerf's weighted, compensated checksum, against a literal transcription of its loop."""

from __future__ import annotations

import math

import numpy as np

from offload_core.suite.checksum import (
    TOLERANCES,
    array_checksum,
    combine,
    compensated_sum,
    relative_difference,
    scalar_checksum,
)


def kahan_loop(x: np.ndarray) -> np.longdouble:
    """RAJAPerf's calcChecksum, one element at a time: weight in double, product and Kahan sum in long double."""
    total = np.longdouble(0.0)
    carry = np.longdouble(0.0)
    for j, v in enumerate(x.tolist()):
        term = np.longdouble(abs(math.sin(j + 1.0)) + 0.5) * np.longdouble(v)
        y = term - carry
        t = total + y
        carry = (t - total) - y
        total = t
    return total


def test_matches_the_sequential_kahan_loop() -> None:
    x = np.random.default_rng(7).standard_normal(20_000) * 1e3
    ref = kahan_loop(x)
    assert abs(float((array_checksum(x) - ref) / ref)) < 1e-17


def test_weights_are_the_c_librarys_and_grow_on_demand() -> None:
    from offload_core.suite.checksum import weights

    assert weights(5).tolist() == [abs(math.sin(j + 1.0)) + 0.5 for j in range(5)]
    long = weights(3001)
    assert long.size == 3001 and long[:5].tolist() == weights(5).tolist()
    assert long[3000] == abs(math.sin(3001.0)) + 0.5
    assert not long.flags.writeable


def test_the_product_is_taken_in_long_double() -> None:
    # a value whose product with the first weight rounds differently in double and in long double
    w = abs(math.sin(1.0)) + 0.5
    x = next(v for v in (1 / 3, 1 / 7, 0.1, 2 / 3, 1 / 11) if np.longdouble(w * v) != np.longdouble(w) * np.longdouble(v))
    assert array_checksum(np.array([x])) == np.longdouble(w) * np.longdouble(x)


def test_weights_make_order_matter() -> None:
    x = np.arange(100, dtype=np.float64)
    assert array_checksum(x) != array_checksum(x[::-1].copy())


def test_compensated_sum_recovers_what_a_plain_sum_loses() -> None:
    values = np.array([1e20, 1.0, -1e20] * 1000 + [3.0])
    assert compensated_sum(values) == np.longdouble(1003.0)
    assert compensated_sum(np.zeros(0)) == 0
    assert compensated_sum(np.array([2.5])) == np.longdouble(2.5)


def test_scalar_checksum_is_absolute_value_and_parts_add() -> None:
    assert scalar_checksum(-3.25) == np.longdouble(3.25)
    assert combine([np.longdouble(1.5), np.longdouble(2.25)]) == np.longdouble(3.75)


def test_relative_difference_and_tolerance_classes() -> None:
    assert abs(relative_difference(np.longdouble(101.0), np.longdouble(100.0)) - 0.01) < 1e-15
    assert relative_difference(np.longdouble(0.5), np.longdouble(0.0)) == 0.5
    assert TOLERANCES == {"zero": 0.0, "tight": 1e-14, "normal": 1e-10, "loose": 5e-6}
