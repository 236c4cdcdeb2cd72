"""The recorder: every copy, launch and sync, with exact bytes and the user's call sites."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import offload_core
from offload_core import Out, events, offload, region
from profiler.sources.recorder import Recorder

from ...offload_core.kit import daxpy, fill
from ..kit import record

N = 1000


def test_counts_bytes_and_order_of_a_naive_launch() -> None:
    x, y = np.ones(N), np.zeros(N)
    with Recorder() as rec:
        offload(daxpy, y, x, 2.0)
    run = rec.run()
    assert [r.kind for r in run.records] == ["alloc", "h2d", "alloc", "h2d", "launch", "d2h", "sync", "free", "free"]
    assert [(r.kind, r.param, r.nbytes) for r in run.copies()] == [("h2d", "y", 8 * N), ("h2d", "x", 8 * N), ("d2h", "y", 8 * N)]
    assert {r.launch for r in run.records} == {run.records[0].launch}
    assert all(r.kernel == "daxpy" and r.mode == "batched" for r in run.records)
    assert run.records[1].array == y.__array_interface__["data"][0]


def test_call_sites_are_the_users_lines_with_their_text() -> None:
    x, y = np.ones(N), np.zeros(N)
    with Recorder() as rec:
        line = sys._getframe().f_lineno + 1
        offload(daxpy, y, x, 2.0)
    sites = rec.run().sites
    assert len(sites) == 1
    site = sites[0]
    assert (site.file, site.line, site.function) == (__file__, line, "test_call_sites_are_the_users_lines_with_their_text")
    assert site.text == "offload(daxpy, y, x, 2.0)" and site.column == 9


def test_region_copies_are_attributed_to_the_with_line(tmp_path: Path) -> None:
    run = record("""\
        import numpy as np
        from offload_core import Out, offload, region
        from tests.offload_core.kit import fill

        z = np.zeros(100)
        with region(Out(z)):
            for _ in range(3):
                offload(fill, z, 1.0)
    """, tmp_path)
    assert [(r.kind, r.site.line, r.launch) for r in run.copies()] == [("d2h", 6, None)]
    assert [r.site.line for r in run.of_kind("launch")] == [8, 8, 8]
    assert run.records[0].kind == "region_enter" and run.records[-1].kind == "region_exit"
    assert run.meta.argv == (str(tmp_path / "snippet.py"),)


def test_times_are_relative_to_the_start_and_ordered() -> None:
    with Recorder() as rec:
        for _ in range(3):
            offload(fill, np.zeros(N), 1.0)
    run = rec.run()
    starts = [r.start_ns for r in run.records]
    assert starts == sorted(starts) and 0 <= starts[0] <= run.meta.wall_ns
    assert all(r.end_ns <= run.meta.wall_ns for r in run.records)


def test_metadata() -> None:
    offload_core.set_mode("naive")
    with Recorder(fingerprints=True) as rec:
        offload(fill, np.zeros(4), 1.0)
    run = rec.run(command=["offload-prof", "run"], argv=["app.py"], outcome="exit", exit_code=3)
    m = run.meta
    assert (m.backend, m.mode, m.fingerprints, m.outcome, m.exit_code) == ("numpy", "naive", True, "exit", 3)
    assert m.device.startswith("host memory via NumPy") and m.started_at.endswith("+00:00")
    assert m.command == ("offload-prof", "run") and m.argv == ("app.py",) and m.tool_version
    assert m.python.startswith("CPython") or m.python


def test_fingerprints_only_when_asked() -> None:
    for asked in (False, True):
        with Recorder(fingerprints=asked) as rec:
            offload(fill, np.zeros(4), 1.0)
        assert all((r.fingerprint is not None) == (asked and r.is_copy) for r in rec.run().records)


def test_stop_unsubscribes_and_records_nothing_more() -> None:
    rec = Recorder().start()
    offload(fill, np.zeros(4), 1.0)
    rec.stop()
    n = len(rec.raw)
    offload(fill, np.zeros(4), 1.0)
    assert len(rec.raw) == n > 0 and events.BUS.subscribers == ()
    rec.stop()  # idempotent
    with pytest.raises(RuntimeError, match="already recording"):
        rec.start().start()
    rec.stop()


def test_the_hot_path_is_a_bare_list_append() -> None:
    rec = Recorder().start()
    try:
        assert events.BUS.subscribers[-1] == rec.raw.append
    finally:
        rec.stop()


def test_a_region_in_naive_mode_records_per_launch_copies() -> None:
    offload_core.set_mode("naive")
    u, s = np.ones(N), np.zeros(N)
    with Recorder() as rec:
        with region(u, Out(s)):
            for _ in range(4):
                offload(daxpy, u, s, 1.0)
    run = rec.run()
    assert sum(1 for r in run.copies() if r.kind == "h2d") == 8
    assert sum(1 for r in run.copies() if r.kind == "d2h") == 4
    assert {r.mode for r in run.records} == {"naive"}


def test_metadata_names_the_backend_the_program_chose() -> None:
    from offload_core.backends import NumpyBackend

    class Labelled(NumpyBackend):
        name = "labelled"

    with Recorder() as rec:
        offload_core.set_backend(Labelled())
        offload(fill, np.zeros(4), 1.0)
    assert rec.run().meta.backend == "labelled"
