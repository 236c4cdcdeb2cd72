"""The CUPTI source on a real GPU: plain CuPy, PyTorch and Numba programs recorded with `--source cupti`.

Each program in `programs/` makes known copies on lines marked `# site:
NAME`; the tests run `offload-prof run --source cupti` on it in a fresh
process (CUPTI is per process) and check counts, bytes, memory kinds,
host buffers, fingerprints and call sites against what the program does,
then that the runtime rules name the classic mistakes at those lines.
Marked `gpu` (skipped without CuPy and a GPU) and skipped without
cupti-python; `benchmarks/cupti_gpu_check.sh` runs them on the GPU machine.
"""

from __future__ import annotations

import importlib.util
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from profiler.analysis.detectors import detect
from profiler.model import Record, Run
from profiler.sources.cupti.probe import import_cupti

from ...kit import prof

PROGRAMS = Path(__file__).resolve().parent / "programs"
CUPTI = import_cupti()[0]
needs_cupti = pytest.mark.skipif(CUPTI is None, reason="cupti-python is not installed (the cupti extra)")
pytestmark = [pytest.mark.gpu, needs_cupti]
MiB = 1 << 20


def marker(program: str, name: str) -> int:
    lines = (PROGRAMS / program).read_text().splitlines()
    return next(n for n, text in enumerate(lines, 1) if text.rstrip().endswith(f"# site: {name}"))


def record(tmp_path: Path, program: str, *flags: str, allow: str = "") -> Run:
    """The program recorded; a warning fails the test unless it contains `allow`."""
    proc = prof("run", "--source", "cupti", *flags, "-o", "t.json", "--", str(PROGRAMS / program), cwd=tmp_path,
                timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "backend cupti" in proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "offload-prof: warning:" in line]
    assert all(allow and allow in line for line in warnings), proc.stderr
    return Run.load(tmp_path / "t.json")


def at(run: Run, program: str, name: str, kind: str | None = None) -> list[Record]:
    line = marker(program, name)
    path = str(PROGRAMS / program)
    return [r for r in run.records if r.site is not None and r.site.file == path and r.site.line == line
            and (kind is None or r.kind == kind)]


def digest(a: np.ndarray) -> str:
    """The fingerprint the tracer takes of these bytes (XXH3 with xxhash, else blake2b)."""
    from profiler.sources.cupti.tracer import digest as host_digest

    a = np.ascontiguousarray(a)
    return host_digest(a.ctypes.data, a.nbytes)


def findings_at(run: Run, program: str, name: str) -> list[str]:
    line = marker(program, name)
    return sorted(f.code for f in detect(run) if f.site is not None and f.site.line == line)


