"""Where the CUPTI source's overhead goes: the recording taken apart, one mechanism at a time.

Run on an NVIDIA GPU with cupti-python:
    python benchmarks/cupti_breakdown.py [--copies 10000] [--repeats 3]

`benchmarks/cupti_overhead.py` times the whole `CuptiRecorder`; this
script times the same two small-copy loops of plain CuPy (`cp.asarray`
of a 1 KiB array, `d.get()` of one) under each piece of it alone:

* `off`: untraced;
* `act:memcpy`, `act:all`: activity records only (MEMCPY; MEMCPY,
  CONCURRENT_KERNEL, SYNCHRONIZATION, MEMSET), no API callbacks;
* `cb:noop-py`: API callbacks for the source's table through
  cupti-python's `subscribe`, into a function that returns at once (what
  cupti-python's trampoline costs; the source no longer uses it);
* `cb:noop`: the same through ctypes (`profiler.sources.cupti.native`), as the
  source subscribes;
* `cb:tracer`: the same callbacks into the tracer's own callback (frame
  walk, parameter block), no activity records;
* `recorder`: the whole `CuptiRecorder(fingerprints=False)`, start and stop.

It also counts the callbacks per copy, by API name, so that a surprising
cost can be traced to the calls that cause it. A table on stdout;
nothing is asserted.

With `--program`, the same pieces are timed on whole programs instead of
the copy loops (each program and piece in a fresh process; the program's
own `loop_s`), with more pieces that matter there: `act:kernel`
(CONCURRENT_KERNEL records alone), `cb:noop-nolaunch` (the table without
the launch calls), `cb:tracer-nolaunch` and `cb:tracer-copysync` (the tracer's callback on
that table, and on copies and syncs only: the difference is what memsets'
callbacks cost), `act:nosync` (`act:all` without SYNCHRONIZATION
records: what CUPTI's records of host syncs and stream waits on events
cost), and the recorder with launch sites `none` and `all` besides the
default `sampled`:

    python benchmarks/cupti_breakdown.py --program "torch_train.py --model mlp --steps 600" \
        --program "cupy_cg.py --iters 2000" [--repeats 2] [--configs act:kernel,act:nosync,act:all]

A program outside `benchmarks/programs` is named by its absolute path;
one that does not print `{"loop_s": ...}` is timed with `--own-time
REGEX` (the first group of the last match in its output, in seconds),
or by its whole run in the process when neither is given.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import runpy
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from profiler.sources.cupti import CuptiRecorder  # noqa: E402
from profiler.sources.cupti.apis import COPY, LAUNCH, SYNC  # noqa: E402
from profiler.sources.cupti.callbacks import resolve_ids  # noqa: E402
from profiler.sources.cupti.native import Native  # noqa: E402
from profiler.sources.cupti.probe import import_cupti  # noqa: E402
from profiler.sources.cupti.tracer import Tracer  # noqa: E402


class Config:
    """Something switched on around a timed loop: `on()` before, `off()` after."""

    def __init__(self, c: Any, name: str) -> None:
        self.c, self.name = c, name
        self.native = Native.load(c)
        self.pointer: Any = None
        self.sub: Any = None
        self.kinds: list[Any] = []
        self.recorder: CuptiRecorder | None = None
        self.fn: Callable[..., None] | None = None
        self.counts: collections.Counter[tuple[int, int]] = collections.Counter()
        #: (launch callbacks heard, windows) of a sampled recorder, once it stopped
        self.sampled: tuple[int, int] | None = None

    def on(self) -> None:
        c, k = self.c, self.c.ActivityKind
        if self.name.startswith("act:"):
            kinds = {"act:memcpy": [k.MEMCPY], "act:kernel": [k.CONCURRENT_KERNEL],
                     "act:nosync": [k.MEMCPY, k.CONCURRENT_KERNEL, k.MEMSET]}.get(
                self.name, [k.MEMCPY, k.CONCURRENT_KERNEL, k.SYNCHRONIZATION, k.MEMSET])
            for kind in kinds:
                c.activity_enable(kind)
                self.kinds.append(kind)
        elif self.name.startswith("cb:"):
            ids = resolve_ids(c)
            if self.name in ("cb:noop-nolaunch", "cb:tracer-nolaunch"):
                ids = {key: api for key, api in ids.items() if api.role != LAUNCH}
            elif self.name == "cb:tracer-copysync":
                ids = {key: api for key, api in ids.items() if api.role in (COPY, SYNC)}
            if self.name in ("cb:noop", "cb:noop-py", "cb:noop-nolaunch"):
                def fn(userdata: Any, domain: int, cbid: int, cbdata: Any) -> None:
                    return None
            elif self.name == "cb:count":
                counts = self.counts

                def fn(userdata: Any, domain: int, cbid: int, cbdata: Any) -> None:
                    counts[(domain, cbid)] += 1
            else:
                fn = Tracer(c, fingerprints=False)._callback(ids)
            self.fn = fn
            if self.name == "cb:noop-py":
                self.sub = c.subscribe(fn, None)
                for domain, cbid in ids:
                    c.enable_callback(1, self.sub, domain, cbid)
            else:
                self.sub, self.pointer = self.native.subscribe(fn)
                for domain, cbid in ids:
                    self.native.enable_callback(self.sub, domain, cbid)
        elif self.name.startswith("recorder"):
            sites = self.name.partition(":")[2] or "sampled"
            self.recorder = CuptiRecorder(fingerprints=False, launch_sites=sites).start()  # type: ignore[arg-type]

    def off(self) -> None:
        c = self.c
        for kind in self.kinds:
            c.activity_disable(kind)
        if self.kinds:
            c.activity_flush_all(1)
        self.kinds.clear()
        if self.sub is not None:
            if self.name == "cb:noop-py":
                c.unsubscribe(self.sub)
            else:
                self.native.unsubscribe(self.sub)
            self.sub = None
        if self.recorder is not None:
            sampler = self.recorder._tracer.sampler if self.recorder._tracer is not None else None
            self.recorder.stop()
            self.recorder = None
            if sampler is not None:
                self.sampled = (sampler.heard, sampler.windows)


PROGRAM_CONFIGS = ["off", "act:kernel", "act:all", "cb:noop-nolaunch", "cb:noop", "cb:tracer", "recorder:none",
                   "recorder", "recorder:all"]
#: every piece `--configs` may name for programs
KNOWN_CONFIGS = [*PROGRAM_CONFIGS, "act:nosync", "act:memcpy", "cb:noop-py", "cb:tracer-nolaunch", "cb:tracer-copysync"]
PROGRAMS = Path(__file__).resolve().parent / "programs"


def inner(name: str, argv: list[str]) -> int:
    """Run one program (argv[0] under benchmarks/programs) in this process with piece `name` on."""
    c, why = import_cupti()
    if c is None:
        print(f"cupti_breakdown: {why}", file=sys.stderr)
        return 2
    CuptiRecorder(fingerprints=False).start().stop()  # registers the activity buffers
    cfg = Config(c, name)
    sys.argv = [str(PROGRAMS / argv[0]), *argv[1:]]
    sys.path.insert(0, str(Path(sys.argv[0]).parent))  # as `python SCRIPT` would: the script's own modules import
    if name != "off":
        cfg.on()
    began = time.perf_counter()
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    finally:
        if name != "off":
            cfg.off()
    print(json.dumps({"run_s": time.perf_counter() - began}))
    if cfg.sampled is not None:
        print(json.dumps({"sampled": cfg.sampled}))
    if name == "cb:count":
        calls = ", ".join(f"{c.get_callback_name(dom, cbid)} {cnt}" for (dom, cbid), cnt in cfg.counts.most_common(12))
        print(json.dumps({"callbacks": calls}))
    return 0


def loop_time(stdout: str, own_time: str | None) -> float | None:
    """The program's `loop_s`, else its own time by `own_time`, else its run in the process (`run_s`)."""
    lines = [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]
    loop = next((x["loop_s"] for x in lines if "loop_s" in x), None)
    if loop is None and own_time:
        found = re.findall(own_time, stdout)
        if found:
            last = found[-1]
            return float(last[0] if isinstance(last, tuple) else last)
    if loop is None:
        loop = next((x["run_s"] for x in lines if "run_s" in x), None)
    return loop


