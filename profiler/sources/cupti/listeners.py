"""Listeners: code that must hear of a CUDA copy or sync while the calling thread is still inside it.

A recording keeps what CUPTI tells it and reads it afterwards. The
transfer guard (`profiler.guard`) cannot wait: it has to blame the Python
line that is making the copy, while that line is still on the stack. So
the tracer's API callback also calls the listeners registered here, on
entry to every copy and synchronisation call, on the calling thread,
with the call's direction, byte count and the Python frame below the
callback.

The registry lives in a module of its own, below the tracer, because
both the tracer (which calls the listeners) and the code that starts a
listening-only CUPTI session (`watch`) need it. One CUPTI subscriber
serves recordings and listeners alike: CUPTI accepts one per process.
"""

from __future__ import annotations

import threading
from types import FrameType
from typing import Callable

from .apis import Api

#: listener(api, direction or None, bytes or None, the frame that called into CUDA or None)
Listener = Callable[[Api, "str | None", "int | None", "FrameType | None"], None]


class Listeners:
    """The registered listeners, as a tuple the callback reads without a lock."""

    def __init__(self) -> None:
        #: read on every callback: empty almost always
        self.fns: tuple[Listener, ...] = ()
        self._lock = threading.Lock()

    def add(self, fn: Listener) -> None:
        with self._lock:
            self.fns = self.fns + (fn,)

    def remove(self, fn: Listener) -> None:
        with self._lock:
            self.fns = tuple(f for f in self.fns if f is not fn)


LISTENERS = Listeners()
