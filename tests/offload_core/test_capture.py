"""r.capture(): launches recorded once, replayed many times, with no copies and the same results."""

from __future__ import annotations

import numpy as np
import pytest

import offload_core
from offload_core import BorrowError, OffloadError, Out, UseAfterMoveError, offload, region

from ..conftest import Recorder
from .kit import consume, daxpy, scale

pytestmark = pytest.mark.usefixtures("backend")
N = 256


def test_capture_records_without_running_and_replays(rec: Recorder) -> None:
    x, y = np.ones(N), np.zeros(N)
    with region(x, y) as r:
        with r.capture() as g:
            offload(daxpy, y, x, 1.0)
            offload(scale, y, 2.0)
        assert g.launches == 2
        r.update_host(y)
        assert np.all(y == 0.0), "recording runs nothing"
        g.replay()
        g.replay(times=3)
    # four replays of y = 2 * (y + 1): 2, 6, 14, 30
    np.testing.assert_array_equal(y, 30.0)
    assert rec.count("h2d") == 2 and rec.count("d2h") == 2  # entry, update_host, exit: never per launch
    graph_launches = [e for e in rec.of("launch") if e.kernel == "graph:daxpy+scale"]
    assert len(graph_launches) == 4


def test_capture_matches_the_uncaptured_loop() -> None:
    results = []
    for captured in (False, True):
        x, y = np.linspace(0, 1, N), np.zeros(N)
        with region(x, y) as r:
            if captured:
                with r.capture() as g:
                    offload(daxpy, y, x, 0.5)
                g.replay(times=10)
            else:
                for _ in range(10):
                    offload(daxpy, y, x, 0.5)
        results.append(y)
    np.testing.assert_array_equal(results[0], results[1])


def test_a_captured_launch_may_not_copy(rec: Recorder) -> None:
    x, y = np.ones(N), np.zeros(N)
    with region(y) as r:
        with pytest.raises(BorrowError, match="offload\\(daxpy\\) inside r.capture\\(\\) has an argument no region keeps resident"):
            with r.capture():
                offload(daxpy, y, x, 1.0)
    assert rec.count("h2d") == 1  # y at entry only


def test_replay_needs_the_region_and_a_finished_capture() -> None:
    x, y = np.ones(N), np.zeros(N)
    with region(x, y) as r:
        with r.capture() as g:
            with pytest.raises(OffloadError, match="replay\\(\\) is called after the capture's with block"):
                g.replay()
            with pytest.raises(OffloadError, match="captures do not nest"):
                with r.capture():
                    pass
            offload(daxpy, y, x, 1.0)
        with pytest.raises(OffloadError, match="a capture records once"):
            with g:
                pass
        with pytest.raises(ValueError, match="non-negative int"):
            g.replay(times=-1)
    with pytest.raises(OffloadError, match="replays only inside the region that recorded it"):
        g.replay()
    with pytest.raises(OffloadError, match="capture\\(\\) needs an active region"):
        r.capture()


def test_replay_refuses_moved_arrays() -> None:
    x, y = np.ones(N), np.zeros(N)
    with region(x, y) as r:
        with r.capture() as g:
            offload(daxpy, y, x, 1.0)
        offload(consume, x, np.zeros(N))  # x moves (the out array is not resident: copied)
        with pytest.raises(UseAfterMoveError, match="was moved into an Owned parameter since the capture"):
            g.replay()


def test_naive_mode_replays_through_offload_with_copies(rec: Recorder) -> None:
    offload_core.set_mode("naive")
    x, y = np.ones(N), np.zeros(N)
    with region(x, y) as r:
        with r.capture() as g:
            offload(daxpy, y, x, 1.0)
        assert rec.count("launch") == 0
        g.replay(times=3)
    assert rec.count("launch") == 3 and rec.count("h2d") == 6 and rec.count("d2h") == 3
    np.testing.assert_array_equal(y, 3.0)


def test_a_recorded_write_initialises_an_out_mapping_for_later_recorded_reads() -> None:
    from .kit import copy, fill

    x, z = np.ones(N), np.zeros(N)
    with region(x, Out(z)) as r:
        with r.capture() as g:
            offload(fill, z, 3.0)
            offload(copy, x, z)  # reads z, which the recorded fill will have written
        g.replay()
    assert np.all(x == 3.0) and np.all(z == 3.0)
    z2 = np.zeros(N)
    with region(Out(z2)) as r:
        with pytest.raises(RuntimeError):
            with r.capture():
                offload(fill, z2, 1.0)
                raise RuntimeError("abandoned")
        with pytest.raises(BorrowError, match="no launch has written it yet"):
            offload(copy, np.zeros(N), z2)
