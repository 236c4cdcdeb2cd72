"""`offload-prof run --source cupti` where it cannot run: one line, exit 2, the target never started."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiler.commands.run import split_run_argv
from profiler.sources.cupti.probe import import_cupti, load_driver

from ...kit import prof, script

HAS_CUPTI = import_cupti()[0] is not None
HAS_DRIVER = load_driver() is not None
TARGET = """\
from pathlib import Path
Path("ran").write_text("the target ran")
"""


def fake_cupti(folder: Path) -> Path:
    """A cupti-python lookalike with every name the probe checks for (it is never called)."""
    pkg = folder / "fakesite" / "cupti"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    names = ("activity_enable", "activity_register_callbacks", "activity_flush_all", "subscribe", "enable_callback",
             "unsubscribe", "ActivityKind", "get_timestamp")
    (pkg / "cupti.py").write_text("".join(f"{n} = None\n" for n in names))
    return pkg.parent


@pytest.mark.skipif(HAS_CUPTI and HAS_DRIVER, reason="cupti-python and an NVIDIA driver are both here")
def test_missing_pieces_are_named_in_one_line(tmp_path: Path) -> None:
    script(tmp_path, "app.py", TARGET)
    proc = prof("run", "--source", "cupti", "-o", "t.json", "--", "app.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("offload-prof: error: --source cupti needs ")
    assert ("cupti extra" in proc.stderr) == (not HAS_CUPTI)
    assert ("pip install 'offload-guard[cupti]'" in proc.stderr) == (not HAS_CUPTI)
    assert ("an NVIDIA GPU:" in proc.stderr) == (not HAS_DRIVER)
    assert not (tmp_path / "ran").exists() and not (tmp_path / "t.json").exists()


@pytest.mark.skipif(HAS_DRIVER, reason="an NVIDIA driver is here")
def test_with_the_extra_but_no_gpu_only_the_gpu_is_named(tmp_path: Path) -> None:
    site = fake_cupti(tmp_path)
    script(tmp_path, "app.py", TARGET)
    proc = prof("run", "--source", "cupti", "--", "app.py", cwd=tmp_path, PYTHONPATH=str(site))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "needs an NVIDIA GPU: libcuda.so.1 not found" in proc.stderr and "extra" not in proc.stderr
    assert "rocprofv3" in proc.stderr and not (tmp_path / "ran").exists()


@pytest.mark.skipif(HAS_CUPTI and HAS_DRIVER, reason="cupti-python and an NVIDIA driver are both here")
def test_both_paths_pass_the_source_on(tmp_path: Path) -> None:
    script(tmp_path, "app.py", TARGET)
    proc = prof("run", "--source", "cupti", "--mode", "both", "-o", "r.json", "--", "app.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("offload-prof: error: --source cupti needs") == 2
    assert not (tmp_path / "ran").exists()


def test_source_values_and_argument_splitting(tmp_path: Path) -> None:
    opts, target = split_run_argv(["--source", "cupti", "app.py", "--steps", "3"])
    assert opts == ["--source", "cupti"] and target.name == "app.py" and target.args == ("--steps", "3")
    proc = prof("run", "--source", "nvtx", "--", "app.py", cwd=tmp_path)
    assert proc.returncode == 2 and "invalid choice: 'nvtx'" in proc.stderr
    help_text = prof("run", "--help", cwd=tmp_path).stdout
    assert "--source {offload,cupti}" in help_text


def test_the_default_source_is_unchanged(tmp_path: Path) -> None:
    script(tmp_path, "app.py", TARGET)
    proc = prof("run", "-o", "t.json", "--", "app.py", cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "ran").exists() and "backend numpy" in proc.stderr


def test_an_empty_trace_whose_records_could_not_be_read_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """Records CUPTI wrote but cupti-python could not read are not 'the target made no CUDA call'."""
    from profiler.commands.run import _report
    from profiler.model import Run
    from profiler.sources.runner import Ending
    from profiler.trace.records import Meta

    run = Run(Meta(backend="cupti", device="gpu", mode="batched", started_at="2026-12-04T00:00:00+00:00", wall_ns=1),
              ())
    unread = ["warning: reading activity records: ValueError: CUPTI wrote 216-byte records of activity kind 10"]
    _report(Path("t.json"), run, Ending("ok", 0), unread, [], True)
    err = capsys.readouterr().err
    assert "offload-prof: warning: the trace holds no records: CUPTI's could not be read (above)" in err
    assert "the target made no CUDA copy" not in err
    _report(Path("t.json"), run, Ending("ok", 0), [], [], True)
    assert "warning: nothing was recorded: the target made no CUDA copy, kernel or sync" in capsys.readouterr().err
