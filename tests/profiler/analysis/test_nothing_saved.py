"""A fix the replay prices at nothing says why: never `saves 0 ns` beside the time its records lost.

The issue's JAX loop: the uploads ran while the host dispatched the step,
and the device idled after them until the host issued the kernel, so
hoisting them saves no wall time although they took 16 ms; the report
said `upload once, saves 0 ns (0.0%) ... 16 ms lost`. A copy hidden under
a kernel on another stream is the other way to save nothing.
"""

from __future__ import annotations

from dataclasses import replace

from profiler.analysis.detectors import detect
from profiler.model import Run
from profiler.outputs.report import finding_line
from profiler.phrases import saving_text

from ..timelines import Timeline


def _fingerprinted(run: Run) -> Run:
    return Run(replace(run.meta, fingerprints=True), run.records)


def _uploads_beside_host_work() -> Run:
    """Per step: JAX's thread uploads x (line 8) as the host starts dispatching; the kernel comes 200 µs later."""
    h = Timeline()
    t = 0.0
    for _ in range(20):
        h.copy("h2d", t, 80, line=8, array=0xA000, fingerprint="same", nbytes=1 << 20)  # the host is past the sync
        h.kernel(t + 200, 50, line=9)
        h.copy("d2h", t + 250, 2, line=9, nbytes=4, pinned=False, array=0xB000)
        h.sync(t + 252, 1, line=9)
        t += 253
    return _fingerprinted(h.run(t))


def test_uploads_that_ran_while_the_host_worked_save_nothing_and_say_why() -> None:
    run = _uploads_beside_host_work()
    (f,) = [f for f in detect(run) if f.code == "OFF502"]
    assert f.expected_saving_ns == 0 and f.lost_ns == 19 * 80_000
    assert saving_text(f) == ("saves nothing (they ran while the host was busy, and finished before it issued the "
                              "work that needed them)")
    line = finding_line(f, "/w")
    assert "saves 0" not in line and "saves nothing (they ran while the host was busy" in line and "1.52 ms lost" in line


def test_uploads_under_a_kernel_save_nothing_and_say_why() -> None:
    h = Timeline()
    t = 0.0
    for _ in range(5):
        h.kernel(t, 1_000, line=9)
        h.copy("h2d", t + 100, 200, line=8, array=0xA000, fingerprint="same")  # on a side stream, under the kernel
        t += 1_000
    run = _fingerprinted(h.run(t))
    (f,) = [f for f in detect(run) if f.code == "OFF502"]
    assert f.expected_saving_ns == 0 and f.lost_ns == 4 * 200_000
    assert saving_text(f) == "saves nothing (they ran beside other device work on another stream, which the run " \
                             "waited for anyway)"


def test_a_saving_beside_a_loss_is_printed_as_it_is() -> None:
    """Uploads the kernels wait for: the replay prices them, and the sentence gives the figure."""
    h = Timeline()
    t = 0.0
    for _ in range(5):
        h.copy("h2d", t, 200, line=8, array=0xA000, fingerprint="same", pinned=False)
        h.kernel(t + 200, 100, line=9)
        t += 300
    run = _fingerprinted(h.run(t))
    (f,) = [f for f in detect(run) if f.code == "OFF502"]
    assert f.expected_saving_ns == 4 * 200_000 and not f.unsaved
    assert saving_text(f).startswith("saves 800 µs")
