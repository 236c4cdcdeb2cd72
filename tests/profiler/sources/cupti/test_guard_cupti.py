"""The transfer guard over CUPTI, driven by the fake CUPTI and CUDA (no GPU): listening, riding on a recording, raising.

The CUDA calls are made from C (`through_c`), as CuPy's and PyTorch's are:
an exception raised in the callback would be swallowed there, so these
tests check that the guard's error still surfaces at the test's line.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import traceback
from typing import Iterator

import numpy as np
import pytest

from profiler import guard
from profiler.guard import TransferGuardError
from profiler.guard import watchers
from profiler.guard.watchers import SOURCES, Frames
from profiler.sources.cupti import tracer as tracer_module
from profiler.sources.cupti.frames import FrameFilter, library_folders
from profiler.sources.cupti.listeners import LISTENERS, pointer_direction
from profiler.sources.cupti.listening import listen
from profiler.sources.cupti.tracer import Tracer

from .fakelib import fakecupti
from .fakelib.fakecupti import FakeCuda, FakeCupti, through_c

HERE = os.path.abspath(__file__)
FAKE = os.path.join(os.path.dirname(fakecupti.__file__), "")


def line_of(marker: str) -> int:
    with open(HERE) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(marker))


def owners(cupti: FakeCupti) -> list[str]:
    """Whose callbacks CUPTI calls: the recording's (`Tracer`) or the guard's listening session."""
    return [fn.__qualname__.split(".")[0] for fn in cupti.native.subscribers.values()]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeCupti, FakeCuda]]:
    cupti = FakeCupti()
    monkeypatch.setattr(tracer_module, "_REGISTERED", None)
    monkeypatch.setattr(tracer_module, "_ACTIVE", None)
    monkeypatch.setattr(watchers, "FRAMES", Frames(FrameFilter(folders=(FAKE, *library_folders()))))
    monkeypatch.setattr(SOURCES, "start_cupti", lambda: listen(watchers._on_cuda, cupti, cupti.native))
    monkeypatch.setattr(SOURCES, "cupti_problem", None)
    yield cupti, FakeCuda(cupti)
    assert LISTENERS.session is None and LISTENERS.fns == (), "the last scope ended the listening session"
    assert not cupti.native.subscribers and sys.gettrace() is None


def test_a_copy_made_from_c_raises_at_the_users_line(fake: tuple[FakeCupti, FakeCuda]) -> None:
    cupti, cuda = fake
    x = np.arange(1024, dtype=np.float32)
    dev = np.zeros_like(x)
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(source="cupti"):
            assert len(cupti.native.subscribers) == 1, "a listening-only session"
            through_c(functools.partial(cuda.memcpy, dev.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D))  # marker: up
            raise AssertionError("not reached")
    line = line_of("# marker: up")
    last = traceback.extract_tb(caught.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (HERE, line)
    (v,) = caught.value.violations  # the driver call inside the runtime call is not a second copy
    assert (v.kind, v.nbytes, v.api, v.source, v.site.line) == ("h2d", 4096, "cudaMemcpy_v3020", "cupti", line)
    assert "H2D copy of 4.1 kB by tests.profiler.sources.cupti.fakelib.fakecupti.through_c -> cudaMemcpy_v3020, " \
           "forbidden by no_transfers(" in str(caught.value), "the library call the line made, and the CUDA call"
    assert np.array_equal(dev, x), "the copy itself happened; the guard raised after it"


def test_item_is_a_scalar_read_and_its_sync(fake: tuple[FakeCupti, FakeCuda]) -> None:
    cupti, cuda = fake
    src = np.array([3.5], dtype=np.float32)
    dst = np.zeros(1, dtype=np.float32)
    item = functools.partial(cuda.item, dst.ctypes.data, src.ctypes.data, 4)
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(syncs=True, source="cupti"):
            through_c(item)  # marker: item
    assert [(v.kind, v.nbytes, v.api) for v in caught.value.violations] == [
        ("d2h", 4, "cudaMemcpyAsync_v3020"), ("sync", None, "cudaStreamSynchronize_v3020")]
    assert traceback.extract_tb(caught.value.__traceback__)[-1].lineno == line_of("# marker: item")
    with guard.no_transfers(syncs=True, allow_scalars=True, source="cupti", mode="log") as g:
        through_c(item)
        cuda.item(dst.ctypes.data, src.ctypes.data, 4)
    assert g.violations == [], "a one-element read for control flow, and the sync that completes it, pass"
    with guard.no_transfers(d2h=False, syncs=True, source="cupti", mode="log") as g:
        cuda.synchronize()  # marker: plain sync
    assert [(v.kind, v.site.line) for v in g.violations] == [("sync", line_of("# marker: plain sync"))]


def test_log_names_every_line_with_counts_and_bytes(fake: tuple[FakeCupti, FakeCuda]) -> None:
    cupti, cuda = fake
    x = np.ones(256)
    dev = np.zeros_like(x)
    with guard.no_transfers(source="cupti", mode="log") as g:
        for _ in range(3):
            cuda.memcpy(dev.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D)  # marker: loop upload
        cuda.memcpy(x.ctypes.data, dev.ctypes.data, x.nbytes, cuda.D2H)  # marker: download
        cuda.launch("k")
    summary = guard.Summary(g.rules, tuple(g.violations)).describe()
    assert f"test_guard_cupti.py:{line_of('# marker: loop upload')} in" in summary
    assert "3 H2D copies (6.14 kB)" in summary and "1 D2H copy (2.05 kB)" in summary
    assert len(g.violations) == 4


def test_the_guard_rides_on_a_recording_and_listens_again_after_it(fake: tuple[FakeCupti, FakeCuda]) -> None:
    cupti, cuda = fake
    x = np.ones(64)
    dev = np.zeros_like(x)
    with guard.no_transfers(source="cupti", mode="log") as g:
        assert owners(cupti) == ["Listening"]
        t = Tracer(cupti, fingerprints=False, native=cupti.native,
                   frames=FrameFilter(folders=(FAKE, *library_folders()))).start()
        assert owners(cupti) == ["Tracer"], "one CUPTI subscriber: the recording's"
        cuda.memcpy(dev.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D)  # marker: during the recording
        capture = t.stop()
        assert owners(cupti) == ["Listening"], "the guard's session listens again"
        cuda.memcpy(x.ctypes.data, dev.ctypes.data, x.nbytes, cuda.D2H)  # marker: after it
    assert [(v.kind, v.site.line) for v in g.violations] == [
        ("h2d", line_of("# marker: during the recording")), ("d2h", line_of("# marker: after it"))]
    assert len(capture.copies) == 1, "the recording kept its own record"


def test_a_guard_opened_during_a_recording_does_not_subscribe(fake: tuple[FakeCupti, FakeCuda]) -> None:
    cupti, cuda = fake
    t = Tracer(cupti, fingerprints=False, native=cupti.native,
               frames=FrameFilter(folders=(FAKE, *library_folders()))).start()
    x = np.ones(8)
    dev = np.zeros_like(x)
    try:
        with pytest.raises(TransferGuardError):
            with guard.no_transfers(source="cupti"):
                assert owners(cupti) == ["Tracer"]
                through_c(functools.partial(cuda.memcpy, dev.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D))
    finally:
        t.stop()


def test_listening_intercepts_copies_and_syncs_only(fake: tuple[FakeCupti, FakeCuda]) -> None:
    cupti, cuda = fake
    with guard.no_transfers(source="cupti", mode="log", syncs=True):
        enabled = {cbid for _, _, cbid in cupti.native.enabled}
        assert int(fakecupti.driver_api_trace_cbid.cuMemcpyHtoD_v2) in enabled
        assert int(fakecupti.runtime_api_trace_cbid.cudaStreamSynchronize_v3020) in enabled
        assert int(fakecupti.driver_api_trace_cbid.cuLaunchKernel) not in enabled, "launches cost nothing"


def test_another_threads_cuda_copies_are_not_blamed(fake: tuple[FakeCupti, FakeCuda]) -> None:
    import threading

    cupti, cuda = fake
    x = np.ones(8)
    dev = np.zeros_like(x)
    with guard.no_transfers(source="cupti", mode="log") as g:
        t = threading.Thread(target=cuda.memcpy, args=(dev.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D))
        t.start()
        t.join(10)
    assert g.violations == []


class _Driver:
    """cuPointerGetAttribute over a set of 'device' addresses."""

    def __init__(self, device: set[int]) -> None:
        self.device = device

    def cuPointerGetAttribute(self, out: object, attribute: int, pointer: ctypes.c_uint64) -> int:
        if pointer.value not in self.device:
            return 1  # CUDA_ERROR_INVALID_VALUE: memory CUDA does not know, i.e. pageable host memory
        ctypes.cast(out, ctypes.POINTER(ctypes.c_uint)).contents.value = 2
        return 0


def test_a_default_kind_copy_gets_its_direction_from_the_pointers() -> None:
    driver = _Driver({0x1000})
    assert pointer_direction(0x1000, 0x2000, driver) == "h2d"
    assert pointer_direction(0x2000, 0x1000, driver) == "d2h"
    assert pointer_direction(0x2000, 0x3000, driver) == "h2h"


@pytest.mark.parametrize("recording", [False, True])
def test_a_driver_sync_inside_a_runtime_copy_is_part_of_the_copy(fake: tuple[FakeCupti, FakeCuda],
                                                                  recording: bool) -> None:
    cupti, cuda = fake
    x = np.ones(8)
    dev = np.zeros_like(x)
    params = fakecupti.MemcpyParams(dst=dev.ctypes.data, src=x.ctypes.data, count=x.nbytes, kind=cuda.H2D)
    inner = functools.partial(cuda._call, fakecupti.CallbackDomain.DRIVER_API, "cuStreamSynchronize", None,
                              lambda: None)
    with guard.no_transfers(syncs=True, source="cupti", mode="log") as g:
        t = Tracer(cupti, fingerprints=False, native=cupti.native,
                   frames=FrameFilter(folders=(FAKE, *library_folders()))).start() if recording else None
        cuda._call(fakecupti.CallbackDomain.RUNTIME_API, "cudaMemcpy_v3020", params, inner)  # marker: blocking copy
        cuda.synchronize()  # marker: a sync of the program's
        if t is not None:
            t.stop()
    assert [(v.kind, v.site.line) for v in g.violations] == [
        ("h2d", line_of("# marker: blocking copy")), ("sync", line_of("# marker: a sync of the program's"))]
