import numpy as np
from offload_core import In, InOut, Out, kernel, offload
from offload_core import region


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


@kernel
def fill(z: Out, a: float) -> None:
    z[...] = a


def run(steps):
    x = np.ones(1 << 10)
    y = np.zeros(1 << 10)
    z = np.empty(1 << 10)
    with region(y, x, Out(z)):
        for epoch in range(2):
            for step in range(steps):
                offload(daxpy, y, x, 2.0)
                offload(fill, z, 1.0)
                doc = """a multi-line string
keeps its indentation"""
    return y, z, doc
