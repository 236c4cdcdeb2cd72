import cupy as cp
import numpy as np
import torch

a = cp.zeros(1024)
b = cp.ones((4, 4), dtype=np.float32)
c = torch.zeros(64, 64, device="cuda")
dev = torch.device("cuda")
e = torch.full((3,), 7.0, device=dev)
f = cp.asarray(np.arange(10))
