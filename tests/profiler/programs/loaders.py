"""A PyTorch DataLoader whose items each launch a kernel, for tests/profiler/programs/pools.py (`loader`).

A module of its own, so that the pool tests' children do not import PyTorch, and so that spawned
DataLoader workers can unpickle the dataset by its name.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import DataLoader, Dataset

from pools import launch


class Launching(Dataset[int]):
    """12 items; getting one launches `pools.launch(1)` in the worker."""

    def __len__(self) -> int:
        return 12

    def __getitem__(self, i: int) -> int:
        return launch(1) * i


def launching_loader(method: str) -> DataLoader[Any]:
    """Two persistent workers started with `method`, two items a batch."""
    return DataLoader(Launching(), batch_size=2, num_workers=2, persistent_workers=True,
                      multiprocessing_context=method)
