"""Serialising what two threads do to the same host memory.

A launch outside a region is a read-modify-write of whole arrays: upload,
run, download. Two threads that each launch `InOut` on one `y` would both
upload the same old value and the second download would overwrite the
first thread's result, losing updates without an error. So every
operation that copies between host memory and the device, or that uses a
mapping another thread may use too (a `shared=True` region, or a context
carried to another thread), first *claims* the host byte ranges it
touches, as reads or writes, and waits while another thread holds a
conflicting claim (overlapping ranges, at least one of them a write).

A claim covers a whole operation and is taken in one step for all its
ranges, and nothing waits while holding one, so claims cannot deadlock
each other. Claims of the same thread never conflict (a launch may be
retried under its own claim). A launch on arrays that only its own
thread's private regions keep resident (the batched loop) takes no claim:
no other thread may touch those mappings at all (see `scope`).
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence, Union

#: (low address, high address, writes) of one host byte range an operation touches
Range = tuple[int, int, bool]
#: the ranges, or a function that lists them: computed only when another thread holds a claim to compare
Ranges = Union[Sequence[Range], Callable[[], Sequence[Range]]]


class Claim:
    """Ranges held by one operation of one thread; `waited` says it had to wait for another thread."""

    __slots__ = ("thread", "waited", "_source", "_ranges")

    def __init__(self, thread: int, ranges: Ranges) -> None:
        self.thread = thread
        self.waited = False
        self._source = ranges
        self._ranges: tuple[Range, ...] | None = None

    @property
    def ranges(self) -> tuple[Range, ...]:
        """The non-empty ranges; listed on first use (a single-threaded program never asks)."""
        if self._ranges is None:
            source = self._source
            self._ranges = tuple(r for r in (source() if callable(source) else source) if r[0] < r[1])
        return self._ranges


class Claims:
    """The claims held now, process-wide."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._held: list[Claim] = []
        self._waiting = 0

    def claim(self, ranges: Ranges) -> Claim:
        """Take `ranges`, waiting until no other thread holds a conflicting range."""
        claim = Claim(threading.get_ident(), ranges)
        with self._changed:
            while self._conflicts(claim):
                claim.waited = True
                self._waiting += 1
                try:
                    self._changed.wait()
                finally:
                    self._waiting -= 1
            self._held.append(claim)
        return claim

    def release(self, claim: Claim) -> None:
        with self._changed:
            self._held.remove(claim)
            if self._waiting:
                self._changed.notify_all()

    def _conflicts(self, claim: Claim) -> bool:
        me = claim.thread
        for held in self._held:
            if held.thread == me:
                continue
            for lo, hi, writes in claim.ranges:
                for plo, phi, pwrites in held.ranges:
                    if lo < phi and plo < hi and (writes or pwrites):
                        return True
        return False

    def __len__(self) -> int:
        return len(self._held)


CLAIMS = Claims()