def programs(specs: list[str], repeats: int, configs: list[str], own_time: str | None) -> int:
    """Each program under each piece in fresh processes; the program's own loop time, fastest of `repeats`."""
    print(f"# {time.strftime('%Y-%m-%d')} programs in fresh processes, fastest of {repeats}; "
          "seconds of the program's own loop (off: absolute, the rest: added)")
    print(f"{'program':<34} " + " ".join(f"{k:>16}" for k in configs))
    for spec in specs:
        argv = shlex.split(spec)
        best: dict[str, float] = {}
        sampled: list[str] = []
        for round_ in range(repeats):  # the pieces interleaved, so that a slow spell of the machine hits them all
            for name in configs:
                print(f"cupti_breakdown: {argv[0]}, round {round_ + 1}/{repeats}, {name} ...", file=sys.stderr,
                      flush=True)
                out = subprocess.run([sys.executable, __file__, "--inner", name, *argv], capture_output=True,
                                     text=True, check=False)
                loop = loop_time(out.stdout, own_time)
                if out.returncode != 0 or loop is None:
                    print(f"{spec}: {name} failed ({out.returncode}): {out.stderr.strip()[-400:]}", file=sys.stderr)
                    break
                best[name] = min(best.get(name, loop), loop)
                for x in out.stdout.splitlines():
                    if x.startswith('{"sampled"'):
                        heard, windows = json.loads(x)["sampled"]
                        sampled.append(f"{name} round {round_ + 1}: {heard:,} in {windows:,} windows")
        off = best.get("off")
        cells = [f"{off:>16.3f}" if off is not None else f"{'-':>16}"]
        for name in configs[1:]:
            v = best.get(name)
            cells.append(f"{'-':>16}" if v is None or off is None else f"{v - off:>+9.3f} {v / off:5.2f}x")
        print(f"{spec:<34} " + " ".join(cells))
        if sampled:
            print(f"{'':<34} launch callbacks heard while sampling: {'; '.join(sampled)}")
        out = subprocess.run([sys.executable, __file__, "--inner", "cb:count", *argv], capture_output=True, text=True,
                             check=False)
        counted = [json.loads(x)["callbacks"] for x in out.stdout.splitlines() if x.startswith('{"callbacks"')]
        print(f"{'':<34} callbacks (enter and exit) in the whole program: {counted[0] if counted else out.stderr[-300:]}")
    return 0


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--inner":
        return inner(sys.argv[2], sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10_000, help="copies per loop (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds; the fastest is shown (default: %(default)s)")
    parser.add_argument("--program", action="append", default=[], metavar="'SCRIPT ARGS'",
                        help="time a program under benchmarks/programs instead of the copy loops (repeatable)")
    parser.add_argument("--configs", help="comma-separated pieces to time on programs (default: "
                        + ",".join(PROGRAM_CONFIGS[1:]) + "; `off` is always timed)")
    parser.add_argument("--own-time", metavar="REGEX",
                        help="a program's own time in its output, for programs that print no loop_s")
    args = parser.parse_args()
    if args.program:
        configs = PROGRAM_CONFIGS if not args.configs else ["off", *[c for c in args.configs.split(",") if c != "off"]]
        unknown = [c for c in configs if c not in KNOWN_CONFIGS]
        if unknown:
            parser.error(f"unknown --configs {', '.join(unknown)}; known: {', '.join(KNOWN_CONFIGS)}")
        return programs(args.program, args.repeats, configs, args.own_time)
    c, why = import_cupti()
    if c is None:
        print(f"cupti_breakdown: {why}", file=sys.stderr)
        return 2
    import cupy as cp

    x = np.arange(256, dtype=np.float32)
    d = cp.asarray(x)
    sync = cp.cuda.Device().synchronize
    n = args.copies

    def small_h2d() -> None:
        for _ in range(n):
            cp.asarray(x)
        sync()

    def small_d2h() -> None:
        for _ in range(n):
            d.get()
        sync()

    # the activity buffers must be registered before any activity kind is enabled
    CuptiRecorder(fingerprints=False).start().stop()
    names = ["off", "act:memcpy", "act:all", "cb:noop-py", "cb:noop", "cb:tracer", "recorder"]
    print(f"# {time.strftime('%Y-%m-%d')} CuPy {cp.__version__}, {n} copies per loop, fastest of {args.repeats}")
    print(f"{'loop':<10} " + " ".join(f"{k:>11}" for k in names) + "   (µs per copy; off: absolute)")
    for label, loop in (("small H2D", small_h2d), ("small D2H", small_d2h)):
        best = {}
        for name in names:
            cfg = Config(c, name)
            times, edges = [], []
            for _ in range(args.repeats + 1):  # the first is a warm-up
                t_on = time.perf_counter_ns()
                cfg.on()
                t0 = time.perf_counter_ns()
                loop()
                t1 = time.perf_counter_ns()
                cfg.off()
                times.append(t1 - t0)
                edges.append((t0 - t_on, time.perf_counter_ns() - t1))
            best[name] = min(times[1:]) / n / 1e3
            if name == "recorder":
                start_ms = min(e[0] for e in edges[1:]) / 1e6
                stop_ms = min(e[1] for e in edges[1:]) / 1e6
        cells = [f"{best['off']:>11.2f}"] + [f"{best[k] - best['off']:>+11.2f}" for k in names[1:]]
        print(f"{label:<10} " + " ".join(cells) + f"   recorder start {start_ms:.1f} ms, stop {stop_ms:.1f} ms")
        cfg = Config(c, "cb:count")
        cfg.on()
        loop()
        cfg.off()
        calls = ", ".join(f"{c.get_callback_name(dom, cbid)} {cnt / n:.2f}"
                          for (dom, cbid), cnt in cfg.counts.most_common())
        print(f"{'':<10} callbacks per copy (enter and exit): {calls or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
