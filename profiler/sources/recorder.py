"""The recorder: subscribes to offload_core's events and turns them into a `Run` afterwards.

The hot path is one bound `list.append` per event, handed to the bus as
the subscriber itself, so recording adds no Python frame of its own to a
launch, and the bus hands it rows (tuples in `Event`'s field order), not
`Event`s, whose construction alone cost more than the rest of a recorded
launch (see `benchmarks/profiler_overhead.py` and `benchmarks/launch.py`). Everything else, relative
times, interned call sites with their source text, the metadata, happens
once in `run()`, after the program has finished.

On a GPU most launches get a device time estimated from sampled ones
(`offload_core.launchtiming`); the run's `meta.estimated` then says so.

Threads. offload_core delivers each event on the thread that issued (or
flushed) it, so with a threaded program the hot path runs on many threads
at once. It stays one `list.append`, which is atomic (under the GIL, and
with a per-list lock in free-threaded CPython), so no event is lost or
torn and `raw` holds them in the order they were delivered. Everything
else, `start`, `stop` and `run`, takes the recorder's lock: two threads
starting one recorder get one subscription and a `RuntimeError`, not two
subscriptions and every event twice, and `run` while threads still record
builds its `Run` from a snapshot of what was delivered by then. Records of
different threads interleave in delivery order; each thread's own records
keep their order.

Content fingerprints (`fingerprints=True`) let the detectors tell a
re-upload of unchanged data from an upload of new data, but offload_core
computes them with a pass over every copied byte, so they are opt-in:
copy durations in the trace stay exact either way (the digest is taken
after the copy is timed), only the wall time grows.
"""

from __future__ import annotations

import linecache
import threading
import time
from dataclasses import replace
from types import TracebackType
from typing import Callable, Sequence

from offload_core import events, get_backend, get_mode

from ..trace.model import Run
from ..trace.records import Link, Outcome, Record, Site
from .meta import recorded_meta, started_now


#: what a GPU backend's sampled launch timing estimates (`offload_core.launchtiming`), as `Meta.estimated` says it
ESTIMATED_LAUNCH_TIMES = ("launch.start_ns", "launch.duration_ns")


class Recorder:
    """Record every offload_core event between `start()` and `stop()` (or inside `with`)."""

    def __init__(self, *, fingerprints: bool = False) -> None:
        self.fingerprints = fingerprints
        #: the raw events, exactly as the bus delivered them: rows in `events.ROW_FIELDS` order
        self.raw: list[events.Row] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._fn: Callable[[events.Row], None] = self.raw.append  # the very function the bus holds
        self._t0 = 0
        self._t1 = 0
        self._started_at = ""
        self._backend = ("", "")
        self._mode = ""
        self._estimates = 0  # the backend's count of estimated launch times at start()
        self._estimated = 0  # launches given an estimated device time while recording
        #: serialises start, stop and run (never taken on the hot path)
        self._lock = threading.RLock()

    @property
    def active(self) -> bool:
        return self._unsubscribe is not None

    def start(self) -> Recorder:
        """Subscribe to offload_core's events; a `RuntimeError` when this recorder records already."""
        with self._lock:
            if self._unsubscribe is not None:
                raise RuntimeError("this recorder is already recording")
            be = get_backend()
            self._backend = (be.name, be.device)
            self._mode = get_mode()
            self._estimates = be.timer.estimates if be.timer is not None else 0
            self._estimated = 0
            self._started_at = started_now()
            self._t0 = time.perf_counter_ns()
            self._t1 = 0
            self._fn = self.raw.append
            self._unsubscribe = events.subscribe(self._fn, fingerprints=self.fingerprints, rows=True)
            return self

    def origin_ns(self) -> int:
        """The `perf_counter_ns` value the run's times count from (its start)."""
        return self._t0

    def detach(self) -> None:
        """Stop recording at once, delivering nothing queued: in a forked child, whose recorder this is not."""
        if self._unsubscribe is not None:
            events.BUS.drop(self._fn)
            self._unsubscribe = None

    def stop(self) -> None:
        """Stop recording; events still waiting for device timings are delivered first. Stopping twice is a no-op."""
        with self._lock:
            if self._unsubscribe is None:
                return
            unsubscribe, self._unsubscribe = self._unsubscribe, None
            unsubscribe()
            self._t1 = time.perf_counter_ns()
            # A program may pick its backend itself (set_backend at its start): the
            # metadata names the backend the work ended on.
            try:
                be = get_backend()
            except Exception:  # a backend the program broke must not lose the trace
                return
            self._backend = (be.name, be.device)
            if be.timer is not None:
                self._estimated = max(be.timer.estimates - self._estimates, 0)

    def notes(self) -> list[str]:
        """Nothing to add: every event offload_core emits fits the trace model."""
        return []

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def run(
        self,
        *,
        command: Sequence[str] = (),
        argv: Sequence[str] = (),
        outcome: Outcome = "ok",
        exit_code: int = 0,
        link: Link | None = None,
    ) -> Run:
        """The recorded events as a `Run` (callable while recording, from any thread: a snapshot)."""
        with self._lock:
            end = self._t1 or time.perf_counter_ns()
            t0 = self._t0
            delivered = self.raw[:]  # one copy, atomic against the appends of recording threads
            backend, device, mode, started_at = *self._backend, self._mode, self._started_at
            estimated = self._estimated
        sites = SiteTable()
        # rows: kind, nbytes, pinned, start_ns, duration_ns, kernel, launch, param, array, callsite, mode, region, fp
        records = tuple(
            Record(k, start - t0, duration, nbytes, pinned, kernel, launch, param, array, sites.get(site), region,
                   mode, fp)
            for k, nbytes, pinned, start, duration, kernel, launch, param, array, site, mode, region, fp in delivered
        )
        meta = recorded_meta(backend=backend, device=device, mode=mode, started_at=started_at, wall_ns=end - t0,
                             fingerprints=self.fingerprints, command=command, argv=argv, outcome=outcome,
                             exit_code=exit_code, link=link, estimated=ESTIMATED_LAUNCH_TIMES if estimated else ())
        return Run(meta, records)


class SiteTable:
    """Events' call sites, interned once each with their source line and column filled in."""

    def __init__(self) -> None:
        self._sites: dict[Site, Site] = {}

    def get(self, cs: Site | None) -> Site | None:
        if cs is None:
            return None
        site = self._sites.get(cs)
        if site is None:
            raw = linecache.getline(cs.file, cs.line).rstrip("\r\n")
            text = raw.strip()
            column = len(raw) - len(raw.lstrip()) + 1 if text else 1
            site = self._sites[cs] = replace(cs, text=text, column=column)
        return site
