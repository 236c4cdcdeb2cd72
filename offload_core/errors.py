"""The errors a user of offload_core can meet.

Every one is raised *before* any byte crosses the bus (or, for a device out
of memory, before any host array is touched), and its message is a single
line that names the parameters involved and says what to do. They share a
base class so that callers can catch the whole family, and each also derives
from the built-in exception a Python programmer would reach for first
(`ValueError` for ownership violations, `MemoryError` for device memory,
`RuntimeError` for backend problems), so generic handlers keep working.
"""

from __future__ import annotations


class OffloadError(Exception):
    """Base class of every error offload_core raises on purpose."""


class BorrowError(OffloadError, ValueError):
    """An array is used in a way its borrow does not allow.

    Raised for a read-only host array passed as `InOut`/`Out`, for a host
    write to an array a checking region has mapped, for a mutable launch of
    an array a region mapped as `In`, and for reads of an `Out` mapping no
    launch has written yet.
    """


class AliasError(BorrowError):
    """One launch received overlapping memory through a mutable parameter
    and another parameter (Rust's "cannot borrow as mutable more than once")."""


class UseAfterMoveError(BorrowError):
    """An array was used after a launch took it as `Owned`."""


class DeviceMemoryError(OffloadError, MemoryError):
    """The device could not allocate a buffer.

    `nbytes` is the size of the allocation that failed; `in_use` is what the
    backend held at the time, when it knows.
    """

    def __init__(self, message: str, nbytes: int, in_use: int | None = None) -> None:
        super().__init__(message)
        self.nbytes = nbytes
        self.in_use = in_use


class BackendError(OffloadError, RuntimeError):
    """The selected backend cannot do what was asked (missing library, no
    device, a RawKernel without a CPU fallback on the NumPy backend, ...)."""
