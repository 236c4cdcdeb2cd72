"""Children that end as pools and loaders end them: every launch they made is in the trace, or their loss is named.

`with Pool(...)` ends its workers with SIGTERM, `Process.terminate()` too, SIGKILL leaves no chance to write
anything, and a DataLoader's persistent workers are still running when the target ends. Each test runs
tests/profiler/programs/pools.py under `offload-prof run` (NumPy backend) and compares the trace's launches with
the count the program itself prints.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from profiler.model import Run

from ..kit import PROGRAMS, prof

POOLS = PROGRAMS / "pools.py"


def record(tmp_path: Path, *args: str, timeout: float = 120) -> tuple[Run, str, str]:
    proc = prof("run", "-o", "t.json", "--", str(POOLS), *args, cwd=tmp_path, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return Run.load(tmp_path / "t.json"), proc.stdout, proc.stderr


def launches(run: Run) -> Counter[int]:
    return Counter(r.process for r in run.records if r.kind == "launch")


def said(stdout: str) -> int:
    return int(re.search(r"launched (\d+)", stdout).group(1))  # type: ignore[union-attr]


@pytest.mark.parametrize("method", ["spawn", "fork", "forkserver"])
def test_a_pool_used_with_with_gives_every_launch(tmp_path: Path, method: str) -> None:
    run, out, err = record(tmp_path, "pool", method, "4", "3")
    assert said(out) == 12 and sum(launches(run).values()) == 12, err
    assert "warning" not in err and "Traceback" not in err and "Terminated" not in err, err
    workers = run.meta.processes[1:]
    assert all(p.complete for p in run.meta.processes)
    assert all(p.note in ("", "ended by SIGTERM (its records written first)", "os._exit(0)") for p in workers), \
        [p.note for p in workers]


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_terminated_child_writes_its_records_and_still_dies_of_the_signal(tmp_path: Path, method: str) -> None:
    run, out, err = record(tmp_path, "term", method, "5")
    assert out.strip() == "launched 5 exit -15", "the child died of SIGTERM, as it would unprofiled"
    assert launches(run) == {1: 5}
    child = run.meta.processes[1]
    assert child.complete and child.note == "ended by SIGTERM (its records written first)"
    assert "warning" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_childs_own_sigterm_handler_still_runs(tmp_path: Path, method: str) -> None:
    run, out, err = record(tmp_path, "ownterm", method, "2")
    assert out.strip() == "launched 2 exit 3 handler 15", "the program's handler ran and chose the exit"
    assert launches(run) == {1: 2} and run.meta.processes[1].complete, err


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_killed_child_is_named_with_what_it_may_have_lost(tmp_path: Path, method: str) -> None:
    run, out, err = record(tmp_path, "kill", method, "3")
    assert out.strip() == "launched 6 exit -9"
    assert 3 <= launches(run)[1] <= 6, "what it wrote before the kill is kept"
    child = run.meta.processes[1]
    assert not child.complete and child.note.startswith("no end: killed before it finished writing its records")
    lines = [line for line in err.splitlines() if "warning" in line]
    assert len(lines) == 1 and lines[0].startswith(
        f"offload-prof: warning: 1 child process ended before writing all it recorded: pid {child.pid} "), lines
    assert "meta.processes" in lines[0]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_with_persistent_workers_give_their_counts(tmp_path: Path, method: str) -> None:
    pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[distributed]')")
    run, out, err = record(tmp_path, "loader", method, "2", timeout=300)
    assert said(out) == 24 and sum(launches(run).values()) == 24, err
    assert "warning" not in err and "Traceback" not in err, err
    assert all(p.complete for p in run.meta.processes)


def test_ten_pool_runs_in_a_row_neither_lose_nor_hang(tmp_path: Path) -> None:
    # each run has a deadline (the subprocess timeout of `record`): a hang fails the test instead of stalling it
    for n in range(10):
        method = ("fork", "spawn")[n % 2]
        folder = tmp_path / str(n)
        folder.mkdir()
        run, out, err = record(folder, "pool", method, "6", "50", timeout=60)
        assert said(out) == 300 and sum(launches(run).values()) == 300, (n, method, err)
