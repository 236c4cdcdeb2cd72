"""Importing rocprofv3 output (AMD GPUs): records, waits, kernel names, and refusals of other formats.

`data/rocprofv3_results.json` is hand-made in the layout rocprofiler-sdk's
JSON writer produces (`rocprofiler-sdk-tool` -> metadata, agents,
strings.buffer_records, kernel_symbols, buffer_records): a program that
uploads 1 MiB with hipMemcpy and launches `scale` three times, then copies
4 KiB back asynchronously and synchronises the stream, copies 1 MiB back
with a blocking hipMemcpy and does one device-to-device copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from profiler.analysis.detectors import detect
from profiler.errors import TraceError
from profiler.model import Run
from profiler.sources.rocprof import load_rocprof

from ..kit import prof

SAMPLE = Path(__file__).parent / "data" / "rocprofv3_results.json"
MiB = 1 << 20


def test_the_sample_imports_as_the_program_ran() -> None:
    run = load_rocprof(SAMPLE, command=["offload-prof", "import-rocprof"])
    kinds = [r.kind for r in run.records]
    assert kinds == ["h2d", "launch"] * 3 + ["d2h", "sync", "d2h", "sync"]
    ups = [r for r in run.records if r.kind == "h2d"]
    assert [r.nbytes for r in ups] == [MiB] * 3 and all(not r.pinned and r.array is None for r in ups)
    assert {r.site.function for r in ups} == {"hipMemcpy"} and ups[0].site.file == "<rocprofv3>"
    launches = [r for r in run.records if r.kind == "launch"]
    assert [r.launch for r in launches] == [0, 1, 2] and {r.kernel for r in launches} == {"scale"}
    assert launches[0].duration_ns == 20000
    async_down, stream_sync, blocking_down, blocking_wait = run.records[6:]
    assert (async_down.nbytes, stream_sync.site.function) == (4096, "hipStreamSynchronize")
    assert stream_sync.duration_ns == 70000
    assert blocking_down.nbytes == MiB and blocking_wait.duration_ns == 20000, "hipMemcpy D2H waited for the device"
    assert run.records[0].start_ns == 1000, "times run from the first record"
    meta = run.meta
    assert meta.backend == "rocprof" and meta.device.startswith("AMD Instinct MI300X (rocprofv3, pid 31337)")
    assert meta.argv == ("python3", "app.py", "--steps", "3") and meta.wall_ns == meta.wall_ns > 2_000_000
    assert meta.command == ("offload-prof", "import-rocprof")


def test_rules_that_need_what_rocprofv3_lacks_stay_silent() -> None:
    run = load_rocprof(SAMPLE)
    codes = {f.code for f in detect(run)}
    assert "OFF504" not in codes, "rocprofv3 does not say whether host memory was pinned"
    assert not codes & {"OFF501", "OFF502", "OFF503", "OFF506"}


def test_the_cli_writes_a_trace_that_report_reads(tmp_path: Path) -> None:
    proc = prof("import-rocprof", str(SAMPLE), "-o", "amd.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote amd.json (10 records: 3 H2D, 2 D2H, 3 launches, 2 syncs; AMD Instinct MI300X" in proc.stderr
    assert len(Run.load(tmp_path / "amd.json").records) == 10
    report = prof("report", "amd.json", cwd=tmp_path)
    assert report.returncode == 0 and "rocprof" in report.stdout and "hipMemcpy" in report.stdout


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.mark.parametrize("name, content, message", [
    ("memory_copy_trace.csv", '"Kind","Direction"\n', "CSV files carry no byte counts"),
    ("results.db", b"SQLite format 3\x00" + b"\x00" * 64, "a rocpd database"),
    ("other.json", '{"format": "something"}', "not rocprofv3 JSON output"),
    ("empty.json", '{"rocprofiler-sdk-tool": [{"buffer_records": {}}]}', "no memory_copy or kernel_dispatch"),
    ("broken.json", '{"rocprofiler-sdk-tool": [', "truncated"),
    ("odd.json", '{"rocprofiler-sdk-tool": [{"buffer_records": {"memory_copy": [{"bytes": 1}]}}]}',
     "unexpected rocprofv3 JSON layout"),
])
def test_other_inputs_fail_with_one_line(tmp_path: Path, name: str, content: str | bytes, message: str) -> None:
    path = write(tmp_path, name, content)
    with pytest.raises(TraceError) as err:
        load_rocprof(path)
    assert message in str(err.value) and "\n" not in str(err.value) and str(path) in str(err.value)
    proc = prof("import-rocprof", str(path), "-o", "x.json", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_files_with_several_processes_need_a_pid(tmp_path: Path) -> None:
    doc = json.loads(SAMPLE.read_text())
    second = json.loads(json.dumps(doc["rocprofiler-sdk-tool"][0]))
    second["metadata"]["pid"] = 4
    second["buffer_records"]["memory_copy"] = second["buffer_records"]["memory_copy"][:1]
    second["buffer_records"]["kernel_dispatch"] = []
    second["buffer_records"]["hip_api"] = []
    doc["rocprofiler-sdk-tool"].append(second)
    path = write(tmp_path, "two.json", json.dumps(doc))
    with pytest.raises(TraceError, match=r"holds 2 processes \(31337, 4\); pick one with --pid"):
        load_rocprof(path)
    assert len(load_rocprof(path, pid=4).records) == 1
    with pytest.raises(TraceError, match="no process 5"):
        load_rocprof(path, pid=5)
    proc = prof("import-rocprof", str(path), "--pid", "4", "-o", "four.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_without_strings_or_hip_trace_the_operation_numbers_are_used(tmp_path: Path) -> None:
    doc = json.loads(SAMPLE.read_text())
    p = doc["rocprofiler-sdk-tool"][0]
    del p["strings"]
    p["buffer_records"]["hip_api"] = []
    run = load_rocprof(write(tmp_path, "bare.json", json.dumps(doc)))
    assert [r.kind for r in run.records] == ["h2d", "launch"] * 3 + ["d2h", "d2h"]
    assert all(r.site is None for r in run.records)


def test_gzipped_output_and_missing_files(tmp_path: Path) -> None:
    import gzip

    gz = write(tmp_path, "r.json.gz", gzip.compress(SAMPLE.read_bytes()))
    assert len(load_rocprof(gz).records) == 10
    with pytest.raises(TraceError, match="cannot read"):
        load_rocprof(tmp_path / "absent.json")
    shutil.copy(SAMPLE, tmp_path / "copy.json")
    assert load_rocprof(tmp_path / "copy.json").meta.started_at
