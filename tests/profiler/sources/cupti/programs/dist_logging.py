"""Two ranks sharing one GPU (gloo, CUDA tensors): the loss all-reduced every step to print it, or once at the end.

`dist_logging.py logging` all-reduces a one-element CUDA tensor on every
step and reads it (OFF509); `dist_logging.py fixed` adds the loss up on
the device and all-reduces the total once.
"""

import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
torch.cuda.set_device(0)
logging = sys.argv[1] == "logging"
w = torch.linspace(0, 1, 1 << 16, device="cuda")
total = torch.zeros((), device="cuda")
for step in range(8):
    loss = (w * w).sum() / (step + 1)
    if logging:
        dist.all_reduce(loss)  # site: per-step
        print(f"step {step}: {loss.item():.4f}")
    else:
        total += loss.detach()
if not logging:
    dist.all_reduce(total)  # site: once
    print(f"mean {total.item() / 8:.4f}")
dist.destroy_process_group()
