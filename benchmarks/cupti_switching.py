"""Whether switching the launch callbacks leaves CUPTI hearing a busy loop's calls, by where the switch is made.

Launch call sites are sampled by turning the launch callbacks on and off
(`profiler.sources.cupti.sampling`). Made from a thread of the
profiler's own while the program's thread was making CUDA calls, the
switch made CUPTI deaf to that thread for the rest of the process: no
callback, no correlation id of its own for any call (H200, CUDA 13.2,
cupti-python 13.0.1). This script shows it, and that the shipped way
does not: a loop of a cuDNN LSTM step and a `.item()` (400 steps, about
9 launches and one D2H copy and sync each) is recorded `--recordings`
times in one process, each `--processes` times in a fresh process, with
the callbacks switched after every launch and opened again 2 ms later:

  callback  the shipped sampler: shut at the exit of the launch that fills
            the window, opened at the next copy, memset or sync's entry,
            both on the program's thread
  thread    the same switch made by a thread of its own every 2 ms (how
            the sampler worked until 2026-12-04)
  between   the program's thread switching between steps, outside any
            CUDA call (a control)

Prints, per mode and process, each recording's `.item()` copies whose
call CUPTI called back for, launches heard, and the kernels' distinct
correlation ids (a deaf thread's kernels all carry one). Needs PyTorch,
a GPU and cupti-python; nothing is asserted (the GPU test
`test_switching_launch_callbacks_often_leaves_cupti_hearing` asserts
the shipped way).

    python benchmarks/cupti_switching.py [--modes callback,thread,between] [--processes 2] [--recordings 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = 400
PAUSE_S = 0.002
MODES = ("callback", "thread", "between")


def child(mode: str, recordings: int) -> None:
    """Record the loop `recordings` times with the launch callbacks switched the `mode` way; one line each."""
    sys.path.insert(0, str(ROOT))
    import torch

    from profiler.sources.cupti.probe import require
    from profiler.sources.cupti.tracer import Tracer

    cupti, _ = require()
    device = torch.device("cuda")
    rnn = torch.nn.LSTM(64, 64, 2, dropout=0.2).to(device)
    decoder = torch.nn.Linear(64, 100).to(device)
    x = torch.randn(35, 8, 64, device=device)
    targets = torch.randint(0, 100, (280,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()
    rnn.eval()

    def loop(between=None) -> None:  # type: ignore[no-untyped-def]
        with torch.no_grad():
            hidden = None
            for i in range(STEPS):
                out, hidden = rnn(x, hidden)
                loss_fn(decoder(out).view(-1, 100), targets).item()
                if between is not None:
                    between(i)
        torch.cuda.synchronize()

    loop()
    for n in range(recordings):
        # the shipped sampler switches after every launch; the other modes keep it from switching by itself
        window = 1 if mode == "callback" else 10 ** 9
        tracer = Tracer(cupti, fingerprints=False, launch_window=window, launch_pause_s=PAUSE_S).start()
        sampler = tracer.sampler
        assert sampler is not None
        switch, switches, stop = sampler.switch, [0], threading.Event()
        between = None
        if mode == "thread":
            def run() -> None:
                on = True
                while not stop.wait(PAUSE_S):
                    on = not on
                    switch(on)
                    switches[0] += 1
            worker = threading.Thread(target=run, daemon=True)
            worker.start()
        elif mode == "between":
            def between(i: int) -> None:
                switch(i % 2 == 1)
                switches[0] += 1
        loop(between)
        stop.set()
        if mode == "thread":
            worker.join()
        capture = tracer.stop()
        d2h = [c for c in capture.copies if c.direction == "d2h"]
        heard = sum(1 for c in d2h if c.correlation in capture.calls or c.runtime_correlation in capture.calls)
        launches = sum(1 for c in capture.calls.values() if c.role == "launch")
        distinct = len({k.correlation for k in capture.kernels})
        switched = 2 * (sampler.windows - 1) + (not sampler.open) if mode == "callback" else switches[0]
        print(f"{n + 1} {heard}/{len(d2h)} {launches} {len(capture.kernels)} {distinct} {switched}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, of: " + ", ".join(MODES))
    ap.add_argument("--processes", type=int, default=2, help="fresh processes per mode (default 2)")
    ap.add_argument("--recordings", type=int, default=3, help="recordings per process (default 3)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.recordings)
        return
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(MODES)}")
    print(f"# {time.strftime('%Y-%m-%d')}, Python {sys.version.split()[0]}; {STEPS} steps per recording, "
          f"switches {PAUSE_S * 1e3:g} ms apart")
    print(f"{'mode':9s} {'process':>7s} {'rec':>3s} {'d2h heard':>10s} {'launches heard':>15s} {'kernels':>8s} "
          f"{'distinct corr':>13s} {'switches':>8s}")
    for mode in modes:
        for p in range(args.processes):
            print(f"cupti_switching: {mode}, process {p + 1}/{args.processes} ...", file=sys.stderr, flush=True)
            proc = subprocess.run([sys.executable, __file__, "--child", mode, "--recordings", str(args.recordings)],
                                  capture_output=True, text=True, timeout=600)
            rows = [line.split() for line in proc.stdout.splitlines() if line[:1].isdigit()]
            if proc.returncode != 0 or not rows:
                print(f"{mode:9s} {p + 1:7d} failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
                continue
            for n, heard, launches, kernels, distinct, switched in rows:
                print(f"{mode:9s} {p + 1:7d} {n:>3s} {heard:>10s} {launches:>15s} {kernels:>8s} {distinct:>13s} "
                      f"{switched:>8s}")


if __name__ == "__main__":
    main()
