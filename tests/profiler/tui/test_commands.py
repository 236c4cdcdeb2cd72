"""`offload-prof demo` and `offload-prof tui` through real processes: piped, --no-tui, a terminal, bad input."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from profiler.model import Run

from ..kit import ROOT, env, prof
from .kit import BATCHED, NAIVE

SMALL = ("--kernels", "TRIAD", "DAXPY", "--size-factor", "0.01", "--reps", "5", "--repeats", "3")


def row(out: str, name: str) -> list[str]:
    line = next(line for line in out.splitlines() if line.strip().startswith(name))
    return re.split(r"\s{2,}", line.strip())[1:]


def test_demo_no_tui_records_both_paths_and_prints_the_comparison(tmp_path: Path) -> None:
    proc = prof("demo", "--no-tui", *SMALL, "-o", "out/d.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    naive, batched = Run.load(tmp_path / "out/d.naive.json"), Run.load(tmp_path / "out/d.batched.json")
    assert (naive.meta.mode, batched.meta.mode) == ("naive", "batched")
    assert all(r.mode == "naive" for r in naive.records) and all(r.mode == "batched" for r in batched.records)
    out = proc.stdout
    assert row(out, "launches") == ["10", "10", "1x"]
    # naive: TRIAD uploads b and c, DAXPY x and y, on each of 5 launches; batched: once each, at region entry
    assert row(out, "H2D copies") == ["20", "4", "5x"]
    assert row(out, "D2H copies")[:2] == ["10", "2"]
    # the headline leads with what is exact, then the modelled link time, then the measured times with their range
    tail = out.splitlines()[-3:]
    assert tail[0] == "batched: 5.00x fewer copies (6 vs 30), 5.00x fewer bytes (480 kB vs 2.4 MB)"
    assert tail[1].startswith("modelled on pcie5-x16: copies ")
    assert re.fullmatch(r"measured: batched is \d[\d.]*x (faster|slower) \(median of 3 repeats, range "
                        r"\d[\d.]*x-\d[\d.]*x\); \d+% of the naive run was copies", tail[2]), tail[2]
    for run in (naive, batched):  # the median of the three recordings is kept, with all three wall times
        samples = run.meta.wall_samples_ns
        assert len(samples) == 3 and run.meta.wall_ns == sorted(samples)[1]
    assert "OFF501" in out, "the naive run's per-launch copies are found"
    err = proc.stderr
    assert "warming up" in err and "recording the naive path (1 of 3)" in err and "recording the batched path (3 of 3)" in err
    assert "(104 records, 10 launches; the median of 3 repeats)" in err and "(32 records, 10 launches; the median" in err
    assert f"wrote {Path('out/d.naive.json')}" in err and "open them again with: offload-prof tui out/d.naive.json out/d.batched.json" in err
    assert "Traceback" not in err


def test_demo_piped_prints_the_comparison_instead_of_the_tui(tmp_path: Path) -> None:
    proc = prof("demo", *SMALL, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "no terminal, printing the comparison as text" in proc.stderr
    assert proc.stdout.startswith("compare  offload-demo.naive.json (naive)  vs  offload-demo.batched.json (batched)")
    assert (tmp_path / "offload-demo.naive.json").is_file() and (tmp_path / "offload-demo.batched.json").is_file()


def test_tui_piped_prints_compare_or_report() -> None:
    two = prof("tui", str(NAIVE), str(BATCHED), cwd=ROOT)
    assert two.returncode == 0, two.stderr
    assert two.stdout.splitlines()[0].startswith("compare  ")
    assert "batched is 8.41x faster; 73% of the naive run was copies" in two.stdout
    one = prof("tui", "--no-tui", "--no-model", str(NAIVE), cwd=ROOT)
    assert one.returncode == 0 and one.stdout.startswith("trace    ") and "findings (3)" in one.stdout
    assert "modelled" not in one.stdout and one.stderr == ""


@pytest.mark.parametrize("args, message", [
    (("tui", "a.json", "b.json", "c.json"), "offload-prof: error: tui shows one or two traces, got 3"),
    (("tui", "missing.json"), "offload-prof: error: missing.json: cannot read trace file"),
    (("demo", "--kernels", "NOPE", "--no-tui"), "offload-prof: error: unknown kernel 'NOPE'; choose from"),
    (("demo", "--reps", "0", "--no-tui"), "offload-prof: error: --size-factor must be positive and --reps and --repeats at least 1"),
    (("demo", "--repeats", "0", "--no-tui"), "offload-prof: error: --size-factor must be positive and --reps and --repeats at least 1"),
    (("demo", "-o", ".", "--no-tui"), "offload-prof: error: .: is a directory"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    proc = prof(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def _read_until(fd: int, needle: bytes, deadline: float) -> bytes:
    seen = b""
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


def test_tui_in_a_terminal_opens_and_q_quits() -> None:
    pty = pytest.importorskip("pty")
    main, child = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "profiler", "tui", str(NAIVE), str(BATCHED)], cwd=ROOT,
                            env=env(TERM="xterm-256color"), stdin=child, stdout=child, stderr=child, close_fds=True)
    os.close(child)
    try:
        seen = _read_until(main, b"Launches", time.monotonic() + 60)
        assert b"Launches" in seen, seen[-2000:]
        time.sleep(0.5)
        os.write(main, b"q")
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            _read_until(main, b"\0never", time.monotonic() + 0.5)  # keep draining, or the app blocks writing
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
