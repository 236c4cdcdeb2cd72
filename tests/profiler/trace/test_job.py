"""Ranks in the trace model: the launcher's variables, `Rank` in trace files, a job's views, merging rank traces."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from profiler.analysis.ranks import ranks_text, summarise
from profiler.errors import TraceError
from profiler.model import Meta, Process, Rank, Record, Run, Site
from profiler.sources.merge import ADDRESS_BITS
from profiler.sources.ranks import current_device, job_id, merge_ranks, rank_from_env
from profiler.trace.job import job_of
from profiler.trace.tracefile import rank_path

from ..kit import ROOT, prof

SITE = Site("train.py", 7, "<module>", "offload(step, u)", 5)


def meta(processes: tuple[Process, ...], started_at: str = "2026-12-03T10:00:00.000+00:00", wall: int = 10_000) -> Meta:
    return Meta(backend="numpy", device="host", mode="batched", started_at=started_at, wall_ns=wall,
                processes=processes)


def worker(rank: int, world: int = 2, device: str = "cpu", pid: int = 100) -> Process:
    return Process(pid + rank, 1, "exec", ("train.py",), rank=Rank(rank, rank, world, device, "j"))


def test_the_rank_comes_from_torchruns_variables() -> None:
    got = rank_from_env({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "TORCHELASTIC_RUN_ID": "abc",
                         "MASTER_ADDR": "node0", "MASTER_PORT": "29500"}, device="cuda:1")
    assert got == Rank(3, 1, 4, "cuda:1", "abc|node0|29500")
    assert rank_from_env({"RANK": "0", "WORLD_SIZE": "1"}) == Rank(0, 0, 1, "", "")
    assert job_id({"OFFLOAD_PROF_JOB": "mine", "TORCHELASTIC_RUN_ID": "abc"}) == "mine"
    for env in ({}, {"RANK": "0"}, {"RANK": "x", "WORLD_SIZE": "2"}, {"RANK": "2", "WORLD_SIZE": "2"},
                {"RANK": "-1", "WORLD_SIZE": "2"}, {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "-3"}):
        assert rank_from_env(env) is None, env


def fake_torch(initialised: bool, device: int = 0) -> SimpleNamespace:
    """What `current_device` reads of a loaded PyTorch: whether CUDA was initialised, and its current device."""
    return SimpleNamespace(cuda=SimpleNamespace(is_initialized=lambda: initialised, current_device=lambda: device))


def test_the_device_of_a_rank_is_what_its_program_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    assert current_device() == "" and current_device("numpy") == "cpu"
    monkeypatch.setitem(sys.modules, "torch", fake_torch(True, 1))
    assert current_device() == "cuda:1" and current_device("numpy") == "cuda:1"
    # PyTorch loaded but CUDA never touched (gloo on the CPU): its tensors stayed on the host
    monkeypatch.setitem(sys.modules, "torch", fake_torch(False))
    assert current_device() == "cpu"
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace(cuda=SimpleNamespace(
        runtime=SimpleNamespace(getDevice=lambda: 3))))
    assert current_device() == "cuda:3", "CuPy's device where the program used CuPy beside a CPU-only PyTorch"
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace())  # no torch.cuda: nothing known from PyTorch
    monkeypatch.delitem(sys.modules, "cupy")
    assert current_device() == ""


def test_a_rank_survives_the_trace_file_and_a_process_without_one_writes_none(tmp_path: Path) -> None:
    launcher = Process(1, None, "main", ("torchrun",))
    records = (Record("h2d", 0, 5, 64, site=SITE, process=1), Record("h2d", 6, 5, 64, site=SITE, process=2))
    run = Run(meta((launcher, worker(0), worker(1))), records)
    run.save(tmp_path / "job.json")
    data = json.loads((tmp_path / "job.json").read_text())
    assert "rank" not in data["meta"]["processes"][0]
    assert data["meta"]["processes"][2]["rank"] == {"rank": 1, "local_rank": 1, "world_size": 2, "device": "cpu",
                                                    "job": "j"}
    assert Run.load(tmp_path / "job.json") == run


@pytest.mark.parametrize("rank, problem", [
    ([0, 1], "must be an object, got an array"),
    ({"rank": 2, "local_rank": 0, "world_size": 2}, "rank below world_size"),
    ({"rank": 0, "local_rank": 0, "world_size": 2, "device": 3}, "device and job must be strings"),
])
def test_a_bad_rank_is_a_one_line_error(tmp_path: Path, rank: object, problem: str) -> None:
    run = Run(meta((worker(0),)), (Record("h2d", 0, 5, 64),))
    data = run.to_json()
    data["meta"]["processes"][0]["rank"] = rank
    with pytest.raises(TraceError, match="meta.processes\\[0\\].rank") as err:
        Run.from_json(data, "job.json")
    assert problem in str(err.value) and "\n" not in str(err.value)


def test_a_jobs_rank_trace_holds_its_processes_records_in_order() -> None:
    launcher = Process(1, None, "main", ("torchrun",))
    loader = Process(300, 100, "fork", ("train.py",), rank=Rank(0, 0, 2, "", "j"))
    records = (Record("h2d", 0, 5, 64, site=SITE, process=1), Record("launch", 1, 2, kernel="k", process=2),
               Record("h2d", 2, 5, 32, site=SITE, process=3), Record("d2h", 9, 5, 64, site=SITE, process=1),
               Record("sync", 10, 1, process=0))
    job = job_of(Run(meta((launcher, worker(0, device="cuda:0"), worker(1, device="cuda:1"), loader)), records))
    assert job is not None and job.ranks == (0, 1) and job.world_size == 2 and job.missing == ()
    assert job.rank_of_records().tolist() == [0, 1, 0, 0, -1]
    zero = job.rank_run(0)
    assert [(r.kind, r.start_ns, r.process) for r in zero.records] == [("h2d", 0, 0), ("h2d", 2, 1), ("d2h", 9, 0)]
    assert [p.pid for p in zero.meta.processes] == [100, 300] and zero.meta.device == "cuda:0"
    assert job.rank_run(1).meta.device == "cuda:1"
    with pytest.raises(KeyError):
        job.rank_run(2)
    assert job_of(Run(meta((launcher,)), ())) is None
    assert job_of(Run(meta((worker(1, world=4),)), ())).missing == (0, 2, 3)  # type: ignore[union-attr]


def test_the_slowest_rank_is_the_one_busiest_on_its_own_work() -> None:
    records = (Record("h2d", 0, 400, 64, site=SITE, process=0), Record("launch", 500, 100, kernel="k", process=0),
               Record("h2d", 0, 100, 64, site=SITE, process=1), Record("sync", 200, 50, process=1))
    s = summarise(job_of(Run(meta((worker(0), worker(1))), records)))  # type: ignore[arg-type]
    assert [(r.rank, r.busy_ns, r.end_ns) for r in s.ranks] == [(0, 500, 600), (1, 150, 250)]
    assert s.slowest is not None and s.slowest.rank == 0 and s.imbalance() == pytest.approx(500 / 150)
    assert s.job.h2d.count == 2 and s.job.h2d.nbytes == 128
    idle = summarise(job_of(Run(meta((worker(0), worker(1))), ())))  # type: ignore[arg-type]
    assert idle.slowest is None and idle.imbalance() is None


def test_rank_lists_read_as_ranges() -> None:
    assert ranks_text([3]) == "rank 3"
    assert ranks_text([0, 1, 2, 3]) == "ranks 0-3"
    assert ranks_text([5, 0, 2, 1]) == "ranks 0-2, 5"
    assert ranks_text([]) == ""


def test_rank_traces_merge_onto_one_clock_with_unique_launches_and_buffers() -> None:
    def rank_trace(rank: int, started: str) -> Run:
        child = Process(500 + rank, 100 + rank, "fork", ("train.py",), rank=Rank(rank, rank, 2, "cpu", "j"))
        records = (Record("h2d", 10, 5, 64, launch=0, array=0x1000, site=SITE, process=0),
                   Record("launch", 20, 5, kernel="k", launch=0, process=0),
                   Record("h2d", 30, 5, 64, launch=1, array=(1 << ADDRESS_BITS) | 0x1000, site=SITE, process=1))
        return Run(replace(meta((worker(rank), child), started), wall_ns=100), records)

    merged = merge_ranks([rank_trace(1, "2026-12-03T10:00:00.002+00:00"), rank_trace(0, "2026-12-03T10:00:00.000+00:00")])
    assert [p.rank.rank for p in merged.meta.processes] == [0, 0, 1, 1]  # type: ignore[union-attr]
    assert merged.meta.wall_ns == 2_000_000 + 100
    assert [(r.start_ns, r.process, r.launch) for r in merged.records] == [
        (10, 0, 0), (20, 0, 0), (30, 1, 1), (2_000_010, 2, 2), (2_000_020, 2, 2), (2_000_030, 3, 3)]
    arrays = [r.array for r in merged.records if r.array is not None]
    assert arrays == [0x1000, (1 << ADDRESS_BITS) | 0x1000, (2 << ADDRESS_BITS) | 0x1000, (3 << ADDRESS_BITS) | 0x1000]
    with pytest.raises(ValueError):
        merge_ranks([])


def test_rank_trace_names_sit_beside_the_job() -> None:
    assert rank_path(Path("out/job.json"), 3) == Path("out/job.rank3.json")
    assert rank_path(Path("job.json.gz"), 0) == Path("job.rank0.json.gz")
    assert rank_path(Path("job"), 1) == Path("job.rank1.json")


def test_gating_one_rank_of_a_run_that_is_no_job_is_refused(tmp_path: Path) -> None:
    trace = ROOT / "tests" / "data" / "stencil.naive.json"
    proc = prof("gate", str(trace), "--baseline", str(trace), "--rank", "0", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("offload-prof: error: --rank 0: the run is not a distributed job "
                                   "(no process has a rank)")


def test_device_copies_memsets_and_collectives_are_kept_in_schema_4(tmp_path: Path) -> None:
    from profiler.outputs.chrome import to_chrome

    records = (Record("d2d", 0, 5, 4096, site=SITE, device=0, peer=1), Record("memset", 6, 2, 64, device=1),
               Record("collective", 9, 30, 4, kernel="all_reduce", site=SITE, device=0), Record("h2d", 40, 5, 64))
    run = Run(meta((Process(1),)), records)
    data = run.to_json()
    assert data["schema"] == 4 and {"device", "peer"} <= set(data["columns"])
    assert Run.load(run.save(tmp_path / "t.json")) == run
    with pytest.raises(ValueError, match="schema 4"):
        run.to_json(schema=3)
    plain = Run(meta((Process(1),)), (Record("h2d", 40, 5, 64),))
    assert plain.to_json()["schema"] == 2, "a run without them stays readable by older versions"
    events = to_chrome([run])["traceEvents"]
    assert [(e["cat"], e["name"]) for e in events if e.get("cat") in ("d2d", "memset", "collective")] == [
        ("d2d", "D2D 0->1"), ("memset", "memset"), ("collective", "all_reduce")]
