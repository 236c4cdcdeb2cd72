"""Each benchmark computes RAJAPerf's result, and its variants agree on the checksum."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from offload_core import set_mode
from offload_core.annotations import Access
from offload_core.suite import BENCHMARKS, VARIANTS
from offload_core.suite.apps import COEFFICIENTS, _decompose
from offload_core.suite.data import RAND_MAX, glibc_rand
from offload_core.suite.registry import BY_NAME
from offload_core.suite.runner import Runner
from offload_core.suite.spec import Problem
from offload_core.suite.timing import HostClock
from offload_core.suite.variants import host_baseline, offload_variant

from .reference import init, kahan_checksum, rel, scalar

NAMES = [b.name for b in BENCHMARKS]


def test_the_suite_has_the_kernels_of_the_issue_in_rajaperf_group_order() -> None:
    assert NAMES == ["ADD", "COPY", "DOT", "MUL", "TRIAD", "DAXPY", "PI_REDUCE", "FIR", "FIR_ALG",
                     "JACOBI_1D", "JACOBI_2D", "HEAT_3D", "GEMM", "2MM", "ATAX"]
    defaults = {b.name: (b.default_size, b.default_reps, b.tolerance) for b in BENCHMARKS}
    assert defaults["TRIAD"] == (1_000_000, 1000, "tight")
    assert defaults["COPY"] == (1_000_000, 1800, "zero")
    assert defaults["DAXPY"] == (1_000_000, 500, "normal")
    assert defaults["JACOBI_2D"] == (1_000_000, 2000, "normal")
    assert defaults["2MM"] == (1_000_000, 2, "normal")


def test_default_problems_have_rajaperf_dimensions() -> None:
    dims = {name: BY_NAME[name].build(BY_NAME[name].default_size).dims for name in
            ("JACOBI_1D", "JACOBI_2D", "HEAT_3D", "GEMM", "2MM", "ATAX")}
    assert dims["JACOBI_1D"] == {"N": 1_000_002}
    assert dims["JACOBI_2D"] == {"N": 1002}
    assert dims["HEAT_3D"] == {"N": 102}
    assert dims["GEMM"] == {"ni": 1000, "nj": 1000, "nk": 1200}
    assert dims["2MM"] == {"ni": 1000, "nj": 1000, "nk": 1120, "nl": 1000}
    assert dims["ATAX"] == {"N": 1000}


@pytest.mark.parametrize("name", NAMES)
def test_all_variants_agree_at_a_small_size_with_default_reps(name: str) -> None:
    runner = Runner(passes=1)
    result = runner.kernel(BY_NAME[name], VARIANTS, 0.002, None)
    assert list(result.variants) == [v for v in VARIANTS if runner.not_applicable(v) is None]
    assert result.reference == "baseline"
    for variant, diff in result.differences.items():
        assert diff <= result.tolerance_value, f"{name} {variant}: relative difference {diff:.3e}"
    assert result.checksums_agree
    assert all(np.isfinite(float(v.checksum)) and v.checksum != 0 for v in result.variants.values())


def _problem(name: str, target: int) -> Problem:
    return BY_NAME[name].build(target)


def _all_variants(name: str, target: int, reps: int) -> list[Problem]:
    """The problem after `reps` reps of the baseline, the batched and the naive variant."""
    done = []
    p = _problem(name, target)
    host_baseline(p, reps, HostClock())
    done.append(p)
    for mode in ("batched", "naive"):
        set_mode(mode)
        p = _problem(name, target)
        offload_variant(p, reps, HostClock())
        done.append(p)
    set_mode("batched")
    return done


# Stream and Basic: the result and its checksum written out from RAJAPerf's formulas.
N = 700
f2, f1 = init(N, 0.2), init(N, 0.1)
STREAM_EXPECTED = {
    "ADD": ("c", lambda reps: f2 + f1),
    "COPY": ("c", lambda reps: f2.copy()),
    "MUL": ("b", lambda reps: scalar(0.2) * f1),
    "TRIAD": ("a", lambda reps: f1 + scalar(0.1) * f2),
}


@pytest.mark.parametrize("name", list(STREAM_EXPECTED))
def test_stream_results_and_checksums_match_the_formula(name: str) -> None:
    out, formula = STREAM_EXPECTED[name]
    expected = formula(3)
    reference = kahan_checksum(expected)
    for p in _all_variants(name, N, 3):
        assert np.array_equal(p.arrays[out], expected)
        assert rel(p.checksum(p.arrays), reference) < 1e-16


def test_daxpy_accumulates_over_reps() -> None:
    y = np.zeros(N)
    for _ in range(5):
        y += scalar(0.2) * f1
    for p in _all_variants("DAXPY", N, 5):
        assert np.array_equal(p.arrays["y"], y)
        assert rel(p.checksum(p.arrays), kahan_checksum(y)) < 1e-16


def test_dot_checksum_is_the_dot_product_summed_over_reps() -> None:
    expected = 4 * math.fsum((f2 * f1).tolist())
    for p in _all_variants("DOT", N, 4):
        assert rel(p.checksum(p.arrays), expected) < 1e-13


def test_pi_reduce_is_the_midpoint_rule() -> None:
    dx = 1.0 / N
    expected = 4.0 * math.fsum(dx / (1.0 + ((i + 0.5) * dx) ** 2) for i in range(N))
    for p in _all_variants("PI_REDUCE", N, 2):
        assert rel(p.checksum(p.arrays), expected) < 1e-13
        assert abs(float(p.checksum(p.arrays)) - math.pi) < 1e-6


def test_fir_and_its_rewrite_compute_the_correlation_with_rajaperf_coefficients() -> None:
    n = 500
    signal = glibc_rand(4793, n + 15) / float(RAND_MAX)
    expected = np.correlate(signal, np.array(COEFFICIENTS), mode="valid")
    assert expected.shape == (n,)
    for name in ("FIR", "FIR_ALG"):
        for p in _all_variants(name, n, 2):
            assert np.allclose(p.arrays["out"], expected, rtol=0, atol=1e-13)
            assert rel(p.checksum(p.arrays), kahan_checksum(expected)) < 1e-13


def test_fir_rewrite_is_derived_from_the_coefficients() -> None:
    assert _decompose(COEFFICIENTS) == (-1.0, 4.0, (0, 5, 10, 15))
    with pytest.raises(ValueError):
        _decompose((1.0, 2.0, 3.0))


def _jacobi_1d(a: np.ndarray, b: np.ndarray, reps: int) -> None:
    for _ in range(reps):
        for i in range(1, a.size - 1):
            b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1])
        for i in range(1, a.size - 1):
            a[i] = 0.33333 * (b[i - 1] + b[i] + b[i + 1])


def _jacobi_2d(a: np.ndarray, b: np.ndarray, n: int, reps: int) -> None:
    for _ in range(reps):
        for src, dst in ((a, b), (b, a)):
            for i in range(1, n - 1):
                for j in range(1, n - 1):
                    dst[j + i * n] = 0.2 * (src[j + i * n] + src[j - 1 + i * n] + src[j + 1 + i * n]
                                            + src[j + (i + 1) * n] + src[j + (i - 1) * n])


def _heat_3d(a: np.ndarray, b: np.ndarray, n: int, reps: int) -> None:
    def at(x: np.ndarray, i: int, j: int, k: int) -> float:
        return float(x[k + n * (j + n * i)])

    for _ in range(reps):
        for src, dst in ((a, b), (b, a)):
            for i in range(1, n - 1):
                for j in range(1, n - 1):
                    for k in range(1, n - 1):
                        c = at(src, i, j, k)
                        dst[k + n * (j + n * i)] = (
                            0.125 * (at(src, i + 1, j, k) - 2.0 * c + at(src, i - 1, j, k))
                            + 0.125 * (at(src, i, j + 1, k) - 2.0 * c + at(src, i, j - 1, k))
                            + 0.125 * (at(src, i, j, k + 1) - 2.0 * c + at(src, i, j, k - 1)) + c)


def test_stencils_match_rajaperf_loops() -> None:
    a, b = init(40, 0.2), init(40, 0.1)
    _jacobi_1d(a, b, 3)
    for p in _all_variants("JACOBI_1D", 38, 3):
        assert np.array_equal(p.arrays["A"], a) and np.array_equal(p.arrays["B"], b)
        assert rel(p.checksum(p.arrays), kahan_checksum(a, b)) < 1e-16
    n = 7
    assert _problem("JACOBI_2D", 25).dims == {"N": n}
    a, b = init(n * n, 0.2), init(n * n, 0.1)
    _jacobi_2d(a, b, n, 2)
    for p in _all_variants("JACOBI_2D", 25, 2):
        assert np.array_equal(p.arrays["A"], a) and np.array_equal(p.arrays["B"], b)
    assert _problem("HEAT_3D", 125).dims == {"N": n}
    a, b = init(n ** 3, 0.2), init(n ** 3, 0.1)
    _heat_3d(a, b, n, 2)
    for p in _all_variants("HEAT_3D", 125, 2):
        assert np.allclose(p.arrays["A"], a, rtol=1e-15, atol=0) and np.allclose(p.arrays["B"], b, rtol=1e-15, atol=0)
        assert rel(p.checksum(p.arrays), kahan_checksum(a, b)) < 1e-15


def test_linear_algebra_matches_rajaperf_loops() -> None:
    ni = nj = 6
    nk = 7
    assert _problem("GEMM", 36).dims == {"ni": ni, "nj": nj, "nk": nk}
    A, B = init(ni * nk, 0.2).reshape(ni, nk), init(nk * nj, 0.1).reshape(nk, nj)
    C = np.array([[math.fsum(0.62 * A[i, k] * B[k, j] for k in range(nk)) for j in range(nj)] for i in range(ni)])
    for p in _all_variants("GEMM", 36, 2):
        assert np.allclose(p.arrays["C"], C.ravel(), rtol=1e-14, atol=0)

    dims = _problem("2MM", 36).dims
    ni, nj, nk, nl = dims["ni"], dims["nj"], dims["nk"], dims["nl"]
    A, B, C = (init(ni * nk, 0.1).reshape(ni, nk), init(nk * nj, 0.2).reshape(nk, nj),
               init(nj * nl, 0.1).reshape(nj, nl))
    tmp = np.array([[math.fsum(1.5 * A[i, k] * B[k, j] for k in range(nk)) for j in range(nj)] for i in range(ni)])
    D = np.array([[1.2 + math.fsum(tmp[i, j] * C[j, l] for j in range(nj)) for l in range(nl)] for i in range(ni)])
    for p in _all_variants("2MM", 36, 2):
        assert np.allclose(p.arrays["D"], D.ravel(), rtol=1e-14, atol=0)

    n = _problem("ATAX", 36).dims["N"]
    x, A = init(n, 0.1), init(n * n, 0.2).reshape(n, n)
    y = A.T @ (A @ x)
    for p in _all_variants("ATAX", 36, 3):
        assert np.allclose(p.arrays["y"], y, rtol=1e-14, atol=0)
        assert rel(p.checksum(p.arrays), kahan_checksum(y)) < 1e-13


# The CUDA/HIP sources: portable subset, and signatures that match the ownership annotations.
_C_TYPES = {"const double*": "in", "double*": "mutable", "double": "float64", "long long": "int64"}
_FORBIDDEN = ("cooperative_groups", "__shfl", "warpSize", "#include", "__activemask", "__ballot")


def _kernels():  # type: ignore[no-untyped-def]
    seen = {}
    for b in BENCHMARKS:
        for step in b.build(64).steps:
            seen[step.kernel.name] = step.kernel
    return list(seen.values())


@pytest.mark.parametrize("kernel", _kernels(), ids=lambda k: k.name)
def test_cuda_signature_matches_the_annotations(kernel) -> None:  # type: ignore[no-untyped-def]
    match = re.search(r'extern "C" __global__ void ' + kernel.name + r"\(([^)]*)\)", kernel.source)
    assert match, f"{kernel.name} is not an extern \"C\" __global__ function of its source"
    c_params = [p.strip() for p in match.group(1).split(",")]
    assert len(c_params) == len(kernel.params)
    for text, param in zip(c_params, kernel.params):
        ctype, _, cname = text.rpartition(" ")
        assert cname == param.name
        kind = _C_TYPES[ctype.strip()]
        if param.is_array:
            assert param.dtype == np.float64
            assert kind == ("in" if param.access is Access.IN else "mutable"), f"{kernel.name}.{cname}"
        else:
            assert kind == np.dtype(param.scalar).name, f"{kernel.name}.{cname}"
    for word in _FORBIDDEN:
        assert word not in kernel.source


@pytest.mark.parametrize("name", NAMES)
def test_launch_dimensions_cover_the_iteration_space(name: str) -> None:
    p = BY_NAME[name].build(5000)
    for step in p.steps:
        k = step.kernel
        args = dict(zip([q.name for q in k.params], step.bind(p.arrays)))
        grid, block = k.launch_dims(step.bind(p.arrays))
        threads = [g * b for g, b in zip(grid, block)]
        assert all(0 < b for b in block) and math.prod(block) <= 1024
        if "partial" in k.name:
            assert grid == (args["partial"].shape[0],)
        elif "finish" in k.name:
            assert grid == (1,)
        elif "n" in args:
            assert threads[0] >= args["n"]
        elif k.name.startswith(("jacobi_2d", "heat_3d")):
            assert all(t >= args["N"] - 2 for t in threads)
        elif k.name.startswith(("gemm", "mm2")):
            rows, cols = args["ni"], args.get("nj", args.get("nl"))
            assert threads[0] >= (args["nl"] if k.name == "mm2_2" else cols) and threads[1] >= rows
        else:
            assert threads[0] >= args["N"]
