"""Distributed jobs on a real GPU, recorded through CUPTI: torchrun, two ranks sharing one GPU with gloo and CUDA
tensors; and, with two GPUs or more, one rank per GPU with NCCL and a copy between peers.

Each program in `programs/dist_*.py` marks its lines with `# site: NAME`.
Marked `gpu` (skipped without CuPy and a GPU), skipped without
cupti-python or PyTorch, and the NCCL test without a second GPU.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from profiler.analysis.ranks import job_findings
from profiler.model import Run
from profiler.sources.cupti.probe import import_cupti
from profiler.trace.job import job_of

from ...kit import prof
from .test_gpu import marker

PROGRAMS = Path(__file__).resolve().parent / "programs"
CUPTI = import_cupti()[0]
TORCH = importlib.util.find_spec("torch") is not None
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(CUPTI is None, reason="cupti-python is not installed (the cupti extra)"),
              pytest.mark.skipif(not TORCH, reason="needs PyTorch")]
MiB = 1 << 20


def gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def record_job(tmp_path: Path, program: str, *args: str, ranks: int = 2) -> Run:
    tmp_path.mkdir(parents=True, exist_ok=True)
    proc = prof("run", "--source", "cupti", "-o", "job.json", "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(ranks), str(PROGRAMS / program), *args, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "job of 2 rank(s)" in proc.stderr, proc.stderr[-2000:]
    return Run.load(tmp_path / "job.json")


def at(run: Run, program: str, name: str, kind: str) -> list[tuple[int, int]]:
    """(rank, bytes) of the records of `kind` at the marked line (collectives: torch.distributed's calls only)."""
    line = marker(program, name)
    path = str(PROGRAMS / program)
    ranks = [p.rank.rank if p.rank else -1 for p in run.meta.processes]
    return [(ranks[r.process], r.nbytes) for r in run.records
            if r.kind == kind and r.site is not None and r.site.file == path and r.site.line == line
            and not (r.kernel or "").startswith("nccl")]


def test_two_ranks_on_one_gpu_have_their_traces_devices_and_collectives(tmp_path: Path) -> None:
    run = record_job(tmp_path, "dist_staged.py", "staged")
    job = job_of(run)
    assert job is not None and job.ranks == (0, 1) and job.world_size == 2
    assert [job.rank_info(r).device for r in job.ranks] == ["cuda:0", "cuda:0"]
    for rank in (0, 1):
        assert (tmp_path / f"job.rank{rank}.json").exists()
    # the torch.distributed calls, with the bytes of their tensors, at their lines
    assert sorted(at(run, "dist_staged.py", "summary", "collective")) == [(0, 4), (1, 4)]
    assert sorted(at(run, "dist_staged.py", "staged-d2h", "d2h")) == [(0, 4 * MiB)] * 4
    assert sorted(at(run, "dist_staged.py", "staged-h2d", "h2d")) == [(1, 4 * MiB)] * 4


def test_the_host_staged_transfer_is_found_across_ranks_and_not_in_the_fixed_version(tmp_path: Path) -> None:
    staged = job_of(record_job(tmp_path / "staged", "dist_staged.py", "staged"))
    assert staged is not None
    (f,) = [f for f in job_findings(staged) if f.code == "OFF508"]
    assert f.line == marker("dist_staged.py", "staged-d2h") and f.ranks == (0, 1)
    assert (f.count, f.nbytes) == (4, 16 * MiB)
    fixed = job_of(record_job(tmp_path / "fixed", "dist_staged.py", "fixed"))
    assert fixed is not None and [f for f in job_findings(fixed) if f.code == "OFF508"] == []


def test_the_per_step_logging_collective_is_found_and_not_in_the_fixed_version(tmp_path: Path) -> None:
    logging = job_of(record_job(tmp_path / "logging", "dist_logging.py", "logging"))
    assert logging is not None
    (f,) = [f for f in job_findings(logging) if f.code == "OFF509"]
    assert f.line == marker("dist_logging.py", "per-step") and f.ranks == (0, 1) and f.count == 8
    assert f.nbytes == 8 * 4
    fixed = job_of(record_job(tmp_path / "fixed", "dist_logging.py", "fixed"))
    assert fixed is not None and [f for f in job_findings(fixed) if f.code == "OFF509"] == []
    assert sorted(at(fixed.run, "dist_logging.py", "once", "collective")) == [(0, 4), (1, 4)]


def test_nccl_on_two_gpus_records_its_kernels_as_collectives_and_the_peer_copy_with_both_devices(
        tmp_path: Path) -> None:
    # asked here, not in a skipif: that would import PyTorch into the test process while the module is collected,
    # and the tests after it (the transfer guard's) would find it loaded
    if gpus() < 2:
        pytest.skip("needs two GPUs (NCCL and peer copies across devices)")
    run = record_job(tmp_path, "dist_nccl.py")
    job = job_of(run)
    assert job is not None and [job.rank_info(r).device for r in job.ranks] == ["cuda:0", "cuda:1"]
    ranks = [p.rank.rank if p.rank else -1 for p in run.meta.processes]
    nccl = [r for r in run.records if r.kind == "collective" and (r.kernel or "").startswith("nccl")]
    assert {ranks[r.process] for r in nccl} == {0, 1}
    assert {r.device for r in nccl if ranks[r.process] == 1} == {1}
    line = marker("dist_nccl.py", "all-reduce")
    calls = sorted((ranks[r.process], r.nbytes) for r in run.records if r.kind == "collective"
                   and r.kernel == "all_reduce" and r.site is not None and r.site.line == line)
    assert calls == [(0, 4 * MiB)] * 3 + [(1, 4 * MiB)] * 3, "torch.distributed's calls, beside NCCL's kernels"
    peer = [r for r in run.records if r.kind == "d2d" and r.site is not None
            and r.site.line == marker("dist_nccl.py", "peer")]
    assert [(r.device, r.peer, r.nbytes) for r in peer] == [(0, 1, 4 * MiB)]
