"""The live tracer's logic, driven by a fake CUPTI and CUDA runtime (no GPU needed).

The fake builds the real callback and parameter structs in memory, so these
tests check what the hot path reads from them: the correlation id, the
call site of the Python statement that made the call, host pointers, and
fingerprints taken only once the bytes are final and only for calls that
succeeded.
"""

from __future__ import annotations

import hashlib
import os
import time

import numpy as np
import pytest

from offload_core import borrows
from profiler.errors import ProfilerError
from profiler.sources.cupti import tracer as tracer_module
from profiler.sources.cupti.convert import convert
from profiler.sources.cupti.frames import FrameFilter
from profiler.sources.cupti.tracer import Tracer

from .fakelib import fakecupti
from .fakelib.fakecupti import FakeCuda, FakeCupti

HERE = os.path.abspath(__file__)


def blake(a: np.ndarray) -> str:
    """The tracer's fingerprint of an array's bytes, computed independently of it."""
    if borrows._xxh3_64 is not None:
        import xxhash

        return xxhash.xxh3_64_hexdigest(a.tobytes())
    return hashlib.blake2b(a.view(np.uint8), digest_size=8).hexdigest()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(tracer_module, "_REGISTERED", None)
    monkeypatch.setattr(tracer_module, "_ACTIVE", None)
    cupti = FakeCupti()
    frames = FrameFilter(folders=(os.path.join(os.path.dirname(fakecupti.__file__), ""),))
    return cupti, FakeCuda(cupti), frames


def line_of(marker: str) -> int:
    with open(HERE) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(marker))


def test_copies_get_site_pointers_and_fingerprints(fake) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    x = np.arange(1024, dtype=np.float32)
    dev = np.zeros_like(x)
    back = np.zeros_like(x)
    t = Tracer(cupti, fingerprints=True, frames=frames, native=cupti.native).start()
    assert cupti.native.registrations == 1 and len(cupti.native.enabled) > 100
    up = cuda.memcpy(dev.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D)  # marker: upload
    down = cuda.memcpy(back.ctypes.data, dev.ctypes.data, x.nbytes, cuda.D2H, src_kind=3, dst_kind=1)  # marker: down
    k = cuda.launch("scale")  # marker: launch
    capture = t.stop()
    assert [c.runtime_correlation for c in capture.copies] == [up, down]
    assert [k.correlation for k in capture.kernels] == [k]
    inner = capture.calls[capture.copies[0].correlation]
    assert inner.name == "cuMemcpyHtoD_v2" and inner.site == capture.calls[up].site and inner.count is None, \
        "the driver call inside the runtime call files its site only; the runtime call has the arguments"
    call = capture.calls[up]
    assert call.site == (HERE, line_of("# marker: upload"), "test_copies_get_site_pointers_and_fingerprints")
    assert (call.src, call.dst, call.count, call.role) == (x.ctypes.data, None, x.nbytes, "copy")
    assert call.fingerprint == blake(x)
    d2h = capture.calls[down]
    assert (d2h.dst, d2h.src, d2h.synchronous) == (back.ctypes.data, None, True)
    assert d2h.fingerprint == blake(x), "a synchronous D2H is digested on exit, when its bytes have arrived"
    assert capture.calls[k].site[1] == line_of("# marker: launch")
    assert not capture.errors and capture.t1 > capture.t0
    records = convert(capture).records
    assert [(r.kind, r.array, r.fingerprint) for r in records if r.kind in ("h2d", "d2h")] == [
        ("h2d", x.ctypes.data, blake(x)), ("d2h", back.ctypes.data, blake(x))]
    assert not cupti.native.subscribers and not cupti.kinds, "stop() unsubscribes and disables every activity kind"


@pytest.mark.parametrize("shared", [False, True])
def test_a_nested_driver_call_keeps_the_runtime_calls_arguments(fake, shared: bool) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    cuda.shared_correlation = shared  # whether CUPTI numbers the inner driver call apart or not
    x = np.arange(64, dtype=np.float64)
    dev = np.zeros_like(x)
    t = Tracer(cupti, fingerprints=True, frames=frames, native=cupti.native).start()
    up = cuda.memcpy(dev.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D)  # marker: nested
    capture = t.stop()
    (record,) = [r for r in convert(capture).records if r.kind == "h2d"]
    assert (record.array, record.fingerprint, record.nbytes) == (x.ctypes.data, blake(x), x.nbytes)
    assert record.site.line == line_of("# marker: nested")
    assert capture.calls[up].name == "cudaMemcpy_v3020"


