"""Files offload-prof writes: the umask's permissions, missing folders created, whole or not at all, full disks in one line."""

from __future__ import annotations

from dataclasses import replace
import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import offload_core.outfiles
from profiler.cli import main
from profiler.model import Meta, Record, Run, Site

from ..kit import PROGRAMS, ROOT, env

SAMPLE_ROCPROF = Path(__file__).resolve().parents[1] / "sources" / "data" / "rocprofv3_results.json"


def small_run() -> Run:
    meta = Meta(backend="numpy", device="host", mode="batched", started_at="2026-01-01T00:00:00+00:00", wall_ns=1_000,
                argv=("app.py",), cwd="/work")
    site = Site("/work/app.py", 1, "<module>", "offload(k, x)", 1)
    return Run(meta, (Record("h2d", 0, 5, 64, site=site, kernel="k", launch=0, array=1),))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_every_file_written_takes_the_umask(tmp_path: Path) -> None:
    for umask in (0o022, 0o077, 0o002):
        out = tmp_path / f"u{umask:o}"
        out.mkdir()
        commands = [
            ["run", "-o", "t.json", "--", str(PROGRAMS / "heat.py"), "64", "1"],
            ["gate", "t.json", "--baseline", "base.json", "--update-baseline"],
            ["export", "t.json", "-o", "t.chrome.json"],
            ["export", "--format", "json", "t.json", "-o", "t.records.json"],
            ["import-rocprof", str(SAMPLE_ROCPROF), "-o", "amd.json"],
            ["report", "t.json", "--format", "html", "-o", "t.html"],
        ]
        for argv in commands:
            proc = subprocess.run([sys.executable, "-m", "profiler", *argv], cwd=out, env=env(), capture_output=True,
                                  text=True, timeout=300, preexec_fn=lambda u=umask: os.umask(u))  # type: ignore[misc]
            assert proc.returncode == 0, proc.stderr
        for name in ("t.json", "base.json", "t.chrome.json", "t.records.json", "amd.json", "t.html"):
            assert _mode(out / name) == 0o666 & ~umask, (name, oct(umask), oct(_mode(out / name)))


def test_run_and_every_writer_create_missing_folders(tmp_path: Path) -> None:
    # `demo -o` always did; `run -o` refused; now every command that writes a file creates its folders
    heat = str(PROGRAMS / "heat.py")
    proc = subprocess.run([sys.executable, "-m", "profiler", "run", "-o", "new/deep/t.json", "--", heat, "64", "1"],
                          cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert Run.load(tmp_path / "new/deep/t.json").meta.argv[0] == heat
    proc = subprocess.run([sys.executable, "-m", "profiler", "run", "--mode", "both", "-o", "both/t.json", "--", heat,
                           "64", "1"], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "both/t.naive.json").is_file() and (tmp_path / "both/t.batched.json").is_file()
    trace = str(tmp_path / "new/deep/t.json")
    assert main(["export", trace, "-o", str(tmp_path / "e/x.json")]) == 0
    assert main(["gate", trace, "--baseline", str(tmp_path / "b/base.json"), "--update-baseline"]) == 0
    assert main(["import-rocprof", str(SAMPLE_ROCPROF), "-o", str(tmp_path / "r/amd.json")]) == 0
    assert main(["compare", trace, trace, "--format", "html", "-o", str(tmp_path / "h/c.html")]) == 0
    assert all((tmp_path / p).is_file() for p in ("e/x.json", "b/base.json", "r/amd.json", "h/c.html"))


def test_a_folder_that_cannot_be_made_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(small_run().save(tmp_path / "t.json"))
    (tmp_path / "file").write_text("")
    for argv in (["export", trace, "-o", str(tmp_path / "file/x.json")],
                 ["gate", trace, "--baseline", str(tmp_path / "file/sub/b.json"), "--update-baseline"],
                 ["import-rocprof", str(SAMPLE_ROCPROF), "-o", str(tmp_path / "file/amd.json")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("offload-prof: error: ") and f"{tmp_path / 'file'} is not a folder" in err, err
        assert err.count("\n") == 1


@pytest.mark.parametrize("argv, what", [
    (["export", "{trace}", "-o", "{out}"], "cannot write the export (No space left on device)"),
    (["export", "--format", "json", "{trace}", "-o", "{out}"], "cannot write the export (No space left on device)"),
    (["gate", "{trace}", "--baseline", "{out}", "--update-baseline"], "cannot write baseline (No space left on device)"),
    (["import-rocprof", str(SAMPLE_ROCPROF), "-o", "{out}"], "cannot write trace (No space left on device)"),
])
def test_a_full_disk_leaves_the_previous_file_and_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str],
        what: str) -> None:
    trace = small_run().save(tmp_path / "t.json")
    out = tmp_path / "out.json"
    out.write_text("previous")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(offload_core.outfiles.os, "fsync", full)
    assert main([a.format(trace=trace, out=out) for a in argv]) == 2
    assert capsys.readouterr().err == f"offload-prof: error: {out}: {what}\n"
    assert out.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "t.json"], "no temporary file left"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_report_to_a_full_disk_is_one_line_and_exit_2(tmp_path: Path) -> None:
    trace = small_run().save(tmp_path / "t.json")
    for argv in (["report", str(trace)], ["compare", "--format", "json", str(trace), str(trace)],
                 ["gate", str(trace), "--baseline", str(trace)]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([sys.executable, "-m", "profiler", *argv], cwd=tmp_path, env=env(), stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=120)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert proc.stderr == "offload-prof: error: cannot write to standard output (No space left on device)\n"


def test_saving_is_atomic_and_keeps_no_temporary(tmp_path: Path) -> None:
    run = small_run()
    path = run.save(tmp_path / "t.json.gz")
    assert Run.load(path) == run and [p.name for p in tmp_path.iterdir()] == ["t.json.gz"]
    data = json.loads(json.dumps(run.to_json()))
    assert "wall_samples_ns" not in data["meta"], "a run recorded once keeps the file layout it had"
    assert "exits_ns" not in data["meta"], "so does a run whose tracer timed no exit callbacks"
    timed = Run(replace(run.meta, exits_ns=(4_500, 1_200)), run.records)
    assert Run.load(timed.save(tmp_path / "timed.json")).meta.exits_ns == (4_500, 1_200)


def test_run_help_shows_every_option_in_its_usage() -> None:
    proc = subprocess.run([sys.executable, "-m", "profiler", "run", "--help"], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=60)
    usage = proc.stdout.split("\n\n")[0]
    for option in ("--source", "--mode", "-o", "--no-fingerprints", "--link"):
        assert option in usage, option
