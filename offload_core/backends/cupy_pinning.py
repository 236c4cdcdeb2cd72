"""Page-locking the caller's hot host buffers, so copies run at the pinned rate.

CuPy copies a pageable NumPy array through the driver's staging buffers at
6-8 GB/s host->device on the H200 machine, against 54-55 GB/s from
page-locked memory. Staging through our own pinned chunks is bounded by the
host-side memcpy into them (7-29 GB/s measured with 1-8 threads), while
registering the caller's own buffer with `cudaHostRegister` (hipHostRegister
on ROCm) cost 0.2 ms for 1 MiB, 0.9 ms for 16 MiB and 14 ms for 256 MiB there,
after which it copies at the full pinned rate. So this module registers:

* nothing below `min_bytes` (64 KiB): such copies are latency-bound and the
  plain path is as fast;
* at or above `cold_bytes` (16 MiB) on the first copy: registering plus one
  pinned copy already costs no more than one pageable copy;
* in between, on the second copy of the same buffer: hot data pays back the
  registration after two copies.

Registrations are byte ranges of the array's *memory owner* (the root of its
`.base` chain). Two views of one buffer may ask for overlapping ranges; the
owner's ranges are then merged into one registration. Different owners never
share bytes, only pages, which the driver allows. When the owner dies, a
`weakref.finalize` callback (run before NumPy frees the memory) unregisters
every range. Memory that is already page-locked (`cupyx.empty_pinned`,
`torch.pin_memory`) is detected and used as is. Registration is capped at
`limit` bytes in all (default: half the machine's memory), so pinning cannot
starve the operating system.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..borrows import memory_owner
from ..residency import byte_bounds

MIN_BYTES = 64 << 10
COLD_BYTES = 16 << 20


def _default_limit() -> int:
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2)
    except (ValueError, OSError, AttributeError):
        return 8 << 30


@dataclass
class _Owner:
    """Registration state of one memory owner."""

    ranges: list[tuple[int, int]] = field(default_factory=list)
    copies: int = 0
    foreign: bool = False  # page-locked by someone else: use, never unregister
    unpinnable: bool = False


class HostPinning:
    """Decides which host buffers to page-lock and keeps the registrations."""

    def __init__(
        self,
        runtime: Any,
        before_unregister: Callable[[], None],
        min_bytes: int = MIN_BYTES,
        cold_bytes: int = COLD_BYTES,
        limit: int | None = None,
        enabled: bool = True,
    ) -> None:
        self._rt = runtime
        self._before_unregister = before_unregister
        self.min_bytes = min_bytes
        self.cold_bytes = cold_bytes
        self.limit = _default_limit() if limit is None else limit
        self.enabled = enabled
        self.registered_bytes = 0
        self.failures = 0
        self._owners: dict[int, _Owner] = {}
        self._sightings: dict[int, weakref.ref[object]] = {}

    def prepare(self, array: np.ndarray[Any, Any]) -> bool:
        """Count a copy of `array`, page-lock it if the policy says so; True if its bytes are page-locked.

        True means a copy from or to it runs asynchronously, so the caller
        must fence it. Memory NumPy did not allocate (a `cupyx.empty_pinned`
        buffer, say) is asked about on every copy, whatever its size: it may
        be page-locked already, and then even a small copy is asynchronous.
        """
        owner_obj = memory_owner(array)
        foreign_memory = type(owner_obj) is not np.ndarray
        if foreign_memory and self._already_locked(array):
            return True
        nbytes = array.nbytes
        if nbytes < self.min_bytes or not self.enabled:
            return False
        key = id(owner_obj)
        state = self._owners.get(key)
        if state is None:
            if nbytes < self.cold_bytes and not self._seen_before(key, owner_obj):
                return False  # first sighting of a mid-sized buffer: cheap to note, not worth pinning yet
            try:
                weakref.finalize(owner_obj, self._forget, key)
            except TypeError:
                return False  # no way to learn when the memory dies: never register it
            state = self._owners[key] = _Owner()
            state.foreign = not foreign_memory and self._already_locked(array)
            state.copies = 1
        if state.foreign:
            return True
        lo, hi = byte_bounds(array)
        if any(a <= lo and hi <= b for a, b in state.ranges):
            return True
        state.copies += 1
        if state.unpinnable or (nbytes < self.cold_bytes and state.copies < 2):
            return False
        return self._register(state, lo, hi)

    def _seen_before(self, key: int, owner: object) -> bool:
        """Note a sighting; True on the second one of the same live buffer.

        The note is a weak reference that removes itself when the buffer
        dies, so a fresh temporary that happens to get a dead one's id (or
        address) is not taken for hot: registering and unregistering a new
        array on every iteration would cost more than the copies it speeds up.
        """
        if self._sightings.pop(key, None) is not None:
            return True
        try:
            self._sightings[key] = weakref.ref(owner, lambda _ref, key=key: self._sightings.pop(key, None))
        except TypeError:
            pass
        return False

    def is_locked(self, array: np.ndarray[Any, Any]) -> bool:
        """Whether `array`'s bytes are page-locked now (for the events' `pinned` field)."""
        owner_obj = memory_owner(array)
        if type(owner_obj) is not np.ndarray:
            return self._already_locked(array)
        if array.nbytes < self.min_bytes:
            return False
        state = self._owners.get(id(owner_obj))
        if state is None:
            return False
        if state.foreign:
            return True
        lo, hi = byte_bounds(array)
        return any(a <= lo and hi <= b for a, b in state.ranges)

    def _already_locked(self, array: np.ndarray[Any, Any]) -> bool:
        try:
            attrs = self._rt.pointerGetAttributes(array.__array_interface__["data"][0])
        except Exception:  # HIP reports pageable memory as an error
            return False
        return int(getattr(attrs, "type", getattr(attrs, "memoryType", 0))) == 1  # cudaMemoryTypeHost

    def _register(self, state: _Owner, lo: int, hi: int) -> bool:
        # Merge with every range of this owner that overlaps or touches [lo, hi).
        merged = [r for r in state.ranges if r[0] <= hi and lo <= r[1]]
        new_lo = min([lo] + [r[0] for r in merged])
        new_hi = max([hi] + [r[1] for r in merged])
        growth = (new_hi - new_lo) - sum(b - a for a, b in merged)
        if self.registered_bytes + growth > self.limit:
            return False
        if merged:
            self._before_unregister()  # no copy may be in flight from a range we drop
            for a, b in merged:
                self._unregister(a, b)
                state.ranges.remove((a, b))
        try:
            self._rt.hostRegister(new_lo, new_hi - new_lo, 0)
        except Exception:
            self.failures += 1
            state.unpinnable = True
            return False
        state.ranges.append((new_lo, new_hi))
        self.registered_bytes += new_hi - new_lo
        return True

    def _unregister(self, lo: int, hi: int) -> None:
        try:
            self._rt.hostUnregister(lo)
        except Exception:
            self.failures += 1
        self.registered_bytes -= hi - lo

    def _forget(self, key: int) -> None:
        # Runs from a finalizer, possibly at interpreter exit: never raise.
        state = self._owners.pop(key, None)
        if state is None or state.foreign or not state.ranges:
            return
        try:
            self._before_unregister()
        except Exception:
            pass
        for lo, hi in state.ranges:
            self._unregister(lo, hi)
