"""Distributed jobs recorded for real: ranks as processes of one trace, per-rank traces, the merged job, its consumers.

The ranks are started by tests/profiler/programs/launch_ranks.py, which
does what torchrun does for its workers (a fresh interpreter per rank with
RANK, LOCAL_RANK and WORLD_SIZE set), so that they run without PyTorch;
with PyTorch installed (the `distributed` extra, which CI installs) the
same is checked under torchrun itself, with the gloo backend on the CPU.
Each rank of programs/ranked.py launches `3 + rank * RANKED_EXTRA` times
from one line, so every count below is exact.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from profiler.model import Run

from ..kit import PROGRAMS, env, prof

RANKED = PROGRAMS / "ranked.py"
LAUNCHER = PROGRAMS / "launch_ranks.py"
LAUNCH_LINE = next(n for n, text in enumerate(RANKED.read_text().splitlines(), 1) if text.endswith("# the launch line"))


def launches_per_rank(run: Run) -> Counter[int]:
    ranks = [p.rank.rank if p.rank is not None else -1 for p in run.meta.processes]
    return Counter(ranks[r.process] for r in run.records if r.kind == "launch")


def record_job(folder: Path, extra: int = 0, world: int = 2) -> subprocess.CompletedProcess[str]:
    folder.mkdir(parents=True, exist_ok=True)
    proc = prof("run", "-o", "job.json", "--", str(LAUNCHER), str(world), str(RANKED), cwd=folder,
                RANKED_EXTRA=str(extra))
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A job of two ranks recorded as a whole (rank 1 launches 3 more times than rank 0), and its folder."""
    folder = tmp_path_factory.mktemp("job")
    record_job(folder, extra=3)
    return folder


def test_a_job_recorded_as_a_whole_has_its_ranks_and_a_trace_per_rank(job: Path) -> None:
    run = Run.load(job / "job.json")
    launcher, *workers = run.meta.processes
    assert launcher.rank is None and launcher.start == "main"
    assert sorted((p.rank.rank, p.rank.local_rank, p.rank.world_size, p.rank.device) for p in workers) == [
        (0, 0, 2, "cpu"), (1, 1, 2, "cpu")]
    assert all(p.start == "exec" and p.recorded for p in workers)
    assert launches_per_rank(run) == {0: 3, 1: 6}
    for rank, count in ((0, 3), (1, 6)):
        part = Run.load(job / f"job.rank{rank}.json")
        assert [p.rank.rank for p in part.meta.processes] == [rank], "a rank's trace holds its processes only"
        assert part.meta.device == "cpu"
        assert sum(r.kind == "launch" for r in part.records) == count
        assert {r.site.line for r in part.records if r.kind == "launch"} == {LAUNCH_LINE}
        copies = [r for r in part.records if r.kind == "h2d"]
        assert len(copies) == 2 * count and all(r.nbytes == 8192 for r in copies)


