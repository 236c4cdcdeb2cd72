"""What only the CuPy backend has: page-locking of hot buffers, device timings, RawKernel
compilation, device-array pass-through, NVTX. Runs on the GPU machine (`pytest -m gpu`)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import offload_core
from offload_core import AliasError, BackendError, In, InOut, Out, RawKernel, kernel, offload, region

from ..conftest import Recorder
from .kit import copy, daxpy, read_only

pytestmark = pytest.mark.gpu

MiB = 1 << 20


@pytest.fixture
def be():  # type: ignore[no-untyped-def]
    return offload_core.set_backend("cupy")


def test_auto_selects_cupy_where_there_is_a_gpu() -> None:
    from offload_core.backends import create

    assert create("auto").name == "cupy"


def test_large_arrays_are_page_locked_on_first_copy_and_released_when_they_die(be, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    before = be.pinning.registered_bytes
    x = np.ones(32 * MiB // 8)
    offload(read_only, x)
    assert be.pinning.registered_bytes - before >= x.nbytes
    assert rec.of("h2d")[0].pinned is True
    del x
    gc.collect()
    assert be.pinning.registered_bytes == before


def test_mid_sized_arrays_are_page_locked_when_hot(be, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    x = np.ones(MiB // 8)
    offload(read_only, x)
    offload(read_only, x)
    offload(read_only, x)
    assert [e.pinned for e in rec.of("h2d")] == [False, True, True], "registered at the second copy"


def test_small_arrays_are_never_page_locked(be, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    x = np.ones(512)
    for _ in range(3):
        offload(read_only, x)
    assert not any(e.pinned for e in rec.of("h2d"))


def test_overlapping_views_of_one_buffer_merge_their_registrations(be) -> None:  # type: ignore[no-untyped-def]
    base = np.arange(8 * MiB, dtype=np.float64)  # 64 MiB
    a, b = base[: 4 * MiB], base[2 * MiB : 6 * MiB]  # 32 MiB each, overlapping by 16 MiB
    before = be.pinning.registered_bytes
    out_a, out_b = np.empty_like(a), np.empty_like(b)
    offload(copy, out_a, a)
    offload(copy, out_b, b)
    assert be.pinning.registered_bytes - before <= 6 * MiB * 8 + 2 * 4096 + out_a.nbytes + out_b.nbytes
    np.testing.assert_array_equal(out_a, a)
    np.testing.assert_array_equal(out_b, b)
    assert be.is_pinned(a) and be.is_pinned(b) and be.is_pinned(base[3 * MiB : 5 * MiB])


def test_separate_allocations_sharing_a_page_both_register(be) -> None:  # type: ignore[no-untyped-def]
    # 100 KiB arrays come from the malloc heap, where neighbours can share a page.
    pool = [np.ones(12_800) for _ in range(64)]
    ends = {(a.__array_interface__["data"][0] + a.nbytes - 1) // 4096: a for a in pool}
    pair = next(((ends[a.__array_interface__["data"][0] // 4096], a) for a in pool
                 if a.__array_interface__["data"][0] // 4096 in ends and ends[a.__array_interface__["data"][0] // 4096] is not a), None)
    if pair is None:
        pytest.skip("the allocator gave no two arrays sharing a page")
    first, second = pair
    for target in (first, second, first, second):  # hot: registered on the second copy of each
        target[...] = 5.0
        out = np.zeros_like(target)
        offload(copy, out, target)
        assert np.all(out == 5.0)
    assert be.is_pinned(first) and be.is_pinned(second) and be.pinning.failures == 0


def test_touching_views_of_one_buffer_share_one_registration(be) -> None:  # type: ignore[no-untyped-def]
    base = np.zeros(6 * MiB + 3)  # the two halves meet inside one page
    left, right = base[: 3 * MiB + 1], base[3 * MiB + 1 :]
    for target in (left, right):
        out = np.empty_like(target)
        target[...] = 2.0
        offload(copy, out, target)
        assert np.all(out == 2.0)
    assert be.is_pinned(left) and be.is_pinned(right)


def test_small_copies_from_pinned_memory_are_fenced(be) -> None:  # type: ignore[no-untyped-def]
    import cupy
    import cupyx

    @kernel
    def take(dst: InOut, src: In) -> None:
        dst[...] = src

    for _ in range(20):
        src = cupyx.empty_pinned((512,), dtype=np.float64)
        src[:] = 4.0
        dst = cupy.zeros(512)
        offload(take, dst, src)
        src[:] = -1.0  # an asynchronous copy from pinned memory must have finished by now
        assert float(dst.min()) == 4.0


def test_already_pinned_memory_is_used_as_is(be, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    import cupyx

    pinned = cupyx.empty_pinned((4 * MiB,), dtype=np.float64)
    pinned[:] = 3.0
    before = be.pinning.registered_bytes
    out = np.empty(4 * MiB)
    offload(copy, out, pinned)
    assert be.pinning.registered_bytes - before == out.nbytes  # only the pageable destination was registered
    assert rec.of("h2d")[0].pinned is True and np.all(out == 3.0)


def test_pinning_can_be_switched_off(rec: Recorder) -> None:
    os.environ["OFFLOAD_PIN"] = "0"
    try:
        be = offload_core.set_backend("cupy")
    finally:
        del os.environ["OFFLOAD_PIN"]
    x = np.ones(32 * MiB // 8)
    offload(read_only, x)
    assert be.pinning.registered_bytes == 0 and rec.of("h2d")[0].pinned is False


def test_upload_is_settled_before_offload_returns(be) -> None:  # type: ignore[no-untyped-def]
    import cupy

    @kernel
    def take(dst: InOut, src: In) -> None:
        dst[...] = src

    src = np.full(64 * MiB // 8, 7.0)
    dst = cupy.zeros(src.shape)  # a device array: used in place, so the launch does not sync
    offload(take, dst, src)
    src[:] = -1.0  # must not race the asynchronous upload from page-locked memory
    assert float(dst[-1]) == 7.0 and float(dst[0]) == 7.0


def test_non_contiguous_and_fortran_arrays_round_trip(be) -> None:  # type: ignore[no-untyped-def]
    big = np.arange(3 * 4 * MiB, dtype=np.float64).reshape(3, 4 * MiB)
    strided = big[:, ::2]
    out = np.zeros(strided.shape)
    offload(copy, out, strided)
    np.testing.assert_array_equal(out, strided)
    f = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    g = np.zeros((3, 4), order="F")
    with region(f, g) as r:
        offload(copy, g, f)
        offload(copy, g[:, 1], f[:, 2])  # strided device views inside resident arrays
        r.update_host(g[1])  # a non-contiguous view: gathered on the device, scattered on the host
        assert g[1, 1] == f[1, 2]
    expected = f.copy()
    expected[:, 1] = f[:, 2]
    np.testing.assert_array_equal(g, expected)


def test_copies_and_launches_carry_device_timings(be, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    x = np.ones(64 * MiB // 8)
    y = np.zeros_like(x)
    offload(daxpy, y, x, 1.0)
    h2d = rec.of("h2d")
    assert all(e.duration_ns > 0 for e in h2d + rec.of("d2h") + rec.of("launch"))
    # 64 MiB over PCIe takes at least 1 ms at any rate below 64 GB/s
    assert all(e.duration_ns > 1_000_000 for e in h2d)
    starts = [e.start_ns for e in rec.events if e.kind in ("h2d", "launch", "d2h")]
    assert starts == sorted(starts), "device events map onto the host clock in issue order"


def test_raw_kernel_compiles_and_matches_the_cpu_fallback(be, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    src = r'''
    extern "C" __global__ void axpy(double* y, const double* x, double a, int n) {
        int i = blockDim.x * blockIdx.x + threadIdx.x;
        if (i < n) y[i] += a * x[i];
    }'''

    def cpu(y, x, a, n):  # type: ignore[no-untyped-def]
        y[:n] += a * x[:n]

    k = RawKernel(src, "axpy", params=[("y", InOut[np.float64]), ("x", In[np.float64]), ("a", np.float64), ("n", np.int32)],
                  grid=lambda y, x, a, n: ((int(n) + 255) // 256,), block=256, cpu=cpu)
    x = np.arange(10_000.0)
    y_gpu = np.ones(10_000)
    offload(k, y_gpu, x, 0.5, 10_000)
    offload_core.set_backend("numpy")
    y_cpu = np.ones(10_000)
    offload(k, y_cpu, x, 0.5, 10_000)
    np.testing.assert_array_equal(y_gpu, y_cpu)


def test_raw_kernel_compile_error_is_one_line_and_copies_nothing(be, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    k = RawKernel('extern "C" __global__ void broken(double* y) { y[0] = undefined_name; }', "broken",
                  params=[("y", InOut[np.float64])])
    with pytest.raises(BackendError) as exc:
        offload(k, np.ones(4))
    assert str(exc.value).startswith("RawKernel 'broken' does not compile: ") and "\n" not in str(exc.value)
    assert "undefined_name" in exc.value.log  # type: ignore[attr-defined]
    assert rec.copies() == []


def test_raw_kernel_refuses_a_strided_device_view(be) -> None:  # type: ignore[no-untyped-def]
    k = RawKernel('extern "C" __global__ void z(double* y) { y[threadIdx.x] = 0; }', "z",
                  params=[("y", InOut[np.float64])], block=4)
    m = np.ones((4, 4))
    with region(m):
        with pytest.raises(BackendError, match="parameter 'y' is not C-contiguous on the device"):
            offload(k, m[:, 0])
    assert np.all(m == 1.0)


def test_device_arrays_are_used_in_place(be, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    import cupy

    y = cupy.zeros(1000)
    x = cupy.ones(1000)
    offload(daxpy, y, x, 3.0)
    assert rec.copies() == [] and float(y.sum()) == 3000.0
    with pytest.raises(AliasError, match="parameter 'y' \\(InOut\\) and parameter 'x' \\(In\\) share memory"):
        offload(daxpy, y, y, 1.0)
    with pytest.raises(TypeError, match="takes float32, got a device array of float64"):
        offload(_typed, y)


@kernel
def _typed(y: InOut[np.float32]) -> None:
    y += 1


def test_non_native_byte_order_is_refused_before_any_copy(be, rec: Recorder) -> None:  # type: ignore[no-untyped-def]
    x = np.ones(8, dtype=">f8")
    with pytest.raises(TypeError, match="the cupy backend needs native byte order, got >f8"):
        offload(read_only, x)
    assert rec.copies() == []


def test_nvtx_ranges_do_not_disturb_a_run() -> None:
    code = (
        "import numpy as np, offload_core as o\n"
        "from offload_core import In, InOut, Out, kernel, offload, region\n"
        "@kernel\n"
        "def daxpy(y: InOut, x: In, a: float) -> None:\n"
        "    y += a * x\n"
        "o.set_backend('cupy')\n"
        "assert o.get_backend().nvtx\n"
        "x, y = np.ones(10), np.zeros(10)\n"
        "with region(x, y):\n"
        "    for _ in range(5):\n"
        "        offload(daxpy, y, x, 1.0)\n"
        "offload(daxpy, y, x, 1.0)\n"
        "print(y[0])\n"
    )
    env = dict(os.environ, OFFLOAD_NVTX="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "6.0"


def test_fresh_temporaries_of_one_size_are_not_taken_for_hot(be) -> None:  # type: ignore[no-untyped-def]
    # A loop that allocates a new mid-sized array per iteration gets the same
    # id and address again and again; registering each would cost more than it saves.
    before = be.pinning.registered_bytes
    for _ in range(10):
        fresh = np.ones(MiB // 8)
        offload(read_only, fresh)
        del fresh
    assert be.pinning.registered_bytes == before