def test_no_fingerprints_when_asked_or_when_the_call_failed(fake) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    x = np.ones(256)
    dev = np.zeros_like(x)
    t = Tracer(cupti, fingerprints=True, frames=frames, native=cupti.native).start()
    cuda.fail_next = True
    failed = cuda.memcpy(dev.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D)
    capture = t.stop()
    assert capture.calls[failed].fingerprint is None and not capture.copies
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native).start()
    plain = cuda.memcpy(dev.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D)
    capture = t.stop()
    assert capture.calls[plain].fingerprint is None and capture.calls[plain].src == x.ctypes.data
    assert cupti.native.registrations == 1, "the buffer callbacks are registered once per process"


def test_async_d2h_is_digested_at_the_sync_of_the_same_statement(fake) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    dev = np.full(4, 3.0, dtype=np.float32)
    host = np.zeros(4, dtype=np.float32)
    t = Tracer(cupti, fingerprints=True, frames=frames, native=cupti.native).start()
    cuda.item(host.ctypes.data, dev.ctypes.data, dev.nbytes)  # one statement: async copy + stream sync
    early = cuda.memcpy(host.ctypes.data, dev.ctypes.data, dev.nbytes, cuda.D2H, asynchronous=True, dst_kind=1)
    host[0] = 42.0  # the program changes the bytes before any sync
    cuda.synchronize()
    capture = t.stop()
    item_copy = next(c for c in capture.calls.values() if c.role == "copy")
    assert item_copy.fingerprint == blake(dev)
    assert capture.calls[early].fingerprint is None, "bytes the program may have changed are not digested"
    syncs = [c for c in capture.calls.values() if c.role == "sync"]
    assert syncs[0].instr == item_copy.instr and syncs[1].instr != capture.calls[early].instr


def test_host_syncs_are_timed_by_their_callbacks_once_each(fake) -> None:  # type: ignore[no-untyped-def]
    """No SYNCHRONIZATION records (they would also record every stream's wait on an event): entry to exit."""
    cupti, cuda, frames = fake
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native).start()
    assert int(fakecupti.ActivityKind.SYNCHRONIZATION) not in cupti.kinds
    nested = cuda.synchronize_nested()
    direct = cuda.driver_synchronize()
    capture = t.stop()
    assert [(s.correlation, s.type) for s in capture.syncs] == [(nested, "stream"), (direct, "context")], \
        "the driver call inside the runtime one is not a second sync"
    assert all(t.t0 <= s.start < s.end for s in capture.syncs)
    records = convert(capture).records
    assert [r.kind for r in records] == ["sync", "sync"]
    assert [r.duration_ns for r in records] == [s.end - s.start for s in capture.syncs]


@pytest.mark.parametrize("shared", [False, True])
def test_a_nested_sync_ends_at_the_first_exit_callback_after_the_wait(fake, shared: bool) -> None:  # type: ignore[no-untyped-def]
    """The driver sync's exit callback runs first; what the callbacks do after it is no waiting (an H200's .item())."""
    cupti, cuda, frames = fake
    cuda.shared_correlation = shared
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native).start()
    corr = cuda.synchronize_nested()
    capture = t.stop()
    (sync,) = capture.syncs
    assert sync.correlation == corr and sync.start < sync.end < cuda.driver_returned


