"""Borrow checking on host memory: moves, aliasing and host-write detection.

Rust checks these at compile time; here they are checked at launch time,
before anything is copied, at a cost proportional to the number of array
arguments (not their size), except the opt-in host-write check.

* **Moves.** A launch that takes an array as `Owned` freezes it
  (`writeable = False`) and records the byte range it covered, so that a
  later launch with the array *or any view of it* (even one made before the
  move) raises `UseAfterMoveError`. The record dies with the memory it
  describes. This record is the one piece of ownership state beside the
  settings and the event bus: a move is a fact about host memory.
* **Aliasing.** A mutable argument may not share memory with any other
  argument of the same launch; the default check compares byte bounds
  (`numpy.may_share_memory`), `alias_check="exact"` solves it exactly.
* **Host writes** under `region(check=True)`: a digest of each mapped host
  array, compared when a launch uses it, when `update_host` would overwrite
  it and when the region ends.
"""

from __future__ import annotations

import hashlib
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from .residency import byte_bounds
from .sites import Site

try:  # a dependency; the fallback keeps a broken or missing install working, only slower
    from xxhash import xxh3_64_hexdigest as _xxh3_64, xxh3_128_digest as _xxh3_128
except ImportError:  # pragma: no cover
    _xxh3_64 = _xxh3_128 = None


@dataclass(frozen=True)
class MoveRecord:
    """Where an array was moved: for the `UseAfterMoveError` message."""

    lo: int
    hi: int
    kernel: str
    param: str
    callsite: Site | None

    def where(self) -> str:
        at = f" at {self.callsite.file}:{self.callsite.line}" if self.callsite else ""
        return f"moved into kernel '{self.kernel}' as Owned parameter '{self.param}'{at}"


class MoveRegistry:
    """Byte ranges of host memory that launches have taken as `Owned`."""

    def __init__(self) -> None:
        self._records: dict[int, MoveRecord] = {}
        self._next = 0

    def __bool__(self) -> bool:
        return bool(self._records)

    def add(self, array: np.ndarray[Any, Any], record: MoveRecord) -> None:
        key = self._next
        self._next += 1
        self._records[key] = record
        owner = memory_owner(array)
        try:
            weakref.finalize(owner, self._records.pop, key, None)
        except TypeError:  # an owner that takes no weak references lives as long as we do
            pass

    def find(self, array: np.ndarray[Any, Any]) -> MoveRecord | None:
        if not self._records or array.size == 0:
            return None
        lo, hi = byte_bounds(array)
        for record in self._records.values():
            if lo < record.hi and record.lo < hi:
                return record
        return None


def memory_owner(array: np.ndarray[Any, Any]) -> object:
    """The object whose lifetime bounds the memory `array` points into."""
    owner: object = array
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    return owner


MOVES = MoveRegistry()


def may_overlap(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], exact: bool) -> bool:
    """Whether two arrays can share a byte (bounds check) or do (exact)."""
    if a is b:
        return a.size > 0
    if exact:
        return bool(np.shares_memory(a, b))
    return bool(np.may_share_memory(a, b))


def fingerprint(array: np.ndarray[Any, Any]) -> str:
    """A short hex digest of a host array's bytes, for events (see `Event.fingerprint`)."""
    return fingerprint_bytes(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def fingerprint_bytes(data: Any) -> str:
    """16 hex digits of the bytes of a buffer (anything with the buffer protocol): XXH3-64, else blake2b.

    Recording a copy digests its host bytes, so the digest's speed is part
    of what recording costs: XXH3 read 15 GB/s on the development machine
    where blake2b managed 0.5 (an 8 MB upload: 0.5 against 16 ms, many times
    the copy itself). Fingerprints are compared within one trace only, so
    the choice need only hold for a whole recording.
    """
    if _xxh3_64 is not None:
        return _xxh3_64(data)
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def digest(array: np.ndarray[Any, Any]) -> bytes:
    """A content digest of a host array, for the host-write check (XXH3-128, else blake2b)."""
    flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    if _xxh3_128 is not None:
        return _xxh3_128(flat)
    return hashlib.blake2b(flat, digest_size=16).digest()
