"""What an active transfer guard costs a PyTorch training loop, beside what a CUPTI recording costs it.

Run on an NVIDIA GPU with PyTorch and the cupti extra:
    python benchmarks/guard_overhead.py [--steps 300] [--repeats 5]

Each variant runs `benchmarks/programs/guard_train.py` (an MLP trained on
data resident on the GPU, one `.item()` per step) in a fresh process; the
rounds are interleaved so that the machine's drift falls on all alike.
`loop` is the wall time the program measures around its timed steps:

* `plain`: no guard, no recording (the baseline),
* `guard, scalars allowed`: `no_transfers(syncs=True, allow_scalars=True)`
  around the loop: CUPTI listens to every copy and sync call, the
  `.item()` reads pass as scalars (the cost of a guard that lets the loop's reads pass),
* `guard, log every step`: `no_transfers(syncs=True, mode="log")`: every
  `.item()` is a D2H and a sync the guard reports (two per step),
* `CUPTI recording`: `offload-prof run --source cupti --no-fingerprints`
  of the plain program (issue 13's recording, the guard's target: an
  active guard should cost no more than it).

`entry ms` is the scope's entry, timed apart from the loop: the first
scope of a process starts CUPTI there, a one-time cost (the recording
pays its own at the process's start, outside the loop). `caught` counts
the guard's violations: the `.item()` reads and syncs in `log` mode (two
per step) and the loop's closing `torch.cuda.synchronize()`, which the
scope also forbids (`syncs=True`).

The ratios are against `plain`, medians over the repeats. Nothing is
asserted; the table goes into docs/profiler.md with the command and date.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "benchmarks" / "programs" / "guard_train.py"
VARIANTS = (("plain", "none", False), ("guard, scalars allowed", "scalars", False),
            ("guard, log every step", "log", False), ("CUPTI recording", "none", True))


def run(guard: str, recorded: bool, steps: int, trace: Path) -> dict[str, object]:
    program = [str(PROGRAM), "--steps", str(steps), "--guard", guard]
    cmd = [sys.executable, *program]
    if recorded:
        cmd = [sys.executable, "-m", "profiler", "run", "--source", "cupti", "--no-fingerprints", "-o", str(trace),
               "--", *program]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("{"))
    return json.loads(line)  # type: ignore[no-any-return]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    times: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
    entries: dict[str, list[float]] = {name: [] for name, _, _ in VARIANTS}
    caught: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for name, guard, recorded in VARIANTS:
                try:
                    out = run(guard, recorded, args.steps, Path(tmp) / "trace.json")
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    print(f"{name}: {exc}", file=sys.stderr)
                    return 1
                times[name].append(float(out["loop_s"]))  # type: ignore[arg-type]
                entries[name].append(float(out["enter_s"]))  # type: ignore[arg-type]
                caught[name] = out["violations"]
    base = statistics.median(times["plain"])
    print(f"guard_train.py, {args.steps} steps, median of {args.repeats} fresh processes per variant")
    print(f"{'variant':<24} {'loop s':>9} {'per step us':>12} {'vs plain':>9} {'entry ms':>9} {'caught':>7}")
    for name, _, _ in VARIANTS:
        t = statistics.median(times[name])
        entry = statistics.median(entries[name]) * 1e3
        print(f"{name:<24} {t:>9.4f} {t / args.steps * 1e6:>12.1f} {t / base:>8.3f}x {entry:>9.1f} "
              f"{caught[name]!s:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