@pytest.mark.parametrize("shared", [False, True])
def test_the_exit_callbacks_after_a_wait_are_timed_once_per_call(fake, shared: bool) -> None:  # type: ignore[no-untyped-def]
    """From the wait's end (the first exit callback) to the outermost call's exit callback: the recording's work that
    delays the program after a sync or a synchronous copy, which the replay sets aside there (`Meta.exits_ns`)."""
    cupti, cuda, frames = fake
    cuda.shared_correlation = shared
    dev = np.ones(4, dtype=np.float32)
    host = np.zeros(4, dtype=np.float32)
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native).start()
    cuda.synchronize_nested()
    returned = cuda.driver_returned
    cuda.driver_synchronize()
    cuda.memcpy(host.ctypes.data, dev.ctypes.data, dev.nbytes, cuda.D2H)  # synchronous: its exits come after the copy
    cuda.memcpy(host.ctypes.data, dev.ctypes.data, dev.nbytes, cuda.D2H, asynchronous=True)  # returns at once
    capture = t.stop()
    nested, direct = (s for s in capture.syncs)
    assert len(capture.sync_exits) == 2 and len(capture.copy_exits) == 1
    assert capture.sync_exits[0] > returned - nested.end > 0, \
        "the nested driver call's exit callbacks, and the runtime call's after them"
    assert 0 < capture.sync_exits[1] < capture.sync_exits[0], "a driver sync alone: its one exit callback"
    assert capture.copy_exits[0] > 0


def test_driver_copies_and_activity_records(fake) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    x = np.arange(64, dtype=np.int64)
    dev = np.zeros_like(x)
    t = Tracer(cupti, fingerprints=True, frames=frames, native=cupti.native).start()
    corr = cuda.htod_driver(dev.ctypes.data, x.ctypes.data, x.nbytes)
    capture = t.stop()
    (copy,) = capture.copies
    assert (copy.direction, copy.src_kind, copy.dst_kind, copy.nbytes, copy.stream) == ("h2d", "pageable", "device", 512, 7)
    assert capture.calls[corr].name == "cuMemcpyHtoD_v2" and capture.calls[corr].fingerprint == blake(x)


def test_records_shorter_than_the_layout_are_reported_not_misread(fake) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    x = np.ones(8)
    t = Tracer(cupti, fingerprints=True, frames=frames, native=cupti.native).start()
    cupti.truncate = 8  # a libcupti whose records are shorter than cupti-python's dtypes
    corr = cuda.memcpy(x.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D)
    capture = t.stop()
    assert not capture.copies and corr in capture.calls
    assert len(capture.errors) == 1 and "reading activity records" in capture.errors[0]
    assert "shorter than cupti-python's" in capture.errors[0]


