"""`offload-prof run`, for real: argv, sys.path[0], __main__, exit codes, traces written whatever happens."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from profiler.commands.run import progress_notice, split_run_argv
from profiler.model import Run
from profiler.sources.runner import Target, exit_code_of
from profiler.trace.tracefile import both_paths

from ..kit import PROGRAMS, env, prof, script

LOOP = """\
import sys, json, os
import numpy as np
from offload_core import offload
from tests.offload_core.kit import daxpy

x, y = np.ones(64), np.zeros(64)
for _ in range(3):
    offload(daxpy, y, x, 1.0)
print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "name": __name__, "file": __file__,
                  "main": sys.modules["__main__"].__dict__ is globals()}))
"""


def _prep(tmp_path: Path, body: str) -> Path:
    # The snippets import the test kernels, so the checkout must be importable from the target.
    (tmp_path / "tests").symlink_to(Path(__file__).resolve().parents[2])
    return script(tmp_path, "target.py", body)


def test_script_gets_its_own_argv_path_and_main(tmp_path: Path) -> None:
    target = _prep(tmp_path, LOOP)
    proc = prof("run", "-o", "t.json", "--", str(target), "a", "--flag", "-o", "x", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["argv"] == [str(target), "a", "--flag", "-o", "x"], "the target's own options are not ours"
    assert seen["path0"] == str(tmp_path) and seen["name"] == "__main__" and seen["main"]
    assert seen["file"] == str(target)
    run = Run.load(tmp_path / "t.json")
    assert sum(1 for r in run.copies() if r.kind == "h2d") == 6 and run.meta.outcome == "ok"
    assert run.meta.argv == (str(target), "a", "--flag", "-o", "x")
    assert run.meta.command[:3] == ("offload-prof", "run", "-o")
    assert {s.line for s in run.sites} == {8}
    assert f"offload-prof: wrote t.json ({len(run.records)} records: 6 H2D, 3 D2H, 3 launches" in proc.stderr


def test_script_without_double_dash(tmp_path: Path) -> None:
    target = _prep(tmp_path, LOOP)
    proc = prof("run", "-o", "t.json", str(target), "b", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["argv"] == [str(target), "b"]


def test_module_target(tmp_path: Path) -> None:
    _prep(tmp_path, LOOP)
    (tmp_path / "mymod.py").write_text(LOOP)
    proc = prof("run", "-o", "m.json", "-m", "mymod", "z", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["argv"] == [str(tmp_path / "mymod.py"), "z"] and seen["name"] == "__main__"
    assert seen["path0"] == str(tmp_path)
    assert Run.load(tmp_path / "m.json").meta.argv == ("mymod", "z")


@pytest.mark.parametrize(
    "tail, code, outcome",
    [
        ("raise SystemExit(3)\n", 3, "exit"),
        ("import sys; sys.exit('bad news')\n", 1, "exit"),
        ("sys.exit(None)\n", 0, "exit"),
        ("raise ValueError('broken target')\n", 1, "exception"),
        ("raise KeyboardInterrupt\n", 130, "interrupted"),
    ],
)
def test_trace_is_written_and_the_exit_code_passed_on(tmp_path: Path, tail: str, code: int, outcome: str) -> None:
    target = _prep(tmp_path, LOOP + tail)
    proc = prof("run", "-o", "t.json", "--", str(target), cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    run = Run.load(tmp_path / "t.json")
    assert (run.meta.outcome, run.meta.exit_code) == (outcome, code)
    assert sum(1 for r in run.records if r.kind == "launch") == 3, "what ran before the end is recorded"
    if outcome == "exception":
        assert "ValueError: broken target" in proc.stderr and 'target.py", line 11' in proc.stderr
        assert "profiler/runner.py" not in proc.stderr, "the profiler's own frames are not shown"
    if tail.startswith("import sys; sys.exit('bad"):
        assert "bad news" in proc.stderr


def test_sigterm_still_writes_the_trace(tmp_path: Path) -> None:
    target = _prep(tmp_path, LOOP + "import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-m", "profiler", "run", "-o", "t.json", "--", str(target)],
                            cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while "ready" not in proc.stdout.readline() and time.monotonic() < deadline:
        pass
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    run = Run.load(tmp_path / "t.json")
    assert run.meta.outcome == "interrupted" and sum(1 for r in run.records if r.kind == "launch") == 3


def test_mode_both_runs_twice_in_fresh_processes(tmp_path: Path) -> None:
    proc = prof("run", "--mode", "both", "-o", str(tmp_path / "run.json"), "--", str(PROGRAMS / "heat.py"), "512", "4",
                cwd=Path(__file__).resolve().parents[3])
    assert proc.returncode == 0, proc.stderr
    naive, batched = Run.load(tmp_path / "run.naive.json"), Run.load(tmp_path / "run.batched.json")
    assert (naive.meta.mode, batched.meta.mode) == ("naive", "batched")
    assert {r.mode for r in naive.records} == {"naive"}
    assert sum(r.kind == "h2d" for r in naive.records) == 8 and sum(r.kind == "d2h" for r in naive.records) == 8
    assert sum(r.kind == "h2d" for r in batched.records) == 1 and sum(r.kind == "d2h" for r in batched.records) == 2
    assert naive.meta.started_at != batched.meta.started_at or naive.meta.wall_ns != batched.meta.wall_ns
    assert proc.stdout.count("heat: 512 points") == 2
    assert "running the naive path in a fresh process" in proc.stderr
    assert f"compare them with: offload-prof compare {tmp_path / 'run.naive.json'}" in proc.stderr


def test_mode_both_passes_a_failing_exit_code_on(tmp_path: Path) -> None:
    target = _prep(tmp_path, LOOP + "import os\nraise SystemExit(4 if os.environ['OFFLOAD_MODE'] == 'batched' else 0)\n")
    proc = prof("run", "--mode", "both", "--", str(target), cwd=tmp_path)
    assert proc.returncode == 4
    assert (tmp_path / "offload-prof.naive.json").is_file() and (tmp_path / "offload-prof.batched.json").is_file()


def test_mode_sets_offload_mode_for_the_target(tmp_path: Path) -> None:
    target = _prep(tmp_path, "import os, offload_core\nprint(os.environ['OFFLOAD_MODE'], offload_core.get_mode())\n")
    proc = prof("run", "--mode", "naive", "--", str(target), cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.split() == ["naive", "naive"]
    assert Run.load(tmp_path / "offload-prof.json").meta.mode == "naive"


def test_no_fingerprints(tmp_path: Path) -> None:
    target = _prep(tmp_path, LOOP)
    assert prof("run", "--no-fingerprints", "--", str(target), cwd=tmp_path).returncode == 0
    run = Run.load(tmp_path / "offload-prof.json")
    assert not run.meta.fingerprints and all(r.fingerprint is None for r in run.records)


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--", "missing.py"], "offload-prof: error: missing.py: no such file; give a Python script or -m MODULE"),
        (["run", "-m", "no_such_module_xyz"], "offload-prof: error: -m no_such_module_xyz: no module named 'no_such_module_xyz'"),
        (["run"], "offload-prof: error: run needs a target: -- script.py [ARGS] or -m module [ARGS]"),
        (["run", "-o", "target.py/t.json", "--", "target.py"], "offload-prof: error: target.py/t.json: target.py is not a folder"),
        (["run", "--link", "no-such-link", "--", "target.py"], "offload-prof: error: no link profile named 'no-such-link'"),
    ],
)
def test_bad_run_input_exits_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    _prep(tmp_path, LOOP)
    proc = prof(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1, proc.stderr


def test_bad_offload_mode_in_the_environment(tmp_path: Path) -> None:
    target = _prep(tmp_path, LOOP)
    proc = prof("run", "--", str(target), cwd=tmp_path, OFFLOAD_MODE="fast")
    assert proc.returncode == 2
    assert proc.stderr == "offload-prof: error: OFFLOAD_MODE='fast' is not a mode; choose 'naive' or 'batched'\n"


def test_split_run_argv() -> None:
    assert split_run_argv(["-o", "x.json", "--", "s.py", "-o", "y"]) == (["-o", "x.json"], Target("script", "s.py", ("-o", "y")))
    assert split_run_argv(["--mode", "naive", "s.py", "--mode"]) == (["--mode", "naive"], Target("script", "s.py", ("--mode",)))
    assert split_run_argv(["-m", "pkg.mod", "-m", "x"]) == ([], Target("module", "pkg.mod", ("-m", "x")))
    assert split_run_argv(["-mpkg"]) == ([], Target("module", "pkg", ()))
    assert split_run_argv(["--no-fingerprints"]) == (["--no-fingerprints"], None)


def test_both_paths() -> None:
    assert both_paths(Path("out/run.json")) == (Path("out/run.naive.json"), Path("out/run.batched.json"))
    assert both_paths(Path("t.json.gz")) == (Path("t.naive.json.gz"), Path("t.batched.json.gz"))
    assert both_paths(Path("trace")) == (Path("trace.naive.json"), Path("trace.batched.json"))


def test_exit_code_of() -> None:
    assert [exit_code_of(c) for c in (None, 0, 3, 256 + 7)] == [0, 0, 3, 7]


def test_python_dash_m_profiler_and_help(tmp_path: Path) -> None:
    proc = prof("--help", cwd=tmp_path)
    assert proc.returncode == 0
    for name in ("run", "report", "compare", "export", "calibrate", "gate", "links"):
        assert name in proc.stdout
    assert prof("--version", cwd=tmp_path).stdout.startswith("offload-prof ")
    assert prof("frobnicate", cwd=tmp_path).returncode == 2
    assert os.path.exists(Path(sys.executable).parent / "offload-prof"), "the console script is installed"


def test_every_launch_asks_for_exact_launch_timing_in_both_paths(tmp_path: Path) -> None:
    target = _prep(tmp_path, "import os\nprint(os.environ.get('OFFLOAD_LAUNCH_TIMING', 'sampled'))\n")
    assert prof("run", "--", str(target), cwd=tmp_path).stdout.split() == ["sampled"]
    proc = prof("run", "--every-launch", "--mode", "both", "--", str(target), cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.split() == ["exact", "exact"], proc.stderr


def test_finishing_work_that_lasts_is_announced_once_and_quick_work_is_not(capsys: pytest.CaptureFixture[str]) -> None:
    said: list[str] = []
    heard = threading.Event()

    def say(message: str) -> None:
        said.append(message)
        heard.set()

    with progress_notice("offload-prof: busy ...", after_s=0, say=say):
        assert heard.wait(30), "work still running after the delay is announced"
    with progress_notice("offload-prof: never", after_s=3600, say=say):
        pass
    assert said == ["offload-prof: busy ..."]
    with progress_notice("offload-prof: on stderr", after_s=0):
        time.sleep(0.2)
    assert capsys.readouterr().err in ("offload-prof: on stderr\n", ""), "printed whole or not at all"


def test_the_summary_line_counts_from_the_columns_or_the_records(capsys: pytest.CaptureFixture[str]) -> None:
    """The kinds are counted from the columns; a value they cannot hold (the trace is rows) counts records."""
    from profiler.commands.run import _report
    from profiler.model import Meta, Record
    from profiler.sources.runner import Ending

    meta = Meta("cupti", "GPU", "batched", "", 1000)
    for array in (0x1000, 1 << 64):
        run = Run(meta, (Record("h2d", 0, 1, 8, array=array), Record("launch", 1, 1, kernel="k"),
                         Record("d2h", 2, 1, 8), Record("d2h", 3, 1, 8)))
        _report(Path("t.json"), run, Ending("ok", 0), [], [], True)
        assert "(4 records: 1 H2D, 2 D2H, 1 launches;" in capsys.readouterr().err
