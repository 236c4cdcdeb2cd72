"""Two ranks sharing one GPU (gloo): rank 0 hands rank 1 a device tensor through both hosts, or, fixed, only a sum.

`dist_staged.py staged` copies rank 0's tensor back (`.cpu()`), sends it
with gloo, and rank 1 uploads it again (`.cuda()`): OFF508. `dist_staged.py
fixed` keeps each rank's tensor on its device and all-reduces a summary.
Copying lines end with `# site: NAME` markers the GPU tests look up.
"""

import sys

import torch
import torch.distributed as dist

N = 1 << 20  # 4 MiB of float32

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.cuda.set_device(0)
staged = sys.argv[1] == "staged"
x = torch.arange(N, dtype=torch.float32, device="cuda") * (rank + 1)
for step in range(4):
    x = x * 0.5
    if staged:
        if rank == 0:
            host = x.cpu()  # site: staged-d2h
            dist.send(host, dst=1)
        else:
            host = torch.empty(N)
            dist.recv(host, src=0)
            y = host.cuda()  # site: staged-h2d
            x = x + y
total = x.sum()
dist.all_reduce(total)  # site: summary
dist.destroy_process_group()
