"""offload-bench through real subprocesses: the table, --json, progress, and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from offload_core.suite import NAMES

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--size-factor", "0.002", "--reps", "2", "--passes", "1"]


def bench(*args: str, module: bool = True, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    env["OFFLOAD_BACKEND"] = "numpy"
    if module:
        cmd = [sys.executable, "-m", "offload_core.suite", *args]
    else:
        cmd = [str(Path(sys.executable).parent / "offload-bench"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_whole_suite_prints_one_row_per_kernel_and_writes_the_json(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = bench(*SMALL, "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:8] == ["kernel", "size", "reps", "baseline", "ms", "baseline-graph", "ms", "batched"]
    rows = {line.split()[0]: line.split() for line in lines[2:2 + len(NAMES)]}
    assert list(rows) == list(NAMES)
    assert all(row[-1] == "yes" for row in rows.values())
    assert rows["TRIAD"][1:3] == ["2000", "2"]
    assert all(row[4] == "n/a" and row[8] == "n/a" for row in rows.values())  # baseline-graph, bat/base-graph
    assert "peak (measured copy)" in proc.stdout and "batched/baseline geomean" in proc.stdout
    assert "baseline-graph: not applicable on the numpy backend" in proc.stdout

    data = json.loads(out.read_text())
    assert [k["kernel"] for k in data["kernels"]] == list(NAMES)
    assert list(data["not_applicable"]) == ["baseline-graph"]
    assert "numpy backend" in data["not_applicable"]["baseline-graph"]
    for k in data["kernels"]:
        assert set(k["variants"]) == {"baseline", "batched", "naive"}
        assert k["ratios"]["batched/baseline-graph"] is None
        assert k["checksums_agree"] is True
        for v in k["variants"].values():
            assert v["time_s"] > 0 and len(v["times_s"]) == 1
            assert v["checksum"] == pytest.approx(float(v["checksum_exact"]))
    assert {"date", "device", "backend", "versions", "command", "peak_bandwidth_gbs", "size_factor", "reps",
            "passes", "summary"} <= set(data)
    assert data["backend"] == "numpy" and data["size_factor"] == 0.002 and data["reps"] == 2
    assert data["command"].startswith("python -m offload_core.suite --size-factor 0.002")
    triad = next(k for k in data["kernels"] if k["kernel"] == "TRIAD")
    assert triad["variants"]["naive"]["transfers"] == {"h2d": 4, "h2d_bytes": 4 * 8 * 2000, "d2h": 2,
                                                      "d2h_bytes": 2 * 8 * 2000, "launches": 2}
    assert triad["variants"]["baseline"]["transfers"]["h2d"] == 0  # plain NumPy copies nothing
    assert data["summary"]["all_checksums_agree"] is True


def test_console_script_selects_kernels_and_variants_and_reports_progress() -> None:
    proc = bench("--kernels", "stream", "daxpy", "--variants", "baseline,naive", *SMALL, module=False)
    assert proc.returncode == 0, proc.stderr
    names = [line.split()[0] for line in proc.stdout.splitlines()[2:8]]
    assert names == ["ADD", "COPY", "DOT", "MUL", "TRIAD", "DAXPY"]
    triad = next(line.split() for line in proc.stdout.splitlines() if line.startswith("TRIAD"))
    assert triad[4] == "-" and triad[5] == "-"  # baseline-graph and batched not asked for
    assert triad[7] == "-" and triad[9] == "-"  # so no bat/base and no naive/bat
    assert "not applicable" not in proc.stdout
    progress = proc.stderr.splitlines()
    assert progress and all(line.startswith("offload-bench: ") for line in progress)
    assert any("TRIAD naive: pass 1/1" in line for line in progress)


def test_quiet_prints_nothing_on_stderr_and_list_shows_defaults() -> None:
    proc = bench("--kernels", "COPY", *SMALL, "-q")
    assert proc.returncode == 0 and proc.stderr == ""
    listing = bench("--list")
    assert listing.returncode == 0
    rows = {line.split()[0]: line.split() for line in listing.stdout.splitlines()[1:]}
    assert list(rows) == list(NAMES)
    assert rows["TRIAD"][1:5] == ["Stream", "1000000", "1000", "tight"]


@pytest.mark.parametrize("args, message", [
    (["--kernels", "TRIADD"], "unknown kernel 'TRIADD'"),
    (["--size-factor", "0"], "--size-factor: must be a positive number, got '0'"),
    (["--size-factor", "-2"], "must be a positive number"),
    (["--size-factor", "lots"], "must be a positive number, got 'lots'"),
    (["--size-factor", "nan"], "must be a positive number"),
    (["--reps", "0"], "--reps: must be a positive integer"),
    (["--passes", "two"], "--passes: must be a positive integer"),
    (["--variants", "fast"], "unknown variant 'fast'"),
    (["--variants", "baseline-graph"], "nothing to run (baseline-graph: not applicable on the numpy backend"),
    (["--json", "/no/such/folder/r.json"], "cannot write --json"),
    (["--frobnicate"], "unrecognized arguments"),
])
def test_bad_input_fails_with_one_line_and_exit_2(args: list[str], message: str) -> None:
    proc = bench(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("offload-bench: error: ") and message in proc.stderr


def test_a_folder_as_json_path_says_so(tmp_path: Path) -> None:
    proc = bench("--json", str(tmp_path), "--kernels", "DAXPY", *SMALL)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"offload-bench: error: --json {str(tmp_path)!r} is a folder; give a file name, such as "
                           f"{str(tmp_path / 'results.json')!r}\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_json_file_that_cannot_be_written_in_the_end_exits_2() -> None:
    proc = bench("--json", "/dev/full", "--kernels", "DAXPY", "-q", *SMALL)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "offload-bench: error: cannot write --json '/dev/full': No space left on device\n"


def test_the_json_file_takes_the_umask(tmp_path: Path) -> None:
    modes = []
    for umask in (0o022, 0o077):
        out = tmp_path / f"r-{umask:o}.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
        proc = subprocess.run(
            [sys.executable, "-m", "offload_core.suite", "--json", str(out), "--kernels", "DAXPY", "-q", *SMALL],
            capture_output=True, text=True, env={**env, "OFFLOAD_BACKEND": "numpy"}, timeout=300,
            preexec_fn=lambda u=umask: os.umask(u),  # type: ignore[misc]
        )
        assert proc.returncode == 0, proc.stderr
        modes.append(out.stat().st_mode & 0o777)
    assert modes == [0o644, 0o600]


def test_version() -> None:
    from offload_core import __version__

    proc = bench("--version")
    assert (proc.returncode, proc.stdout) == (0, f"offload-bench {__version__}\n")


def test_an_unusable_backend_is_bad_input() -> None:
    proc = bench("--backend", "cupy", "--kernels", "ADD", *SMALL)
    if proc.returncode == 0:
        pytest.skip("CuPy and a GPU are present")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "CuPy" in proc.stderr


def test_checksum_disagreement_exits_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import offload_core.suite.runner as runner
    from offload_core.suite.cli import main

    real = runner.offload_variant

    def wrong(problem, reps, clock, graphs=False):  # type: ignore[no-untyped-def]
        done = real(problem, reps, clock)
        problem.arrays["c"][:] = 0.0
        return done

    monkeypatch.setattr(runner, "offload_variant", wrong)
    assert main(["--kernels", "ADD", "COPY", "--variants", "baseline", "batched", *SMALL, "-q"]) == 1
    captured = capsys.readouterr()
    rows = {line.split()[0]: line for line in captured.out.splitlines() if line.startswith(("ADD", "COPY"))}
    assert "NO (" in rows["ADD"] and "NO (" in rows["COPY"]
    assert captured.err.strip() == "offload-bench: checksums disagree for ADD, COPY"
