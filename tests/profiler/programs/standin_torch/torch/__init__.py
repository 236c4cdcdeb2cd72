"""A stand-in for PyTorch where it is not installed: only what the profiler's torch.distributed recording touches.

`tests/profiler/analysis/test_distributed_rules.py` puts this folder on PYTHONPATH
of a recorded job, so that the wrapping of `torch.distributed`'s
functions, the bytes and addresses taken from their tensors and the call
sites are checked in CI without PyTorch's wheels. It is never on the path
of anything else; the real PyTorch is tested by the same file where it is
installed.
"""

from __future__ import annotations

import numpy as np

from . import distributed  # noqa: F401  (import torch brings torch.distributed, as PyTorch's does)



class Tensor:
    """A NumPy array with the three tensor methods the recording reads."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def numel(self) -> int:
        return int(self.array.size)

    def element_size(self) -> int:
        return int(self.array.itemsize)

    def data_ptr(self) -> int:
        return int(self.array.ctypes.data)


def from_numpy(array: np.ndarray) -> Tensor:
    return Tensor(array)
