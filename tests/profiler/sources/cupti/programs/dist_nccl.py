"""One rank per GPU with NCCL: a 4 MiB all-reduce per step (NCCL kernels) and, on rank 0, a copy to the peer GPU."""

import os

import torch
import torch.distributed as dist

N = 1 << 20  # 4 MiB of float32

local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl")
x = torch.ones(N, device="cuda")
for step in range(3):
    dist.all_reduce(x)  # site: all-reduce
if local == 0:
    y = x.to("cuda:1")  # site: peer
torch.cuda.synchronize()
dist.destroy_process_group()
