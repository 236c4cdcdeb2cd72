"""Child processes and hard exits, recorded for real (`offload-prof run` in a fresh process, NumPy backend).

Every test runs tests/profiler/programs/family.py, whose processes each
launch a known number of kernels from one line, so the trace says exactly
which process recorded what.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from profiler.model import Run
from profiler.sources.handover import ENV, STARTUP, Settings

from ..kit import PROGRAMS, prof

FAMILY = PROGRAMS / "family.py"
LAUNCH_LINE = next(n for n, text in enumerate(FAMILY.read_text().splitlines(), 1) if text.endswith("# the launch line"))


def launches(run: Run) -> Counter[int]:
    """Launches per process index."""
    return Counter(r.process for r in run.records if r.kind == "launch")


def record(tmp_path: Path, *args: str, code: int = 0) -> tuple[Run, str]:
    proc = prof("run", "-o", "t.json", "--", str(FAMILY), *args, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    return Run.load(tmp_path / "t.json"), proc.stderr


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_a_multiprocessing_child_records_itself(tmp_path: Path, method: str) -> None:
    run, err = record(tmp_path, "mp", method)
    main, child = run.meta.processes
    assert main.start == "main" and main.argv == (str(FAMILY), "mp", method)
    assert child.recorded and child.pid != main.pid and child.name.endswith("Process-1")
    assert (child.parent == main.pid) == (method != "forkserver"), "the forkserver's children are its forks"
    assert child.start == ("exec" if method == "spawn" else "fork")
    assert child.argv == (main.argv if method == "fork" else child.argv), "a fork runs its parent's program"
    assert child.note == ("" if method == "spawn" else "os._exit(0)"), "multiprocessing's forks end with os._exit"
    assert launches(run) == {0: 2, 1: 2}
    kids = [r for r in run.records if r.process == 1]
    assert Counter(r.kind for r in kids) == {"alloc": 4, "h2d": 4, "launch": 2, "d2h": 2, "sync": 2, "free": 4}
    assert {(r.site.file, r.site.line) for r in run.records if r.site is not None} == {(str(FAMILY), LAUNCH_LINE)}
    numbers = [r.launch for r in run.records if r.kind == "launch"]
    assert len(set(numbers)) == 4, "launch indices stay unique across processes"
    assert all(0 <= r.start_ns <= run.meta.wall_ns for r in run.records), "one clock, from the target's start"
    assert all((r.array or 0) >> 52 == r.process for r in run.records if r.array is not None), \
        "a child's buffers are told from the target's, even at the address a fork copied"
    assert json.loads((tmp_path / "t.json").read_text())["schema"] == 3
    assert "4 launches, from 2 processes" in err and "warning" not in err


def test_subprocess_children_recorded_or_named(tmp_path: Path) -> None:
    run, err = record(tmp_path, "subprocess")
    main, child, isolated, own_env = run.meta.processes
    assert launches(run) == {0: 1, 1: 3}
    assert child.start == "exec" and child.argv[1:] == (str(FAMILY), "child", "3") and child.recorded
    assert (isolated.recorded, isolated.parent, isolated.argv[1:]) == (False, main.pid, ("-I", "-c", "pass"))
    assert isolated.pid is not None and isolated.note == "started with -I, which skips the profiler's start-up hook"
    assert not own_env.recorded and own_env.note == "started with an environment of its own, without the profiler's variables"
    assert "import numpy" not in " ".join(a for p in run.meta.processes for a in p.argv), \
        "a child that never imports offload_core records nothing and is not listed"
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1 and warning[0].startswith("offload-prof: warning: 2 child processes not recorded: pid ")
    assert "-I -c pass): started with -I" in warning[0] and "(listed in the trace's meta.processes)" in warning[0]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_os_exit_and_a_killed_child_leave_what_they_recorded(tmp_path: Path, method: str) -> None:
    run, err = record(tmp_path, "hard", method, code=7)
    assert (run.meta.outcome, run.meta.exit_code) == ("exit", 7), "the target's os._exit(7) still wrote the trace"
    main, exited, killed = run.meta.processes
    assert main.note == "os._exit(7)" and exited.note == "os._exit(5)"
    assert killed.recorded and killed.note.startswith("no end: killed")
    assert launches(run) == {0: 2, 1: 2, 2: 4}, "the killed child's launches before the kill are in the trace"
    assert "8 launches, from 3 processes" in err and "target exit, exit 7" in err


def test_os_exit_of_a_plain_target(tmp_path: Path) -> None:
    target = tmp_path / "bye.py"
    target.write_text(f"import sys; sys.path.insert(0, {str(PROGRAMS)!r})\nfrom family import launch\n"
                      "launch(3)\nimport os; os._exit(3)\n")
    proc = prof("run", "-o", "t.json", "--", str(target), cwd=tmp_path)
    assert proc.returncode == 3
    run = Run.load(tmp_path / "t.json")
    assert launches(run) == {0: 3} and run.meta.processes[0].note == "os._exit(3)"
    assert json.loads((tmp_path / "t.json").read_text())["schema"] == 2, "one process: the schema older readers read"


def test_an_empty_trace_is_named_and_the_gate_refuses_it(tmp_path: Path) -> None:
    run, err = record(tmp_path, "empty")
    assert len(run.records) == 0
    assert "offload-prof: warning: nothing was recorded: the target made no offload_core launch, copy or sync" in err
    budget = tmp_path / "budget.yaml"
    budget.write_text("h2d: 4\n")
    refused = prof("gate", "t.json", "--budget", str(budget), cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr == (
        "offload-prof: error: t.json: the trace holds no records, so there is nothing to gate; "
        "pass --allow-empty if an empty trace is expected\n")
    allowed = prof("gate", "t.json", "--budget", str(budget), "--allow-empty", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr


def test_mode_both_names_only_the_traces_it_wrote(tmp_path: Path) -> None:
    target = tmp_path / "die.py"
    target.write_text("import os, signal\nif os.environ['OFFLOAD_MODE'] == 'naive':\n"
                      "    os.kill(os.getpid(), signal.SIGKILL)\n")
    (tmp_path / "run.naive.json").write_text("a trace from an earlier run")
    proc = prof("run", "--mode", "both", "-o", "run.json", "--", str(target), cwd=tmp_path)
    assert proc.returncode == 128 + 9
    assert "the naive path's process ended (killed by signal 9) without writing run.naive.json" in proc.stderr
    assert "compare them with" not in proc.stderr
    assert "only run.batched.json was written; `offload-prof report run.batched.json` reads it" in proc.stderr
    assert (tmp_path / "run.naive.json").read_text() == "a trace from an earlier run"


def test_the_target_passes_the_hook_on_and_the_folder_goes(tmp_path: Path) -> None:
    target = tmp_path / "env.py"
    target.write_text("import os, sys, json\nprint(json.dumps({k: os.environ.get(k) for k in "
                      "('OFFLOAD_PROF_CHILDREN', 'PYTHONPATH')}))\n")
    proc = prof("run", "-o", "t.json", "--", str(target), cwd=tmp_path)
    seen = json.loads(proc.stdout)
    assert seen["OFFLOAD_PROF_CHILDREN"] and seen["PYTHONPATH"].endswith("startup"), \
        "the target's children get the start-up hook first on their path"
    folder = json.loads(seen["OFFLOAD_PROF_CHILDREN"])["folder"]
    assert not Path(folder).exists(), "the run's folder of parts is gone once the trace is written"


def test_the_targets_process_is_left_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import subprocess

    from profiler.sources.children import ChildRecording

    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.delenv(ENV, raising=False)
    real_exit, real_init = os._exit, subprocess.Popen.__init__
    rec = ChildRecording("offload", False).start(on_os_exit=lambda code: None, detach=lambda: None)
    assert os.environ["PYTHONPATH"] == f"{STARTUP}{os.pathsep}/somewhere" and Settings.decode(os.environ[ENV]).folder
    assert os._exit is not real_exit and subprocess.Popen.__init__ is not real_init
    folder = rec.folder
    gathered = rec.stop()
    assert gathered.parts == [] and gathered.unrecorded == [] and folder is not None and not folder.exists()
    assert os.environ["PYTHONPATH"] == "/somewhere" and ENV not in os.environ
    assert os._exit is real_exit and subprocess.Popen.__init__ is real_init
    assert rec.stop().parts == [], "stopping twice is harmless"
