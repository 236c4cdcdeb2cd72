"""What recording costs each rank of a distributed job: a torchrun job timed unrecorded and under `offload-prof run`.

Run: python benchmarks/distributed_overhead.py [--ranks 2] [--steps 50] [--size 2048] [--repeats 3]
                                               [--source offload|cupti] [--backend gloo|nccl]

The job is a training-like loop (`PROGRAM` below): every step each rank
multiplies two `--size` square matrices on its device (CUDA where PyTorch
sees a GPU, else the CPU), all-reduces a gradient-sized tensor (4 MiB, or
the matrix's size where that is smaller) and a
one-element loss (the logging collective OFF509 names), and reads the
loss every tenth step. Each rank times its own loop (set-up, the process
group's start and the first step outside the clock) and prints it; the
job is run `--repeats` times unrecorded (`torchrun` alone) and as many
times recorded (`offload-prof run [--source cupti] -m torch.distributed.run`),
alternating, and the table gives each rank's fastest loop both ways and
the overhead. With `--backend gloo` on one GPU all ranks share it (the
H200 machine's case); `--backend nccl` needs one GPU per rank. A table on
stdout; nothing is asserted. Needs PyTorch.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAM = '''
import os
import sys
import time

import torch
import torch.distributed as dist

steps, size, backend = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
local = int(os.environ["LOCAL_RANK"])
cuda = torch.cuda.is_available()
if cuda:
    torch.cuda.set_device(local if backend == "nccl" else 0)
device = "cuda" if cuda else "cpu"
dist.init_process_group(backend)
a = torch.rand(size, size, device=device)
grad = torch.zeros(min(1 << 20, size * size), device=device)  # at most 4 MiB, at most the matrix
loss = torch.zeros((), device=device)


def step(n):
    global a
    b = a @ a / size
    grad.add_(b.flatten()[: grad.numel()])
    dist.all_reduce(grad)
    loss.copy_(b.mean())
    dist.all_reduce(loss)
    if n % 10 == 0:
        loss.item()


step(0)
if cuda:
    torch.cuda.synchronize()
start = time.perf_counter()
for n in range(1, steps + 1):
    step(n)
if cuda:
    torch.cuda.synchronize()
print(f"RANK {dist.get_rank()} LOOP_S {time.perf_counter() - start:.6f}", flush=True)
dist.destroy_process_group()
'''

LINE = re.compile(r"RANK (\d+) LOOP_S ([0-9.]+)")


def loop_times(cmd: list[str], cwd: Path) -> dict[int, float]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return {int(r): float(t) for r, t in LINE.findall(proc.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--source", choices=("offload", "cupti"), default="cupti")
    ap.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dist-overhead-") as tmp:
        folder = Path(tmp)
        program = folder / "job.py"
        program.write_text(PROGRAM)
        launch = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(args.ranks),
                  str(program), str(args.steps), str(args.size), args.backend]
        plain = [sys.executable, *launch]
        recorded = [sys.executable, "-m", "profiler", "run", "--source", args.source, "-o", "job.json", *launch]
        best: dict[str, dict[int, float]] = {"off": {}, "recorded": {}}
        for _ in range(args.repeats):
            for name, cmd in (("off", plain), ("recorded", recorded)):
                for rank, t in loop_times(cmd, folder).items():
                    best[name][rank] = min(best[name].get(rank, t), t)
        import torch

        where = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
        grad_mib = min(1 << 20, args.size ** 2) * 4 / 2 ** 20
        print(f"# {args.ranks} ranks, {args.backend}, {where}, --source {args.source}, {args.steps} steps of "
              f"{args.size}^2 matmul + {grad_mib:g} MiB and 4 B all-reduces, fastest of {args.repeats}; "
              f"PyTorch {torch.__version__}, Python {sys.version.split()[0]}")
        print(f"{'rank':>4}  {'off ms':>9}  {'recorded ms':>11}  {'overhead':>8}  {'per step µs':>11}")
        for rank in sorted(best["off"]):
            off, on = best["off"][rank] * 1e3, best["recorded"].get(rank, float("nan")) * 1e3
            print(f"{rank:>4}  {off:>9.2f}  {on:>11.2f}  {100 * (on / off - 1):>+7.1f}%  "
                  f"{(on - off) * 1e3 / args.steps:>11.1f}")


if __name__ == "__main__":
    main()