def repeats(records: list[Record]) -> int:
    """Uploads from a host buffer that uploaded before (OFF502 counts these when the bytes are the same)."""
    seen: set[int | None] = set()
    n = 0
    for r in records:
        n += r.array in seen
        seen.add(r.array)
    return n


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="needs CuPy")
def test_cupy_program(tmp_path: Path) -> None:
    p = "cupy_mistakes.py"
    run = record(tmp_path, p)
    assert run.meta.backend == "cupti" and "cupti-python" in run.meta.device and run.meta.fingerprints
    x = np.arange(1 << 18, dtype=np.float32)

    ups = at(run, p, "asarray", "h2d")
    assert len(ups) == 20 and all(r.nbytes == x.nbytes for r in ups)
    # a site's text is its whole source line, the marker comment included
    assert {(r.site.function, r.site.text) for r in ups} == {("main", "d = cp.asarray(x)  # site: asarray")}
    # CuPy stages every upload through a buffer of its pinned pool: the DMA reads pinned memory
    assert all(r.pinned and r.param == "pinned buffer" for r in ups)
    assert {r.fingerprint for r in ups} == {digest(x)}, "the bytes moved are x's, every time"

    item = at(run, p, "item")
    downs = [r for r in item if r.kind == "d2h"]
    assert len(downs) == 20 and all(r.nbytes == 4 and not r.pinned for r in downs)
    assert sum(r.kind == "sync" for r in item) == 20, "one wait for the device per .item()"

    pageable = at(run, p, "pageable", "h2d")
    assert [r.nbytes for r in pageable] == [32 * MiB] * 3
    assert all(not r.pinned and r.param == "pageable buffer" for r in pageable)
    assert len({r.array for r in pageable}) == 1 and len({r.fingerprint for r in pageable}) == 3
    pinned = at(run, p, "pinned", "h2d")
    assert [r.nbytes for r in pinned] == [32 * MiB] * 3 and all(r.pinned for r in pinned)
    result = at(run, p, "result", "d2h")
    assert [r.nbytes for r in result] == [x.nbytes]
    zeroed = at(run, p, "zeros", "memset")
    assert [r.nbytes for r in zeroed] == [x.nbytes], "cp.zeros's memset: its driver call gives the record its line"

    launches = [r for r in run.records if r.kind == "launch"]
    assert len(launches) >= 40 and all(r.kernel for r in launches)
    assert [r.launch for r in launches] == list(range(len(launches)))

    assert findings_at(run, p, "asarray") == ["OFF502"]
    off502 = next(f for f in detect(run) if f.code == "OFF502" and f.line == marker(p, "asarray"))
    assert off502.count == repeats(ups) >= 10
    assert "OFF507" in findings_at(run, p, "item")
    assert findings_at(run, p, "pageable") == ["OFF504"] and findings_at(run, p, "pinned") == []


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch")
def test_torch_program(tmp_path: Path) -> None:
    p = "torch_mistakes.py"
    run = record(tmp_path, p)
    x = np.arange(1 << 18, dtype=np.float32)

    ups = at(run, p, "to", "h2d")
    assert len(ups) == 20 and all(r.nbytes == x.nbytes and not r.pinned for r in ups)
    assert len({r.array for r in ups}) == 1, "the tensor's own pageable memory, every time"
    assert {r.fingerprint for r in ups} == {digest(x)}

    item = at(run, p, "item")
    assert sum(r.kind == "d2h" for r in item) == 20 and all(r.nbytes == 4 for r in item if r.kind == "d2h")
    assert sum(r.kind == "sync" for r in item) == 20, "the stream sync of each .item(), counted once"

    pageable = at(run, p, "pageable", "h2d")
    assert [r.nbytes for r in pageable] == [32 * MiB] * 3 and not any(r.pinned for r in pageable)
    pinned = at(run, p, "pinned", "h2d")
    assert [r.nbytes for r in pinned] == [32 * MiB] * 3 and all(r.pinned for r in pinned)
    assert [r.kind for r in at(run, p, "sync")] == ["sync"]
    assert [r.nbytes for r in at(run, p, "result", "d2h")] == [x.nbytes]
    assert sum(r.kind == "launch" for r in run.records) >= 40

    assert "OFF502" in findings_at(run, p, "to")
    off502 = next(f for f in detect(run) if f.code == "OFF502" and f.line == marker(p, "to"))
    assert off502.count == 19
    assert "OFF507" in findings_at(run, p, "item")
    assert findings_at(run, p, "pageable") == ["OFF504"]
    # the pinned loop re-sends the same unchanged buffer: a re-upload (OFF502), but from pinned memory (no OFF504)
    assert findings_at(run, p, "pinned") == ["OFF502"]
    assert next(f for f in detect(run) if f.line == marker(p, "pinned")).count == 2


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="needs Numba")
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch")
def test_sampled_launch_sites_lose_no_copy_or_sync_of_a_busy_loop(tmp_path: Path) -> None:
    """Launch callbacks switched on and off hundreds of times must leave every `.item()` its line and its wait.

    Sampling memsets with the launches once made CUPTI miss three of four
    `.item()` callbacks in such a loop (sites moved to the forward line,
    syncs lost); syncs are timed by their callbacks, so a lost callback is a
    lost sync.
    """
    p = "torch_lstm_items.py"
    run = record(tmp_path, p, "--no-fingerprints")
    steps = 400
    items = at(run, p, "item", "d2h")
    where = Counter((r.kind, r.site.line if r.site else None) for r in run.records if r.kind in ("d2h", "sync"))
    assert len(items) == steps and all(r.nbytes == 4 for r in items), f"copies and syncs by line: {where}"
    assert not at(run, p, "forward", "d2h"), "no copy of the loop is charged to the forward line"
    assert len(at(run, p, "item", "sync")) == steps, "each scalar read waits once"
    assert "launch.site" in run.meta.estimated, "the launch sites were sampled"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch")
