"""JAX's copies, made from its own threads, charged to the line of the user's call that asked for them.

Synthetic captures (`captures.Builder`) pin down the matching rules
(`profiler.sources.cupti.runtimecopies`): uploads from another thread,
several calls in one step, copies JAX makes on its own, a copy of another
library on the caller's thread, a download expected but never made. The
fake CUPTI drives the real tracer with a runtime that copies from a worker
thread while the program waits (`fakelib.fakeruntime`), as JAX does; and,
where JAX is installed, the wrappers read what a real call must copy.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path
from time import perf_counter_ns

import numpy as np
import pytest

from profiler.sources.cupti import jaxcalls
from profiler.sources.cupti import tracer as tracer_module
from profiler.sources.cupti.convert import convert
from profiler.sources.cupti.frames import FrameFilter
from profiler.sources.cupti.jaxcalls import EntryCall
from profiler.sources.cupti.runtimecopies import attribute
from profiler.sources.cupti.tracer import Tracer

from ...kit import env
from .captures import Builder
from .fakelib import fakecupti
from .fakelib.fakecupti import FakeCuda, FakeCupti
from .fakelib.fakeruntime import CopyingRuntime

HERE = os.path.abspath(__file__)
APP = "/work/app.py"
MAIN, WORKER = 1, 2  # the program's thread and JAX's


def same(ns: int) -> int:
    """The calls' clock is the capture's."""
    return ns


def entry(b: Builder, line: int, *copies: tuple[str, int], took: int = 50, thread: int = MAIN,
          function: str = "jax.device_put") -> EntryCall:
    """A user call made now (on the capture's clock), returning after `took` ns."""
    start = b.t
    b.t += took
    return EntryCall(function, (APP, line, "main"), (7, line * 10), thread, start, b.t, tuple(copies))


def lines(capture, kind: str) -> list[int]:  # type: ignore[no-untyped-def]
    return [r.site.line if r.site else 0 for r in convert(capture).records if r.kind == kind]


def test_uploads_from_the_runtimes_thread_take_the_line_of_the_call_that_asked() -> None:
    """The issue's loop: `d = jax.device_put(x)` (line 8), then `float(f(d, w))` (line 9), three steps."""
    b = Builder(file=APP)
    calls, threads = [], {}
    for _ in range(3):
        calls.append(entry(b, 8, ("h2d", 4096)))
        up = b.h2d(9, 4096, host=0xA000, kind="pinned")  # JAX's thread: the main thread's line, the sync's
        threads[up] = WORKER
        b.kernel(9)
        threads[b.d2h(9, 4, host=0xB000)] = WORKER
    capture = b.capture()
    assert lines(capture, "h2d") == [9, 9, 9], "without the calls: every upload on the line that waits"
    fixed = attribute(capture, calls, threads, same)
    assert lines(fixed, "h2d") == [8, 8, 8]
    assert lines(fixed, "d2h") == [9, 9, 9] and lines(fixed, "launch") == [9, 9, 9], "the rest keep their lines"
    assert [r.kind for r in convert(fixed).records] == [r.kind for r in convert(capture).records]


def test_a_call_that_copies_nothing_takes_no_copy() -> None:
    """`jax.device_put(d)` of an array already on the device asks for no copy; the next call's copy stays its own."""
    b = Builder(file=APP)
    calls = [entry(b, 8, ("h2d", 4096)), entry(b, 10), entry(b, 12, ("h2d", 4096))]
    threads = {b.h2d(14, 4096, host=0xA000): WORKER, b.h2d(14, 4096, host=0xA000): WORKER}
    assert lines(attribute(b.capture(), calls, threads, same), "h2d") == [8, 12]


def test_copies_the_runtime_makes_on_its_own_keep_their_line() -> None:
    """A compiled function's constants, a size no call asked for, a copy before any call: no user call to give."""
    b = Builder(file=APP)
    threads = {b.h2d(20, 4096, host=0xC000): WORKER}  # before the call began: not its copy
    b.t += 1_000_000
    calls = [entry(b, 8, ("h2d", 4096))]
    threads[b.h2d(21, 1024, host=0xC000)] = WORKER  # another size
    threads[b.h2d(22, 4096, host=0xA000)] = WORKER  # the call's
    threads[b.h2d(23, 4096, host=0xA000)] = WORKER  # nothing asked for it
    assert lines(attribute(b.capture(), calls, threads, same), "h2d") == [20, 21, 8, 23]


def test_several_calls_in_one_step_are_served_in_the_order_they_asked() -> None:
    b = Builder(file=APP)
    calls = [entry(b, 8, ("h2d", 4096)), entry(b, 9, ("h2d", 4096)), entry(b, 10, ("h2d", 2048), ("h2d", 512))]
    threads = {b.h2d(30, n, host=0xA000): WORKER for n in (2048, 4096, 512, 4096)}  # after all three calls
    assert lines(attribute(b.capture(), calls, threads, same), "h2d") == [10, 8, 10, 9]


def test_a_copy_on_the_callers_thread_is_the_calls_only_when_made_inside_it() -> None:
    b = Builder(file=APP)
    calls = [entry(b, 8, ("h2d", 4096))]
    threads = {b.h2d(15, 4096, host=0xD000): MAIN,  # a CuPy upload of the same size, after the call
               b.h2d(16, 4096, host=0xA000): WORKER}
    assert lines(attribute(b.capture(), calls, threads, same), "h2d") == [15, 8]
    b = Builder(file=APP)
    calls = [entry(b, 8, ("h2d", 4096))]
    threads = {b.h2d(8, 4096, host=0xA000): MAIN,  # made inside the call, on its thread: its line already
               b.h2d(16, 4096, host=0xA000): WORKER}  # then one the runtime makes on its own
    assert lines(attribute(b.capture(), calls, threads, same), "h2d") == [8, 16]


def test_a_download_never_made_by_the_time_its_call_returned_is_given_up() -> None:
    """`jax.device_get` returns once its bytes are on the host: a later download of that size is someone else's."""
    b = Builder(file=APP)
    calls = [entry(b, 8, ("d2h", 64), function="jax.device_get")]  # JAX had the value already: no copy
    b.t += 1_000_000
    threads = {b.d2h(9, 64, host=0xB000): WORKER}  # float(x), a millisecond later
    b.t += 1_000_000
    calls.append(entry(b, 11, ("d2h", 64), function="jax.device_get"))
    b.t -= 40  # JAX's thread copies while the call waits
    threads[b.d2h(12, 64, host=0xB000)] = WORKER
    b.t += 5_000
    assert lines(attribute(b.capture(), calls, threads, same), "d2h") == [9, 11]


def test_the_calls_clock_is_moved_onto_cuptis() -> None:
    b = Builder(file=APP)
    host = entry(b, 8, ("h2d", 4096))
    shift = 5_000_000_000  # perf_counter_ns and CUPTI's clock differ by this much
    moved = EntryCall(host.function, host.site, host.instr, MAIN, host.start_ns - shift, host.end_ns - shift,
                      host.copies)
    threads = {b.h2d(14, 4096, host=0xA000): WORKER}
    assert lines(attribute(b.capture(), [moved], threads, lambda ns: ns + shift), "h2d") == [8]
    assert lines(attribute(b.capture(), [moved], threads, same), "h2d") == [8], "long after the call: still its copy"
    assert lines(attribute(b.capture(), [host], threads, lambda ns: ns + shift), "h2d") == [14], \
        "a copy made before the call began is not its copy"


def test_the_recorders_clocks_drift_evenly_between_their_two_readings() -> None:
    from profiler.sources.cupti.recorder import CuptiRecorder

    recorder = CuptiRecorder()
    recorder._clocks = [(1_000, 51_000), (2_001_000, 2_051_200)]  # CUPTI's ran 200 ns fast over 2 ms
    assert [recorder.to_cupti(t) for t in (1_000, 1_001_000, 2_001_000)] == [51_000, 1_051_100, 2_051_200]


# ------------------------------------------------------------------ the live tracer, a runtime's own thread
@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(tracer_module, "_REGISTERED", None)
    monkeypatch.setattr(tracer_module, "_ACTIVE", None)
    cupti = FakeCupti()
    cupti.get_timestamp = perf_counter_ns  # type: ignore[method-assign]  # one clock for the calls and CUPTI
    # the fake's folder and the thread machinery are library code, as JAX and `threading` are to the real filter
    frames = FrameFilter(folders=(os.path.join(os.path.dirname(fakecupti.__file__), ""),
                                  os.path.abspath(threading.__file__)))
    return cupti, FakeCuda(cupti), frames


def line_of(marker: str) -> int:
    with open(HERE) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(marker))


