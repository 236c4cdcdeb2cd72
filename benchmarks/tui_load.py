"""How fast the TUI opens and scrolls a trace of 10^6 events; prints a table (not a timed test).

    python benchmarks/tui_load.py                 # ~10^6-event traces, recorded for real on the NumPy backend
    python benchmarks/tui_load.py --events 200000 # smaller, quicker

Two cases, each recorded with offload_core's NumPy backend and the
profiler's Recorder (so the records are what real runs produce):

* pair:   the suite's naive path (about 9 records per launch, ~`--events`
          records) opened beside its batched path (the same launches);
* single: a batched trace of ~`--events` launches (one record each) alone,
          the most rows a view can have.

For each it measures: writing the trace (schema 2) and loading it (and,
for comparison, loading the same run as a schema 1 file); building the
session (every aggregate the views show); the first frame of the app,
headless; the whole `offload-prof tui` start in a pseudo-terminal, from
exec to the first screen drawn (Python start and imports included);
keypresses while scrolling (PageDown, End, Home) and sorting and
filtering 10^6 rows; how many rows were formatted in all (the
virtualisation); and how long the background detectors take.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import offload_core  # noqa: E402
from offload_core.suite import run_suite  # noqa: E402
from profiler.model import Run  # noqa: E402
from profiler.sources.recorder import Recorder  # noqa: E402
from profiler.trace.link import SHIPPED_DIR, load_link  # noqa: E402


def record(mode: str, reps: int, kernels: list[str]) -> Run:
    offload_core.set_mode(mode)
    with Recorder() as rec:
        run_suite(kernels, size_factor=0.0001, mode=mode, reps=reps)
    offload_core.set_mode("batched")
    return rec.run(argv=("suite", mode))


def timed(fn, *args):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


async def drive(paths: list[Path]) -> dict[str, float]:
    """In-process figures: loading, aggregating, the first frame, and the cost of one frame, a sort, a filter."""
    from textual.geometry import Region

    from profiler.tui.app import OffloadProfApp
    from profiler.tui.gridview import GridView
    from profiler.tui.session import Session

    link = load_link(SHIPPED_DIR / "pcie5-x16.yaml")
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    runs = [Run.load(p) for p in paths]
    out["load s"] = time.perf_counter() - t0
    session, out["session s"] = timed(lambda: Session.build(runs, [str(p) for p in paths], link, from_files=True))
    t1 = time.perf_counter()
    app = OffloadProfApp(session, background=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        out["first frame s"] = time.perf_counter() - t1
        out["open in process s"] = time.perf_counter() - t0
        t2 = time.perf_counter()
        await app.workers.wait_for_complete()
        out["detectors s (child process, after open)"] = time.perf_counter() - t2
        out["findings"] = session.finding_count() or 0
        grid = app.query_one("#launches-grid", GridView)
        region = Region(0, 0, grid.size.width, grid.size.height)
        frames = []
        for row in (len(grid.table) // 2, len(grid.table) - 1, 0):
            grid.move_to(row)
            await pilot.pause()
            t = time.perf_counter()
            grid.render_lines(region)
            frames.append(time.perf_counter() - t)
        out["table frame render ms"] = 1e3 * max(frames)
        copy = next(p.column for p in grid.placed() if p.side == 1 and grid.table.sides[1].columns[p.column].key == "copy")
        _, out["sort s"] = timed(grid.sort_by, 1, copy)
        _, out["filter s"] = timed(grid.apply_filter, "triad")
        out["rows"] = grid.table.keys
        out["rows formatted"] = grid.rows_rendered
        await pilot.press("q")
    fresh = [Run.load(p) for p in paths]
    _, out["detectors s (in process, from a fresh load)"] = timed(
        lambda: [__import__("profiler.analysis.detectors", fromlist=["detect"]).detect(r, link=link) for r in fresh])
    return out


def _pty(paths: list[Path]):  # type: ignore[no-untyped-def]
    import fcntl
    import pty
    import struct
    import termios

    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", OFFLOAD_BACKEND="numpy")
    proc = subprocess.Popen([sys.executable, "-m", "profiler", "tui", *map(str, paths)], cwd=ROOT, env=env,
                            stdin=child, stdout=child, stderr=child, close_fds=True)
    os.close(child)
    return main, proc


def _wait(main: int, needle: bytes, limit: float) -> bytes:
    seen = b""
    end = time.perf_counter() + limit
    while needle not in seen and time.perf_counter() < end:
        if select.select([main], [], [], 0.01)[0]:
            try:
                seen += os.read(main, 1 << 20)
            except OSError:
                break
    return seen


def in_terminal(paths: list[Path], launches: int, rows: int) -> dict[str, float]:
    """`offload-prof tui` in a 120x40 pseudo-terminal: start to first screen, then keypress to redraw."""
    t0 = time.perf_counter()
    main, proc = _pty(paths)
    out: dict[str, float] = {}
    try:
        seen = _wait(main, f"{launches:,} launches".encode(), 120)
        out["offload-prof tui start s (pty)"] = time.perf_counter() - t0
        busy = "Findings (\u2026)".encode() in seen  # the detectors are still running
        lat = []
        for n in range(2, 22):
            t = time.perf_counter()
            os.write(main, b"\x1b[B")  # Down
            _wait(main, f"row {n:,} ".encode(), 30)
            lat.append(time.perf_counter() - t)
        out["Down to redraw ms, mean of 20" + (" (detectors busy)" if busy else "")] = 1e3 * statistics.fmean(lat)
        out["Down to redraw ms, max"] = 1e3 * max(lat)
        t = time.perf_counter()
        os.write(main, b"\x1b[F")  # End
        _wait(main, f"row {rows:,} ".encode(), 30)
        out["End to redraw ms"] = 1e3 * (time.perf_counter() - t)
        os.write(main, b"q")
        end = time.perf_counter() + 30
        while proc.poll() is None and time.perf_counter() < end:
            _wait(main, b"\0never", 0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(main)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="records per large trace (default: %(default)s)")
    args = parser.parse_args()
    offload_core.set_backend("numpy")
    kernels = ["TRIAD", "DAXPY", "JACOBI_1D"]
    per_rep_naive = 38  # records per rep of these three kernels on the naive path (3 launches, 4 steps)
    folder = Path(tempfile.mkdtemp(prefix="tui-load-"))
    print(f"recording into {folder} ...", file=sys.stderr, flush=True)
    reps = max(args.events // per_rep_naive, 1)
    naive = record("naive", reps, kernels)
    batched = record("batched", reps, kernels)
    single = record("batched", max(args.events // 4, 1), kernels)  # 4 launches per rep, one record each
    cases = {"pair": [("naive", naive), ("batched", batched)], "single": [("batched", single)]}
    rows = []
    for case, runs in cases.items():
        paths = []
        row: dict[str, float | str] = {"case": case}
        for name, run in runs:
            path = folder / f"{case}.{name}.json"
            _, took = timed(run.save, path)
            paths.append(path)
            row[f"save {name} s"] = took
            row[f"{name} records"] = len(run.records)
        old = folder / f"{case}.old.json"
        old.write_text(json.dumps(runs[0][1].to_json(schema=1), separators=(",", ":")))
        _, row["schema 1 load s (first)"] = timed(Run.load, old)
        row["file MB"] = sum(p.stat().st_size for p in paths) / 1e6
        print(f"driving the app on {case} ...", file=sys.stderr, flush=True)
        row.update(asyncio.run(drive(paths)))
        last = runs[-1][1]
        launches = sum(1 for r in last.records if r.kind == "launch")
        print(f"running offload-prof tui on {case} in a terminal ...", file=sys.stderr, flush=True)
        row.update(in_terminal(paths, launches, int(row["rows"])))
        rows.append(row)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    width = max(len(k) for k in keys)
    print(f"{'':<{width}}  " + "  ".join(f"{str(r['case']):>14}" for r in rows))
    for k in keys[1:]:
        cells = []
        for r in rows:
            v = r.get(k, "")
            cells.append(f"{v:>14,.0f}" if isinstance(v, (int, float)) and (k.endswith(("records", "rows", "formatted", "findings")))
                         else f"{v:>14.3f}" if isinstance(v, float) else f"{v!s:>14}")
        print(f"{k:<{width}}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
