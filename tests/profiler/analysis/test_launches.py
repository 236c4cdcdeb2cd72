"""LaunchTable: every launch's figures as columns, checked against the definitions record by record."""

from __future__ import annotations

from pathlib import Path

from profiler.analysis.launches import launch_table
from profiler.model import Link, Record, Run, Site
from profiler.trace.columns import NULL

from ..kit import record
from ..synth import LINK, synthetic_run
from .test_summary import modelled_ns


def _reference(run: Run, link: Link | None) -> list[tuple[object, ...]]:
    """Per launch index, as the docstring defines it: (index, kernel, site, region, start, kernel ns,
    h2d count/bytes/ns/modelled, d2h count/bytes/ns/modelled, sync ns)."""
    launches: dict[int, list[Record]] = {}
    for r in run.records:
        if r.launch is not None:
            launches.setdefault(r.launch, []).append(r)
    out = []
    for index in sorted(launches):
        rs = launches[index]
        heads = [r for r in rs if r.kind == "launch"]
        head = heads[-1] if heads else rs[0]

        def flow(kind: str) -> tuple[object, ...]:
            mine = [r for r in rs if r.kind == kind]
            return (len(mine), sum(r.nbytes for r in mine), sum(r.duration_ns for r in mine),
                    None if link is None else sum(modelled_ns(r, link) for r in mine))

        out.append((index, head.kernel or "?", head.site, head.region, rs[0].start_ns,
                    heads[-1].duration_ns if heads else 0, *flow("h2d"), *flow("d2h"),
                    sum(r.duration_ns for r in rs if r.kind == "sync")))
    return out


def _rows(run: Run, link: Link | None) -> list[tuple[object, ...]]:
    t = launch_table(run, link)
    rows = []
    for i in range(len(t)):
        region = None if t.region[i] == NULL else int(t.region[i])
        h2d_m = None if t.h2d_modelled is None else int(t.h2d_modelled[i])
        d2h_m = None if t.d2h_modelled is None else int(t.d2h_modelled[i])
        rows.append((int(t.index[i]), t.kernel_name(i), t.site_of(i), region, int(t.start_ns[i]), int(t.kernel_ns[i]),
                     int(t.h2d_count[i]), int(t.h2d_bytes[i]), int(t.h2d_ns[i]), h2d_m,
                     int(t.d2h_count[i]), int(t.d2h_bytes[i]), int(t.d2h_ns[i]), d2h_m, int(t.sync_ns[i])))
    return rows


def _agree(run: Run) -> None:
    for link in (None, LINK):
        assert _rows(run, link) == _reference(run, link)
        table = launch_table(run, link)
        assert (table.copy_modelled is None) == (link is None)


def test_launch_table_matches_the_definitions_on_a_synthetic_run() -> None:
    _agree(synthetic_run(5000, seed=3))


def test_launch_table_matches_the_definitions_on_a_recorded_run(tmp_path: Path) -> None:
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
    assert table.h2d_count.tolist() == [2] * 4 + [0] and table.region[4] != NULL and table.region[0] == NULL
    site = table.site_of(0)
    assert isinstance(site, Site) and site.line == 6
    _agree(run)
    _agree(Run.load(run.save(tmp_path / "t.json")))


def test_an_empty_run_has_no_launches() -> None:
    run = Run(synthetic_run(1).meta, ())
    assert len(launch_table(run)) == 0
