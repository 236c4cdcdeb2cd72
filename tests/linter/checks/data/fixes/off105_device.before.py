import cupy as cp
import numpy as np
import torch

dev = torch.device("cuda")


def make():
    a = cp.asarray(np.zeros(1024))
    b = cp.array(np.ones((4, 4), dtype=np.float32))
    c = torch.zeros(64, 64).cuda()
    e = torch.full((3,), 7.0).to(dev)
    f = cp.asarray(np.arange(10))
    return a, b, c, e, f
