"""What each view lists: launches paired by ordinal, kernels and call sites merged by name, findings per run."""

from __future__ import annotations

from pathlib import Path

from profiler.model import Run
from profiler.tui.session import Session
from profiler.tui.tables import findings_table, kernels_table, launches_table, sites_table

from .kit import BATCHED, NAIVE, link, session


def test_launches_pair_by_ordinal_even_when_indices_differ() -> None:
    s = session()
    a, b = s.traces
    assert int(a.launches.index[0]) != int(b.launches.index[0]), "recorded in one process: indices continue"
    t = launches_table(s)
    assert len(t) == 31 and t.cells(0)[0] == ["0"]
    assert t.cells(5)[1][0] == t.cells(5)[2][0] == "smooth"  # type: ignore[index]


def test_a_shorter_run_leaves_its_side_empty(tmp_path: Path) -> None:
    full = Run.load(NAIVE)
    short = Run(full.meta, tuple(r for r in full.records if r.launch is None or r.launch < int(
        session().traces[0].launches.index[10])))
    s = Session.build([full, Run.load(BATCHED)][:1] + [short], [str(NAIVE), "short.json"], None)
    t = launches_table(s)
    assert len(t) == 31 and t.cells(9)[2] is not None and t.cells(10)[2] is None


def test_kernels_and_call_sites_merge_both_runs() -> None:
    s = session()
    k = kernels_table(s)
    assert [k.cells(r)[0][0] for r in range(len(k))] == ["smooth", "scale"]  # type: ignore[index]
    assert k.cells(0)[1][0] == "30" and k.cells(0)[2][0] == "30"  # type: ignore[index]
    sites = sites_table(s)
    labels = [sites.cells(r)[0][0] for r in range(len(sites))]  # type: ignore[index]
    assert labels == ["stencil.py:30 in main", "stencil.py:31 in main", "stencil.py:32 in main", "stencil.py:28 in main"]
    region = labels.index("stencil.py:28 in main")
    assert sites.cells(region)[1] is None, "the naive run copies nothing at the region line"
    assert sites.cells(region)[2][0] == "3"  # type: ignore[index]


def test_findings_rows_name_their_run() -> None:
    s = session()
    s.set_findings(s.detect())
    t = findings_table(s)
    assert [t.cells(r)[0][:2] for r in range(len(t))] == [["naive", "OFF501"], ["naive", "OFF501"], ["naive", "OFF503"]]  # type: ignore[index]
    t.set_filter("round trip")
    assert len(t) == 1
    pending = Session.build([Run.load(NAIVE)], [str(NAIVE)], link())
    assert pending.findings is None and len(findings_table(pending)) == 0


def test_source_files_are_found_relative_to_the_trace() -> None:
    s = session()
    site = next(r.site for r in s.traces[0].run.records if r.site is not None)
    assert site.file == "stencil.py"
    found = s.traces[0].source_file(site)
    assert found is not None and found.resolve() == (NAIVE.parent / "stencil.py").resolve()


def test_a_jobs_findings_have_a_ranks_column() -> None:
    from profiler.model import Meta, Process, Rank, Record, Site

    site = Site("train.py", 30, "<module>", "dist.all_reduce(loss)", 5)
    processes = tuple(Process(100 + r, 1, "exec", ("train.py",), rank=Rank(r, r, 2, "cpu", "j")) for r in range(2))
    records = tuple(Record("collective", 1_000_000 * n + r, 20_000, 4, kernel="all_reduce", site=site, process=r)
                    for n in range(5) for r in range(2))
    run = Run(Meta(backend="numpy", device="cpu", mode="batched", started_at="", wall_ns=10_000_000,
                   processes=processes), records)
    s = Session.build([run], ["job.json"], None)
    s.set_findings(s.detect())
    t = findings_table(s)
    assert [t.cells(r)[0][:2] for r in range(len(t))] == [["OFF509", "0-1"]]  # type: ignore[index]
    t.set_filter("ranks 0-1")
    assert len(t) == 1
