"""The timeline's data: busy share per slice (union of overlapping operations), packed columns that decode exactly."""

from __future__ import annotations

import base64

import numpy as np

from profiler.model import Meta, Record, Run, Site
from profiler.outputs.html.parts import file_where
from profiler.outputs.html.timeline import tick_for, timeline_data

A = Site("/w/app.py", 4, "step", "y = up(x)", 5)
B = Site("/w/app.py", 9, "main", "sync()", 1)


def _run(records: list[Record], wall: int) -> Run:
    return Run(Meta(backend="numpy", device="host", mode="naive", started_at="", wall_ns=wall, cwd="/w"), tuple(records))


def _decode(text: str, dtype: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=dtype)


def test_the_tick_fits_the_wall_time_into_32_bits() -> None:
    assert tick_for(0) == 1 and tick_for(2**32 - 1) == 1
    assert tick_for(2**32) == 2 and tick_for(10 * 2**32) == 11


def test_overlapping_operations_count_once_in_the_busy_share() -> None:
    run = _run([Record("h2d", 0, 100, 64, site=A), Record("h2d", 50, 100, 32, site=A), Record("sync", 390, 0, site=B),
                Record("launch", 120, 30, kernel="k", launch=0, site=A)], wall=400)
    data = timeline_data(run, "naive", file_where("/w"), bins=4)
    h2d, d2h, launch, sync = data.lanes
    assert [ln.kind for ln in data.lanes] == ["h2d", "d2h", "launch", "sync"]
    assert (h2d.count, d2h.count, launch.count, sync.count) == (2, 0, 1, 1)
    # [0, 150) busy: all of bin 0, half of bin 1
    assert _decode(h2d.busy, "u1").tolist() == [255, 128, 0, 0]
    assert _decode(h2d.starts, "<u4").tolist() == [2, 0, 0, 0]  # both start in the first slice
    assert _decode(launch.busy, "u1").tolist() == [0, 76, 0, 0]  # 30 ns of 100: 76.5 of 255, to even
    # a zero-length sync occupies no time but is counted where it started
    assert _decode(sync.busy, "u1").tolist() == [0, 0, 0, 0] and _decode(sync.starts, "<u4").tolist() == [0, 0, 0, 1]
    assert _decode(d2h.busy, "u1").tolist() == [0, 0, 0, 0] and d2h.start == ""


def test_packed_columns_decode_to_the_records_sorted_by_start() -> None:
    run = _run([Record("h2d", 50, 100, 32, site=B), Record("h2d", 0, 10, 64, site=A), Record("h2d", 20, 5, 8)], wall=400)
    data = timeline_data(run, "naive", file_where("/w"))
    h2d = data.lanes[0]
    assert (data.tick_ns, h2d.longest) == (1, 100)
    assert _decode(h2d.start, "<u4").tolist() == [0, 20, 50]
    assert _decode(h2d.duration, "<u4").tolist() == [10, 5, 100]
    assert h2d.site_type == "u1" and h2d.nbytes_type == "u4"
    labels = [data.sites[i] for i in _decode(h2d.site, "u1")]
    assert labels == ["app.py:4 in step", "(no call site)", "app.py:9 in main"]
    assert _decode(h2d.nbytes, "<u4").tolist() == [64, 8, 32]


def test_copies_over_4_gb_are_packed_as_doubles_and_long_runs_in_coarser_ticks() -> None:
    wall = 3 * 2**32
    run = _run([Record("d2h", 2**33, 2**20, 5 * 2**30, site=A)], wall=wall)
    data = timeline_data(run, "batched", file_where("/w"), marks=[(2**33, "OFF501 app.py:4")])
    d2h = data.lanes[1]
    assert data.tick_ns == 4 and d2h.nbytes_type == "f8"
    assert _decode(d2h.nbytes, "<f8").tolist() == [5 * 2**30]
    assert _decode(d2h.start, "<u4").tolist() == [2**33 // 4]
    assert _decode(d2h.duration, "<u4").tolist() == [2**20 // 4]
    doc = data.as_json()
    assert doc["marks"] == [[2**33, "OFF501 app.py:4"]] and doc["lanes"][1]["nbytesType"] == "f8"
    assert doc["wall"] == wall and doc["tick"] == 4 and doc["bins"] == 4096


def test_an_empty_run_has_empty_lanes() -> None:
    data = timeline_data(_run([], wall=0), "", file_where("/w"), bins=8)
    assert all(ln.count == 0 and _decode(ln.busy, "u1").tolist() == [0] * 8 for ln in data.lanes)
    assert data.wall_ns == 1
