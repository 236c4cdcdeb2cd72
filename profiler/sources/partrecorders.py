"""What a child process records into its part: offload_core's events as it goes, or a CUPTI session at its end.

`EventPart` subscribes to offload_core's event bus for rows and appends
them to the process's part every `FLUSH_INTERVAL_S` from a thread of its
own (started with the first event, which it writes at once, so that a
child that recorded anything has a part) and at the end, so that a child
killed without warning leaves what it recorded up to its last append. A
part's writes are serialised by its re-entrant `lock`: the SIGTERM
handler (`children`) may end the part on the main thread while that
thread holds the lock around a fork.
`CuptiPart` runs a CUPTI recording of the child and writes its records at
the end: CUPTI's activity records are decoded in bulk once. Both are
driven by `profiler.sources.children`, which knows when a process starts,
forks and ends.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Literal, Sequence

from .parts import End, Hello, PartWriter, Row
from .ranks import current_device, rank_from_env
from .sigterm import block_signals

#: seconds between two appends of a child's events to its part
FLUSH_INTERVAL_S = 0.2
#: how often the flusher looks at what waits, and how many events make it append at once (memory stays bounded)
TICK_S = 0.05
BATCH_ROWS = 65_536


class EventPart:
    """offload_core's events of this process, appended to its part every `FLUSH_INTERVAL_S` and at its end."""

    def __init__(self, folder: str, fingerprints: bool, start: Literal["fork", "exec"], max_records: int = 0) -> None:
        from offload_core import events

        self._events = events
        self.writer = PartWriter(folder, lambda: _hello(start))
        self.pending: list[Any] = []
        #: the most records kept (`run --max-records`; 0: no cap), how many were, and how many more were dropped
        self.max_records = max_records
        self.kept = 0
        self.dropped = 0
        self.lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._fn = self.on_event
        self._unsubscribe = events.subscribe(self._fn, fingerprints=fingerprints, rows=True)

    def on_event(self, event: Any) -> None:
        self.pending.append(event)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="offload-prof-part", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        block_signals()
        # the first event at once: from now on the process has a part, and a kill that follows is known
        try:
            self.flush()
            last = time.monotonic()
            while not self._stop.wait(TICK_S):
                now = time.monotonic()
                if len(self.pending) >= BATCH_ROWS or now - last >= FLUSH_INTERVAL_S:
                    self.flush()
                    last = now
        except Exception:  # the run's folder is gone (the target ended before this child): nothing to write to
            self._stop.set()
            self._events.BUS.drop(self._fn)  # and nothing kept from now on: memory stays as it is
            self.pending = []

    def flush(self) -> None:
        with self.lock:
            n = len(self.pending)
            if not n:
                return
            batch = self.pending[:n]
            del self.pending[:n]
            room = max(self.max_records - self.kept, 0) if self.max_records else n
            if room < n:
                self.dropped += n - room
                batch = batch[:room]
            if batch:
                self.writer.write("records", event_rows(batch))
                self.kept += len(batch)
            if room < n and self.writer.path is not None:  # the count so far, should this process be killed
                self.writer.write("dropped", (self.dropped, time.perf_counter_ns()))

    def end(self, how: Literal["exit", "os._exit", "exec", "signal"], code: int | None) -> None:
        self._stop.set()
        try:
            self._events.flush()  # events still waiting for device timings
        finally:
            self._events.BUS.drop(self._fn)
            with self.lock:
                self.flush()
                if self.writer.path is not None:  # a child that recorded nothing writes nothing
                    _write_rank(self.writer)
                    self.writer.write("end", End(how, code, self.dropped))
                self.writer.close()

    def abandon(self) -> None:
        """In a fork of this process: the parent's part is not the child's."""
        self._stop.set()
        self._events.BUS.drop(self._fn)
        self.writer.forget()
        self.pending = []


class CuptiPart:
    """A CUPTI recording of this process, written to its part when the process ends."""

    def __init__(self, folder: str, fingerprints: bool, every_launch: bool, start: Literal["fork", "exec"]) -> None:
        from .cupti import CuptiRecorder

        self.recorder = CuptiRecorder(fingerprints=fingerprints,
                                      launch_sites="all" if every_launch else "sampled").start()
        self.writer = PartWriter(folder, lambda: _hello(start))
        self.writer.write("records", [])  # the part exists from now on, so a child that dies is known
        self.lock = threading.RLock()

    def flush(self) -> None:
        """CUPTI's records are decoded once, at the end."""

    def end(self, how: Literal["exit", "os._exit", "exec", "signal"], code: int | None) -> None:
        self.recorder.stop()
        run = self.recorder.run()
        origin = self.recorder.origin_ns()
        rows: list[Row] = [(r.kind, r.start_ns + origin, r.duration_ns, r.nbytes, r.pinned, r.kernel, r.launch, r.param,
                            r.array, None if r.site is None else (r.site.file, r.site.line, r.site.function),
                            r.region, r.mode, r.fingerprint, r.device, r.peer) for r in run.records]
        self.writer.write("records", rows)
        _write_rank(self.writer)
        self.writer.write("end", End(how, code))
        self.writer.close()

    def abandon(self) -> None:
        self.writer.forget()


def event_rows(batch: Sequence[Any]) -> list[Row]:
    """offload_core's event rows as part rows (`Record`'s field order): absolute times, call sites as tuples."""
    out: list[Row] = []
    for kind, nbytes, pinned, start, duration, kernel, launch, param, array, cs, mode, region, fp in batch:
        out.append((kind, start, duration, nbytes, pinned, kernel, launch, param, array,
                    None if cs is None else (cs.file, cs.line, cs.function), region, mode, fp))
    return out


def argv() -> tuple[str, ...]:
    """This process's command line as it was given (the interpreter and its options included)."""
    return tuple(getattr(sys, "orig_argv", None) or sys.argv)


def _write_rank(writer: PartWriter) -> None:
    """At a process's end: its rank once more, now with the device its work ran on (a process of no job: nothing)."""
    rank = rank_from_env(device=current_device(_backend_name()))
    if rank is not None:
        writer.write("rank", rank)


def _backend_name() -> str | None:
    """offload_core's backend where this process chose one; asking `get_backend()` would choose one."""
    settings = sys.modules.get("offload_core.settings")
    backend = getattr(getattr(settings, "_S", None), "backend", None)
    return getattr(backend, "name", None)


def _hello(start: Literal["fork", "exec"]) -> Hello:
    name = ""
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        try:
            name = mp.current_process().name
        except Exception:
            name = ""
    # a fork's command line is its parent's; sys.argv is the target's there, not the profiler's
    command = tuple(sys.argv) if start == "fork" else argv()
    return Hello(os.getpid(), os.getppid(), start, command, "" if name == "MainProcess" else name, rank_from_env())
