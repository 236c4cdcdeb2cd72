"""Pools recorded run after run: does every launch of `with Pool(...)`'s workers reach the trace, and does any run hang?

Run: python benchmarks/children_runs.py [--runs 10] [--methods fork,spawn,forkserver] [--workers 4]
                                        [--tasks 10] [--launches 1000] [--deadline 120]

Each run is `offload-prof run` of benchmarks/programs/pool_loop.py in a
fresh process (NumPy backend, naive mode: nine records per launch), with
a deadline: a run still going after `--deadline` seconds is a hang, is
killed, and is counted as one. A table on stdout per method: runs, the
launches the program said it made, the least and most the traces held,
runs that lost launches, runs that warned of a child cut short, hangs.
Nothing is asserted (tests/profiler/sources/test_children_ends.py asserts
on a small case).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "benchmarks" / "programs" / "pool_loop.py"


def one_run(method: str, args: argparse.Namespace, folder: Path) -> tuple[int | None, int | None, bool]:
    """(launches the program said, launches in the trace, warned), or (None, None, False) for a hang."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    env.update(OFFLOAD_BACKEND="numpy", OFFLOAD_MODE="naive", PYTHONPATH=str(ROOT))
    trace = folder / "t.json"
    try:
        proc = subprocess.run([sys.executable, "-m", "profiler", "run", "--no-fingerprints", "-o", str(trace), "--",
                               str(PROGRAM), method, str(args.workers), str(args.tasks), str(args.launches)],
                              cwd=folder, env=env, capture_output=True, text=True, timeout=args.deadline)
    except subprocess.TimeoutExpired:
        return None, None, False
    said = re.search(r"launched (\d+)", proc.stdout)
    doc = json.loads(trace.read_text()) if trace.exists() else None
    count = None
    if doc is not None:
        from profiler.model import Run

        run = Run.from_json(doc)
        count = sum(1 for r in run.records if r.kind == "launch")
    return (int(said.group(1)) if said else -1), count, "ended before writing" in proc.stderr


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--methods", default="fork,spawn,forkserver")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--tasks", type=int, default=10)
    p.add_argument("--launches", type=int, default=1000)
    p.add_argument("--deadline", type=float, default=120.0)
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs: `with Pool({args.workers})`, {args.tasks} tasks of {args.launches} launches, "
          f"{args.runs} runs per method, deadline {args.deadline:g} s per run")
    header = f"{'method':<11}{'runs':>5}{'said':>8}{'fewest':>8}{'most':>8}{'short':>7}{'warned':>8}{'hangs':>7}{'s/run':>7}"
    print(header)
    print("-" * len(header))
    for method in args.methods.split(","):
        counts: list[int] = []
        said_all: set[int] = set()
        short = warned = hangs = 0
        started = time.perf_counter()
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                said, count, warn = one_run(method, args, Path(tmp))
            if said is None:
                hangs += 1
                continue
            said_all.add(said)
            counts.append(count if count is not None else 0)
            short += (count or 0) < said
            warned += warn
        per_run = (time.perf_counter() - started) / args.runs
        print(f"{method:<11}{args.runs:>5}{'/'.join(map(str, sorted(said_all))) or '-':>8}"
              f"{min(counts, default=0):>8}{max(counts, default=0):>8}{short:>7}{warned:>8}{hangs:>7}{per_run:>7.1f}")


if __name__ == "__main__":
    main()
