"""Regions: residency of views, nesting, access modes, update_host/update_device,
host-write checking, exceptions, and the mode/backend guards."""

from __future__ import annotations

import numpy as np
import pytest

import offload_core
from offload_core import BackendError, BorrowError, In, OffloadError, Out, UseAfterMoveError, offload, region

from ..conftest import Recorder
from .kit import Boom, consume, copy, daxpy, fill, half_then_fail, read_only, scale

N = 64

# The whole module runs on every backend: NumPy here, CuPy too where there is a GPU.
pytestmark = pytest.mark.usefixtures("backend")


# ---------------------------------------------------------------- views of mapped arrays
@pytest.mark.parametrize(
    "view",
    [lambda u: u[1:-1], lambda u: u[::-1], lambda u: u.reshape(8, 8)[2], lambda u: u[:]],
    ids=["slice", "reversed", "reshape-row", "full-view"],
)
def test_views_of_a_mapped_array_are_resident(backend: str, rec: Recorder, view) -> None:  # type: ignore[no-untyped-def]
    u = np.zeros(N)
    with region(u) as r:
        v = view(u)
        assert r.is_resident(v)
        offload(fill, v, 1.0)
        offload(scale, u, 2.0)
    assert rec.copies() == [("h2d", "u", 8 * N), ("d2h", "u", 8 * N)]
    expected = np.zeros(N)
    view(expected)[...] = 1.0
    np.testing.assert_array_equal(u, expected * 2.0)


def test_views_of_a_2d_fortran_array(backend: str, rec: Recorder) -> None:
    m = np.asfortranarray(np.zeros((6, 5)))
    with region(m):
        offload(fill, m[:, 2], 3.0)
        offload(fill, m.T[1], 4.0)
    expected = np.zeros((6, 5))
    expected[:, 2] = 3.0
    expected[:, 1] = 4.0  # m.T[1] is column 1 of m
    np.testing.assert_array_equal(m, expected)
    assert rec.count("h2d") == 1 and rec.count("d2h") == 1


def test_view_of_a_non_contiguous_mapping_is_refused(rec: Recorder) -> None:
    big = np.zeros(2 * N)
    strided = big[::2]
    with region(strided):
        offload(fill, strided, 1.0)  # the mapped array itself is fine
        with pytest.raises(BorrowError, match="whose host array is not contiguous"):
            offload(fill, strided[1:], 2.0)
    assert np.all(big[::2] == 1.0) and np.all(big[1::2] == 0.0)


