"""The CUDA event timing idiom is the program's own measurement, not a sync to drop (issue 32).

Each trace is what CUPTI records for a benchmark loop: a few launches,
then the wait at the line of the source file written here. Before the
fix every one of these loops was an OFF507 finding.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from profiler.analysis.detectors import detect
from profiler.analysis.measurements import is_measurement
from profiler.model import Meta, Record, Run, Site

EVENTS = """\
import cupy

def bench(f, x, n):
    times = []
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(n):
        start.record()
        f(x)
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return times
"""

HOST_CLOCK = """\
import time
import torch

def bench(model, x, n):
    for _ in range(n):
        t0 = time.perf_counter()
        model(x)
        torch.cuda.synchronize()

        took = time.perf_counter() - t0
        print(took)
"""

NOT_TIMING = """\
import torch

def train(model, x, n):
    for _ in range(n):
        model(x)
        torch.cuda.synchronize()
    print(time.perf_counter())
"""


def timing_loop(path: Path, sync_line: int, launch_line: int = 8) -> Run:
    """20 steps of 3 launches and a wait at `sync_line` of `path`, as a CUPTI recording gives them."""
    text = path.read_text().splitlines()
    launch = Site(str(path), launch_line, "bench", text[launch_line - 1].strip(), 9)
    wait = Site(str(path), sync_line, "bench", text[sync_line - 1].strip(), 9)
    records, t, n = [], 0, 0
    for _ in range(20):
        for _ in range(3):
            records.append(Record("launch", t, 3000, kernel="k", launch=n, site=launch, mode="batched"))
            n, t = n + 1, t + 5000
        records.append(Record("sync", t, 8000, site=wait, mode="batched"))
        t += 10000
    return Run(Meta(backend="cupti", device="gpu", mode="batched", started_at="2026-12-05T00:00:00+00:00", wall_ns=t),
               tuple(records))


@pytest.mark.parametrize("source, sync_line", [(EVENTS, 10), (HOST_CLOCK, 8)], ids=["events", "host-clock"])
def test_the_wait_of_a_timing_loop_is_no_finding(tmp_path: Path, source: str, sync_line: int) -> None:
    path = tmp_path / "bench.py"
    path.write_text(source)
    assert [f.code for f in detect(timing_loop(path, sync_line))] == []


def test_a_synchronize_that_no_clock_reads_stays_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(NOT_TIMING)
    found = detect(timing_loop(path, 6, launch_line=5))
    assert [(f.code, f.count, f.site.line if f.site else None) for f in found] == [("OFF507", 19, 6)], \
        "the clock read after the loop is in an outer block: not this wait's"


def test_a_file_that_is_gone_keeps_the_finding_unless_the_line_itself_reads_the_interval(tmp_path: Path) -> None:
    path = tmp_path / "bench.py"
    path.write_text(EVENTS)
    run = timing_loop(path, 10)
    path.unlink()
    import linecache

    linecache.clearcache()
    assert [f.code for f in detect(run)] == ["OFF507"]
    assert is_measurement(Site("/gone.py", 3, "f", "ms = start.elapsed_time(end)", 5))
    assert not is_measurement(Site("/gone.py", 3, "f", "end.synchronize()", 5))
    assert not is_measurement(None)
