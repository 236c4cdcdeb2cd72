"""Small programs with one known mistake each: the replay's predicted saving against the fixed program's.

Run: python benchmarks/savings_programs.py [--lib offload|cupy|torch] [--programs sync reupload ...] [--repeats 7]
     on the NumPy backend (CI): python benchmarks/savings_programs.py
     on a GPU: OFFLOAD_BACKEND=cupy python benchmarks/savings_programs.py --lib offload
               python benchmarks/savings_programs.py --lib cupy     (plain CuPy, recorded through CUPTI)
               python benchmarks/savings_programs.py --lib torch    (PyTorch, recorded through CUPTI)

Each program exists twice, with its mistake and fixed, in the libraries
it makes sense in:

* `sync`: a scalar read every step (the host waits for the device to
  read one number; offload_core: `update_host` of a residual), fixed by
  reading it once at the end;
* `reupload`: invariant data uploaded again every step (offload_core: a
  region entered inside the loop), fixed by uploading it once;
* `pageable`: per-batch copies from pageable host memory, fixed by
  page-locked buffers (CuPy and PyTorch only: offload_core page-locks
  large copies itself, and the NumPy backend has no pinned memory);
* `tiny`: a loop of tiny kernels, host-bound, fixed by one launch that
  does the same arithmetic.

The mistaken program is recorded (offload_core's `Recorder`, or CUPTI
for `--lib cupy|torch`) with fingerprints, the runtime rules run on the
trace, and the predicted saving is the expected saving of the findings
of the program's rule (for `tiny`, which no rule flags, the replay of
fusing its loop's launches, what the verdict's host-bound time points
at). The truth is the mistaken program's time minus the fixed one's,
both unrecorded, the median over `--repeats` interleaved rounds, in the
same process (the prediction is the median too); `spread` is the
interquartile range of those differences, and a program whose spread
exceeds its saving cannot be checked on this machine (`noise`). Target:
within 30%. `recorded` is the same difference with both programs
recorded: the trace's own time base (for CUPTI, whose trace spans the
whole process, from the first record to the last), recording overhead included
(offload_core's recorder costs a few microseconds per event on the host,
which a host-bound program pays per launch and the replay counts as host
work). It runs in the
environment of `quiet_env.py` (one BLAS thread, freed memory kept) unless
`--default-allocator` is given. The replay sets the recording's own cost
aside when this machine is calibrated (`offload-prof calibrate`; the
header says which figures it used). A table on stdout; nothing is asserted.

`--truth fresh` (CuPy and PyTorch) times each unrecorded program once in
a fresh process, cold, as each recording runs it, instead of warm in this
one (a host-bound loop's time differs between processes by more than the
target; but a cold run includes loading the library's kernels, which on
the H100 buried CuPy's tiny loop: docs/profiler.md). `--save-traces DIR`
keeps the recorded traces.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import quiet_env  # noqa: E402

from offload_core import In, InOut, Out, get_backend, kernel, offload, region  # noqa: E402
from profiler.analysis.detectors import detect  # noqa: E402
from profiler.analysis.replay import Timeline, fuse, saving  # noqa: E402
from profiler.analysis.verdict import verdict  # noqa: E402
from profiler.model import Run  # noqa: E402
from profiler.trace.link import calibrated  # noqa: E402

TARGET = 0.30
ROOT = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------- offload_core kernels
@kernel
def relax(u: InOut, f: In, w: float) -> None:
    u += w * (f - u)


@kernel
def residual(out: Out, u: In, f: In) -> None:
    out[0] = ((f - u) ** 2).sum()


@kernel
def scale_into(y: Out, w: In, x: In) -> None:
    y[...] = w * x


@kernel
def axpy(y: InOut, x: In, a: float) -> None:
    y += a * x


# ----------------------------------------------------------------- the programs
def sync_offload(fixed: bool, n: int) -> None:
    u, f, res = np.zeros(n), np.ones(n), np.zeros(1)
    with region(u, In(f), Out(res)) as r:
        for _ in range(200):
            offload(relax, u, f, 0.01)
            offload(residual, res, u, f)
            if not fixed:
                r.update_host(res)  # the mistake: the host waits for the device to read one number
                if res[0] < 1e-300:
                    break
        r.update_host(res)


def sync_cupy(fixed: bool, n: int) -> None:
    import cupy as cp

    u, f = cp.zeros(n), cp.ones(n)
    for _ in range(200):
        u += 0.01 * (f - u)
        res = ((f - u) ** 2).sum()
        if not fixed and float(res) < 1e-300:  # the mistake: a scalar read every step
            break
    float(res)


def sync_torch(fixed: bool, n: int) -> None:
    import torch

    u, f = torch.zeros(n, device="cuda"), torch.ones(n, device="cuda")
    for _ in range(200):
        u += 0.01 * (f - u)
        res = ((f - u) ** 2).sum()
        if not fixed and res.item() < 1e-300:  # the mistake: .item() every step
            break
    res.item()


def reupload_offload(fixed: bool, n: int) -> None:
    w, x, y = np.linspace(0.5, 1.5, n), np.zeros(n), np.zeros(n)
    with region(x, Out(y)) as r:
        if fixed:
            with region(In(w)):
                for step in range(20):
                    x[:] = step
                    r.update_device(x)
                    offload(scale_into, y, w, x)
        else:
            for step in range(20):
                x[:] = step
                r.update_device(x)
                with region(In(w)):  # the mistake: w never changes, and goes up again every step
                    offload(scale_into, y, w, x)


def reupload_cupy(fixed: bool, n: int) -> None:
    import cupy as cp

    w = np.linspace(0.5, 1.5, n)
    x = cp.zeros(n)
    wd = cp.asarray(w) if fixed else None
    for step in range(20):
        x.fill(step)
        y = (wd if fixed else cp.asarray(w)) * x  # the mistake: the invariant upload inside the loop
    cp.cuda.Device().synchronize()
    del y


def reupload_torch(fixed: bool, n: int) -> None:
    import torch

    w = torch.linspace(0.5, 1.5, n)
    x = torch.zeros(n, device="cuda")
    wd = w.to("cuda") if fixed else None
    for step in range(20):
        x.fill_(step)
        y = (wd if fixed else w.to("cuda")) * x
    torch.cuda.synchronize()
    del y


def pageable_cupy(fixed: bool, n: int) -> None:
    import cupy as cp
    import cupyx

    batches = [cupyx.empty_pinned(n) if fixed else np.empty(n) for _ in range(4)]
    for i, b in enumerate(batches):
        b[...] = i
    d = cp.empty(n)
    for step in range(20):
        batch = batches[step % 4]
        batch[0] = step  # each batch is new data, as a loader's are (so no copy repeats the bytes of another)
        d.set(batch)  # mistake: from pageable memory; fixed: from pinned memory
        d *= 2.0
    cp.cuda.Device().synchronize()


def pageable_torch(fixed: bool, n: int) -> None:
    import torch

    # fixed: the buffers are allocated page-locked, as CuPy's twin's are (`tensor.pin_memory()` instead would copy
    # each batch once more on the host, a cost of that way of fixing it which the replay does not price)
    batches = [torch.full((n,), float(i), pin_memory=fixed) for i in range(4)]
    for step in range(20):
        batch = batches[step % 4]
        batch[0] = step  # each batch is new data, as a loader's are
        d = batch.to("cuda", non_blocking=fixed)
        d *= 2.0
    torch.cuda.synchronize()


def tiny_offload(fixed: bool, n: int) -> None:
    x, y = np.ones(64), np.zeros(64)
    with region(y, In(x)):
        if fixed:
            offload(axpy, y, x, n * 1e-3)  # the same arithmetic in one launch
        else:
            for _ in range(n):
                offload(axpy, y, x, 1e-3)


def tiny_cupy(fixed: bool, n: int) -> None:
    import cupy as cp

    x, y = cp.ones(64), cp.zeros(64)
    if fixed:
        y += (n * 1e-3) * x
    else:
        for _ in range(n):
            y += 1e-3 * x
    cp.cuda.Device().synchronize()


def tiny_torch(fixed: bool, n: int) -> None:
    import torch

    x, y = torch.ones(64, device="cuda"), torch.zeros(64, device="cuda")
    if fixed:
        y += (n * 1e-3) * x
    else:
        for _ in range(n):
            y += 1e-3 * x
    torch.cuda.synchronize()


@dataclass(frozen=True)
class Program:
    name: str
    mistake: str
    rules: tuple[str, ...]  # the findings whose saving is the prediction (empty: fuse the loop's launches)
    variants: dict[str, Callable[[bool, int], None]]
    size: dict[str, int]  # per library: elements (tiny: launches)


PROGRAMS = (
    Program("sync", "a scalar read every step", ("OFF506", "OFF507"),
            {"offload": sync_offload, "cupy": sync_cupy, "torch": sync_torch},
            {"offload": 1 << 16, "cupy": 1 << 20, "torch": 1 << 24}),
    Program("reupload", "invariant data uploaded every step", ("OFF502", "OFF501"),
            {"offload": reupload_offload, "cupy": reupload_cupy, "torch": reupload_torch},
            {"offload": 1 << 20, "cupy": 1 << 24, "torch": 1 << 24}),
    Program("pageable", "per-batch copies from pageable memory", ("OFF504",),
            {"cupy": pageable_cupy, "torch": pageable_torch}, {"cupy": 1 << 24, "torch": 1 << 24}),
    Program("tiny", "a host-bound loop of tiny kernels", (),
            {"offload": tiny_offload, "cupy": tiny_cupy, "torch": tiny_torch},
            {"offload": 2000, "cupy": 5000, "torch": 5000}),
)


def recorded(lib: str, program: Program, fixed: bool, n: int, keep: Path | None = None) -> Run:
    """The program recorded: in this process for offload_core, else in a fresh one under `--source cupti`.

    CUPTI allows one client per process, so each CUPTI recording is its
    own `offload-prof run` of this script with `--run-one`. With `keep`, the
    trace is also written there.
    """
    fn = program.variants[lib]
    if lib == "offload":
        from profiler.sources.recorder import Recorder

        with Recorder(fingerprints=True) as rec:
            fn(fixed, n)
        run = rec.run(link=calibrated(get_backend().name))
        if keep is not None:
            run.save(keep)
        return run
    with tempfile.TemporaryDirectory() as folder:
        trace = keep if keep is not None else Path(folder) / "t.json"
        command = [sys.executable, "-m", "profiler", "run", "--source", "cupti", "-o", str(trace), "--",
                   __file__, "--lib", lib, "--run-one", program.name] + (["--fixed"] if fixed else [])
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"savings_programs: recording {program.name} failed: {proc.stderr.strip()[-2000:]}")
        return Run.load(trace)


def fresh_ms(lib: str, program: Program, fixed: bool) -> float:
    """The program's time unrecorded, run once in a fresh process, as each CUPTI recording runs it (`--truth fresh`)."""
    command = [sys.executable, __file__, "--lib", lib, "--run-one", program.name, "--time"] + (
        ["--fixed"] if fixed else [])
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"savings_programs: running {program.name} failed: {proc.stderr.strip()[-2000:]}")
    return float(proc.stdout.split()[-1])


