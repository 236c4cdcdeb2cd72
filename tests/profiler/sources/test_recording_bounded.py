"""Recording memory is bounded: the target's events go to a spool as they come, the first N are kept and the rest
counted (`run --max-records`), and a run killed outright keeps what it wrote (`offload-prof recover`).

Peak memory itself is measured by benchmarks/recording_memory.py (docs/profiler.md); these tests check the
mechanism: what is kept, what is counted, what the list in memory holds while the target runs.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
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
from profiler.sources.parts import read_chunks
from profiler.sources.recordcap import MEMORY_SHARE, MIN_DEFAULT_RECORDS, PEAK_BYTES_PER_RECORD, default_max_records
from profiler.sources.recorder import Recorder
from profiler.sources.spool import SPOOL_NAME, SpoolingRecorder

from ...offload_core.kit import daxpy
from ..kit import PROGRAMS, ROOT, env, prof

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


def _chunks(spool: Path, tag: str) -> list[object]:
    return [c[1] for c in read_chunks(spool) if isinstance(c, tuple) and c[0] == tag]


def test_a_killed_run_keeps_what_it_wrote_and_recover_makes_its_trace(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "profiler", "run", "--max-records", "2000", "-o", "t.json", "--",
                             str(LOOP), "forever"], cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        spools: list[Path] = []
        counted: list[object] = []
        while time.monotonic() < deadline and not counted:  # until the spool counts records past the cap
            spools = list(tmp_path.glob(f".t.json.offload-prof-run-*/{SPOOL_NAME}"))
            counted = _chunks(spools[0], "dropped") if spools else []
            time.sleep(0.05)
        assert spools and counted, "the run keeps its records beside its trace, and counts those past the cap"
        folder = spools[0].parent
        busy = prof("recover", str(folder), cwd=tmp_path)
        assert busy.returncode == 2 and busy.stderr == (
            f"offload-prof: error: {folder}: the run that writes it (pid {proc.pid}) is still running; it writes its "
            "own trace when its target ends\n")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert not (tmp_path / "t.json").exists() and folder.is_dir()
    again = prof("run", "-o", "t.json", "--", str(LOOP), "3", cwd=tmp_path)
    assert again.returncode == 0
    assert (f"offload-prof: an earlier run writing t.json was killed; what it recorded is in {folder}: `offload-prof "
            f"recover {folder}` makes a trace of it (t.recovered.json)\n") in again.stderr
    kept = prof("recover", str(folder), "--keep", cwd=tmp_path)  # beside the trace the run was writing
    assert kept.returncode == 0, kept.stderr
    assert len(Run.load(tmp_path / "t.json").records) == 27, "the trace written since is kept"
    run = Run.load(tmp_path / "t.recovered.json")
    assert run.meta.outcome == "interrupted" and run.meta.exit_code == 137 and not run.meta.processes[0].complete
    assert len(run.records) == 2000 and {r.kind for r in run.records} >= {"h2d", "launch", "d2h"}
    assert run.meta.dropped >= counted[-1][0] > 0  # type: ignore[index]
    assert run.meta.wall_ns > max(r.start_ns + r.duration_ns for r in run.records), \
        "the wall time runs to the last count of records past the cap, not to the last record kept"
    assert run.meta.argv == (str(LOOP), "forever") and folder.is_dir()
    assert kept.stderr == (f"offload-prof: wrote {tmp_path / 't.recovered.json'} (2000 records, 222 launches, "
                           f"{run.meta.dropped:,} more not kept (--max-records), from what the killed run had written; "
                           "outcome interrupted)\n")
    gone = prof("recover", str(folder), "-o", "r.json", cwd=tmp_path)
    assert gone.returncode == 0 and gone.stderr.endswith(f"; removed {folder}\n") and not folder.exists()
    assert len(Run.load(tmp_path / "r.json").records) == 2000


def test_recover_refuses_what_is_not_a_runs_folder(tmp_path: Path) -> None:
    proc = prof("recover", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == (
        f"offload-prof: error: {tmp_path}: not the folder of an offload-prof run (no {SPOOL_NAME} in it)\n")


def test_recover_and_run_never_read_a_folder_others_may_write(tmp_path: Path) -> None:
    """A spool is unpickled: one planted in a shared folder (here: writable by all) is refused, not read."""
    planted = tmp_path / ".t.json.offload-prof-run-planted"
    planted.mkdir()
    marker = tmp_path / "ran"
    payload = pickle.dumps(("meta", _Planted(str(marker))))
    (planted / SPOOL_NAME).write_bytes(len(payload).to_bytes(4, "little") + payload)
    planted.chmod(0o777)
    proc = prof("recover", str(planted), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == (
        f"offload-prof: error: {planted}: not made by an offload-prof run of this user (another user's, or writable "
        "by others); its records are not read\n")
    run = prof("run", "-o", "t.json", "--", str(LOOP), "3", cwd=tmp_path)
    assert run.returncode == 0 and "earlier run" not in run.stderr
    assert not marker.exists(), "the planted pickle never ran"


class _Planted:
    """A pickle that, when loaded, creates a file: proof that a spool was unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (open, (self.path, "w"))


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
