"""Threads and asyncio tasks: whose regions a launch sees, and launches on one array from two threads.

Real threads, real interleaving: the switch interval is shortened so that
the interpreter changes threads inside launches, as a loaded machine does.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any, Callable, Iterator

import numpy as np
import pytest

from offload_core import BorrowError, InOut, OffloadError, kernel, offload, region

from ..conftest import Recorder, host
from .kit import daxpy

N = 200_000  # large enough that NumPy gives up the interpreter lock inside a copy
LAUNCHES = 200

# NumPy here, CuPy too where there is a GPU (`pytest -m gpu`); the capture test stays on NumPy.
pytestmark = pytest.mark.usefixtures("backend")


@kernel
def bump(y: InOut) -> None:
    y += 1.0


@pytest.fixture(autouse=True)
def _busy_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _in_threads(*targets: Callable[[], Any], names: tuple[str, ...] = ()) -> list[BaseException | None]:
    """Run each target in its own thread; the exception each raised, or None."""
    errors: list[BaseException | None] = [None] * len(targets)

    def run(i: int) -> None:
        try:
            targets[i]()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,), name=(names[i] if i < len(names) else None))
               for i in range(len(targets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a thread hung"
    return errors


# ------------------------------------------------- (a) another thread's region

def test_a_launch_on_an_array_another_thread_has_mapped_is_refused(rec: Recorder) -> None:
    x = np.ones(64)
    y = np.zeros(64)
    z = np.zeros(64)
    mapped, launched = threading.Event(), threading.Event()

    def holder() -> None:
        with region(x, y):
            offload(daxpy, y, x, 1.0)  # and again, so that a launch plan exists
            offload(daxpy, y, x, 1.0)
            mapped.set()
            assert launched.wait(30)

    def other() -> None:
        assert mapped.wait(30)
        try:
            with pytest.raises(BorrowError) as refused:
                offload(daxpy, y, x, 1.0)
            assert "parameter 'y' (InOut): 'y'" in str(refused.value) and "belongs to a region of thread 'holder'" in str(refused.value)
            assert "region(..., shared=True)" in str(refused.value)
            offload(daxpy, z, np.full(64, 3.0), 1.0)  # arrays no region holds work as ever, meanwhile
        finally:
            launched.set()

    assert _in_threads(holder, other, names=("holder", "other")) == [None, None]
    np.testing.assert_array_equal(host(y), 2.0)  # the holder's two launches, and nothing of the refused one
    np.testing.assert_array_equal(host(z), 3.0)
    regions = {e.region for e in rec.of("launch")}
    assert len(rec.of("launch")) == 3 and None in regions, "the other thread's launch is in no region"


def test_two_threads_cannot_map_one_array_privately() -> None:
    y = np.zeros(64)
    mapped, tried = threading.Event(), threading.Event()

    def holder() -> None:
        with region(y):
            mapped.set()
            assert tried.wait(30)

    def second() -> None:
        assert mapped.wait(30)
        try:
            with pytest.raises(BorrowError, match="belongs to a region of thread 'first'"):
                with region(y[8:16]):
                    pass
        finally:
            tried.set()

    assert _in_threads(holder, second, names=("first", "second")) == [None, None]


def test_update_host_from_another_thread_is_refused() -> None:
    y = np.zeros(64)
    box: list[region] = []
    mapped, tried = threading.Event(), threading.Event()

    def holder() -> None:
        with region(y) as r:
            box.append(r)
            offload(bump, y)
            mapped.set()
            assert tried.wait(30)

    def other() -> None:
        assert mapped.wait(30)
        try:
            with pytest.raises(BorrowError, match="update_host\\(\\): 'y'"):
                box[0].update_host(y)
        finally:
            tried.set()

    assert _in_threads(holder, other, names=("holder", "other")) == [None, None]
    np.testing.assert_array_equal(y, 1.0)


# ------------------------------------------------ (b) two threads, one array

def test_two_threads_launching_on_one_array_lose_no_update() -> None:
    y = np.zeros(N)

    def work() -> None:
        for _ in range(LAUNCHES):
            offload(bump, y)

    assert _in_threads(work, work) == [None, None]
    np.testing.assert_array_equal(y, 2.0 * LAUNCHES)


def test_a_shared_region_serialises_the_launches_of_every_thread(rec: Recorder) -> None:
    y = np.zeros(N)

    def work() -> None:
        for _ in range(LAUNCHES):
            offload(bump, y)

    with region(y, shared=True):
        assert _in_threads(work, work, work) == [None, None, None]
        offload(bump, y)
    np.testing.assert_array_equal(y, 3.0 * LAUNCHES + 1)
    assert [(e.kind, e.param) for e in rec.events if e.kind in ("h2d", "d2h")] == [("h2d", "y"), ("d2h", "y")]
    assert len({e.launch for e in rec.of("launch")}) == 3 * LAUNCHES + 1, "every launch has its own index"


def test_a_shared_region_waits_for_launches_under_way_and_later_ones_copy() -> None:
    y = np.zeros(N)
    started = threading.Event()
    done: list[int] = []

    def work() -> None:
        started.set()
        for _ in range(LAUNCHES):
            offload(bump, y)  # resident while the region lasts, copying after it
        done.append(LAUNCHES)

    def owner() -> None:
        with region(y, shared=True):
            assert started.wait(30)
            offload(bump, y)

    assert _in_threads(owner, work) == [None, None]
    np.testing.assert_array_equal(y, LAUNCHES + 1.0)
    assert done == [LAUNCHES]


def test_a_shared_region_cannot_widen_a_private_one() -> None:
    y = np.zeros(8)
    with region(y):
        with pytest.raises(BorrowError, match="open the outer region with shared=True"):
            with region(y, shared=True):
                pass


def test_a_capture_records_only_its_own_thread(backend: str) -> None:
    if backend != "numpy":
        pytest.skip("a CUDA stream capture and another thread's launches: not run on a GPU yet")
    y = np.zeros(64)
    z = np.zeros(64)
    recording, launched = threading.Event(), threading.Event()

    def other() -> None:
        assert recording.wait(30)
        try:
            offload(bump, z)  # runs now: not recorded into the main thread's capture
        finally:
            launched.set()

    with region(y) as r:
        worker = threading.Thread(target=other)
        worker.start()
        with r.capture() as step:
            offload(bump, y)
            recording.set()
            assert launched.wait(30)
        worker.join(30)
        np.testing.assert_array_equal(z, 1.0)
        step.replay(times=3)
        with pytest.raises(OffloadError, match="captures do not nest"):
            with r.capture():
                with r.capture():
                    pass
    np.testing.assert_array_equal(y, 3.0)
    assert step.launches == 1


# ------------------------------------------------------------- asyncio tasks

def test_tasks_created_inside_a_region_share_it_and_other_tasks_do_not() -> None:
    async def main() -> tuple[np.ndarray, str]:
        asyncio.current_task().set_name("main")  # type: ignore[union-attr]
        y = np.zeros(8)
        entered, tried = asyncio.Event(), asyncio.Event()

        async def outsider() -> str:  # created before the region
            await entered.wait()
            try:
                offload(bump, y)
                return "launched"
            except BorrowError as exc:
                return str(exc)
            finally:
                tried.set()

        async def insider() -> None:  # created inside it: the region's data environment
            offload(bump, y)

        pending = asyncio.create_task(outsider(), name="outsider")
        with region(y):
            await asyncio.create_task(insider())
            offload(bump, y)
            entered.set()
            await tried.wait()
        return y, await pending

    y, message = asyncio.run(main())
    np.testing.assert_array_equal(y, 2.0)
    assert "belongs to a region of task 'main' on thread 'MainThread'" in message


def test_a_thread_started_inside_a_region_does_not_share_it() -> None:
    y = np.zeros(8)
    with region(y):
        errors = _in_threads(lambda: offload(bump, y))
        offload(bump, y)
    assert isinstance(errors[0], BorrowError)
    np.testing.assert_array_equal(y, 1.0)
