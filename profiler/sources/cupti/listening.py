"""A CUPTI subscription that only calls the listeners, for a transfer guard running without a recording.

A recording (`tracer`) enables activity records and callbacks for every
copy, memset, launch and sync, and keeps a tuple per call; a guard needs
none of that, only to hear of each copy and sync as it is made. This
session enables the API callbacks of the copies and syncs of the `apis`
table and nothing else, reads a copy's direction and size from its
parameter block, and calls the listeners (`listeners`). Its cost is one
Python callback on entry to and exit from each copy and sync call; kernel
launches are not intercepted at all.

A runtime call (`cudaMemcpyAsync`) makes its driver calls inside it; the
listeners hear of the runtime call only (a driver sync inside a blocking
runtime copy is part of that copy, not a sync of the program's). A
copy whose kind is `cudaMemcpyDefault` names no direction: the driver is
asked where its two pointers live (`listeners.pointer_direction`).

A recording started while this session listens takes CUPTI over (one
subscriber per process): the session pauses and resumes when the
recording ends, and the recording calls the listeners meanwhile.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import Any, Callable

from ...errors import ProfilerError
from . import tracer as tracer_module
from .apis import APIS, COPY, SYNC
from .callbacks import CallbackTable, resolve_ids
from .listeners import LISTENERS, Listener
from .native import Native, unsubscribe_reporting
from .probe import explain


class Listening:
    """The listening-only CUPTI subscription (one per process, made by `listen`)."""

    def __init__(self, cupti: ModuleType, native: Any = None) -> None:
        self.cupti = cupti
        self.native = native if native is not None else Native.load(cupti)
        self._subscriber: int | None = None
        self._pointer: Any = None
        self.errors: list[str] = []
        self._ids = resolve_ids(cupti, [a for a in APIS if a.role in (COPY, SYNC)])

    def start(self) -> Listening:
        """Subscribe, unless a recording holds CUPTI (its tracer calls the listeners then)."""
        if tracer_module._ACTIVE is None:
            self.resume()
        return self

    def resume(self) -> None:
        if self._subscriber is not None:
            return
        try:
            self._subscriber, self._pointer = self.native.subscribe(self._callback())
            for domain, cbid in self._ids:
                self.native.enable_callback(self._subscriber, domain, cbid)
        except Exception as exc:
            self.pause()
            raise ProfilerError(f"CUPTI could not start: {explain(self.cupti, exc)}") from None

    def pause(self) -> None:
        if self._subscriber is not None:
            unsubscribe_reporting(self.native, self._subscriber, self._error)
            self._subscriber = None

    @property
    def subscribed(self) -> bool:
        return self._subscriber is not None

    def _error(self, where: str, exc: BaseException) -> None:
        if len(self.errors) < 5:
            self.errors.append(f"{where}: {type(exc).__name__}: {exc}")

    def _callback(self) -> Callable[[Any, int, int, int], None]:
        table = CallbackTable.of(self.cupti, self._ids)
        read = table.read
        enter_site = table.enter_site
        runtime = table.runtime_domain
        runtime_entries = table.runtime
        driver_entries = table.driver
        outer: dict[int, str] = {}  # thread -> role of the runtime copy or sync it is inside
        get_ident = threading.get_ident
        getframe = sys._getframe
        listeners = LISTENERS
        errors = self._error

        def on_api(userdata: Any, domain: int, cbid: int, address: int) -> None:
            try:
                is_runtime = domain == runtime
                entry = (runtime_entries if is_runtime else driver_entries).get(cbid)
                if entry is None:
                    return
                where, params, _, _ = read(address)
                tid = get_ident()
                if where != enter_site:
                    if is_runtime:
                        outer.pop(tid, None)
                    return
                if is_runtime:
                    outer[tid] = entry.role
                elif tid in outer:  # part of the runtime copy or sync around it, which was reported
                    return
                if not listeners.fns:
                    return
                direction = count = dst = src = None
                copy = entry.copy
                if copy is not None and params:
                    dst, src, count, direction = copy(params)
                try:
                    frame = getframe(1)
                except ValueError:
                    frame = None
                listeners.call(entry.api, frame, direction, count, dst, src)
            except Exception as exc:
                errors("in a CUDA API callback", exc)

        return on_api


def listen(fn: Listener, cupti: ModuleType, native: Any = None) -> Callable[[], None]:
    """Call `fn` on every copy and sync from now on; returns the function that stops it.

    The first listener starts the listening-only session (unless a
    recording runs), the last one's stop ends it. `ProfilerError` (one
    line) when CUPTI cannot subscribe, e.g. under Nsight Systems.
    """
    with LISTENERS.lock:
        session = LISTENERS.session
        if session is None:
            made = Listening(cupti, native)
            made.start()
            LISTENERS.session = session = made
    LISTENERS.add(fn)

    def stop() -> None:
        LISTENERS.remove(fn)
        with LISTENERS.lock:
            if not LISTENERS.fns and LISTENERS.session is not None:
                LISTENERS.session.pause()
                LISTENERS.session = None

    return stop
