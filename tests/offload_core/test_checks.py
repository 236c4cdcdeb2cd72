"""Every check of a launch fails before any copy, with a one-line message naming the parameters,
and leaves every host array exactly as it was."""

from __future__ import annotations

import re

import numpy as np
import pytest

from offload_core import (
    AliasError,
    BackendError,
    BorrowError,
    DeviceMemoryError,
    In,
    InOut,
    Out,
    Owned,
    RawKernel,
    UseAfterMoveError,
    kernel,
    offload,
    region,
)

from ..conftest import Recorder
from .kit import Boom, consume, copy, daxpy, fill, half_then_fail, read_only, typed

# The whole module runs on every backend: NumPy here, CuPy too where there is a GPU.
pytestmark = pytest.mark.usefixtures("backend")


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text, f"message spans lines: {text!r}"
    return text


def nothing_moved(rec: Recorder) -> None:
    assert rec.copies() == [], "a failed check must not copy anything"
    assert rec.count("launch") == 0


# ---------------------------------------------------------------- arity and kinds
def test_too_few_arguments(rec: Recorder) -> None:
    with pytest.raises(TypeError) as exc:
        offload(daxpy, np.ones(3), np.ones(3))
    assert one_line(exc) == "kernel 'daxpy' is missing argument 'a' (float64) (parameters: y, x, a)"
    nothing_moved(rec)


def test_too_many_arguments(rec: Recorder) -> None:
    with pytest.raises(TypeError, match=r"kernel 'daxpy' takes 3 arguments \(y, x, a\), got 4"):
        offload(daxpy, np.ones(3), np.ones(3), 1.0, 2.0)
    nothing_moved(rec)


def test_keyword_arguments_bind_by_name(rec: Recorder) -> None:
    y = np.zeros(3)
    offload(daxpy, y, a=2.0, x=np.ones(3))
    assert np.all(y == 2.0)
    with pytest.raises(TypeError, match="kernel 'daxpy' has no parameter 'b'"):
        offload(daxpy, y, np.ones(3), b=1.0)
    with pytest.raises(TypeError, match="got two values for parameter 'y'"):
        offload(daxpy, y, np.ones(3), 1.0, y=y)


def test_list_instead_of_array(rec: Recorder) -> None:
    with pytest.raises(TypeError) as exc:
        offload(daxpy, np.ones(3), [1.0, 2.0, 3.0], 1.0)
    assert one_line(exc) == "kernel 'daxpy': parameter 'x' (In) takes a NumPy array, got list"
    nothing_moved(rec)


def test_array_for_a_scalar(rec: Recorder) -> None:
    with pytest.raises(TypeError, match=r"parameter 'a' \(float64\) takes a scalar, got ndarray; annotate it"):
        offload(daxpy, np.ones(3), np.ones(3), np.ones(3))
    nothing_moved(rec)


def test_lossy_scalar_casts_are_refused(rec: Recorder) -> None:
    y = np.ones(3, dtype=np.float32)
    with pytest.raises(TypeError, match=r"'n' \(int32\) takes an integer, got float 1.5"):
        offload(typed, y, 1.5)
    with pytest.raises(TypeError, match=r"'n' \(int32\): 4294967296 is out of range"):
        offload(typed, y, 2**32)
    nothing_moved(rec)


def test_not_a_kernel() -> None:
    def plain(y):
        y += 1

    with pytest.raises(TypeError, match="offload\\(\\) launches a @kernel or RawKernel, got 'plain'; decorate it with @kernel"):
        offload(plain, np.ones(3))  # type: ignore[arg-type]


# ---------------------------------------------------------------- dtype and writability
def test_dtype_mismatch(rec: Recorder) -> None:
    y = np.ones(3)  # float64, the kernel wants float32
    with pytest.raises(TypeError) as exc:
        offload(typed, y, 1)
    assert one_line(exc) == (
        "kernel 'typed': parameter 'y' (InOut[float32]) takes float32, got float64; convert with .astype(np.float32)"
    )
    nothing_moved(rec)


def test_object_arrays_are_refused(rec: Recorder) -> None:
    with pytest.raises(TypeError, match="object arrays cannot be copied to a device"):
        offload(read_only, np.array([object()]))
    nothing_moved(rec)


