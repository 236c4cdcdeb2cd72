"""What recording costs in memory: the peak resident set of `offload-prof run` over a loop of N launches.

Run: python benchmarks/recording_memory.py [--launches 200000] [--max-records N] [--mode batched]

Each row is one fresh `offload-prof run` (NumPy backend) of
benchmarks/programs/launch_loop.py, whose launches each make nine
records, measured by a helper process that starts it and reads the peak
resident set of its waited-for children (`getrusage(RUSAGE_CHILDREN)`):
the program unprofiled, recorded with fingerprints off and on, and (with
`--max-records`) recorded under that cap. A table on stdout: peak RSS,
wall time, records in the trace, trace size. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "benchmarks" / "programs" / "launch_loop.py"


def measure(argv: list[str]) -> tuple[float, float]:
    """(peak RSS in MiB, wall s) of `argv` run to its end in a fresh helper process."""
    helper = ("import resource, subprocess, sys, time\n"
              "t = time.perf_counter(); code = subprocess.run(sys.argv[1:]).returncode\n"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t, code)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    env.update(OFFLOAD_BACKEND="numpy", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", helper, *argv], capture_output=True, text=True, env=env, check=True)
    rss_kib, wall, code = out.stdout.split()[-3:]
    if code != "0":
        raise SystemExit(f"{' '.join(argv)} exited {code}: {out.stderr.strip().splitlines()[-1:]}")
    return int(rss_kib) / 1024, float(wall)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--launches", type=int, default=200_000)
    p.add_argument("--max-records", type=int, help="also record under this cap")
    p.add_argument("--mode", default="batched", choices=("naive", "batched"))
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    import numpy

    from profiler.version import __version__

    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, NumPy {numpy.__version__}, "
          f"offload-prof {__version__}, backend numpy, {platform.machine()}, "
          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM: "
          f"{args.launches} launches of benchmarks/programs/launch_loop.py, mode {args.mode}")
    header = f"{'configuration':<34}{'peak RSS MiB':>13}{'wall s':>8}{'records':>10}{'trace MB':>10}"
    print(header)
    print("-" * len(header))
    rows: list[tuple[str, list[str]]] = [("unprofiled", [])]
    rows.append(("run --no-fingerprints", ["--no-fingerprints"]))
    rows.append(("run (fingerprints)", []))
    if args.max_records:
        rows.append((f"run --max-records {args.max_records}", ["--max-records", str(args.max_records)]))
    for label, options in rows:
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "t.json"
            if not options and label == "unprofiled":
                argv = [sys.executable, str(PROGRAM), str(args.launches)]
            else:
                argv = [sys.executable, "-m", "profiler", "run", "--mode", args.mode, "-o", str(trace), *options,
                        "--", str(PROGRAM), str(args.launches)]
            rss, wall = measure(argv)
            records = size = "-"
            if trace.exists():
                records = str(json.loads(trace.read_text())["count"])
                size = f"{trace.stat().st_size / 1e6:.1f}"
        print(f"{label:<34}{rss:>13.0f}{wall:>8.1f}{records:>10}{size:>10}", flush=True)


if __name__ == "__main__":
    main()
