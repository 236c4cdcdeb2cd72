"""The rules of distributed jobs (OFF508 staged transfer, OFF509 logging collective, OFF510 stall) and the
recording of torch.distributed's calls.

The rules are checked three ways: on jobs built record by record (exact
times, so that which rank waited for which is known), on a job recorded
for real with the stand-in for torch.distributed (so that they run without
PyTorch), and, where PyTorch is installed (the `distributed` extra, which
CI installs), on the catalog's examples run under torchrun
with the gloo backend (those that use CUDA tensors only on a GPU).
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from offload_core.catalog import load_catalog
from profiler.analysis.ranks import job_findings
from profiler.model import Meta, Process, Rank, Record, Run, Site
from profiler.trace.job import job_of

from ..kit import PROGRAMS, prof

CATALOG = load_catalog()
TORCH = importlib.util.find_spec("torch") is not None
STANDIN = PROGRAMS / "standin_torch"
LOGGED = PROGRAMS / "logged.py"
LAUNCHER = PROGRAMS / "launch_ranks.py"
MiB = 1 << 20


def line_of(program: Path, mark: str) -> int:
    return next(n for n, text in enumerate(program.read_text().splitlines(), 1) if text.endswith(mark))


def site(line: int, text: str = "") -> Site:
    return Site("train.py", line, "<module>", text, 5)


def job(*records: Record, world: int = 2, fingerprints: bool = True) -> Run:
    processes = tuple(Process(100 + r, 1, "exec", ("train.py",), rank=Rank(r, r, world, "cuda:0", "j"))
                      for r in range(world))
    meta = Meta(backend="cupti", device="gpu", mode="batched", started_at="2026-12-03T10:00:00.000+00:00",
                wall_ns=max((r.end_ns for r in records), default=0) + 1000, fingerprints=fingerprints,
                processes=processes)
    return Run(meta, tuple(sorted(records, key=lambda r: r.start_ns)))


def findings(run: Run, code: str) -> list:  # type: ignore[type-arg]
    found = job_of(run)
    assert found is not None
    return [f for f in job_findings(found) if f.code == code]


# ------------------------------------------------------------------ OFF508
def staged(steps: int = 3, *, receiver_had_it: bool = False) -> list[Record]:
    out = []
    for n in range(steps):
        t = 1_000_000 * (n + 1)
        out.append(Record("d2h", t, 50_000, MiB, site=site(10), fingerprint=f"f{n}", process=0))
        out.append(Record("h2d", t + 200_000, 40_000, MiB, site=site(20), fingerprint=f"f{n}", process=1))
        if receiver_had_it:
            out.append(Record("h2d", t - 500_000, 40_000, MiB, site=site(5), fingerprint=f"f{n}", process=1))
    return out


def test_bytes_downloaded_on_one_rank_and_uploaded_on_another_are_a_staged_transfer() -> None:
    (f,) = findings(job(*staged()), "OFF508")
    assert (f.site, f.count, f.nbytes, f.ranks) == (site(10), 3, 3 * MiB, (0, 1))
    assert f.lost_ns == 3 * 90_000 and len(f.records) == 6
    assert "went from rank 0 to rank 1 through the host" in f.message and "at line 20" in f.message
    assert f.fix == "send device tensors" and f.expected_saving_ns is not None and f.expected_saving_ns > 0


def test_no_staged_transfer_where_the_receiver_had_the_bytes_the_same_rank_or_no_fingerprints() -> None:
    assert findings(job(*staged(receiver_had_it=True)), "OFF508") == []
    alone = [Record(r.kind, r.start_ns, r.duration_ns, r.nbytes, site=r.site, fingerprint=r.fingerprint, process=0)
             for r in staged()]
    assert findings(job(*alone), "OFF508") == []
    assert findings(job(*staged(), fingerprints=False), "OFF508") == []
    small = [Record(r.kind, r.start_ns, r.duration_ns, 512, site=r.site, fingerprint=r.fingerprint,
                    process=r.process) for r in staged()]
    assert findings(job(*small), "OFF508") == [], "below min_bytes"


def staged_through_updates(then: str) -> Run:
    """One rank downloading a buffer at line 21 four times, each download followed by a call on that buffer."""
    records = []
    for n in range(4):
        t = 1_000_000 * (n + 1)
        records.append(Record("d2h", t, 50_000, MiB, array=0x7F00, site=site(21), process=0))
        records.append(Record("collective", t + 100_000, 30_000, MiB, kernel=then, array=0x7F00, site=site(22),
                              process=0))
    run = job(*records, world=1)
    return Run(replace(run.meta, backend="numpy", device="host"), run.records)  # OFF506 skips CUPTI traces


def test_a_download_sent_to_another_rank_was_read_and_one_received_over_was_not() -> None:
    from profiler.analysis.detectors import detect

    assert [f.code for f in detect(staged_through_updates("send"))] == [], "the send reads what was downloaded"
    assert [f.code for f in detect(staged_through_updates("all_reduce"))] == []
    (f,) = detect(staged_through_updates("recv"))
    assert (f.code, f.count, f.site) == ("OFF506", 3, site(21)), "a receive overwrites the download unread"


# ------------------------------------------------------------------ OFF509
def metric_collectives(rank: int, steps: int, nbytes: int = 4, op: str = "all_reduce") -> list[Record]:
    return [Record("collective", 1_000_000 * (n + 1) + rank, 20_000, nbytes, kernel=op, site=site(30), process=rank)
            for n in range(steps)]


def test_a_tiny_collective_every_step_on_every_rank_is_one_finding_naming_the_ranks() -> None:
    (f,) = findings(job(*metric_collectives(0, 5), *metric_collectives(1, 5)), "OFF509")
    assert (f.site, f.count, f.nbytes, f.ranks) == (site(30), 5, 20, (0, 1))
    assert f.message.startswith("all_reduce of 4 B from this line 5 times (20 B in all)")
    assert f.related == ("OFF303",) and f.lost_ns == 2 * 5 * 20_000 and f.modelled_lost_ns is None


def test_a_finding_folded_across_ranks_says_the_time_lost_on_all_of_them() -> None:
    slow = [replace(r, duration_ns=50_000) for r in metric_collectives(1, 5)]  # rank 1's calls take longer
    (f,) = findings(job(*metric_collectives(0, 5), *slow), "OFF509")
    assert f.ranks == (0, 1) and f.lost_ns == 5 * 20_000 + 5 * 50_000
    assert f.message.endswith("; 350 µs lost"), f.message


def test_large_rare_and_nccl_collectives_are_no_logging_collective() -> None:
    assert findings(job(*metric_collectives(0, 5, nbytes=4 * MiB), *metric_collectives(1, 5, nbytes=4 * MiB)),
                    "OFF509") == []
    assert findings(job(*metric_collectives(0, 2), *metric_collectives(1, 2)), "OFF509") == []
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    assert findings(job(*metric_collectives(0, 5, op=nccl), *metric_collectives(1, 5, op=nccl)), "OFF509") == []


# ------------------------------------------------------------------ OFF510
def stalled(steps: int, sync_ns: int, *, late: int = 1) -> list[Record]:
    """Each step: rank `late` syncs for `sync_ns` at line 40, then both ranks meet at an all_reduce at line 41."""
    out = []
    t = 0
    for _ in range(steps):
        early = t + 10_000
        out.append(Record("sync", t, sync_ns, site=site(40), process=late))
        arrival = t + sync_ns + 1_000
        out.append(Record("collective", arrival, 5_000, 4, kernel="all_reduce", site=site(41), process=late))
        out.append(Record("collective", early, arrival - early + 5_000, 4, kernel="all_reduce", site=site(41),
                          process=1 - late))
        t = arrival + 100_000
    return out


def test_a_sync_on_one_rank_before_a_collective_is_charged_with_the_others_wait() -> None:
    (f,) = findings(job(*stalled(4, 2_000_000)), "OFF510")
    wait = 2_000_000 + 1_000 - 10_000  # rank 0 arrived 10 us into the step, rank 1 after its sync
    assert (f.site, f.count, f.ranks) == (site(40), 4, (1,))
    assert f.lost_ns == 4 * wait and f.expected_saving_ns == 4 * wait
    assert f.message.startswith("rank 1 waited for its device here 4 times just before all_reduce at line 41, "
                                "and rank(s) 0 waited 7.96 ms in all")
    assert f.fix == "read after the collective"


def test_no_stall_when_the_wait_is_short_the_sync_is_not_its_cause_or_it_happened_once() -> None:
    assert findings(job(*stalled(4, 50_000)), "OFF510") == [], "waits below min_wait"
    assert findings(job(*stalled(1, 2_000_000)), "OFF510") == [], "once is not a pattern (min_count)"
    # the late rank's sync is short against the wait: something else made it late
    short = [r if r.kind != "sync" else Record("sync", r.start_ns + 1_900_000, 100_000, site=r.site, process=r.process)
             for r in stalled(4, 2_000_000)]
    assert findings(job(*short), "OFF510") == []


def test_a_stall_replaces_the_late_ranks_own_finding_on_the_same_sync() -> None:
    """With launches before it the sync is also OFF507 on rank 1 alone; the job reports it once, as the stall."""
    records = stalled(6, 2_000_000)
    launches = [Record("launch", r.start_ns - 5_000 + 800 * n, 600, kernel="gemm", site=site(38), process=1)
                for r in records if r.kind == "sync" for n in range(5)]
    from profiler.analysis.detectors import detect

    alone = job_of(job(*records, *launches))
    assert alone is not None and "OFF507" in [f.code for f in detect(alone.rank_runs()[1])], "the rank alone"
    found = job_of(job(*records, *launches))
    assert found is not None
    codes = [(f.code, f.site.line if f.site else 0) for f in job_findings(found)]
    assert ("OFF510", 40) in codes and not [c for c in codes if c[1] == 40 and c[0] != "OFF510"], codes
    # where the same line also syncs on a rank the stall does not blame, that rank's finding stays
    both = records + [replace(r, process=0, start_ns=r.start_ns + 1) for r in records if r.kind == "sync"]
    found = job_of(job(*both, *launches, *[replace(r, process=0, start_ns=r.start_ns + 1) for r in launches]))
    assert found is not None
    assert any(f.code != "OFF510" and f.site == site(40) and 0 in f.ranks for f in job_findings(found))


def test_ranks_that_stop_calling_the_same_collectives_are_not_lined_up_further() -> None:
    records = stalled(4, 2_000_000)
    renamed = [Record(r.kind, r.start_ns, r.duration_ns, r.nbytes, kernel="broadcast", site=r.site, process=0)
               if r.kind == "collective" and r.process == 0 and r.start_ns > 4_000_000 else r for r in records]
    (f,) = findings(job(*renamed), "OFF510")
    assert f.count == 2, "the first two steps line up; from the third the ranks call different collectives"


# -------------------------------------------- torch.distributed's calls, recorded for real
def test_torch_distributed_calls_are_recorded_with_their_bytes_and_lines(tmp_path: Path) -> None:
    """A job of two ranks whose torch.distributed is the stand-in (it runs without PyTorch): the wrapping is the same."""
    proc = prof("run", "-o", "job.json", "--", str(LAUNCHER), "2", str(LOGGED), cwd=tmp_path,
                PYTHONPATH=str(STANDIN))
    assert proc.returncode == 0, proc.stderr
    run = Run.load(tmp_path / "job.json")
    ranks = [p.rank.rank if p.rank else -1 for p in run.meta.processes]
    met = [r for r in run.records if r.kind == "collective"]
    assert Counter((ranks[r.process], r.kernel, r.nbytes, r.site.line) for r in met) == {  # type: ignore[union-attr]
        (rank, op, nbytes, line): count
        for rank in (0, 1)
        for op, nbytes, line, count in (("all_reduce", 4, line_of(LOGGED, "# the metric line"), 6),
                                        ("all_gather", 4096 * 8, line_of(LOGGED, "# the gather line"), 1),
                                        ("barrier", 0, line_of(LOGGED, "dist.barrier()"), 1))}
    assert all(r.site is not None and r.site.file == str(LOGGED) for r in met)
    gathers = [r for r in met if r.kernel == "all_gather"]
    assert all(r.array is not None for r in gathers), "the address of the tensor's memory"
    assert {r.mode for r in met} == {"batched"}
    report = prof("report", "--format", "json", "job.json", cwd=tmp_path)
    doc = json.loads(report.stdout)
    (f,) = [f for f in doc["findings"] if f["code"] == "OFF509"]
    assert f["ranks"] == [0, 1] and f["count"] == 6 and f["site"]["line"] == line_of(LOGGED, "# the metric line")
    assert [r["collectives"]["count"] for r in doc["job"]["ranks"]] == [8, 8]


OBJECTS = """\
import pickle
import numpy as np
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
for step in range(3):
    got = [None] * world
    dist.all_gather_object(got, {"step": step, "rank": rank})  # the object line
    assert got[rank] == {"step": step, "rank": rank}
