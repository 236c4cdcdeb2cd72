"""Recording memory is bounded: the target's events go to a spool as they come, the first N are kept and the rest
counted (`run --max-records`).

Peak memory itself is measured by benchmarks/recording_memory.py (docs/profiler.md); these tests check the
mechanism: what is kept, what is counted, what the list in memory holds while the target runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import profiler.sources.spool as spool_module
from offload_core import offload
from profiler.model import Run
from profiler.sources.recordcap import MEMORY_SHARE, MIN_DEFAULT_RECORDS, PEAK_BYTES_PER_RECORD, default_max_records
from profiler.sources.recorder import Recorder
from profiler.sources.spool import SPOOL_NAME, SpoolingRecorder

from ..offload_core.kit import daxpy
from .kit import PROGRAMS, ROOT, env, prof

LOOP = ROOT / "benchmarks" / "programs" / "launch_loop.py"
FAMILY = PROGRAMS / "family.py"


def shape(run: Run) -> list[tuple[object, ...]]:
    """What a record says apart from its times: kind, bytes, kernel, launch, param, buffer, site, region, mode, digest."""
    return [(r.kind, r.nbytes, r.pinned, r.kernel, r.launch, r.param, r.array, r.site, r.region, r.mode, r.fingerprint)
            for r in run.records]


def launches(n: int) -> None:
    x, y = np.ones(8), np.zeros(8)
    for _ in range(n):
        offload(daxpy, y, x, 2.0)


def test_the_spool_gives_the_run_the_in_memory_recorder_gives(tmp_path: Path) -> None:
    with Recorder(fingerprints=True) as kept:
        launches(50)
    with SpoolingRecorder(tmp_path, fingerprints=True, max_records=10**6) as spooled:
        launches(50)
    a, b = kept.run(), spooled.run()
    assert len(b.records) == 450 and shape(b) != [] and [s[0] for s in shape(a)] == [s[0] for s in shape(b)]
    assert [(s[0], s[1], s[3], s[5], s[9]) for s in shape(a)] == [(s[0], s[1], s[3], s[5], s[9]) for s in shape(b)]
    assert b.sites[0].text == "offload(daxpy, y, x, 2.0)" and b.sites == a.sites
    assert all(0 <= r.start_ns <= b.meta.wall_ns for r in b.records)
    assert b.meta.dropped == 0 and (tmp_path / SPOOL_NAME).is_file()


def test_past_the_cap_records_are_counted_not_kept(tmp_path: Path) -> None:
    with SpoolingRecorder(tmp_path, max_records=100) as rec:
        launches(30)  # 270 records
    run = rec.run()
    assert len(run.records) == 100 and run.meta.dropped == 170
    assert [r.kind for r in run.records[:9]] == ["alloc", "h2d", "alloc", "h2d", "launch", "d2h", "sync", "free",
                                                  "free"], "the first ones are kept"
    saved = Run.load(run.save(tmp_path / "t.json"))
    assert saved.meta.dropped == 170
    plain = replace(run, meta=replace(run.meta, dropped=0))
    assert "dropped" not in json.loads(json.dumps(plain.to_json()))["meta"], "a run that kept all keeps its file"


def test_the_list_in_memory_is_emptied_while_the_target_runs(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spool_module, "BATCH_ROWS", 1000)
    held: list[int] = []
    rec = SpoolingRecorder(tmp_path, max_records=10**7).start()
    try:
        for _ in range(200):
            launches(100)  # 900 records a round
            held.append(len(rec.raw))
            time.sleep(0.001)
    finally:
        rec.stop()
    assert len(rec.run().records) == 180_000
    assert max(held) < 180_000 // 4, "the spool took the records while the target ran, not only at its end"


def test_default_cap_is_half_the_memory_available_over_the_peak_per_record() -> None:
    gib = 2**30
    assert default_max_records(16 * gib) == int(16 * gib * MEMORY_SHARE) // PEAK_BYTES_PER_RECORD
    assert default_max_records(1024) == MIN_DEFAULT_RECORDS, "never below the floor"
    assert default_max_records() >= MIN_DEFAULT_RECORDS
    proc = subprocess.run([sys.executable, "-m", "profiler", "run", "--help"], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=60)
    text = " ".join(proc.stdout.split())
    assert "--max-records N" in text and "memory available" in text and "on this machine now" in text


def test_run_max_records_keeps_the_first_and_warns_once(tmp_path: Path) -> None:
    proc = prof("run", "--max-records", "1000", "-o", "t.json", "--", str(LOOP), "500", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = Run.load(tmp_path / "t.json")
    assert len(run.records) == 1000 and run.meta.dropped == 500 * 9 - 1000
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert warnings == ["offload-prof: warning: the trace keeps the first 1,000 records of each process "
                        "(--max-records 1000); 3,500 more were recorded and not kept (meta.dropped counts them)"]
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"], "the run's folder is gone once the trace is written"


def test_a_spool_that_cannot_be_written_keeps_the_records_in_memory(tmp_path: Path) -> None:
    rec = SpoolingRecorder(tmp_path, max_records=10**6).start()
    try:
        launches(10)
        rec.flush()
        assert rec.spool_error is None and not rec.unspooled
        assert rec._fd is not None
        os.close(rec._fd)  # the spool fails under it as a full disk would: the next write raises
        rec._fd = os.open(rec.path, os.O_RDONLY)
        launches(20)
        rec.flush()
        launches(5)
    finally:
        rec.stop()
    run = rec.run()
    assert rec.spool_error and len(rec.unspooled) == 25 * 9
    numbers = [r.launch for r in run.records if r.kind == "launch"]
    assert len(run.records) == 35 * 9 and numbers == list(range(numbers[0], numbers[0] + 35)), "all, in order"
    assert rec.notes() == [f"warning: could not write the records to {rec.path} as they came ({rec.spool_error}); "
                           "the rest were held in memory, so the run's memory grew with them"]


def test_child_processes_keep_their_first_n_too(tmp_path: Path) -> None:
    proc = prof("run", "--max-records", "5", "-o", "t.json", "--", str(FAMILY), "subprocess", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = Run.load(tmp_path / "t.json")
    main, child = run.meta.processes[:2]
    assert [sum(r.process == i for r in run.records) for i in (0, 1)] == [5, 5]
    assert run.meta.dropped == (9 - 5) + (27 - 5)
    assert child.note == "kept its first 5 records, 22 more not kept (--max-records)"
    assert "(--max-records 5); 26 more were recorded and not kept" in proc.stderr


def test_both_paths_get_the_cap(tmp_path: Path) -> None:
    proc = prof("run", "--mode", "both", "--max-records", "100", "-o", "t.json", "--", str(LOOP), "50",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for mode in ("naive", "batched"):
        run = Run.load(tmp_path / f"t.{mode}.json")
        assert (len(run.records), run.meta.dropped) == (100, 50 * 9 - 100)
