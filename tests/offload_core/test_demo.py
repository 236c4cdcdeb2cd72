"""`python -m offload_core.demo` (what `make demo` runs) prints exact counts for both paths."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
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