send = torch.from_numpy(np.full(4, float(rank)))
back = torch.from_numpy(np.zeros(4))
ops = [dist.P2POp(dist.isend, send, (rank + 1) % world), dist.P2POp(dist.irecv, back, (rank - 1) % world)]
for work in dist.batch_isend_irecv(ops):  # the batch line
    if work is not None:
        work.wait()
dist.barrier()  # neither rank tears gloo down while the other's send may still be in flight (a SIGABRT once in CI)
dist.destroy_process_group()
"""


def objects_job(tmp_path: Path, *launch: str, **environ: str) -> tuple[Run, Path]:
    program = tmp_path / "objects.py"
    program.write_text(OBJECTS)
    proc = prof("run", "-o", "job.json", *launch, str(program), cwd=tmp_path, **environ)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return Run.load(tmp_path / "job.json"), program


def object_records(run: Run, program: Path) -> Counter[tuple[int, str | None, int, int]]:
    ranks = [p.rank.rank if p.rank else -1 for p in run.meta.processes]
    lines = {line_of(program, "# the object line"), line_of(program, "# the batch line")}  # not the closing barrier
    return Counter((ranks[r.process], r.kernel, r.site.line, r.nbytes) for r in run.records  # type: ignore[union-attr]
                   if r.kind == "collective" and r.site is not None and r.site.line in lines)


def expected_objects(program: Path, world: int) -> Counter[tuple[int, str | None, int, int]]:
    import pickle

    objects, batch = line_of(program, "# the object line"), line_of(program, "# the batch line")
    out: Counter[tuple[int, str | None, int, int]] = Counter()
    for rank in range(world):
        for step in range(3):
            pickled = len(pickle.dumps({"step": step, "rank": rank}))
            # the size (8 B) then the pickled bytes, gathered into `world` tensors of each: the input is what counts
            out[(rank, "all_gather_object", objects, 8 + pickled)] += 1
        out[(rank, "batch_isend_irecv", batch, 2 * 4 * 8)] += 1
    return out


def test_object_collectives_and_batched_p2p_are_one_record_each_with_their_bytes(tmp_path: Path) -> None:
    """The stand-in calls its own module's all_gather and checks P2POp's op as PyTorch does: one record per call."""
    run, program = objects_job(tmp_path, "--", str(LAUNCHER), "2", PYTHONPATH=str(STANDIN))
    assert object_records(run, program) == expected_objects(program, 2)


@pytest.mark.skipif(not TORCH, reason="PyTorch is not installed (the distributed extra: make test "
                                       "EXTRAS=test,distributed)")
def test_object_collectives_and_batched_p2p_under_torchrun(tmp_path: Path) -> None:
    """PyTorch's own: a P2POp of the recorded `dist.isend` is accepted, and the object collectives' bytes add up."""
    run, program = objects_job(tmp_path, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2")
    got = object_records(run, program)
    want = expected_objects(program, 2)
    # PyTorch pickles with its own pickler: the object collectives' bytes are its, not pickle.dumps'
    def by_line(c: Counter[tuple[int, str | None, int, int]]) -> Counter[tuple[int, str | None, int]]:
        out: Counter[tuple[int, str | None, int]] = Counter()
        for key, n in c.items():
            out[key[:3]] += n
        return out

    assert by_line(got) == by_line(want), got
    assert all(nbytes > 8 for (_, op, _, nbytes) in got if op == "all_gather_object")
    assert {nbytes for (_, op, _, nbytes) in got if op == "batch_isend_irecv"} == {64}


def test_a_program_without_pytorch_is_not_made_to_import_it(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("import sys\nprint('torch' in sys.modules)\n")
    proc = prof("run", "-o", "t.json", "--", "plain.py", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "False"


# ------------------------------------------------ the catalog's examples, under torchrun
RANKED_CASES = [
    pytest.param(rule, kind, n, ex, id=f"{rule.id}-{kind}{n}",
                 marks=[pytest.mark.gpu] if "cuda" in ex.code else [])
    for rule in CATALOG.rules.values() if rule.kind == "runtime"
    for kind, exs in (("invalid", rule.invalid), ("valid", rule.valid))
    for n, ex in enumerate(exs) if ex.ranks > 1]


def test_every_distributed_rule_has_examples_of_several_ranks() -> None:
    assert {p.values[0].id for p in RANKED_CASES} == {"OFF508", "OFF509", "OFF510"}


@pytest.mark.skipif(not TORCH, reason="PyTorch is not installed (the distributed extra: make test "
                                                    "EXTRAS=test,distributed)")
@pytest.mark.parametrize("rule, kind, n, example", RANKED_CASES)
def test_catalog_example_under_torchrun(tmp_path: Path, rule, kind: str, n: int, example) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / f"{rule.id}_{kind}{n}.py"
    path.write_text(example.code)
    source = ("--source", "cupti") if "cuda" in example.code else ()
    if source:
        from profiler.sources.cupti.probe import import_cupti

        if import_cupti()[0] is None:
            pytest.skip("cupti-python is not installed (the cupti extra): CUDA examples are recorded through CUPTI")
    proc = prof("run", *source, "-o", "job.json", "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(example.ranks), str(path), cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = Run.load(tmp_path / "job.json")
    found = job_of(run)
    assert found is not None and found.ranks == tuple(range(example.ranks))
    got = [f for f in job_findings(found) if f.code == rule.id]
    assert [(f.line, f.column) for f in got] == [(p.line, p.column) for p in example.expect], \
        [f.message for f in got]
    for f in got:
        assert f.site is not None and f.site.file == str(path) and f.ranks and f.count > 0


def test_a_rank_that_uses_only_pytorch_records_its_collectives(tmp_path: Path) -> None:
    (tmp_path / "metric.py").write_text(
        "import numpy as np\nimport torch\nimport torch.distributed as dist\n\n"
        "m = torch.from_numpy(np.zeros(2, dtype=np.float64))\n"
        "for step in range(4):\n    dist.all_reduce(m)\n")
    proc = prof("run", "-o", "job.json", "--", str(LAUNCHER), "2", "metric.py", cwd=tmp_path, PYTHONPATH=str(STANDIN))
    assert proc.returncode == 0, proc.stderr
    run = Run.load(tmp_path / "job.json")
    ranks = [p.rank.rank if p.rank else -1 for p in run.meta.processes]
    assert Counter((ranks[r.process], r.kind, r.nbytes, r.site.line) for r in run.records) == {  # type: ignore[union-attr]
        (0, "collective", 16, 7): 4, (1, "collective", 16, 7): 4}
    (f,) = findings(run, "OFF509")
    assert f.ranks == (0, 1) and f.count == 4


def test_a_torch_call_holds_the_host_and_an_nccl_kernel_runs_on_the_device_in_the_replay() -> None:
    from profiler.analysis.replay import Timeline
    from profiler.analysis.replay.timeline import DEVICE, HOST

    run = job(Record("collective", 0, 50_000, 4, kernel="all_reduce", site=site(30), process=0),
              Record("collective", 60_000, 40_000, 0, kernel="ncclDevKernel_AllReduce_Sum_f32_RING_LL", process=0),
              Record("d2d", 120_000, 10_000, 4096, device=0, peer=1, process=0),
              Record("memset", 140_000, 1_000, 64, device=0, process=0))
    assert Timeline.of(run).role == [HOST, DEVICE, DEVICE, DEVICE]