@pytest.mark.parametrize("which", ["InOut", "Out"])
def test_read_only_host_array_for_a_mutable_parameter(rec: Recorder, which: str) -> None:
    y = np.ones(3)
    y.flags.writeable = False
    with pytest.raises(BorrowError) as exc:
        if which == "InOut":
            offload(daxpy, y, np.ones(3), 1.0)
        else:
            offload(fill, y, 1.0)
    assert "but the host array is read-only" in one_line(exc)
    assert which in str(exc.value)
    nothing_moved(rec)


def test_read_only_array_is_fine_as_in(rec: Recorder) -> None:
    x = np.ones(3)
    x.flags.writeable = False
    y = np.zeros(3)
    offload(daxpy, y, x, 1.0)
    assert np.all(y == 1.0)


# ---------------------------------------------------------------- aliasing
def test_same_array_as_inout_and_in(rec: Recorder) -> None:
    v = np.ones(8)
    with pytest.raises(AliasError) as exc:
        offload(daxpy, v, v, 1.0)
    assert one_line(exc).startswith("kernel 'daxpy': parameter 'y' (InOut) and parameter 'x' (In) share memory")
    nothing_moved(rec)
    assert np.all(v == 1.0)


@pytest.mark.parametrize(
    "make_view",
    [lambda a: a[2:], lambda a: a.reshape(2, 4)[0], lambda a: a[::-1], lambda a: a.view()],
    ids=["slice", "reshape", "reversed", "view"],
)
def test_views_alias_their_base(rec: Recorder, make_view) -> None:  # type: ignore[no-untyped-def]
    v = np.ones(8)
    w = make_view(v)
    with pytest.raises(AliasError):
        offload(copy, v[: w.shape[0]], w)
    nothing_moved(rec)


def test_transpose_aliases(rec: Recorder) -> None:
    m = np.ones((4, 4))
    with pytest.raises(AliasError, match="parameter 'dst' \\(Out\\) and parameter 'src' \\(In\\)"):
        offload(copy, m, m.T)
    nothing_moved(rec)


def test_two_in_of_one_array_are_fine(rec: Recorder) -> None:
    @kernel
    def add_into(out: Out, a: In, b: In) -> None:
        out[...] = a + b

    v = np.arange(4.0)
    out = np.zeros(4)
    offload(add_into, out, v, v)
    np.testing.assert_array_equal(out, 2 * v)


def test_disjoint_halves_do_not_alias(rec: Recorder) -> None:
    v = np.arange(8.0)
    offload(copy, v[:4], v[4:])
    np.testing.assert_array_equal(v, [4, 5, 6, 7, 4, 5, 6, 7])


def test_interleaved_views_alias_by_bounds_but_not_exactly(rec: Recorder) -> None:
    v = np.arange(8.0)
    with pytest.raises(AliasError, match="a bounds check; @kernel\\(alias_check='exact'\\)"):
        offload(copy, v[::2], v[1::2])

    @kernel(alias_check="exact")
    def copy_exact(dst: Out, src: In) -> None:
        dst[...] = src

    offload(copy_exact, v[::2], v[1::2])
    np.testing.assert_array_equal(v, [1, 1, 3, 3, 5, 5, 7, 7])


def test_owned_aliasing_another_argument(rec: Recorder) -> None:
    v = np.ones(4)
    with pytest.raises(AliasError, match="'scratch' \\(Owned\\) and parameter 'out' \\(Out\\)"):
        offload(consume, v, v)
    assert v.flags.writeable, "a refused move does not freeze the array"


# ---------------------------------------------------------------- moves
def test_use_after_move(rec: Recorder) -> None:
    buf, out = np.ones(4), np.zeros(4)
    offload(consume, buf, out)
    rec.clear()
    with pytest.raises(UseAfterMoveError) as exc:
        offload(read_only, buf)
    msg = one_line(exc)
    assert msg.startswith("kernel 'read_only': parameter 'x' (In): the array was moved into kernel 'consume' as Owned parameter 'scratch' at ")
    assert "test_checks.py" in msg
    nothing_moved(rec)


def test_use_after_move_through_a_view_made_before_the_move(rec: Recorder) -> None:
    buf, out = np.ones(8), np.zeros(8)
    early_view = buf[2:6]
    offload(consume, buf, out)
    with pytest.raises(UseAfterMoveError):
        offload(read_only, early_view)
    with pytest.raises(UseAfterMoveError):
        with region(early_view):
            pass


