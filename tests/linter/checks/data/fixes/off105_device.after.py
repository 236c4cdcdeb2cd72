import cupy as cp
import numpy as np
import torch

dev = torch.device("cuda")


def make():
    a = cp.zeros(1024)
    b = cp.ones((4, 4), dtype=np.float32)
    c = torch.zeros(64, 64, device="cuda")
    e = torch.full((3,), 7.0, device=dev)
    f = cp.asarray(np.arange(10))
    return a, b, c, e, f
