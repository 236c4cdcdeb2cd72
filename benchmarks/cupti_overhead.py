"""What recording with CUPTI costs: whole programs (a PyTorch training loop, a CuPy solver) and plain CuPy copies.

Run on an NVIDIA GPU with the cupti extra:
    python benchmarks/cupti_overhead.py [--small 10000] [--large-mib 256] [--large-reps 10] [--repeats 5]
    python benchmarks/cupti_overhead.py --programs [--repeats 3]     # the programs only
    python benchmarks/cupti_overhead.py --no-programs                # the copy loops only

Programs (`benchmarks/programs/`), each run in fresh processes, plain
(`python PROGRAM`) and recorded (`python -m profiler run --source cupti
-o TRACE -- PROGRAM`, with and without `--no-fingerprints`), the rounds
interleaved; `loop` is the wall time the program measures around its own
loop (what recording slows down; issue 13's targets: at most 1.15x for the
launch-heavy PyTorch loop, 1.05x for the solver), `process` the whole
command's wall time, which for the recorded run also holds the start-up
of CUPTI, decoding the records and writing the trace:

* `torch mlp` / `torch lstm`: `torch_train.py` (a few hundred kernels per
  step, a batch upload and a `.item()` per step),
* `cupy cg`: `cupy_cg.py` (conjugate gradient, a residual read back per
  iteration).

Workloads (plain CuPy, no offload_core):

* `small H2D`: a loop of `cp.asarray(x)` of a 1 KiB array (CuPy stages it
  through its pinned pool, then one cudaMemcpyAsync),
* `small D2H`: a loop of `d.get()` of a 1 KiB array (a copy and a stream sync),
* `large H2D pageable` / `pinned`: `dev.set(big)` of a large array,
* `large D2H pageable`: `dev.get(out=host)`.

Each is timed untraced, under `CuptiRecorder(fingerprints=False)` (what
`offload-prof run --source cupti --no-fingerprints` does; the issue's
targets, at most 2x for the small-copy loop and under 5% for large
copies, are for it, as the offload recorder's targets are for its
no-fingerprint mode) and under `CuptiRecorder()` (the default: the host
bytes of every copy are digested for OFF502/OFF503: one XXH3 pass with
xxhash, a blake2b pass at 0.3-1 GB/s without it). Traced times include starting and stopping the recording
(subscribing, the final device sync and activity flush); decoding the
records and building the `Run` afterwards is timed separately, per record.
An empty recording (start and stop around nothing) is timed too: `fixed`
is that cost, which a program pays once, and `marginal` the ratio without
it, (traced - fixed) / untraced, which is what recording costs per copy
in a longer run. Rounds rotate the order of the configurations; each
figure is the fastest round. A table on stdout; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from profiler.errors import ProfilerError  # noqa: E402
from profiler.sources.cupti import CuptiRecorder  # noqa: E402

SMALL_TARGET = 2.0  # traced / untraced wall time
LARGE_TARGET = 1.05
ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "benchmarks" / "programs"
#: name -> (program and arguments, target ratio of the loop's wall time, recorded / plain)
PROGRAM_RUNS = {
    "torch mlp": (["torch_train.py", "--model", "mlp", "--steps", "1500"], 1.15),
    "torch lstm": (["torch_train.py", "--model", "lstm", "--steps", "300"], 1.15),
    "cupy cg": (["cupy_cg.py", "--grid", "256", "--iters", "3000"], 1.05),
}


def run_program(argv: list[str], recorded: str | None, trace: Path) -> tuple[dict[str, object], float, str]:
    """One fresh run: (the program's JSON line, the command's wall seconds, the profiler's summary line or "")."""
    program = [str(PROGRAMS / argv[0]), *argv[1:]]
    if recorded is None:
        cmd = [sys.executable, *program]
    else:
        cmd = [sys.executable, "-m", "profiler", "run", "--source", "cupti", "-o", str(trace)]
        cmd += ["--no-fingerprints"] if recorded == "cupti" else []
        cmd += ["--", *program]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
    line = next(text for text in reversed(proc.stdout.splitlines()) if text.startswith("{"))
    summary = next((text for text in proc.stderr.splitlines() if text.startswith("offload-prof: wrote")), "")
    return json.loads(line), wall, summary


def programs(names: list[str], repeats: int) -> list[str]:
    """Times each program plain and recorded; prints the table; returns the names that missed their target."""
    head = (f"{'program':<11} {'plain loop s':>12} {'cupti s':>8} {'ratio':>6} {'target':>7} {'+fp s':>7} {'ratio':>6} "
            f"{'plain proc s':>12} {'cupti proc s':>12}  trace")
    print(head)
    print("-" * len(head))
    misses = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "t.json"
        for name in names:
            argv, target = PROGRAM_RUNS[name]
            configs: list[str | None] = [None, "cupti", "cupti+fp"]
            loop = {c: float("inf") for c in configs}
            proc = {c: float("inf") for c in configs}
            summary = ""
            try:
                for i in range(repeats):
                    for c in configs[i % 3:] + configs[: i % 3]:
                        out, wall, said = run_program(argv, c, trace)
                        loop[c] = min(loop[c], float(out["loop_s"]))  # type: ignore[arg-type]
                        proc[c] = min(proc[c], wall)
                        summary = said if c == "cupti" and said else summary
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"{name:<11} {exc}")
                misses.append(name)
                continue
            ratio, fp_ratio = loop["cupti"] / loop[None], loop["cupti+fp"] / loop[None]
            ok = ratio <= target
            if not ok:
                misses.append(name)
            records = summary.split("(", 1)[1].split(";", 1)[0] if "(" in summary else "?"
            print(f"{name:<11} {loop[None]:>12.3f} {loop['cupti']:>8.3f} {ratio:>5.2f}x {f'<={target:g}x':>6}"
                  f"{' ' if ok else '!'}{loop['cupti+fp']:>7.3f} {fp_ratio:>5.2f}x {proc[None]:>12.2f} "
                  f"{proc['cupti']:>12.2f}  {records}")
    print("\n'ratio' is the program's own loop time recorded (--no-fingerprints) over plain; '+fp' records with "
          "fingerprints (the default of `offload-prof run`); 'proc' is each command's whole wall time")
    return misses