def test_a_layout_without_a_needed_field_is_reported(fake, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    import numpy.lib.recfunctions as rfn

    monkeypatch.setattr(type(cupti), "activity_kernel10_dtype",
                        rfn.drop_fields(np.zeros(1, cupti.activity_kernel10_dtype), "name").dtype)
    t = Tracer(cupti, fingerprints=True, frames=frames, native=cupti.native).start()
    cuda.launch("k")
    x = np.ones(4)
    cuda.memcpy(x.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D)
    capture = t.stop()
    assert len(capture.copies) == 1 and not capture.kernels, "the other kinds are still read"
    assert capture.errors and "reading an activity record" in capture.errors[0] and "'name'" in capture.errors[0]


def test_one_recording_at_a_time(fake) -> None:  # type: ignore[no-untyped-def]
    cupti, _, frames = fake
    t = Tracer(cupti, frames=frames, native=cupti.native).start()
    with pytest.raises(ProfilerError, match="already running"):
        Tracer(cupti, frames=frames, native=cupti.native).start()
    t.stop()
    Tracer(cupti, frames=frames, native=cupti.native).start().stop()


def test_start_failure_is_one_line_and_leaves_nothing_enabled(fake) -> None:  # type: ignore[no-untyped-def]
    cupti, _, frames = fake

    class Refused(Exception):
        pass

    def subscribe(callback):  # type: ignore[no-untyped-def]
        raise Refused("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")

    cupti.native.subscribe = subscribe
    with pytest.raises(ProfilerError) as err:
        Tracer(cupti, frames=frames, native=cupti.native).start()
    assert "\n" not in str(err.value) and "another CUPTI client" in str(err.value)
    assert not cupti.kinds and tracer_module._ACTIVE is None


def test_digest_without_xxhash_is_blake2b(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.arange(100, dtype=np.float32)
    monkeypatch.setattr(borrows, "_xxh3_64", None)
    assert tracer_module.digest(x.ctypes.data, x.nbytes) == hashlib.blake2b(x.view(np.uint8), digest_size=8).hexdigest()


def test_launch_sites_are_sampled_in_windows(fake) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native, launch_window=3,
               launch_pause_s=60).start()
    assert t.sampler is not None
    started = len(cupti.native.switches)  # the callbacks `start` turned on
    zeroed = cuda.memset(256)  # marker: memset before the window closes
    first = [cuda.launch("k") for _ in range(3)]  # marker: window
    assert not t.sampler.open, "the launch that fills the window shuts it as it returns"
    unseen = [cuda.launch("k") for _ in range(3)]
    other = cuda.launch("j")
    closed_memset = cuda.memset(512)  # marker: memset while closed
    x = np.ones(8)
    copy = cuda.memcpy(x.ctypes.data, x.ctypes.data, x.nbytes, cuda.H2D)  # marker: copy while closed
    assert not t.sampler.open, "calls before the pause is over open nothing"
    t.sampler.reopen()
    unseen.append(cuda.launch("k"))
    assert not t.sampler.open, "a launch cannot open the window: its callbacks are off"
    cuda.synchronize()
    assert t.sampler.open, "the first sync, copy or memset after the pause opens it"
    again = cuda.launch("k")  # marker: reopened
    capture = t.stop()
    assert all(c in capture.calls for c in first) and not any(c in capture.calls for c in unseen + [other])
    assert zeroed in capture.calls and closed_memset in capture.calls, "memsets are not sampled: always heard"
    assert capture.calls[again].site[1] == line_of("# marker: reopened") and t.sampler.windows == 2
    assert capture.calls[copy].site[1] == line_of("# marker: copy while closed"), "copies keep their callbacks"
    assert cupti.native.switches[started:] and all(inside for _, inside in cupti.native.switches[started:]), \
        "every switch was made from a callback, inside the CUDA call of the thread making it"
    converted = convert(capture, infer_launch_sites=True)
    launches = [r for r in converted.records if r.kind == "launch"]
    assert [r.site.line if r.site else None for r in launches] == [line_of("# marker: window")] * 6 + [
        None, line_of("# marker: window"), line_of("# marker: reopened")], "an unseen launch takes its kernel's sampled site; 'j' was never seen"
    memsets = [r for r in converted.records if r.kind == "memset"]
    assert [r.site.line if r.site else None for r in memsets] == [
        line_of("# marker: memset before the window closes"), line_of("# marker: memset while closed")]
    assert converted.inferred_sites == 4
    assert [r.duration_ns for r in launches] == [2000] * 9, "every launch is timed from its activity record"


@pytest.mark.parametrize("shared", [False, True])
def test_a_runtime_launch_shuts_the_window_as_it_returns(fake, shared: bool) -> None:  # type: ignore[no-untyped-def]
    """PyTorch's `cudaLaunchKernel` makes its driver launch inside: the window shuts at the outer call's exit.

    Shut at the inner call's exit, the outer's exit would go unheard and the
    thread would seem inside a launch until its next runtime call.
    """
    cupti, cuda, frames = fake
    cuda.shared_correlation = shared
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native, launch_window=2,
               launch_pause_s=60).start()
    started = len(cupti.native.switches)
    heard = [cuda.launch("k", runtime=True) for _ in range(2)]  # marker: runtime window
    assert t.sampler is not None and not t.sampler.open and t.sampler.heard == 2, "one count per runtime launch"
    assert t._outer == {}, "the runtime launch's exit was heard"
    unheard = cuda.launch("k")  # marker: driver launch while closed
    capture = t.stop()
    assert all(capture.calls[c].site[1] == line_of("# marker: runtime window") for c in heard)
    assert unheard not in capture.calls
    assert cupti.native.switches[started:] and all(inside for _, inside in cupti.native.switches[started:])