def test_moved_memory_is_forgotten_when_it_is_freed() -> None:
    for _ in range(50):  # fresh arrays reuse freed addresses; none may be taken for moved
        buf, out = np.ones(64), np.zeros(64)
        offload(consume, buf, out)
        del buf
        fresh = np.ones(64)
        offload(read_only, fresh)


# ---------------------------------------------------------------- failing kernels
def test_failing_kernel_leaves_host_arrays_untouched_and_frees(backend: str, rec: Recorder) -> None:
    from offload_core import get_backend

    y, x = np.arange(8.0), np.ones(8)
    before = y.copy()
    with pytest.raises(Boom):
        offload(half_then_fail, y, x)
    np.testing.assert_array_equal(y, before)
    assert rec.count("d2h") == 0
    assert rec.count("free") == rec.count("alloc") == 2
    assert get_backend().memory_in_use() == 0


def test_failing_kernel_leaves_owned_array_unmoved(rec: Recorder) -> None:
    @kernel
    def bad(scratch: Owned, out: Out) -> None:
        raise Boom("no")

    buf, out = np.ones(4), np.zeros(4)
    with pytest.raises(Boom):
        offload(bad, buf, out)
    assert buf.flags.writeable
    offload(read_only, buf)  # not moved


def test_kernel_returning_a_value_is_an_error_and_copies_nothing_back(rec: Recorder) -> None:
    @kernel
    def returns(y: InOut):  # type: ignore[no-untyped-def]
        y += 1
        return y.sum()

    y = np.zeros(3)
    with pytest.raises(TypeError, match="kernel 'returns' returned .*; kernels return nothing"):
        offload(returns, y)
    assert np.all(y == 0.0)


# ---------------------------------------------------------------- device memory and backends
def test_device_out_of_memory_names_the_bytes_and_keeps_host_data(capped, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    be = capped(1 << 20)
    y, x = np.arange(100_000.0), np.ones(100_000)  # 800 kB each: the second allocation fails
    before = y.copy()
    with pytest.raises(DeviceMemoryError) as exc:
        offload(daxpy, y, x, 1.0)
    assert exc.value.nbytes == 800_000 and exc.value.in_use == 800_000
    assert re.fullmatch(r"device out of memory: asked for 800000 bytes with 800000 .*in use.*; free device arrays or map fewer at once", one_line(exc))
    np.testing.assert_array_equal(y, before)
    assert rec.count("launch") == 0 and rec.count("d2h") == 0
    assert rec.count("free") == rec.count("alloc") == 1
    assert be.memory_in_use() == 0


def test_region_out_of_memory_maps_nothing(capped, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    capped(1 << 20)
    a, b = np.ones(100_000), np.ones(100_000)
    with pytest.raises(DeviceMemoryError):
        with region(a, b):
            raise AssertionError("not reached")
    assert rec.count("free") == 1 and rec.count("d2h") == 0


def test_raw_kernel_without_cpu_fallback_fails_before_any_copy(backend: str, rec: Recorder) -> None:
    if backend != "numpy":
        pytest.skip("only the NumPy backend needs a cpu= fallback")
    src = 'extern "C" __global__ void k(double* y, int n) { }'
    k = RawKernel(src, "k", params=[("y", InOut[np.float64]), ("n", np.int32)])
    with pytest.raises(BackendError) as exc:
        offload(k, np.ones(4), 4)
    assert one_line(exc).startswith("RawKernel 'k' has no cpu= fallback, so it cannot run on the NumPy backend")
    nothing_moved(rec)


def test_raw_kernel_runs_its_cpu_fallback(rec: Recorder) -> None:
    def cpu(y, n):  # type: ignore[no-untyped-def]
        y[:n] += 1.0

    src = 'extern "C" __global__ void inc(double* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 1.0; }'
    k = RawKernel(src, "inc", params={"y": InOut[np.float64], "n": np.int32}, grid=lambda y, n: ((n + 255) // 256,), cpu=cpu)
    y = np.zeros(10)
    offload(k, y, 10)
    assert np.all(y == 1.0)
    assert rec.copies() == [("h2d", "y", 80), ("d2h", "y", 80)]
    assert k.launch_dims([y, np.int32(10)]) == ((1,), (256,))
