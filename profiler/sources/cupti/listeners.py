"""Listeners: code that must hear of a CUDA copy or sync while the calling thread is still inside it.

A recording keeps what CUPTI tells it and reads it afterwards. The
transfer guard (`profiler.guard`) cannot wait: it has to blame the Python
line that is making the copy, while that line is still on the stack. So
the API callback also calls the listeners registered here, on entry to
every copy and synchronisation call, on the calling thread, with the
call's direction, byte count and the innermost Python frame (the one that
called into CUDA, library code or not).

CUPTI accepts one subscriber per process, so one subscription serves
recordings and listeners alike: while a recording runs, its tracer calls
the listeners; otherwise a listening-only session does (`listening`),
which a recording pauses while it runs. The registry lives in a module of
its own, below both, so that neither imports the other.
"""

from __future__ import annotations

import ctypes
import threading
from types import FrameType
from typing import Any, Callable, Protocol

from .apis import COPY, Api
from .probe import load_driver

#: CUpointer_attribute CU_POINTER_ATTRIBUTE_MEMORY_TYPE and the CUmemorytype values that are device memory
_MEMORY_TYPE = 2
_DEVICE_TYPES = (2, 3, 4)  # DEVICE, ARRAY, UNIFIED

#: listener(api, direction ("h2d", "d2h", ... or None), bytes or None, the innermost Python frame or None)
Listener = Callable[[Api, "str | None", "int | None", "FrameType | None"], None]


class Pausable(Protocol):
    """The listening-only session, as a recording sees it: it gives CUPTI up and takes it back."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...


class Listeners:
    """The registered listeners, as a tuple the callbacks read without a lock, and the listening session."""

    def __init__(self) -> None:
        #: read on every callback: empty almost always
        self.fns: tuple[Listener, ...] = ()
        #: the listening-only session while one exists (`listening.listen` makes it)
        self.session: Pausable | None = None
        self.lock = threading.Lock()

    def add(self, fn: Listener) -> None:
        with self.lock:
            self.fns = self.fns + (fn,)

    def remove(self, fn: Listener) -> None:
        with self.lock:
            self.fns = tuple(f for f in self.fns if f is not fn)

    def call(self, api: Api, frame: FrameType | None, direction: str | None = None, count: int | None = None,
             dst: int | None = None, src: int | None = None) -> None:
        """Call every listener; one that raises is removed (a callback may not raise into CUPTI).

        A copy without a direction (`cudaMemcpyDefault`) gets one from its
        pointers when both are known.
        """
        if direction is None and api.role == COPY and dst and src:
            direction = pointer_direction(dst, src)
        for fn in self.fns:
            try:
                fn(api, direction, count, frame)
            except Exception:
                self.remove(fn)


LISTENERS = Listeners()


def pointer_direction(dst: int, src: int, driver: Any = None) -> str | None:
    """The direction of a `cudaMemcpyDefault` copy, from where the driver says its pointers live."""
    lib = driver if driver is not None else _driver()
    if lib is None:
        return None
    dst_device, src_device = _on_device(lib, dst), _on_device(lib, src)
    if src_device and not dst_device:
        return "d2h"
    if dst_device and not src_device:
        return "h2d"
    return "d2d" if dst_device else "h2h"


_DRIVER: list[Any] = []


def _driver() -> Any:
    if not _DRIVER:
        _DRIVER.append(load_driver())
    return _DRIVER[0]


def _on_device(lib: Any, pointer: int) -> bool:
    kind = ctypes.c_uint(0)
    rc = lib.cuPointerGetAttribute(ctypes.byref(kind), _MEMORY_TYPE, ctypes.c_uint64(pointer))
    return rc == 0 and kind.value in _DEVICE_TYPES  # pageable host memory is unknown to CUDA: an error, so host
