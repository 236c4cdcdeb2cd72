"""Helpers for the profiler tests: record a snippet in-process, or run `offload-prof` for real."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from profiler.model import Run
from profiler.sources.recorder import Recorder

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
#: pytester arguments that load the project's pytest plugin however the project is installed: from a checkout
#: on PYTHONPATH (no entry point) or as a package, whose `pytest11` entry point `offload_prof` is blocked so
#: that the module is not registered twice
PLUGIN = ("-p", "no:offload_prof", "-p", "profiler.pytest_plugin")


#: the top of a pytester test file: a DAXPY kernel and two loops over it, one copying every launch (`naive`), one
#: inside a region (`batched`)
PYTESTER_KERNELS = """
import numpy as np
import pytest
from offload_core import In, InOut, kernel, offload, region
from profiler import guard

@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x

def naive(n=3):
    x, y = np.ones(100), np.zeros(100)
    for _ in range(n):
        offload(daxpy, y, x, 1.0)

def batched(n=3):
    x, y = np.ones(100), np.zeros(100)
    with region(x, y):
        for _ in range(n):
            offload(daxpy, y, x, 1.0)
"""


def record(code: str, folder: Path, *, name: str = "snippet.py", fingerprints: bool = True) -> Run:
    """Run `code` as a file in `folder` under a Recorder (in this process) and return the Run."""
    path = folder / name
    path.write_text(textwrap.dedent(code))
    with Recorder(fingerprints=fingerprints) as rec:
        exec(compile(path.read_text(), str(path), "exec"), {"__name__": "__main__"})
    return rec.run(argv=(str(path),))


def env(**extra: str) -> dict[str, str]:
    """The environment CLI tests run in: NumPy backend, no user calibration, no stray OFFLOAD_*."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "PYTEST_"))}
    out["OFFLOAD_BACKEND"] = "numpy"
    out.setdefault("OFFLOAD_PROF_HOME", str(Path(os.environ.get("TMPDIR", "/tmp")) / "offload-prof-tests-none"))
    out.update(extra)
    return out


def prof(*args: str, cwd: Path, timeout: float = 300, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """`python -m profiler ARGS` in a fresh process."""
    return subprocess.run([sys.executable, "-m", "profiler", *args], cwd=cwd, env=env(**extra_env),
                          capture_output=True, text=True, timeout=timeout)


def script(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(code))
    return path