def test_a_pinning_data_loader_loses_no_copy_or_sync(tmp_path: Path) -> None:
    """The pin-memory thread's CUDA calls run beside the main thread's while the launch callbacks are switched."""
    p = "torch_pinned_loader.py"
    run = record(tmp_path, p, "--no-fingerprints")
    batches = 375
    ups = at(run, p, "upload", "h2d")
    assert len(ups) == 2 * batches and all(r.pinned for r in ups), "inputs and labels, from pinned memory"
    assert sorted({r.nbytes for r in ups}) == [64 * 8, 64 * 256 * 4]
    assert len(at(run, p, "item", "d2h")) == batches and len(at(run, p, "item", "sync")) == batches
    assert "launch.site" in run.meta.estimated


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch")
def test_switching_launch_callbacks_often_leaves_cupti_hearing() -> None:
    """Windows shut and opened from the program's own calls (`sampling`), after every launch, 2 ms apart.

    `benchmarks/cupti_switching.py` records a loop of an LSTM step and an
    `.item()` three times in a fresh process so. Switched from a thread of
    the profiler's own (its `thread` mode), CUPTI went deaf to the loop's
    calls within one or two recordings (docs/cupti.md, "Switching callbacks").
    """
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[4] / "benchmarks" / "cupti_switching.py"
    proc = subprocess.run([sys.executable, str(script), "--modes", "callback", "--processes", "1", "--recordings", "3"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("callback ")]
    assert len(rows) == 3, proc.stdout
    for _, _, _, d2h, launches, kernels, distinct, switches in rows:
        assert d2h == "400/400" and distinct == kernels, proc.stdout
        assert int(switches) >= 40 and int(launches) >= 20, f"the callbacks were switched often: {proc.stdout}"


def test_numba_program(tmp_path: Path) -> None:
    p = "numba_mistakes.py"
    run = record(tmp_path, p)
    x = np.arange(1 << 16, dtype=np.float64)
    ups = at(run, p, "to_device", "h2d")
    assert len(ups) == 10 and all(r.nbytes == x.nbytes and not r.pinned for r in ups)
    assert {r.fingerprint for r in ups} == {digest(x)} and len({r.array for r in ups}) == 1
    launches = at(run, p, "launch", "launch")
    assert len(launches) == 10 and all("scale" in (r.kernel or "") for r in launches)
    result = at(run, p, "result")
    assert [r.kind for r in result] == ["d2h", "sync"] and result[0].nbytes == x.nbytes
    assert findings_at(run, p, "to_device") == ["OFF502"]


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="needs CuPy")
def test_without_fingerprints_and_report(tmp_path: Path) -> None:
    p = "cupy_mistakes.py"
    run = record(tmp_path, p, "--no-fingerprints")
    assert not run.meta.fingerprints and all(r.fingerprint is None for r in run.records)
    assert len(at(run, p, "asarray", "h2d")) == 20
    report = prof("report", "t.json", cwd=tmp_path)
    assert report.returncode == 0 and "OFF504" in report.stdout and "cupy_mistakes.py" in report.stdout


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="needs CuPy")
def test_in_process_recordings_back_to_back() -> None:
    import cupy as cp

    from profiler.sources.cupti import CuptiRecorder

    x = np.ones(1000)
    counts = []
    for n in (3, 5):
        rec = CuptiRecorder(fingerprints=True).start()
        for _ in range(n):
            cp.asarray(x)  # site: inline
        rec.stop()
        run = rec.run()
        here = [r for r in run.records if r.kind == "h2d" and r.site is not None and r.site.file == os.path.abspath(__file__)]
        counts.append(len(here))
        assert rec.notes() == [] or all("not in the trace model" in n for n in rec.notes())
    assert counts == [3, 5]


def test_every_intercepted_call_exists_in_the_installed_cupti() -> None:
    from profiler.sources.cupti.apis import APIS, resolve

    assert CUPTI is not None
    table = resolve(APIS, CUPTI.runtime_api_trace_cbid, CUPTI.driver_api_trace_cbid)
    names = {a.name for a in table.values()}
    core = {"cudaMemcpyAsync_v3020", "cudaMemcpy_v3020", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuLaunchKernel",
            "cudaLaunchKernel_v7000", "cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020"}
    assert core <= names and len(names) >= 100


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="needs CuPy")
def test_a_python_child_records_its_own_cupti_part_and_a_fork_is_listed(tmp_path: Path) -> None:
    p = "cupy_children.py"
    run = record(tmp_path, p)
    main, child, fork = run.meta.processes
    assert (main.start, child.start, fork.start) == ("main", "exec", "fork")
    assert child.recorded and child.argv[-1] == "child" and not fork.recorded
    assert fork.note.startswith("a fork of a process that initialised CUDA")
    ups = at(run, p, "child upload", "h2d")
    assert len(ups) == 3 and {r.process for r in ups} == {1}
    assert [r.process for r in at(run, p, "target upload", "h2d") + at(run, p, "target upload again", "h2d")] == [0, 0]
    assert all(0 <= r.start_ns <= run.meta.wall_ns for r in run.records), "the child's times on the target's clock"


def test_calibrate_measures_what_cupti_costs_per_launch_and_per_scalar_read(tmp_path: Path) -> None:
    """Both CUPTI figures are measured in one CUPTI session and saved with the link profile, and shown."""
    import yaml

    home = tmp_path / "home"
    proc = prof("calibrate", "--backend", "cupy", "--size", "1MiB", "--repeats", "2", cwd=tmp_path,
                OFFLOAD_PROF_HOME=str(home), OFFLOAD_BACKEND="cupy", timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    data = yaml.safe_load((home / "links" / "local-cupy.yaml").read_text())
    assert data["cupti_launch_us"] >= 0 and data["cupti_event_us"] > 0, "a read's callbacks cost something"
    assert "CUPTI, per other call" in proc.stdout
