"""The transfer table of docs/design.md, row by row: counts and bytes of every copy, exactly."""

from __future__ import annotations

import numpy as np
import pytest

import offload_core
from offload_core import Out, offload, region

from ..conftest import Recorder
from .kit import consume, copy, daxpy, fill, read_only, scale

N = 1000  # 8000 bytes of float64

# The whole module runs on every backend: NumPy here, CuPy too where there is a GPU.
pytestmark = pytest.mark.usefixtures("backend")


def test_in_is_uploaded_and_never_downloaded(backend: str, rec: Recorder) -> None:
    x = np.arange(N, dtype=np.float64)
    offload(read_only, x)
    assert rec.copies() == [("h2d", "x", 8 * N)]
    assert rec.count("sync") == 0  # nothing came back, so nothing to wait for
    assert rec.count("alloc") == rec.count("free") == 1


def test_inout_is_uploaded_downloaded_then_synced(backend: str, rec: Recorder) -> None:
    x = np.arange(N, dtype=np.float64)
    y = np.ones(N)
    offload(daxpy, y, x, 2.0)
    np.testing.assert_array_equal(y, 1.0 + 2.0 * x)
    assert rec.copies() == [("h2d", "y", 8 * N), ("h2d", "x", 8 * N), ("d2h", "y", 8 * N)]
    assert rec.kinds("alloc", "free") == ["h2d", "h2d", "launch", "d2h", "sync"]


def test_out_is_allocated_without_upload_and_downloaded(backend: str, rec: Recorder) -> None:
    out = np.zeros(N)
    offload(fill, out, 3.5)
    assert np.all(out == 3.5)
    assert rec.copies() == [("d2h", "out", 8 * N)]
    assert rec.of("alloc")[0].param == "out" and rec.bytes("alloc") == 8 * N
    assert rec.kinds("free") == ["alloc", "launch", "d2h", "sync"]


def test_owned_is_uploaded_never_downloaded_and_frozen(backend: str, rec: Recorder) -> None:
    scratch = np.ones(N)
    out = np.zeros(N)
    offload(consume, scratch, out)
    assert rec.copies() == [("h2d", "scratch", 8 * N), ("d2h", "out", 8 * N)]
    assert np.all(out == 2.0)
    assert np.all(scratch == 1.0), "the kernel's writes to an Owned array never come back"
    assert not scratch.flags.writeable


def test_every_launch_outside_a_region_copies_again(backend: str, rec: Recorder) -> None:
    x, y = np.ones(N), np.zeros(N)
    for _ in range(5):
        offload(daxpy, y, x, 1.0)
    assert rec.count("h2d") == 10 and rec.count("d2h") == 5 and rec.count("sync") == 5
    assert rec.bytes("h2d") == 10 * 8 * N
    np.testing.assert_array_equal(y, 5.0)


def test_region_maps_once_and_copies_back_only_what_was_written(backend: str, rec: Recorder) -> None:
    x = np.arange(N, dtype=np.float64)
    y = np.zeros(N)
    with region(x, y):
        for _ in range(100):
            offload(daxpy, y, x, 1.0)
        inside = rec.copies()
    assert inside == [("h2d", "x", 8 * N), ("h2d", "y", 8 * N)], "no copies inside the region"
    assert rec.copies()[2:] == [("d2h", "y", 8 * N)], "x was only read, so only y comes back"
    assert rec.count("sync") == 1
    np.testing.assert_array_equal(y, 100.0 * x)


def test_region_copies_nothing_back_when_no_launch_wrote(backend: str, rec: Recorder) -> None:
    x = np.ones(N)
    with region(x):
        offload(read_only, x)
    assert rec.copies() == [("h2d", "x", 8 * N)]
    assert rec.count("sync") == 0


def test_region_out_allocates_without_upload(backend: str, rec: Recorder) -> None:
    z = np.full(N, 7.0)
    with region(Out(z)):
        offload(fill, z, 1.0)
    assert rec.copies() == [("d2h", "z", 8 * N)]
    assert rec.count("alloc") == 1
    assert np.all(z == 1.0)