def workloads(cp: object, small: int, large_mib: int, large_reps: int) -> dict[str, tuple[Callable[[], None], int, float]]:
    """name -> (run once, copies per run, target ratio)."""
    import cupyx

    cupy = cp  # type: ignore[assignment]
    x = np.arange(256, dtype=np.float32)
    d = cupy.asarray(x)  # type: ignore[attr-defined]
    n = large_mib << 18  # float32 elements
    big = np.ones(n, dtype=np.float32)
    pinned = cupyx.empty_pinned(n, dtype=np.float32)
    pinned[:] = 1.0
    dev = cupy.empty(n, dtype=cupy.float32)  # type: ignore[attr-defined]
    host = np.empty(n, dtype=np.float32)
    sync = cupy.cuda.Device().synchronize  # type: ignore[attr-defined]

    def small_h2d() -> None:
        for _ in range(small):
            cupy.asarray(x)  # type: ignore[attr-defined]
        sync()

    def small_d2h() -> None:
        for _ in range(small):
            d.get()
        sync()

    def large_h2d() -> None:
        for _ in range(large_reps):
            dev.set(big)
        sync()

    def large_h2d_pinned() -> None:
        for _ in range(large_reps):
            dev.set(pinned)
        sync()

    def large_d2h() -> None:
        for _ in range(large_reps):
            dev.get(out=host)
        sync()

    return {
        "small H2D": (small_h2d, small, SMALL_TARGET),
        "small D2H": (small_d2h, small, SMALL_TARGET),
        "large H2D pageable": (large_h2d, large_reps, LARGE_TARGET),
        "large H2D pinned": (large_h2d_pinned, large_reps, LARGE_TARGET),
        "large D2H pageable": (large_d2h, large_reps, LARGE_TARGET),
    }