def test_the_window_opens_again_on_the_thread_that_calls(fake) -> None:  # type: ignore[no-untyped-def]
    """A thread that launches fills the window; another thread's sync after the pause opens it, from its callback."""
    import threading

    cupti, cuda, frames = fake
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native, launch_window=2,
               launch_pause_s=0).start()
    started = len(cupti.native.switches)
    worker = threading.Thread(target=lambda: [cuda.launch("k") for _ in range(2)])
    worker.start()
    worker.join()
    assert t.sampler is not None and not t.sampler.open
    cuda.synchronize()
    later = cuda.launch("k")  # marker: after the other thread's window
    capture = t.stop()
    assert t.sampler.open and t.sampler.windows == 2
    assert capture.calls[later].site[1] == line_of("# marker: after the other thread's window")
    tids = [tid for tid, _ in cupti.native.switches[started:]]
    half = len(tids) // 2
    assert half and tids == [worker.ident] * half + [threading.get_ident()] * half, "shut by the worker, opened here"
    assert all(inside for _, inside in cupti.native.switches[started:]) and not cupti.native.deaf


def test_a_loop_that_only_launches_opens_its_window_again_on_the_main_thread(fake) -> None:  # type: ignore[no-untyped-def]
    """No copy, memset or sync to open it from: the timer asks the main thread, which switches between bytecodes."""
    import threading

    cupti, cuda, frames = fake
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native, launch_window=2,
               launch_pause_s=0.01).start()
    assert t.sampler is not None
    first = [cuda.launch("k") for _ in range(2)]
    assert not t.sampler.open
    shut = len(cupti.native.switches)
    deadline = time.monotonic() + 20
    while not t.sampler.open and time.monotonic() < deadline:
        pass  # no CUDA call here: only the main thread's pending call can open the window
    again = cuda.launch("k")  # marker: after the timer's reopening
    capture = t.stop()
    assert t.sampler.open and t.sampler.windows == 2
    assert all(c in capture.calls for c in first) and capture.calls[again].site[1] == line_of(
        "# marker: after the timer's reopening")
    reopening = cupti.native.switches[shut:]
    assert reopening and all(tid == threading.get_ident() and not inside for tid, inside in reopening), \
        "switched by the main thread, outside any CUDA call"
    assert not cupti.native.deaf


def test_no_timer_reopens_once_another_thread_has_made_calls(fake) -> None:  # type: ignore[no-untyped-def]
    import threading

    cupti, cuda, frames = fake
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native, launch_window=2,
               launch_pause_s=0.01).start()
    worker = threading.Thread(target=cuda.launch)  # heard: a thread other than the main one makes CUDA calls
    worker.start()
    worker.join()
    until = time.monotonic() + 0.3
    while time.monotonic() < until:
        cuda.launch("k")
    capture = t.stop()
    assert t.sampler is not None and t.sampler.windows == 1 and not t.sampler.open
    assert sum(c.role == "launch" for c in capture.calls.values()) == 2
    assert t.sampler._timer is None


def test_memsets_are_heard_in_the_driver_only(fake) -> None:  # type: ignore[no-untyped-def]
    """A runtime memset with bytes to set costs the two callbacks of its driver call; an empty one costs none."""
    cupti, cuda, frames = fake
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native, launch_sites="none").start()
    assert cuda.memset(0) is None  # marker: empty memset
    zeroed = cuda.memset(4096)  # marker: zeroed
    capture = t.stop()
    driver = int(fakecupti.driver_api_trace_cbid.cuMemsetD8Async)
    assert cuda.heard == [driver, driver], "enter and exit of the driver call; the runtime calls are not listened to"
    converted = convert(capture)
    (memset,) = [r for r in converted.records if r.kind == "memset"]
    assert zeroed in capture.calls and memset.nbytes == 4096
    assert memset.site is not None and memset.site.line == line_of("# marker: zeroed")


@pytest.mark.parametrize("sites", ["all", "none"])
def test_every_launch_site_or_none(fake, sites: str) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native, launch_sites=sites,  # type: ignore[arg-type]
               launch_window=2).start()
    assert t.sampler is None
    corrs = [cuda.launch("k") for _ in range(5)]
    capture = t.stop()
    assert sum(c in capture.calls for c in corrs) == (5 if sites == "all" else 0)
    assert len(capture.kernels) == 5
