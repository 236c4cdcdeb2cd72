"""The replay and the verdict on real GPU traces: CUPTI recordings and offload_core's CuPy backend.

Replaying an unchanged trace must give back its wall time and every
device operation's start, whatever the recording's source; the findings
of a real CUPTI trace all carry a priced fix, and the large pageable
copies are measured against the run's own pinned copies. Marked `gpu`
(skipped without CuPy and a GPU); the CUPTI test also needs cupti-python.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import offload_core
from offload_core import In, InOut, kernel, offload
from profiler.analysis.detectors import detect
from profiler.analysis.replay import Timeline, replay
from profiler.analysis.replay.timeline import DEVICE
from profiler.analysis.verdict import verdict
from profiler.model import Run
from profiler.sources.cupti.probe import import_cupti
from profiler.sources.recorder import Recorder

from ...kit import prof

PROGRAMS = Path(__file__).resolve().parent / "programs"
pytestmark = pytest.mark.gpu


def assert_replays_itself(run: Run) -> None:
    tl = Timeline.of(run)
    s = replay(tl)
    assert s.wall_ns == run.meta.wall_ns
    c = run.columns
    starts = [(s.start[i], int(c.start_ns[i])) for i in range(len(tl)) if tl.role[i] == DEVICE]
    assert all(a == b for a, b in starts)


@pytest.mark.skipif(import_cupti()[0] is None, reason="cupti-python is not installed (the cupti extra)")
@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="needs CuPy")
def test_a_cupti_recording_replays_itself_and_prices_its_findings(tmp_path: Path) -> None:
    proc = prof("run", "--source", "cupti", "-o", "t.json", "--", str(PROGRAMS / "cupy_mistakes.py"), cwd=tmp_path,
                timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = Run.load(tmp_path / "t.json")
    assert_replays_itself(run)
    found = detect(run)
    assert {"OFF502", "OFF504", "OFF507"} <= {f.code for f in found}
    assert all(f.expected_saving_ns is not None and 0 <= f.expected_saving_ns <= run.meta.wall_ns for f in found)
    saves = [f.expected_saving_ns or 0 for f in found]
    assert saves == sorted(saves, reverse=True)
    pageable = next(f for f in found if f.code == "OFF504")
    # the witnesses: the program's pinned 32 MiB uploads and CuPy's 1 MiB staged ones
    assert pageable.lost_ns is not None and "measured on this run's " in pageable.message
    v = verdict(run)
    assert v is not None and v.kernel_ns + v.copy_ns + v.wait_idle_ns + v.host_idle_ns == run.meta.wall_ns


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


def test_an_offload_recording_on_the_cupy_backend_replays_itself() -> None:
    pytest.importorskip("cupy")
    offload_core.set_backend("cupy")
    x, y = np.ones(1 << 20), np.zeros(1 << 20)
    with Recorder() as rec:
        offload_core.set_mode("naive")
        for _ in range(10):
            offload(daxpy, y, x, 2.0)
        offload_core.set_mode("batched")
        with offload_core.region(x, y):
            for _ in range(10):
                offload(daxpy, y, x, 2.0)
    run = rec.run()
    assert_replays_itself(run)
    f = next(f for f in detect(run) if f.code == "OFF501")
    assert f.expected_saving_ns is not None and f.expected_saving_ns > 0
