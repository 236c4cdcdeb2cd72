"""LaunchTable is by_launch as columns: the same launches, figure for figure."""

from __future__ import annotations

from pathlib import Path

from profiler.trace.columns import NULL
from profiler.launches import launch_table
from profiler.model import Run
from profiler.summary import by_launch

from .kit import record
from .synth import LINK, synthetic_run


def _agree(run: Run) -> None:
    for link in (None, LINK):
        table = launch_table(run, link)
        launches = by_launch(run, link)
        assert len(table) == len(launches)
        for row, s in enumerate(launches):
            assert int(table.index[row]) == s.index
            assert table.kernel_name(row) == s.kernel and table.site_of(row) == s.site
            assert (None if table.region[row] == NULL else int(table.region[row])) == s.region
            assert (int(table.start_ns[row]), int(table.kernel_ns[row]), int(table.sync_ns[row])) == (s.start_ns, s.kernel_ns, s.sync_ns)
            assert (int(table.h2d_count[row]), int(table.h2d_bytes[row]), int(table.h2d_ns[row])) == (s.h2d.count, s.h2d.nbytes, s.h2d.ns)
            assert (int(table.d2h_count[row]), int(table.d2h_bytes[row]), int(table.d2h_ns[row])) == (s.d2h.count, s.d2h.nbytes, s.d2h.ns)
            assert int(table.total_ns[row]) == s.total_ns
            if link is None:
                assert table.copy_modelled is None
            else:
                assert table.h2d_modelled is not None and table.d2h_modelled is not None
                assert (int(table.h2d_modelled[row]), int(table.d2h_modelled[row])) == (s.h2d.modelled_ns, s.d2h.modelled_ns)


def test_launch_table_matches_by_launch_on_a_synthetic_run() -> None:
    _agree(synthetic_run(5000, seed=3))


def test_launch_table_matches_by_launch_on_a_recorded_run(tmp_path: Path) -> None:
    run = record("""\
        import numpy as np
        from offload_core import offload, region
        from tests.offload_core.kit import daxpy, scale
        x, y = np.ones(100), np.zeros(100)
        for _ in range(4):
            offload(daxpy, y, x, 1.0)
        with region(y):
            offload(scale, y, 2.0)
        """, tmp_path)
    table = launch_table(run)
    assert [table.kernel_name(i) for i in range(len(table))] == ["daxpy"] * 4 + ["scale"]
    assert table.h2d_bytes.tolist() == [1600] * 4 + [0] and table.d2h_bytes.tolist() == [800] * 4 + [0]
    _agree(run)
    _agree(Run.load(run.save(tmp_path / "t.json")))


def test_an_empty_run_has_no_launches() -> None:
    run = Run(synthetic_run(1).meta, ())
    assert len(launch_table(run)) == 0
