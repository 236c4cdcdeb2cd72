"""benchmarks/plot_suite.py turns offload-bench --json output into a PNG, without a display."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from offload_core.suite.registry import BY_NAME
from offload_core.suite.report import to_json
from offload_core.suite.runner import measure

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "plot_suite.py"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

pytest.importorskip("matplotlib")


def plot(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    suite = measure([BY_NAME["TRIAD"], BY_NAME["JACOBI_1D"]], size_factor=0.001, reps=2, passes=1)
    path = tmp_path_factory.mktemp("plot") / "results.json"
    path.write_text(json.dumps(to_json(suite, "offload-bench --kernels TRIAD JACOBI_1D")))
    return path


def test_writes_a_png_of_the_ratios(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "ratios.png"
    proc = plot(str(results), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote {out}"
    data = out.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000


def test_a_run_without_naive_still_plots_the_other_ratio(results: Path, tmp_path: Path) -> None:
    data = json.loads(results.read_text())
    for k in data["kernels"]:
        del k["variants"]["naive"]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(data))
    out = tmp_path / "partial.png"
    assert plot(str(partial), "-o", str(out)).returncode == 0
    assert out.read_bytes().startswith(PNG_SIGNATURE)


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"),
    ("{not json", "is not JSON"),
    ('{"kernels": []}', "has no 'kernels' list"),
    ('{"kernels": [{"kernel": "ADD", "variants": {"batched": {"time_s": 1.0}}}]}', "no kernel with two variants"),
])
def test_bad_input_fails_with_one_line_and_exit_2(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    proc = plot(str(path), "-o", str(tmp_path / "x.png"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr
    assert not (tmp_path / "x.png").exists()