def test_region_out_never_written_leaves_host_untouched(backend: str, rec: Recorder) -> None:
    z = np.full(N, 7.0)
    with region(Out(z)):
        pass
    assert rec.copies() == []
    assert np.all(z == 7.0)


def test_unlisted_array_in_a_region_is_copied_per_launch(backend: str, rec: Recorder) -> None:
    x, y = np.ones(N), np.zeros(N)
    with region(y):
        for _ in range(3):
            offload(daxpy, y, x, 1.0)
    x_copies = [c for c in rec.copies() if c[1] == "x"]
    assert x_copies == [("h2d", "x", 8 * N)] * 3
    assert [c for c in rec.copies() if c[1] == "y"] == [("h2d", "y", 8 * N), ("d2h", "y", 8 * N)]
    assert all(e.region is not None for e in rec.of("h2d", "x")), "the events say which region was active"
    np.testing.assert_array_equal(y, 3.0)


def test_owned_inside_a_region_is_consumed_and_not_copied_back(backend: str, rec: Recorder) -> None:
    scratch, out = np.ones(N), np.zeros(N)
    with region(scratch, Out(out)):
        offload(consume, scratch, out)
    assert rec.copies() == [("h2d", "scratch", 8 * N), ("d2h", "out", 8 * N)]
    assert not scratch.flags.writeable and np.all(scratch == 1.0)


def test_naive_mode_makes_regions_map_nothing(backend: str, rec: Recorder) -> None:
    offload_core.set_mode("naive")
    x, y = np.ones(N), np.zeros(N)
    with region(x, y) as r:
        for _ in range(4):
            offload(daxpy, y, x, 1.0)
        assert not r.is_resident(y)
        r.update_host(y)  # a no-op: the host copy is the only copy
        r.update_device(y)
    assert rec.count("h2d") == 8 and rec.count("d2h") == 4 and rec.count("sync") == 4
    assert {e.mode for e in rec.events} == {"naive"}
    assert rec.kinds()[0] == "region_enter" and rec.kinds()[-1] == "region_exit"
    np.testing.assert_array_equal(y, 4.0)


def test_naive_and_batched_compute_the_same(backend: str) -> None:
    results = {}
    for mode in ("naive", "batched"):
        offload_core.set_mode(mode)
        x = np.linspace(0, 1, N)
        y = np.zeros(N)
        with region(x, y):
            for i in range(10):
                offload(daxpy, y, x, float(i))
                offload(scale, y, 0.5)
        results[mode] = y
    np.testing.assert_array_equal(results["naive"], results["batched"])


def test_non_contiguous_arguments_copy_exactly_their_bytes(backend: str, rec: Recorder) -> None:
    big = np.arange(4 * N, dtype=np.float64)
    view = big[::4]
    out = np.zeros(N)
    offload(copy, out, view)
    assert rec.copies() == [("h2d", "src", 8 * N), ("d2h", "dst", 8 * N)]
    np.testing.assert_array_equal(out, big[::4])


def test_results_are_written_into_the_callers_array(backend: str) -> None:
    y = np.zeros(N)
    before = y.__array_interface__["data"][0]
    offload(fill, y, 2.0)
    assert y.__array_interface__["data"][0] == before and np.all(y == 2.0)


def test_fortran_order_arrays_keep_their_layout(backend: str, rec: Recorder) -> None:
    a = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    out = np.zeros((3, 4), order="F")
    offload(copy, out, a)
    np.testing.assert_array_equal(out, a)
    assert out.flags.f_contiguous


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex128])
def test_bytes_follow_the_dtype(backend: str, rec: Recorder, dtype: type) -> None:
    x = np.ones(N, dtype=dtype)
    offload(read_only, x)
    assert rec.bytes("h2d") == N * np.dtype(dtype).itemsize
