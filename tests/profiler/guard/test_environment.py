"""`OFFLOAD_GUARD` read by `offload-prof run`: an unmodified script under a guard, through real subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from profiler.errors import ProfilerError
from profiler.guard.environment import from_environment

from .kit import hide_cupti_python


SCRIPT = """\
import numpy as np
from offload_core import In, InOut, kernel, offload, region

@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x

x, y = np.ones(100), np.zeros(100)
with region(x, y):
    for _ in range(3):
        offload(daxpy, y, x, 1.0)
for _ in range(2):
    offload(daxpy, y, x, 1.0)
print("finished", y[0])
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_GUARD")}
    return subprocess.run([sys.executable, "-m", "profiler", "run", "-o", str(tmp_path / "t.json"), str(script)],
                          cwd=tmp_path, env={**environ, **env}, capture_output=True, text=True, timeout=120)


def test_raise_exits_non_zero_and_names_the_line(tmp_path: Path) -> None:
    done = _run(tmp_path, OFFLOAD_GUARD="raise")
    assert done.returncode == 1
    assert "finished" not in done.stdout
    assert 'File "' + str(tmp_path / "train.py") + '", line 9, in <module>' in done.stderr
    assert ("TransferGuardError: train.py:9 in <module>: `with region(x, y):`: H2D copy of 800 B by region copy "
            "of x, forbidden by no_transfers(h2d=True, d2h=True, syncs=False, mode='raise')") in done.stderr
    assert "delivery.py" not in done.stderr, "the traceback ends at the script's line"
    assert "target exception, exit 1" in done.stderr, "the trace is still written"


def test_log_runs_to_the_end_and_summarises_by_line(tmp_path: Path) -> None:
    done = _run(tmp_path, OFFLOAD_GUARD="log", OFFLOAD_GUARD_KINDS="d2h,sync")
    assert done.returncode == 0 and "finished 5.0" in done.stdout
    lines = [ln for ln in done.stderr.splitlines() if "guard" in ln or ln.startswith("  ")]
    assert lines == [
        "offload-prof: guard: 6 forbidden transfers inside no_transfers(h2d=False, d2h=True, syncs=True, mode='log'):",
        "  train.py:9 in <module>: `with region(x, y):`: 1 D2H copy (800 B) by region copy of y",
        "  train.py:9 in <module>: `with region(x, y):`: 1 sync by region",
        "  train.py:13 in <module>: `offload(daxpy, y, x, 1.0)`: 2 D2H copies (1.6 kB) by offload(daxpy) parameter y",
        "  train.py:13 in <module>: `offload(daxpy, y, x, 1.0)`: 2 syncs by offload(daxpy)",
    ]


def test_warn_warns_at_each_line_once(tmp_path: Path) -> None:
    done = _run(tmp_path, OFFLOAD_GUARD="warn", OFFLOAD_GUARD_KINDS="h2d")
    assert done.returncode == 0
    warned = [ln for ln in done.stderr.splitlines() if "TransferGuardWarning" in ln]
    assert [w.split(": TransferGuardWarning")[0] for w in warned] == [
        str(tmp_path / "train.py") + ":9", str(tmp_path / "train.py") + ":13"]


@pytest.mark.parametrize(("env", "message"), [
    ({"OFFLOAD_GUARD": "loud"}, "offload-prof: error: OFFLOAD_GUARD='loud': use raise, warn, log (or off)"),
    ({"OFFLOAD_GUARD": "raise", "OFFLOAD_GUARD_KINDS": "h2d,copies"},
     "offload-prof: error: OFFLOAD_GUARD_KINDS='h2d,copies': copies is not a kind; use a comma-separated list of "
     "h2d, d2h, sync"),
])
def test_bad_values_are_refused_before_the_script_runs(tmp_path: Path, env: dict[str, str], message: str) -> None:
    done = _run(tmp_path, **env)
    assert done.returncode == 2 and done.stderr.strip() == message and "finished" not in done.stdout


def test_unset_or_off_means_no_guard() -> None:
    assert from_environment({}) is None and from_environment({"OFFLOAD_GUARD": "off"}) is None
    scope = from_environment({"OFFLOAD_GUARD": "WARN", "OFFLOAD_GUARD_KINDS": " sync "})
    assert scope is not None and (scope.rules.mode, scope.rules.h2d, scope.rules.d2h, scope.rules.syncs) == (
        "warn", False, False, True)
    with pytest.raises(ProfilerError, match="nothing is not a kind"):
        from_environment({"OFFLOAD_GUARD": "log", "OFFLOAD_GUARD_KINDS": ","})


def test_a_gpu_library_the_guard_cannot_see_is_said_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("")  # a program that imports PyTorch, run where
    hide_cupti_python(tmp_path)  # cupti-python is missing
    (tmp_path / "train.py").write_text("import torch\n" + SCRIPT)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_GUARD")}
    done = subprocess.run([sys.executable, "-m", "profiler", "run", "-o", str(tmp_path / "t.json"),
                           str(tmp_path / "train.py")], cwd=tmp_path, env={**environ, "OFFLOAD_GUARD": "log"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    notes = [ln for ln in done.stderr.splitlines() if "sees only" in ln]
    # where CuPy is installed the profiler has loaded it before the scope opens: that note names CuPy alone
    torch_notes = [ln for ln in notes if "torch" in ln]
    assert len(notes) == 1 + ("cupy" in done.stderr) and len(torch_notes) == 1 and torch_notes[0].startswith(
        "offload-prof: guard: the transfer guard sees only offload_core's copies here, not those of torch: CUPTI needs "
        "the cupti extra (pip install 'offload-guard[cupti]'): No module named 'cupti'")
