"""offload_core: ownership-annotated kernels whose copies follow from their annotations.

    from offload_core import kernel, In, InOut, offload, region

    @kernel
    def daxpy(y: InOut, x: In, a: float) -> None:
        y += a * x

    offload(daxpy, y, x, 2.0)          # naive: copies x and y in, y back, syncs
    with region(x, y):                 # batched: maps x and y once
        for _ in range(100):
            offload(daxpy, y, x, 2.0)  # no copies
    # y is copied back once at exit; x is not (no launch wrote it)

The backend (`OFFLOAD_BACKEND=auto|numpy|cupy`), the mode
(`OFFLOAD_MODE=batched|naive`) and every copy, launch and region edge
(`offload_core.events`) are described in docs/design.md and the README.
"""

from __future__ import annotations

from . import events
from .annotations import In, InOut, Out, Owned
from .errors import AliasError, BackendError, BorrowError, DeviceMemoryError, OffloadError, UseAfterMoveError
from .kernels import RawKernel, kernel
from .launch import offload
from .region import region
from .settings import get_backend, get_mode, set_backend, set_mode

__version__ = "0.1.0"

__all__ = [
    "AliasError",
    "BackendError",
    "BorrowError",
    "DeviceMemoryError",
    "In",
    "InOut",
    "OffloadError",
    "Out",
    "Owned",
    "RawKernel",
    "UseAfterMoveError",
    "events",
    "get_backend",
    "get_mode",
    "kernel",
    "offload",
    "region",
    "set_backend",
    "set_mode",
]
