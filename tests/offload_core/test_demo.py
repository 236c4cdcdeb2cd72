"""`python -m offload_core.demo` (what `make demo` runs) prints exact counts for both paths."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_demo(*args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    env.update(environ)
    return subprocess.run([sys.executable, "-m", "offload_core.demo", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def row(out: str, name: str) -> list[str]:
    line = next(line for line in out.splitlines() if line.startswith(name))
    return re.split(r"\s{2,}", line.strip())[1:]


def test_demo_compares_the_two_paths_exactly() -> None:
    proc = run_demo("--size", "1000", "--steps", "5", "--backend", "numpy")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert row(out, "launches") == ["10", "10"]
    assert row(out, "H2D copies") == ["10", "1"]  # naive: src of every launch; batched: u at entry
    assert row(out, "H2D bytes") == ["80.0 kB", "8.0 kB"]
    assert row(out, "D2H copies") == ["10", "2"]  # batched: u and scratch, both written, at exit
    assert row(out, "syncs") == ["10", "1"]
    assert re.search(r"^batched is \d+\.\dx faster; \d+% of the naive run was copies$", out, flags=re.M)
    assert "both paths computed identical results" in out
    assert "running the naive path" in proc.stderr


def test_demo_rejects_bad_arguments() -> None:
    proc = run_demo("--size", "2")
    assert proc.returncode == 2 and "--size must be at least 3" in proc.stderr


def _one_line_exit_two(proc: subprocess.CompletedProcess[str], message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == f"python -m offload_core.demo: error: {message}"


def test_a_bad_backend_or_mode_in_the_environment_is_one_line() -> None:
    _one_line_exit_two(run_demo("--size", "10", "--steps", "1", OFFLOAD_BACKEND="gpu"),
                       "OFFLOAD_BACKEND='gpu' is not a backend; choose one of auto, numpy, cupy")
    _one_line_exit_two(run_demo("--size", "10", "--steps", "1", OFFLOAD_MODE="fast"),
                       "OFFLOAD_MODE='fast' is not a mode; choose 'naive' or 'batched'")


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_the_cupy_backend_without_cupy_is_one_line() -> None:
    message = "the CuPy backend needs CuPy: pip install 'offload-guard[cuda12]' (or [cuda13], [rocm])"
    _one_line_exit_two(run_demo("--size", "10", "--steps", "1", OFFLOAD_BACKEND="cupy"), message)
    _one_line_exit_two(run_demo("--size", "10", "--steps", "1", "--backend", "cupy"), message)


def test_a_size_that_does_not_fit_is_one_line() -> None:
    proc = run_demo("--size", str(10**15), "--steps", "1", "--backend", "numpy")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        f"python -m offload_core.demo: error: --size {10**15} does not fit in memory")