def traced(fn: Callable[[], None], fingerprints: bool, keep: list[CuptiRecorder]) -> Callable[[], None]:
    def go() -> None:
        rec = CuptiRecorder(fingerprints=fingerprints).start()
        try:
            fn()
        finally:
            rec.stop()
        keep[:] = [rec]
    return go


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10_000, help="copies in each small-copy loop (default: %(default)s)")
    parser.add_argument("--large-mib", type=int, default=256, help="MiB per large copy (default: %(default)s)")
    parser.add_argument("--large-reps", type=int, default=10, help="large copies per run (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds; the fastest is shown (default: %(default)s)")
    parser.add_argument("--only", help="comma-separated workload or program names to run (default: all)")
    parser.add_argument("--programs", action="store_true", help="time the programs only, not the copy loops")
    parser.add_argument("--no-programs", action="store_true", help="time the copy loops only")
    args = parser.parse_args()
    wanted = {w.strip() for w in args.only.split(",")} if args.only else None
    try:
        import cupy as cp
    except ImportError:
        print("cupti_overhead: needs CuPy and an NVIDIA GPU", file=sys.stderr)
        return 2
    try:  # fail before any timing when CUPTI cannot run here
        CuptiRecorder(fingerprints=False).start().stop()
    except ProfilerError as exc:
        print(f"cupti_overhead: {exc}", file=sys.stderr)
        return 2
    dev = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else dev
    misses: list[str] = []
    if not args.no_programs:
        names = [n for n in PROGRAM_RUNS if wanted is None or n in wanted]
        print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, CuPy {cp.__version__}, "
              f"{_torch_version()}, {dev}, fastest of {args.repeats} rounds; programs in fresh processes")
        misses += programs(names, args.repeats)
        print()
        if args.programs:
            print("targets met" if not misses else f"targets missed (marked !): {', '.join(misses)}")
            return 0
    loads = workloads(cp, args.small, args.large_mib, args.large_reps)
    if wanted is not None:
        loads = {k: v for k, v in loads.items() if k in wanted}
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, CuPy {cp.__version__}, {dev}, "
          f"fastest of {args.repeats} rounds; traced = CuptiRecorder start + loop + stop")
    empty = []
    for _ in range(max(args.repeats, 3)):
        empty.append(timed(lambda: CuptiRecorder(fingerprints=False).start().stop()))
    fixed = min(empty)
    print(f"# fixed cost of a recording (start + stop around nothing): {fixed:.2f} ms")
    head = (f"{'workload':<20} {'copies':>6} {'off ms':>9} {'cupti ms':>9} {'ratio':>6} {'marginal':>8} {'µs/copy':>8} "
            f"{'target':>7} {'+fp ms':>9} {'ratio':>6} {'records':>7} {'build ns/rec':>12}")
    print(head)
    print("-" * len(head))
    for name, (fn, copies, target) in loads.items():
        last: list[CuptiRecorder] = []
        configs = {"off": fn, "cupti": traced(fn, False, last), "fp": traced(fn, True, [])}
        for f in configs.values():  # warm-up: pools, pinned pages, CUPTI's first attach
            f()
        best = {k: float("inf") for k in configs}
        names = list(configs)
        for i in range(args.repeats):
            for k in names[i % 3:] + names[: i % 3]:
                best[k] = min(best[k], timed(configs[k]))
        start = time.perf_counter_ns()
        records = len(last[0].run().records)
        build = (time.perf_counter_ns() - start) / max(records, 1)
        ratio, fp_ratio = best["cupti"] / best["off"], best["fp"] / best["off"]
        marginal = (best["cupti"] - fixed) / best["off"]
        ok = ratio <= target
        if not ok:
            misses.append(name)
        goal = f"<={target:g}x" if target >= 2 else f"<={100 * (target - 1):.0f}%"
        print(f"{name:<20} {copies:>6} {best['off']:>9.2f} {best['cupti']:>9.2f} {ratio:>5.2f}x {marginal:>7.3f}x "
              f"{(best['cupti'] - fixed - best['off']) * 1e3 / copies:>8.2f} {goal:>7}{' ' if ok else '!'}"
              f"{best['fp']:>9.2f} {fp_ratio:>5.2f}x {records:>7} {build:>12.0f}")
    print("\n'ratio' is traced/untraced wall time without fingerprints (the targets' mode), start and stop included; "
          "'marginal' leaves the fixed cost out; 'µs/copy' is the marginal cost per copy; '+fp' digests every "
          "copied byte (the default of `offload-prof run`); 'build' decodes the records and makes the Run")
    print("targets met" if not misses else f"targets missed (marked !): {', '.join(misses)}")
    return 0


def _torch_version() -> str:
    try:
        import torch
    except ImportError:
        return "no PyTorch"
    return f"PyTorch {torch.__version__}"


if __name__ == "__main__":
    raise SystemExit(main())
