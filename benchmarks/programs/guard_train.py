"""A PyTorch training loop whose only per-step transfer is the loss read back with `.item()`, for the transfer guard.

    python benchmarks/programs/guard_train.py [--steps 300] [--warmup 20] [--guard none|scalars|log|raise]

The data set and the model are moved to the GPU once, before the loop, so
that a step is all device work (an MLP of eight Linear+ReLU layers, Adam)
except for `total += loss.item()`, the per-step D2H copy and sync that
loss logging makes and that the guard is meant to find. Run under
`OFFLOAD_GUARD=raise OFFLOAD_GUARD_KINDS=d2h offload-prof run`, or with
`--guard` to put the timed loop inside `profiler.guard.no_transfers`:

* `none`: no guard (the baseline),
* `scalars`: a guard that forbids copies and syncs but lets scalar reads
  pass (`allow_scalars=True`): CUPTI listens, nothing is reported,
* `log`: a guard that collects every `.item()` (one violation per step),
* `raise`: a guard that raises at the `.item()` line of the first step.

Prints one JSON line: {"program", "guard", "steps", "loop_s", "enter_s", "violations", "loss"}:
`loop_s` the timed steps inside the scope, `enter_s` the scope's entry
(its first entry in a process starts CUPTI: a one-time cost). The loop
ends with `torch.cuda.synchronize()` inside the scope, so a guard with
`syncs=True` catches that one sync even when it lets the `.item()` reads
pass.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import nullcontext
from typing import Any


def build(width: int = 256, batch: int = 64, batches: int = 64) -> tuple[Any, Any, Any, Any, Any]:
    """Model, optimiser, loss and the data set, all on the GPU."""
    import torch

    torch.manual_seed(0)
    dev = torch.device("cuda")
    layers: list[torch.nn.Module] = []
    for _ in range(8):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).to(dev)
    inputs = torch.randn(batches, batch, width).to(dev)
    targets = torch.randn(batches, batch, width).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    torch.cuda.synchronize()
    return model, opt, torch.nn.MSELoss(), inputs, targets


def train(steps: int, parts: tuple[Any, Any, Any, Any, Any] | None = None) -> float:
    """`steps` training steps; returns the mean loss (read back once per step)."""
    model, opt, loss_fn, inputs, targets = parts if parts is not None else build()
    total = 0.0
    for i in range(steps):
        x, y = inputs[i % len(inputs)], targets[i % len(targets)]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()  # site: item
    return total / max(steps, 1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--guard", choices=("none", "scalars", "log", "raise"), default="none")
    args = p.parse_args()
    try:
        import torch
    except ImportError:
        print("guard_train: needs PyTorch", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("guard_train: needs a CUDA GPU", file=sys.stderr)
        return 2
    parts = build()
    train(args.warmup, parts)
    torch.cuda.synchronize()
    scope: Any = nullcontext()
    if args.guard != "none":
        from profiler import guard

        scope = guard.no_transfers(syncs=True, mode="raise" if args.guard == "raise" else "log",
                                   allow_scalars=args.guard == "scalars", source="cupti")
        scope.summary = False  # the count is printed below, not logged
    # the scope's first entry starts CUPTI in this process (a one-time cost, timed apart from the loop)
    entered = time.perf_counter()
    with scope:
        start = time.perf_counter()
        loss = train(args.steps, parts)
        torch.cuda.synchronize()
        loop_s = time.perf_counter() - start
    enter_s = start - entered
    found = len(scope.violations) if args.guard != "none" else 0
    print(json.dumps({"program": "guard_train", "guard": args.guard, "steps": args.steps,
                      "loop_s": round(loop_s, 6), "enter_s": round(enter_s, 6), "violations": found,
                      "loss": round(loss, 6)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