def test_a_runtime_thread_s_uploads_land_on_the_put_line(fake) -> None:  # type: ignore[no-untyped-def]
    cupti, cuda, frames = fake
    x = np.arange(1024, dtype=np.float32)
    dev = np.zeros_like(x)
    calls: list[EntryCall] = []
    stop = jaxcalls.listen(calls.append)
    put = jaxcalls._wrapper("jax.device_put", CopyingRuntime.put, "h2d",
                            copies_of=lambda direction, source, result: (("h2d", x.nbytes),))
    runtime = CopyingRuntime(cuda)
    t = Tracer(cupti, fingerprints=False, frames=frames, native=cupti.native).start()
    try:
        for _ in range(3):
            put(runtime, dev.ctypes.data, x.ctypes.data, x.nbytes)  # marker: put
            runtime.wait()  # marker: wait
    finally:
        capture = t.stop()
        stop()
        runtime.close()
    ups = [c for c in capture.copies if c.direction == "h2d"]
    assert len(ups) == 3 and len(calls) == 3
    uploads = [capture.calls[c.runtime_correlation] for c in ups]
    assert {t.copy_threads[u.correlation] for u in uploads} == {runtime.thread.ident}
    assert {u.site[1] for u in uploads} == {line_of("# marker: wait")}, "the worker borrows the waiting line"
    assert {c.site[1] for c in calls} == {line_of("# marker: put")} and {c.thread for c in calls} == {
        threading.get_ident()}
    fixed = attribute(capture, calls, t.copy_threads, same)
    assert [r.site.line for r in convert(fixed).records if r.kind == "h2d"] == [line_of("# marker: put")] * 3


# ------------------------------------------------------------------ what a real JAX call must copy
def test_what_jax_calls_must_copy_and_where_they_were_made() -> None:
    """The reading of real JAX calls (`programs/jax_calls.py`), in a fresh interpreter: JAX in this one would warn
    at every later fork of the test run (its threads), which the test settings make an error."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip("needs JAX (pip install jax)")
    proc = subprocess.run([sys.executable, str(Path(__file__).parent / "programs" / "jax_calls.py")],
                          capture_output=True, text=True, timeout=300, env=env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.split() == ["reading", "ok", "wrappers", "ok"]
