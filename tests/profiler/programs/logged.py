"""A rank that all-reduces a one-element metric every step (OFF509), with torch.distributed's functions.

Run under the real PyTorch, or under `standin_torch` where PyTorch is
not installed; the collectives are on the lines marked below, so the
trace's sites and bytes can be checked exactly.
"""

import numpy as np
import torch
import torch.distributed as dist

from offload_core import In, InOut, kernel, offload, region


@kernel
def step(u: InOut, w: In) -> None:
    u += w


dist.init_process_group("gloo")
u = np.zeros(4096)
w = np.ones(4096)
metric = np.zeros(1, dtype=np.float32)
with region(u, w):
    for i in range(6):
        offload(step, u, w)
        dist.all_reduce(torch.from_numpy(metric))  # the metric line
parts = [torch.from_numpy(np.zeros(4096)) for _ in range(2)]
dist.all_gather(parts, torch.from_numpy(w))  # the gather line
dist.barrier()
dist.destroy_process_group()
