"""A launch-heavy PyTorch training loop on random data, for measuring what recording costs (benchmarks/cupti_overhead.py).

    python benchmarks/programs/torch_train.py [--model mlp|lstm] [--steps 1500] [--batch 64] [--width 256]

`mlp`: eight Linear+ReLU layers of `width`; `lstm`: an `nn.LSTMCell` of
`width` unrolled over 35 time steps (PyTorch's word_language_model runs
the same shape of work through cuDNN; unrolled, every gate is a small
kernel). Either way a step is a few hundred kernels of a few microseconds,
so the host's launch rate bounds the loop, as it did on the program of
issue 13. Each step copies its batch from pageable host memory (what a
simple data loader does), trains with Adam, and reads the loss back with
`.item()` (a sync per step, as loss logging does).

Prints one JSON line: {"program", "model", "steps", "loop_s", "loss"}; `loop_s`
is the timed steps only (after 20 warm-up steps), between device syncs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("mlp", "lstm"), default="mlp")
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--warmup", type=int, default=20)
    args = p.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_train: needs PyTorch", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_train: needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    dev = torch.device("cuda")
    width, batch, steps = args.width, args.batch, args.steps
    seq = 35 if args.model == "lstm" else 1
    n = 64 * batch
    inputs = torch.randn(n, seq, width)  # pageable host memory, as a plain data pipeline has it
    targets = torch.randn(n, width)
    if args.model == "mlp":
        layers: list[torch.nn.Module] = []
        for _ in range(8):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        model: torch.nn.Module = torch.nn.Sequential(*layers[:-1]).to(dev)

        def forward(x: torch.Tensor) -> torch.Tensor:
            return model(x[:, 0])
    else:
        cell = torch.nn.LSTMCell(width, width).to(dev)
        head = torch.nn.Linear(width, width).to(dev)
        model = torch.nn.ModuleList([cell, head])

        def forward(x: torch.Tensor) -> torch.Tensor:
            h = torch.zeros(x.shape[0], width, device=dev)
            c = torch.zeros_like(h)
            for t in range(x.shape[1]):
                h, c = cell(x[:, t], (h, c))
            return head(h)

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.MSELoss()
    total = 0.0

    def step(i: int) -> None:
        nonlocal total
        lo = (i * batch) % n
        x = inputs[lo:lo + batch].to(dev)
        y = targets[lo:lo + batch].to(dev)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        total += loss.item()

    for i in range(args.warmup):
        step(i)
    torch.cuda.synchronize()
    total = 0.0
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - start
    print(json.dumps({"program": "torch_train", "model": args.model, "steps": steps, "loop_s": round(loop_s, 6),
                      "loss": round(total / max(steps, 1), 6)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
