"""The present table: which host arrays a region keeps resident on the device.

Like OpenMP's `target data`, residency is a property of host *memory*, not
of Python objects: a launch that passes a view of a mapped array (`u[1:-1]`,
`u.T`, `u.reshape(...)`) must see the resident device data, or the host and
device copies silently diverge. So each `Mapping` records the byte range of
its host array, and a lookup that misses the identity fast path finds the
mapping containing the argument's bytes and derives the matching device
view. Two mappings never overlap: a region that asks to map memory partly
covered by an existing mapping is refused.

Mappings are reference counted across nested regions; the table itself
lives on the backend, whose device memory it describes. Each mapping also
records who may use it (the owner of the region that made it, see
`scope`) and whether that region was opened `shared=True`; the table's
lock makes a region's look-ups, reference counts and additions one step
against other threads' regions (launches only read the table).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .annotations import Access
from .scope import Owner
from .sites import Site

if TYPE_CHECKING:
    from .kernels import Kernel


class DeviceArray(Protocol):
    """A backend's device twin of a host array (a NumPy array on the NumPy backend, a CuPy array on a GPU)."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def strides(self) -> tuple[int, ...]: ...

    @property
    def nbytes(self) -> int: ...


class Recording(Protocol):
    """What a launch asks of the `r.capture()` block now recording (`offload_core.capture.Capture`).

    A protocol rather than the class, because the capture module sits above
    this one (it records mappings): the present table only holds it.
    """

    @property
    def naive(self) -> bool: ...

    #: whose launches it records: the opener's thread and task
    owner: Owner | None
    thread: int

    def record_call(self, k: Kernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None: ...

    def record_launch(self, k: Kernel, dev_args: list[Any], mappings: list[Mapping | None], temps: int) -> None: ...


def byte_bounds(a: np.ndarray[Any, Any]) -> tuple[int, int]:
    """[low, high) addresses of the bytes `a` can touch (its data pointer for empty arrays)."""
    ai = a.__array_interface__
    ptr: int = ai["data"][0]
    strides = ai["strides"]
    if a.size == 0:
        return ptr, ptr
    if strides is None:
        return ptr, ptr + a.nbytes
    return extent_bounds(ptr, a.shape, strides, a.itemsize)


def extent_bounds(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """[low, high) of a non-empty strided array starting at `ptr` (host or device addresses)."""
    lo = hi = ptr
    for n, s in zip(shape, strides):
        extent = (n - 1) * s
        if extent < 0:
            lo += extent
        else:
            hi += extent
    return lo, hi + itemsize


def data_pointer(a: np.ndarray[Any, Any]) -> int:
    """Address of `a`'s first element: the identity events give a host buffer."""
    ptr: int = a.__array_interface__["data"][0]
    return ptr


@dataclass(eq=False)
class Mapping:
    """One host array resident on the device.

    `access` is how the region that created it asked for it: `IN` mappings
    refuse mutable launches, `OUT` mappings start uninitialised (no launch
    may read them before one writes them). `dirty` means a launch wrote the
    device copy since it was last synchronised with the host, so the region
    exit must copy it back. `poisoned` holds the reason the device copy is
    no longer trustworthy (a kernel raised while writing it). `owner` and
    `thread` are the flow of control and the thread that mapped it;
    `shared` lets any thread use it (serialised); `released` marks a
    mapping its last region has freed, for a launch that found it before.
    """

    host: np.ndarray[Any, Any]
    device: DeviceArray
    lo: int
    hi: int
    ptr: int
    access: Access
    name: str
    region: int
    callsite: Site | None
    refs: int = 1
    initialized: bool = True
    dirty: bool = False
    moved: bool = False
    poisoned: str | None = None
    checks: int = 0
    digest: bytes | None = None
    owner: Owner | None = None
    shared: bool = False
    thread: int = 0
    released: bool = False
    derivable: bool = field(init=False)

    def __post_init__(self) -> None:
        # Views can be derived only when the device twin has the host's layout.
        self.derivable = bool(self.host.flags.c_contiguous or self.host.flags.f_contiguous)

    def where(self) -> str:
        """`'u' (mapped at file:line)` for messages."""
        at = f" at {self.callsite.file}:{self.callsite.line}" if self.callsite else ""
        return f"'{self.name}' (mapped by a region{at})"

    def foreign(self) -> str:
        """Why a thread or task other than the owner may not use this mapping, for `BorrowError`."""
        owner = self.owner.name if self.owner is not None else "another thread"
        return (
            f"{self.where()} belongs to a region of {owner}, and a region's arrays are private to the thread or "
            "task that opened it; launch from there, or open that region with region(..., shared=True)"
        )


class PresentTable:
    """Mappings of one backend, looked up by object identity, then by byte range."""

    def __init__(self) -> None:
        self.by_id: dict[int, Mapping] = {}
        self.mappings: list[Mapping] = []
        #: ids of the regions now entered, innermost last (naive-mode ones too)
        self.regions: list[int] = []
        #: the `r.capture()` recording launches now, if any (offload_core.capture.Capture)
        self.capture: Recording | None = None
        #: kernels holding a launch plan over these mappings (see launch.Plan)
        self.plans: list[Kernel] = []
        #: held by region entry and exit while they look up, count and change mappings
        self.lock = threading.RLock()
        #: counts changes of mappings: a launch that checked before a change must check again
        self.version = 0
        self._versions = itertools.count(1)  # `next` is one step, so two threads never write the same version

    def invalidate(self) -> None:
        """A mapping changed (added, removed, moved, poisoned, checked...): drop every launch plan."""
        self.version = next(self._versions)
        for kernel in self.plans:
            kernel.plans = []
        self.plans.clear()

    def __bool__(self) -> bool:
        return bool(self.mappings)

    @property
    def busy(self) -> bool:
        """A region is active: the mode and the backend must not change under it."""
        return bool(self.mappings or self.regions)

    def add(self, mapping: Mapping) -> None:
        self.invalidate()
        self.mappings.append(mapping)
        self.by_id[id(mapping.host)] = mapping

    def remove(self, mapping: Mapping) -> None:
        self.invalidate()
        self.mappings.remove(mapping)
        if self.by_id.get(id(mapping.host)) is mapping:
            del self.by_id[id(mapping.host)]

    def containing(self, lo: int, hi: int) -> tuple[Mapping | None, Mapping | None]:
        """(mapping containing [lo, hi), mapping partly overlapping it)."""
        for m in self.mappings:
            if m.lo <= lo and hi <= m.hi and lo < m.hi:
                return m, None
            if lo < m.hi and m.lo < hi:
                return None, m
        return None, None

    def find(self, a: np.ndarray[Any, Any]) -> Mapping | None:
        """The mapping `a` lies in, or None; `BorrowError`-worthy overlaps return via `overlap`."""
        m = self.by_id.get(id(a))
        if m is not None:
            return m
        if not self.mappings:
            return None
        lo, hi = byte_bounds(a)
        inside, _ = self.containing(lo, hi)
        return inside

    def overlap(self, a: np.ndarray[Any, Any]) -> Mapping | None:
        """A mapping that `a` overlaps without lying inside it."""
        if not self.mappings:
            return None
        lo, hi = byte_bounds(a)
        _, partial = self.containing(lo, hi)
        return partial