def recorded_ns(lib: str, run: Run) -> int:
    """The program's own time in its trace: the recorded wall (offload_core: only the program ran), or for a
    CUPTI recording, whose wall is the whole process (interpreter, imports, CUDA's start), the span from its
    first record's start to its last record's end."""
    if lib == "offload" or not run.records:
        return run.meta.wall_ns
    return max(r.end_ns for r in run.records) - min(r.start_ns for r in run.records)


def predicted(program: Program, run: Run) -> tuple[float, str]:
    """(predicted saving in ms, what it is) on the mistaken program's trace."""
    found = [f for f in detect(run) if f.code in program.rules]
    if program.rules:
        total = sum(f.expected_saving_ns or 0 for f in found)
        return total / 1e6, ", ".join(f"{f.code} {f.severity}" for f in found) or "no finding"
    c = run.columns
    launches = [int(i) for i in np.flatnonzero(c.kind_mask("launch"))]
    sites = c.site[launches]
    loop = int(np.bincount(sites[sites >= 0]).argmax()) if (sites >= 0).any() else -1
    chosen = [i for i, s in zip(launches, sites.tolist()) if s == loop]
    judged = verdict(run)
    kind = judged.kind if judged is not None else "?"
    return saving(Timeline.of(run), fuse(run, chosen)) / 1e6, f"fuse {len(chosen)} launches; {kind}"