def test_partial_overlap_with_a_mapping_is_refused(rec: Recorder) -> None:
    u = np.zeros(N)
    with region(u[: N // 2]):
        rec.clear()
        with pytest.raises(BorrowError, match="overlaps 'region argument 1' \\(mapped by a region at .*\\) without lying inside it"):
            offload(fill, u[N // 4 :], 1.0)
        with pytest.raises(BorrowError, match="map the larger array first"):
            with region(u):
                pass
    assert rec.copies() == []


def test_overlapping_arrays_in_one_region(rec: Recorder) -> None:
    u = np.zeros(N)
    with pytest.raises(BorrowError, match="'b' and 'a' overlap; map only the larger array"):
        a, b = u[:40], u[20:]
        with region(a, b):
            pass
    with region(u, u[3:9]) as r:  # a view of an array listed too is just resident
        assert r.is_resident(u[3:9])
    assert rec.count("h2d") == 1


# ---------------------------------------------------------------- access modes
def test_in_mapping_refuses_mutable_launches(backend: str, rec: Recorder) -> None:
    x = np.ones(N)
    with region(In(x)):
        offload(read_only, x)
        with pytest.raises(BorrowError, match="is mapped In \\(read-only\\), so it cannot be passed as InOut"):
            offload(scale, x, 2.0)
    assert rec.copies() == [("h2d", "x", 8 * N)]
    assert np.all(x == 1.0)


def test_out_mapping_cannot_be_read_before_it_is_written(backend: str, rec: Recorder) -> None:
    z = np.ones(N)
    with region(Out(z)):
        with pytest.raises(BorrowError, match="is mapped Out and no launch has written it yet"):
            offload(read_only, z)
        offload(fill, z, 5.0)
        offload(read_only, z)  # written now
        offload(scale, z, 2.0)
    assert np.all(z == 10.0)


def test_out_request_of_a_read_only_array(rec: Recorder) -> None:
    z = np.ones(N)
    z.flags.writeable = False
    with pytest.raises(BorrowError, match="'z' is mapped Out but the host array is read-only"):
        with region(Out(z)):
            pass


def test_owned_cannot_be_mapped_and_region_takes_arrays_only() -> None:
    with pytest.raises(TypeError, match="Owned\\(...\\) cannot be mapped by a region"):
        offload_core.Owned(np.ones(3))
    with pytest.raises(TypeError, match="region\\(\\) argument 2 is list"):
        region(np.ones(3), [1, 2])  # type: ignore[arg-type]


def test_moved_mapped_array_cannot_be_used_again(rec: Recorder) -> None:
    scratch, out = np.ones(N), np.zeros(N)
    with region(scratch, out):
        offload(consume, scratch, out)
        with pytest.raises(UseAfterMoveError, match="was moved into an Owned parameter"):
            offload(read_only, scratch)
        with pytest.raises(BorrowError, match="only a whole mapped array can be moved"):
            offload(consume, out[:4], np.zeros(4))
    with pytest.raises(UseAfterMoveError):
        offload(read_only, scratch)


# ---------------------------------------------------------------- nesting
def test_nested_regions_are_reference_counted(backend: str, rec: Recorder) -> None:
    x, y = np.ones(N), np.zeros(N)
    with region(x, y):
        with region(y) as inner:
            offload(daxpy, y, x, 1.0)
        assert rec.count("d2h") == 0, "the inner exit only drops a reference"
        assert inner.is_resident(y) is False  # the inner region is over
        with region(y):
            offload(daxpy, y, x, 1.0)
    assert rec.copies() == [("h2d", "x", 8 * N), ("h2d", "y", 8 * N), ("d2h", "y", 8 * N)]
    np.testing.assert_array_equal(y, 2.0)


def test_inner_region_maps_and_releases_its_own_arrays(backend: str, rec: Recorder) -> None:
    x, y, z = np.ones(N), np.zeros(N), np.zeros(N)
    with region(x, y):
        with region(y, Out(z)):
            offload(daxpy, y, x, 1.0)
            offload(copy, z, y)
        assert rec.copies()[-1] == ("d2h", "z", 8 * N), "z is released by the inner region"
        np.testing.assert_array_equal(z, 1.0)
        assert y[0] == 0.0, "y is still only on the device"
    np.testing.assert_array_equal(y, 1.0)


def test_inner_region_of_a_view_keeps_the_outer_mapping(rec: Recorder) -> None:
    u = np.zeros(N)
    with region(u):
        with region(u[10:20]) as r:
            assert r.is_resident(u[10:20])
            offload(fill, u[10:20], 1.0)
        assert rec.count("d2h") == 0
    assert rec.count("h2d") == 1 and rec.count("d2h") == 1
    assert u[10:20].sum() == 10.0 and u.sum() == 10.0


def test_region_events_nest(rec: Recorder) -> None:
    x = np.ones(N)
    with region(x) as outer:
        with region(x) as inner:
            offload(read_only, x)
    enter = rec.of("region_enter")
    assert [e.region for e in enter] == [outer.id, inner.id]
    assert rec.of("launch")[0].region == inner.id
    assert [e.region for e in rec.of("region_exit")] == [inner.id, outer.id]
    assert enter[0].nbytes == 8 * N and enter[1].nbytes == 0


def test_region_is_reusable_but_not_reentrant(rec: Recorder) -> None:
    x = np.ones(N)
    r = region(x)
    with r:
        with pytest.raises(OffloadError, match="this region is already active"):
            with r:
                pass
    with r:
        pass
    assert rec.count("h2d") == 2


# ---------------------------------------------------------------- update_host / update_device
def test_update_host_makes_device_results_visible(backend: str, rec: Recorder) -> None:
    y, x = np.zeros(N), np.ones(N)
    with region(x, y) as r:
        offload(daxpy, y, x, 1.0)
        assert y[0] == 0.0
        r.update_host(y)
        assert np.all(y == 1.0)
        n_d2h = rec.count("d2h")
    assert n_d2h == 1 and rec.count("d2h") == 1, "synchronised and unwritten since: no copy back at exit"


def test_update_host_then_more_writes_copies_back_again(backend: str, rec: Recorder) -> None:
    y, x = np.zeros(N), np.ones(N)
    with region(x, y) as r:
        offload(daxpy, y, x, 1.0)
        r.update_host(y)
        offload(daxpy, y, x, 1.0)
    assert rec.count("d2h") == 2
    np.testing.assert_array_equal(y, 2.0)


def test_update_device_pushes_host_writes(backend: str, rec: Recorder) -> None:
    y, x = np.zeros(N), np.ones(N)
    with region(x, y) as r:
        y[:] = 10.0
        r.update_device(y)
        offload(daxpy, y, x, 1.0)
    np.testing.assert_array_equal(y, 11.0)
    assert rec.copies() == [("h2d", "x", 8 * N), ("h2d", "y", 8 * N), ("h2d", "y", 8 * N), ("d2h", "y", 8 * N)]


def test_update_of_a_view_moves_only_its_bytes(backend: str, rec: Recorder) -> None:
    u = np.zeros(N)
    with region(u) as r:
        offload(fill, u, 1.0)
        r.update_host(u[:8])
        assert u[:8].sum() == 8.0 and u[8:].sum() == 0.0
        u[8:16] = 5.0
        r.update_device(u[8:16])
        offload(scale, u, 2.0)
    assert [c for c in rec.copies()][1:3] == [("d2h", "u", 64), ("h2d", "u", 64)]
    assert rec.copies()[-1] == ("d2h", "u", 8 * N), "a partial update leaves the array written"
    np.testing.assert_array_equal(u[:8], 2.0)
    np.testing.assert_array_equal(u[8:16], 10.0)


def test_update_of_an_unmapped_array_or_outside_the_block(rec: Recorder) -> None:
    x, other = np.ones(N), np.ones(N)
    r = region(x)
    with r:
        with pytest.raises(BorrowError, match="update_host\\(\\): the array is not mapped by an active region"):
            r.update_host(other)
    with pytest.raises(OffloadError, match="update_device\\(\\) needs an active region"):
        r.update_device(x)


def test_update_device_initialises_an_out_mapping(rec: Recorder) -> None:
    z = np.full(N, 3.0)
    with region(Out(z)) as r:
        with pytest.raises(BorrowError, match="mapped Out and no launch has written it yet"):
            r.update_host(z)
        r.update_device(z)
        offload(scale, z, 2.0)
    np.testing.assert_array_equal(z, 6.0)


# ---------------------------------------------------------------- check=True
def test_check_catches_a_host_write_at_the_next_launch(rec: Recorder) -> None:
    u = np.ones(N)
    with region(u, check=True):
        u[0] = 3.0
        with pytest.raises(BorrowError) as exc:
            offload(scale, u, 2.0)
        assert "host code wrote 'u' (mapped by a region at " in str(exc.value)
        assert "\n" not in str(exc.value)
        u[0] = 1.0  # undo, so the exit check passes
    np.testing.assert_array_equal(u, 1.0)


def test_check_catches_a_host_write_at_exit_and_keeps_it(rec: Recorder) -> None:
    u = np.ones(N)
    with pytest.raises(BorrowError, match="host code wrote 'u' .* its device results were discarded and the host writes kept"):
        with region(u, check=True):
            offload(scale, u, 2.0)
            u[5] = 7.0
    assert u[5] == 7.0 and u[0] == 1.0
    assert rec.count("d2h") == 0


def test_check_protects_update_host_from_overwriting(rec: Recorder) -> None:
    u = np.ones(N)
    with region(u, check=True) as r:
        offload(scale, u, 2.0)
        u[1] = 9.0
        with pytest.raises(BorrowError, match="update_host would overwrite that"):
            r.update_host(u)
        r.update_device(u)  # the host write is pushed, so the region is consistent again
        offload(scale, u, 2.0)
    assert u[1] == 18.0 and u[0] == 2.0


def test_check_defaults_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLOAD_CHECK", "1")
    u = np.ones(N)
    with pytest.raises(BorrowError):
        with region(u):
            u[0] = 2.0
    monkeypatch.setenv("OFFLOAD_CHECK", "maybe")
    with pytest.raises(ValueError, match="OFFLOAD_CHECK='maybe' is not a boolean"):
        region(u)


def test_no_check_means_host_writes_are_overwritten_at_exit(rec: Recorder) -> None:
    u = np.ones(N)
    with region(u):
        offload(scale, u, 2.0)
        u[0] = 100.0  # a bug the linter's OFF203 and check=True exist to catch
    assert u[0] == 2.0


# ---------------------------------------------------------------- exceptions
def test_region_left_by_an_exception_copies_nothing_back(backend: str, rec: Recorder) -> None:
    y, x = np.zeros(N), np.ones(N)
    with pytest.raises(KeyError):
        with region(x, y):
            offload(daxpy, y, x, 1.0)
            raise KeyError("host code failed")
    assert np.all(y == 0.0)
    assert rec.count("d2h") == 0 and rec.count("free") == 2


def test_kernel_failing_inside_a_region_poisons_what_it_held(backend: str, rec: Recorder) -> None:
    y, x = np.arange(float(N)), np.ones(N)
    before = y.copy()
    with region(x, y) as r:
        with pytest.raises(Boom):
            offload(half_then_fail, y, x)
        with pytest.raises(BorrowError, match="the device copy of 'y' .* is undefined \\(kernel 'half_then_fail' raised Boom"):
            offload(daxpy, y, x, 1.0)
        offload(read_only, x)  # x was only read: still fine
        r.update_device(y)  # re-upload clears the poison
        offload(daxpy, y, x, 1.0)
    np.testing.assert_array_equal(y, before + 1.0)


def test_poisoned_array_is_not_copied_back_at_exit(rec: Recorder) -> None:
    y, x = np.arange(float(N)), np.ones(N)
    before = y.copy()
    with pytest.warns(RuntimeWarning, match="'y' .* was not copied back, its device copy is undefined"):
        with region(x, y):
            offload(daxpy, y, x, 1.0)
            with pytest.raises(Boom):
                offload(half_then_fail, y, x)
    np.testing.assert_array_equal(y, before)


# ---------------------------------------------------------------- guards
def test_mode_and_backend_cannot_change_inside_a_region() -> None:
    with region(np.ones(3)):
        with pytest.raises(OffloadError, match="cannot change the mode inside a region"):
            offload_core.set_mode("naive")
        with pytest.raises(BackendError, match="cannot change the backend inside a region"):
            offload_core.set_backend("numpy")
    offload_core.set_mode("naive")
    with region(np.ones(3)):
        with pytest.raises(OffloadError):
            offload_core.set_mode("batched")


# ---------------------------------------------------------------- launch plans (the repeated-launch fast path)
def test_repeated_launches_use_a_plan_that_any_mapping_change_drops() -> None:
    x, y = np.ones(N), np.zeros(N)
    with region(x, y) as r:
        offload(daxpy, y, x, 1.0)
        assert len(daxpy.plans) == 1
        offload(daxpy, y, x, 2.0)  # planned: scalars still cast, writes still recorded
        with region(np.ones(4)):  # a new mapping anywhere drops every plan
            assert daxpy.plans == []
        offload(daxpy, y, x, 1.0)
        r.update_host(y)
        assert np.all(y == 4.0)
    assert daxpy.plans == [], "no plan outlives its region (it would pin device memory)"
    np.testing.assert_array_equal(y, 4.0)


def test_a_plan_never_skips_a_borrow_check() -> None:
    x, y = np.ones(N), np.zeros(N)
    with region(x, y) as r:
        offload(daxpy, y, x, 1.0)
        offload(daxpy, y, x, 1.0)
        y.flags.writeable = False
        with pytest.raises(BorrowError, match="is InOut but the host array is read-only"):
            offload(daxpy, y, x, 1.0)
        y.flags.writeable = True
        with pytest.raises(TypeError, match="takes a scalar"):
            offload(daxpy, y, x, "2")
        with pytest.raises(Boom):
            offload(half_then_fail, y, x)
        with pytest.raises(BorrowError, match="is undefined"):
            offload(daxpy, y, x, 1.0)  # the poison dropped the plan
        r.update_device(y)
        offload(daxpy, y, x, 1.0)
        offload(consume, x, np.zeros(N))
        with pytest.raises(UseAfterMoveError):
            offload(daxpy, y, x, 1.0)


def test_ping_pong_launches_keep_one_plan_each() -> None:
    a, b = np.arange(float(N)), np.zeros(N)
    with region(a, Out(b)):
        for _ in range(5):
            offload(copy, b, a)
            offload(copy, a, b)
        assert len(copy.plans) == 2
    np.testing.assert_array_equal(a, np.arange(float(N)))


def test_planned_launches_are_still_observed(rec: Recorder) -> None:
    x, y = np.ones(N), np.zeros(N)
    with region(x, y):
        for _ in range(5):
            offload(daxpy, y, x, 1.0)
    assert rec.count("launch") == 5
    assert [e.launch for e in rec.of("launch")] == sorted(e.launch for e in rec.of("launch"))


def test_region_names_override_the_variable_names(rec: Recorder) -> None:
    arrays = {"u": np.zeros(N)}
    with region(*arrays.values(), names=["u"]):
        pass
    assert rec.of("h2d")[0].param == "u"
    with pytest.raises(TypeError, match="region\\(names=...\\) takes one non-empty string per array \\(1\\)"):
        region(np.zeros(2), names=["a", "b"])
