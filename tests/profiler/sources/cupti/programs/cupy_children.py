"""Plain CuPy in the target and in a child process, for the GPU test of recording children with CUPTI.

    cupy_children.py            uploads in the target, a Python child that uploads 3 times, a fork that does no GPU work
    cupy_children.py child      the child: 3 uploads from one line
"""

import multiprocessing
import subprocess
import sys

import numpy as np

import cupy as cp


def child() -> None:
    x = np.ones(1 << 16, dtype=np.float32)
    for _ in range(3):
        cp.asarray(x)  # site: child upload
    cp.cuda.Device().synchronize()


def host_only(n: int) -> None:
    sum(range(n))  # a fork of a CUDA process may not use CUDA: this one does not


def main() -> None:
    x = np.ones(1 << 16, dtype=np.float32)
    cp.asarray(x)  # site: target upload
    subprocess.run([sys.executable, __file__, "child"], check=True)
    p = multiprocessing.get_context("fork").Process(target=host_only, args=(1000,))
    p.start()
    p.join()
    cp.asarray(x)  # site: target upload again
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else main()