def timed(fn: Callable[[bool, int], None], fixed: bool, n: int) -> float:
    start = time.perf_counter_ns()
    fn(fixed, n)
    return (time.perf_counter_ns() - start) / 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lib", choices=("offload", "cupy", "torch"), default="offload")
    p.add_argument("--programs", nargs="*", default=[pr.name for pr in PROGRAMS])
    p.add_argument("--repeats", type=int, default=7, help="rounds (medians; default: %(default)s)")
    p.add_argument("--default-allocator", action="store_true",
                   help="measure with the C library's default allocator (see benchmarks/quiet_env.py)")
    p.add_argument("--truth", choices=("here", "fresh"), default="here",
                   help="time the unrecorded programs in this process, warm (default), or, for --lib cupy|torch, "
                        "each once in a fresh process, as each recording runs it")
    p.add_argument("--save-traces", metavar="DIR", type=Path,
                   help="keep the recorded traces there (LIB-PROGRAM-naive|fixed-ROUND.json)")
    p.add_argument("--run-one", help=argparse.SUPPRESS)  # a child to record: run this program once and exit
    p.add_argument("--fixed", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--time", action="store_true", help=argparse.SUPPRESS)  # with --run-one: print its time in ms
    args = p.parse_args(argv)
    if args.run_one:
        chosen = next(pr for pr in PROGRAMS if pr.name == args.run_one)
        ms = timed(chosen.variants[args.lib], args.fixed, chosen.size[args.lib])
        if args.time:
            print(f"{ms:.4f}")
        return 0
    if args.lib != "offload" and importlib.util.find_spec(args.lib) is None:
        print(f"savings_programs: --lib {args.lib} needs {args.lib} installed (and a GPU, and the cupti extra)",
              file=sys.stderr)
        return 2
    quiet_env.ensure(pooled=not args.default_allocator)
    if args.save_traces is not None:
        args.save_traces.mkdir(parents=True, exist_ok=True)
    where = get_backend().name if args.lib == "offload" else f"{args.lib} via CUPTI"
    truth = ", truth timed once per fresh process" if args.truth == "fresh" and args.lib != "offload" else ""
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, NumPy {np.__version__}, "
          f"{where}, {platform.machine()}: medians of {args.repeats}{truth}; {quiet_env.describe()}")
    head = f"{'program':9s} {'mistake ms':>10s} {'fixed ms':>9s} {'measured':>9s} {'spread':>7s} {'recorded':>9s} " \
           f"{'predicted':>9s} {'error':>7s}  {'target':6s}  from"
    link = calibrated("cupy" if args.lib != "offload" else get_backend().name)
    cupti = args.lib != "offload"
    per_launch = None if link is None else link.cupti_launch_us if cupti else link.recorded_launch_us
    per_event = None if link is None else link.cupti_event_us if cupti else link.recorded_event_us
    print("# the recording's own cost set aside by the replay: " + (
        "none (no calibration: run `offload-prof calibrate` first)" if link is None or per_launch is None else
        f"{per_launch:.2f} µs per launch" + ("" if per_event is None else f", {per_event:.2f} µs per other event")
        + f" ({link.name}: {link.source})"))
    print(head)
    print("-" * len(head))
    for program in PROGRAMS:
        if program.name not in args.programs:
            continue
        fn = program.variants.get(args.lib)
        if fn is None:
            print(f"{program.name:9s} (not applicable with {args.lib})")
            continue
        n = program.size[args.lib]
        fn(False, n), fn(True, n)  # warm-up: compilation, memory pools
        fresh = args.truth == "fresh" and args.lib != "offload"
        mistakes, fixes, predictions, recorded_fixes = [], [], [], []
        for r in range(args.repeats):
            keep = [None if args.save_traces is None else
                    args.save_traces / f"{args.lib}-{program.name}-{variant}-{r}.json" for variant in ("naive", "fixed")]
            run = recorded(args.lib, program, False, n, keep[0])
            predictions.append((recorded_ns(args.lib, run), predicted(program, run)))
            recorded_fixes.append(recorded_ns(args.lib, recorded(args.lib, program, True, n, keep[1])))
            mistakes.append(fresh_ms(args.lib, program, False) if fresh else timed(fn, False, n))
            fixes.append(fresh_ms(args.lib, program, True) if fresh else timed(fn, True, n))
        pred = statistics.median(saved for _, (saved, _) in predictions)
        source = predictions[0][1][1]
        differences = [m - f for m, f in zip(mistakes, fixes)]
        truth = statistics.median(differences)
        quartiles = statistics.quantiles(differences, n=4) if len(differences) > 1 else [truth, truth, truth]
        spread = quartiles[2] - quartiles[0]
        in_trace = statistics.median(w - f for (w, _), f in zip(predictions, recorded_fixes)) / 1e6
        error = pred / truth - 1 if truth > 0 else float("nan")
        ok = "noise" if spread > abs(truth) else "ok" if abs(error) <= TARGET else "MISSED"
        print(f"{program.name:9s} {statistics.median(mistakes):10.2f} {statistics.median(fixes):9.2f} {truth:9.2f} "
              f"{spread:7.2f} {in_trace:9.2f} {pred:9.2f} {100 * error:+6.1f}%  {ok:6s}  {source}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