def test_each_rank_recording_itself_writes_its_trace_and_the_last_merges_the_job(tmp_path: Path) -> None:
    """torchrun ... -m profiler run: every rank is a profiler of its own; the last to end writes the job's trace."""
    procs = [subprocess.Popen([sys.executable, "-m", "profiler", "run", "-o", "out/job.json", "--", str(RANKED)],
                              cwd=tmp_path, env=env(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2",
                                                    OFFLOAD_PROF_JOB="job-a", RANKED_EXTRA="2"),
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert sum("the last to finish, the job's trace" in e for e in errs) >= 1
    for rank, count in ((0, 3), (1, 5)):
        part = Run.load(tmp_path / "out" / f"job.rank{rank}.json")
        (main,) = part.meta.processes
        assert main.start == "main" and main.rank is not None and (main.rank.rank, main.rank.job) == (rank, "job-a")
        assert sum(r.kind == "launch" for r in part.records) == count
    merged = Run.load(tmp_path / "out" / "job.json")
    assert [p.rank.rank for p in merged.meta.processes if p.rank] == [0, 1]
    assert launches_per_rank(merged) == {0: 3, 1: 5}
    launches = [r.launch for r in merged.records if r.kind == "launch"]
    assert len(set(launches)) == 8, "launch indices stay unique across the ranks"


def test_a_rank_of_another_job_is_not_merged(tmp_path: Path) -> None:
    for rank, name in ((0, "job-a"), (1, "job-b")):
        proc = prof("run", "-o", "job.json", "--", str(RANKED), cwd=tmp_path, RANK=str(rank), WORLD_SIZE="2",
                    OFFLOAD_PROF_JOB=name)
        assert proc.returncode == 0, proc.stderr
        assert f"rank {rank} of 2 wrote job.rank{rank}.json; the job's trace job.json is written by the last rank" \
            in proc.stderr
    assert not (tmp_path / "job.json").exists()


def test_report_shows_a_rank_table_the_slowest_rank_and_findings_with_their_ranks(job: Path) -> None:
    proc = prof("report", "job.json", cwd=job)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = lines.index("ranks (2 of world size 2)")
    rows = [line.split() for line in lines[start + 2: start + 5]]
    # rank, device, H2D count / bytes, D2H count / bytes, launches, syncs, collectives count / bytes, ...
    assert [row[:3] for row in rows] == [["0", "cpu", "6"], ["1", "cpu", "12"], ["job", "-", "18"]]
    assert [(row[6], row[10], row[11], row[12]) for row in rows] == [
        ("3", "3", "3", "0"), ("6", "6", "6", "0"), ("9", "9", "9", "0")]
    assert lines[start + 5].startswith("slowest  rank ")
    found = [line for line in lines if ": OFF501 " in line]
    assert len(found) == 2, "the ranks launched a different number of times: one finding each"
    assert any("(rank 0) keep resident" in f and "each of 3 launches" in f for f in found)
    assert any("(rank 1) keep resident" in f and "each of 6 launches" in f for f in found)


def test_the_html_page_shows_the_rank_table_and_findings_with_their_ranks(job: Path) -> None:
    from ..outputs.html.dom import cells, parse

    proc = prof("report", "--format", "html", "-o", "job.html", "job.json", cwd=job)
    assert proc.returncode == 0, proc.stderr
    page = parse((job / "job.html").read_text())
    rows = [cells(page.by_id(f"rank-{r}")) for r in ("0", "1", "job")]
    # rank, device, H2D count / bytes, D2H, launches, syncs: the same figures as the text report's table
    assert [row[:2] for row in rows] == [["0", "cpu"], ["1", "cpu"], ["job", "-"]]
    assert [row[2].split(" / ")[0] for row in rows] == ["6", "12", "18"] and [row[4] for row in rows] == ["3", "6", "9"]
    text = (job / "job.html").read_text()
    assert "Ranks (2 of world size 2)" in text and '<p class="note">slowest rank ' in text
    ranked = [cells(page.by_id(i))[1] for i in page.ids("finding-") if page.by_id(i).attrs["data-code"] == "OFF501"]
    assert sorted(r.split()[-1] for r in ranked) == ["0", "1"] and all("rank " in r for r in ranked)


def test_findings_alike_on_every_rank_are_one_finding_naming_the_ranks(tmp_path: Path) -> None:
    record_job(tmp_path, extra=0)
    proc = prof("report", "--format", "json", "job.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    (finding,) = [f for f in doc["findings"] if f["code"] == "OFF501"]
    assert finding["ranks"] == [0, 1] and finding["count"] == 3
    run = Run.load(tmp_path / "job.json")
    blamed = {run.records[i].process for i in finding["records"]}
    assert {run.meta.processes[p].rank.rank for p in blamed} == {0, 1}
    assert [r["rank"] for r in doc["job"]["ranks"]] == [0, 1] and doc["job"]["world_size"] == 2
    assert [r["totals"]["launches"]["count"] for r in doc["job"]["ranks"]] == [3, 3]
    assert doc["job"]["slowest"] in (0, 1)


def test_the_gate_checks_every_rank_one_rank_or_the_job(job: Path, tmp_path: Path) -> None:
    made = prof("gate", str(job / "job.json"), "--baseline", "base.json", "--update-baseline", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    base = json.loads((tmp_path / "base.json").read_text())
    assert base["schema"] == 2
    assert sorted((f["rank"], f["direction"], f["count"], f["bytes"]) for f in base["flows"]) == [
        (0, "d2h", 3, 3 * 8192), (0, "h2d", 6, 6 * 8192), (1, "d2h", 6, 6 * 8192), (1, "h2d", 12, 12 * 8192)]
    same = prof("gate", str(job / "job.json"), "--baseline", "base.json", cwd=tmp_path)
    assert same.returncode == 0 and "gate passed (4 checks)" in same.stdout, same.stdout + same.stderr
    # rank 1 launching 4 more times than rank 0 (instead of 3): one launch more, rank 0 unchanged
    record_job(tmp_path / "more", extra=4)
    more = str(tmp_path / "more" / "job.json")
    every = prof("gate", more, "--baseline", "base.json", cwd=tmp_path)
    assert every.returncode == 1
    failed = [line for line in every.stdout.splitlines() if line.startswith("more copies")]
    assert len(failed) == 2 and all(line.startswith("more copies: rank 1: ") for line in failed)
    assert "count 14 (baseline 12)" in every.stdout and "count 7 (baseline 6)" in every.stdout
    assert prof("gate", more, "--baseline", "base.json", "--rank", "0", cwd=tmp_path).returncode == 0
    one = prof("gate", more, "--baseline", "base.json", "--rank", "1", cwd=tmp_path)
    assert one.returncode == 1 and "FAILED: 2 of 2 checks" in one.stdout
    summed = prof("gate", more, "--baseline", "base.json", "--rank", "job", cwd=tmp_path)
    assert summed.returncode == 1 and "count 20 (baseline 18)" in summed.stdout and "rank 1:" not in summed.stdout
    absent = prof("gate", more, "--baseline", "base.json", "--rank", "5", cwd=tmp_path)
    assert absent.returncode == 2 and "the job has no trace of rank 5 (its ranks: 0, 1)" in absent.stderr
    bad = prof("gate", more, "--baseline", "base.json", "--rank", "first", cwd=tmp_path)
    assert bad.returncode == 2 and "expected all, job or a rank number, got 'first'" in bad.stderr
    # a rank's own trace is a job of that one rank: it gates against the job's baseline for its rank
    lone = prof("gate", str(job / "job.rank0.json"), "--baseline", "base.json", "--rank", "0", "--allow-mismatch",
                cwd=tmp_path)
    assert lone.returncode == 0 and "gate passed (2 checks)" in lone.stdout, lone.stdout + lone.stderr
    other = prof("gate", str(job / "job.rank0.json"), "--baseline", "base.json", "--rank", "1", "--allow-mismatch",
                 cwd=tmp_path)
    assert other.returncode == 2 and "the job has no trace of rank 1 (its ranks: 0)" in other.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_chrome_export_puts_each_rank_on_its_own_process(job: Path, tmp_path: Path) -> None:
    proc = prof("export", str(job / "job.json"), "-o", "job.chrome.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = json.loads((tmp_path / "job.chrome.json").read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert len(names) == 2 and all(n.startswith(f"{LAUNCHER} 2 {RANKED} (batched, numpy): ") for n in names.values())
    assert [n.rsplit(": ", 1)[1] for n in sorted(names.values())] == ["rank 0/2 on cpu", "rank 1/2 on cpu"]
    kernels = Counter(names[e["pid"]].rsplit(": ", 1)[1] for e in events if e.get("cat") == "launch")
    assert kernels == {"rank 0/2 on cpu": 3, "rank 1/2 on cpu": 6}
    instants = Counter(names[e["pid"]].rsplit(": ", 1)[1] for e in events if e["ph"] == "i")
    assert instants == {"rank 0/2 on cpu": 1, "rank 1/2 on cpu": 1}


TORCH_PROGRAM = '''
import numpy as np
import torch
import torch.distributed as dist
from offload_core import In, InOut, kernel, offload

@kernel
def scale(y: InOut, x: In) -> None:
    y += x

dist.init_process_group("gloo")
rank = dist.get_rank()
x = np.ones(1024)
y = np.zeros(1024)
for step in range(2 + rank):
    offload(scale, y, x)
t = torch.from_numpy(y.copy())
for step in range(2):  # every rank calls every collective: a rank with one more would wait for ever
    dist.all_reduce(t)  # the reduce line
assert t[0].item() == 2 * (2 + 3), "rank 0 added x twice, rank 1 three times, and the second reduce doubled it"
dist.destroy_process_group()
'''
TORCH_ONLY = '''
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
m = torch.zeros(3, dtype=torch.float64)
for step in range(5):
    dist.all_reduce(m)  # the metric line
rank = dist.get_rank()
dist.destroy_process_group()  # exiting with gloo's threads alive aborts a rank at times (std::terminate, SIGABRT)
if rank == 1:
    raise SystemExit(3)
'''


def needs_torch() -> None:
    """Skip without PyTorch; never imports it here (in the test process it would stay loaded for the tests after)."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed (the distributed extra: make test EXTRAS=test,distributed); "
                    "the ranks are launched by launch_ranks.py above")


def collectives_per_rank(run: Run) -> Counter[tuple[int, str | None, int, int | None]]:
    ranks = [p.rank.rank if p.rank is not None else -1 for p in run.meta.processes]
    return Counter((ranks[r.process], r.kernel, r.nbytes, r.site.line if r.site else None)
                   for r in run.records if r.kind == "collective")


def test_torchrun_with_gloo_on_the_cpu(tmp_path: Path) -> None:
    needs_torch()
    (tmp_path / "train.py").write_text(TORCH_PROGRAM)
    proc = prof("run", "-o", "job.json", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = Run.load(tmp_path / "job.json")
    ranked = sorted((p.rank.rank, p.rank.local_rank, p.rank.world_size, p.rank.device)
                    for p in run.meta.processes if p.rank is not None)
    assert ranked == [(0, 0, 2, "cpu"), (1, 1, 2, "cpu")]
    jobs = {p.rank.job for p in run.meta.processes if p.rank is not None}
    assert len(jobs) == 1 and jobs.pop().endswith("|0"), "torchrun's run id, rendezvous and restart count"
    assert launches_per_rank(run) == {0: 2, 1: 3}
    line = next(n for n, text in enumerate(TORCH_PROGRAM.splitlines(), 1) if text.endswith("# the reduce line"))
    assert collectives_per_rank(run) == {(0, "all_reduce", 8192, line): 2, (1, "all_reduce", 8192, line): 2}
    for rank in (0, 1):
        part = Run.load(tmp_path / f"job.rank{rank}.json")
        assert [p.rank.rank for p in part.meta.processes] == [rank]
    gate = prof("gate", "job.json", "--baseline", "job.json", "--rank", "1", cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout + gate.stderr


def test_torchruns_console_script_and_a_failing_rank(tmp_path: Path) -> None:
    """`-- torchrun ...` records the launcher as a program; a rank's exit status is torchrun's, and so the run's."""
    needs_torch()
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("PyTorch's torchrun script is not beside this interpreter")
    (tmp_path / "metric.py").write_text(TORCH_ONLY)
    proc = prof("run", "-o", "job.json", "--", str(torchrun), "--standalone", "--nproc-per-node", "2", "metric.py",
                cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "metric.py FAILED" in proc.stderr and "exitcode  : 3" in proc.stderr, proc.stderr[-4000:]
    run = Run.load(tmp_path / "job.json")
    assert run.meta.exit_code == 1
    line = next(n for n, text in enumerate(TORCH_ONLY.splitlines(), 1) if text.endswith("# the metric line"))
    assert collectives_per_rank(run) == {(0, "all_reduce", 24, line): 5, (1, "all_reduce", 24, line): 5}
    assert sorted(p.rank.device for p in run.meta.processes if p.rank is not None) == ["cpu", "cpu"], \
        "PyTorch that never touched CUDA ran on the host"
    report = prof("report", "--format", "json", "job.json", cwd=tmp_path)
    (f,) = [f for f in json.loads(report.stdout)["findings"] if f["code"] == "OFF509"]
    assert f["ranks"] == [0, 1] and f["count"] == 5 and f["site"]["line"] == line


def test_torchrun_starting_a_profiler_per_rank(tmp_path: Path) -> None:
    """`torchrun -m profiler run`: each rank records itself and the last to finish merges the job."""
    needs_torch()
    (tmp_path / "train.py").write_text(TORCH_PROGRAM)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "-m", "profiler", "run", "-o", "out/job.json", "--", "train.py"],
                          cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("the last to finish, the job's trace") == 1, proc.stderr
    merged = Run.load(tmp_path / "out" / "job.json")
    assert [(p.rank.rank, p.start) for p in merged.meta.processes if p.rank] == [(0, "main"), (1, "main")]
    assert launches_per_rank(merged) == {0: 2, 1: 3}
    assert sum(collectives_per_rank(merged).values()) == 4


def test_two_ranks_finishing_together_merge_the_job_once(job: Path, tmp_path: Path) -> None:
    """Ranks that each find every part written (they finished together) must not both merge the job."""
    import time

    from profiler.commands.run import _save_job

    started = time.time_ns() - 1_000_000_000
    ranks = [Run.load(job / f"job.rank{r}.json") for r in (0, 1)]
    output = tmp_path / "out" / "job.json"
    output.parent.mkdir()
    lines = [_save_job(run, output, started) for run in ranks] + [_save_job(ranks[0], output, started)]
    said = [line for each in lines for line in each]
    assert sum("the last to finish, the job's trace" in line for line in said) == 1, said
    assert sum("another rank finishing with it wrote the job's trace" in line for line in said) == 1, said
    assert launches_per_rank(Run.load(output)) == {0: 3, 1: 6}


def test_merge_joins_the_ranks_traces_and_refuses_what_is_no_rank_of_the_job(job: Path, tmp_path: Path) -> None:
    ranks = [str(job / "job.rank0.json"), str(job / "job.rank1.json")]
    proc = prof("merge", *ranks, "-o", "merged/job.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote merged/job.json (2 rank(s) of world size 2)" in proc.stderr
    merged = Run.load(tmp_path / "merged" / "job.json")
    assert launches_per_rank(merged) == {0: 3, 1: 6}
    one = prof("merge", ranks[1], "-o", "one.json", cwd=tmp_path)
    assert one.returncode == 0 and "no trace of rank(s) 0" in one.stderr
    twice = prof("merge", ranks[0], ranks[0], "-o", "x.json", cwd=tmp_path)
    assert twice.returncode == 2 and "rank 0 again" in twice.stderr
    whole = prof("merge", str(job / "job.json"), "-o", "x.json", cwd=tmp_path)
    assert whole.returncode == 2 and "holds 2 ranks already" in whole.stderr
    plain = prof("merge", str(Path(__file__).resolve().parents[2] / "data" / "stencil.naive.json"), "-o", "x.json",
                 cwd=tmp_path)
    assert plain.returncode == 2 and "not the trace of a rank" in plain.stderr
    assert all(len(p.stderr.strip().splitlines()) == 1 for p in (twice, whole, plain))
