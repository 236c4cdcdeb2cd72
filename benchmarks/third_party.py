"""Record a program you did not write: its wall time plain and recorded, the trace, and the report with its verdict.

Run where the program runs (for `--source cupti`, an NVIDIA GPU and the cupti extra):
    python benchmarks/third_party.py --cwd PATH/TO/word_language_model -o wlm.json \\
        --own-time 'time:\\s*([0-9.]+)s' -- main.py --accel --epochs 1

The program runs unmodified in `--cwd`, `--repeats` times plain
(`python ARGS`) and as many times recorded (`python -m profiler run
--source SOURCE -o TRACE -- ARGS`), interleaved; the table gives each
command's wall time (the fastest round) and, with `--own-time REGEX`, the
time the program reports for its own work (the first group of the last
match in its output: an epoch's time, a loop's), which leaves out the
interpreter's start and the recording's start-up and decoding. Then
`offload-prof report` of the last trace is printed whole: the verdict
(where the time went), the findings with their expected savings. Nothing
is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str, int]:
    """(wall seconds, stdout and stderr, exit status) of one command."""
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, proc.stdout + proc.stderr, proc.returncode


def own_time(output: str, pattern: str | None) -> float | None:
    if not pattern:
        return None
    found = re.findall(pattern, output)
    if not found:
        return None
    last = found[-1]
    return float(last[0] if isinstance(last, tuple) else last)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cwd", type=Path, default=Path.cwd(), help="the program's folder (default: here)")
    p.add_argument("-o", "--output", type=Path, default=Path("third_party.json"), help="trace file (default: %(default)s)")
    p.add_argument("--source", choices=("cupti", "offload"), default="cupti", help="recording source (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=1, help="rounds, plain and recorded (default: %(default)s)")
    p.add_argument("--own-time", metavar="REGEX", help="the program's own time in its output (first group, seconds)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="-- the program's script and arguments")
    args = p.parse_args()
    target = args.args[1:] if args.args[:1] == ["--"] else args.args
    if not target:
        p.error("give the program after --: -- script.py ARGS")
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    trace = args.output.resolve()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    plain_cmd = [sys.executable, *target]
    recorded_cmd = [sys.executable, "-m", "profiler", "run", "--source", args.source, "-o", str(trace), "--", *target]
    best: dict[str, tuple[float, float | None]] = {}
    for round_ in range(args.repeats):
        for name, command in (("plain", plain_cmd), ("recorded", recorded_cmd)):
            print(f"third_party: round {round_ + 1}/{args.repeats}, {name} ...", file=sys.stderr, flush=True)
            wall, output, status = run(command, args.cwd, env)
            if status != 0:
                print(f"third_party: the {name} run failed (exit {status}):\n{output[-3000:]}", file=sys.stderr)
                return 1
            mine = own_time(output, args.own_time)
            if name == "recorded":
                print("\n".join(line for line in output.splitlines() if line.startswith("offload-prof:")),
                      file=sys.stderr)
            old = best.get(name)
            if old is None or wall < old[0]:
                best[name] = (wall, mine)
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {platform.machine()}: "
          f"{' '.join(target)} in {args.cwd}, --source {args.source}, fastest of {args.repeats}")
    print(f"{'run':10s} {'process s':>10s} {'own s':>9s}")
    for name in ("plain", "recorded"):
        wall, mine = best[name]
        print(f"{name:10s} {wall:10.2f} {'-' if mine is None else f'{mine:.2f}':>9s}")
    (pw, po), (rw, ro) = best["plain"], best["recorded"]
    ratio = f"process {rw / pw:.2f}x" + ("" if po is None or ro is None or po <= 0 else f", own time {ro / po:.2f}x")
    print(f"recorded/plain: {ratio}\n")
    report = subprocess.run([sys.executable, "-m", "profiler", "report", str(trace)], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    print(report.stdout + report.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
