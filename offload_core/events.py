"""The event bus: one frozen `Event` per copy, allocation, launch, sync and region edge.

Subscribers (the profiler's recorder, a test, the demo) get every event in
the order the operations were issued. The launch path asks `BUS.subscribers`
once per operation and builds nothing at all when it is empty, so an
unobserved program pays one branch per launch (see
`benchmarks/events_overhead.py`).

Device timings on a GPU are only known once the device has reached the
event that ends them. An event whose `Timing` is not ready yet is held in a
queue, and so is every event after it, so that subscribers still see issue
order; the backend flushes the queue at its synchronisation points. On the
NumPy backend every timing is ready at once and nothing is queued.
"""

from __future__ import annotations

import itertools
import os
import sys
import warnings
from collections import deque
from dataclasses import dataclass
from operator import attrgetter
from types import CodeType, FrameType
from typing import Any, Callable, Protocol

from .kinds import KINDS, Kind  # noqa: F401  (KINDS: the kinds an `Event` can be)
from .sites import Site

#: queued events beyond which finished ones are delivered eagerly, and the hard cap
PENDING_SOFT_LIMIT = 4096
PENDING_HARD_LIMIT = 16384


@dataclass(frozen=True, slots=True)
class Event:
    """One thing offload_core did.

    `array` identifies the host buffer (the address of its first byte), so
    two launches with the same array, or with two views of one buffer
    starting at the same byte, carry the same identity. `launch` is the
    index of the `offload()` call the event belongs to; copies made by a
    region's entry or exit have none and carry the `region` id instead.
    Times are `time.perf_counter_ns()` values on the host clock; on a GPU
    `duration_ns` comes from device events. `fingerprint` is a digest of the
    host bytes an H2D read or a D2H wrote, present only while a subscriber
    asked for fingerprints (it costs a pass over the data, and a sync after
    each D2H on a GPU), so that re-uploads of unchanged data can be told
    apart from uploads of new data.
    """

    kind: Kind
    nbytes: int = 0
    pinned: bool = False
    start_ns: int = 0
    duration_ns: int = 0
    kernel: str | None = None
    launch: int | None = None
    param: str | None = None
    array: int | None = None
    callsite: Site | None = None
    mode: str = "batched"
    region: int | None = None
    fingerprint: str | None = None


class Timing(Protocol):
    """A measured interval that may only be readable later (device events)."""

    def ready(self) -> bool: ...

    def resolve(self) -> tuple[int, int]:
        """(start_ns, duration_ns); may wait for the device."""
        ...


Subscriber = Callable[[Event], None]


#: an event as a plain tuple, in `Event`'s field order (`ROW_FIELDS`): what row subscribers get
Row = tuple[object, ...]
#: the field names of an `Event`, in the order a `Row` holds them
ROW_FIELDS: tuple[str, ...] = Event.__slots__  # type: ignore[assignment]
_START, _DURATION = ROW_FIELDS.index("start_ns"), ROW_FIELDS.index("duration_ns")
_DEFAULTS: Row = tuple(getattr(Event("launch"), name) for name in ROW_FIELDS)
_as_row = attrgetter(*ROW_FIELDS)


class Bus:
    """Subscribers, the queue of events waiting for device timings, and counters.

    Events travel as rows (tuples in `Event`'s field order): building a
    frozen dataclass of 13 fields costs a few microseconds, more than the
    rest of a recorded launch together, so an `Event` is made only for
    subscribers that asked for events, and a recorder that only keeps what
    it is given subscribes for rows (`subscribe(..., rows=True)`).
    """

    def __init__(self) -> None:
        #: every subscriber (a launch only asks whether this is empty)
        self.subscribers: tuple[Subscriber, ...] = ()
        #: subscribers that asked for content fingerprints of copied data
        self.fingerprinting: tuple[Subscriber, ...] = ()
        self._events: tuple[Subscriber, ...] = ()  # called with an `Event`
        self._rows: tuple[Callable[[Row], None], ...] = ()  # called with a `Row`
        #: called with a `Row` as the event is issued, before any device timing is known (`watch`)
        self._watchers: tuple[Callable[[Row], None], ...] = ()
        self._pending: deque[tuple[Row, Timing]] = deque()
        self.launches = 0  # how many launches so far (the next launch's index)
        #: launch indices, unique even when threads launch at once (`next` of a count is one step under the GIL)
        self.launch_ids = itertools.count()
        self.regions = 0

    @property
    def queued(self) -> int:
        """How many events wait for device timings (always 0 on a host-clock backend)."""
        return len(self._pending)

    def subscribe(self, fn: Subscriber, fingerprints: bool = False, rows: bool = False) -> Callable[[], None]:
        if not callable(fn):
            raise TypeError(f"subscribe() takes a callable, got {type(fn).__name__}")
        self.subscribers = self.subscribers + (fn,)
        if rows:
            self._rows = self._rows + (fn,)  # type: ignore[assignment]
        else:
            self._events = self._events + (fn,)
        if fingerprints:
            self.fingerprinting = self.fingerprinting + (fn,)

        def unsubscribe() -> None:
            self.flush()
            self.drop(fn)

        return unsubscribe

    def watch(self, fn: Callable[[Row], None]) -> Callable[[], None]:
        """Call `fn(row)` as each event is issued, on the issuing thread; returns the function that stops it.

        Subscribers get events in issue order but, on a GPU, only once their
        device timings are known, which can be at a later sync and on
        another thread. A watcher is for code that must act while the
        operation's caller is still at the line that issued it (the
        profiler's transfer guard): it gets the row at once, with
        `start_ns` and `duration_ns` not yet final (0 for device-timed
        events). A watcher counts as a subscriber, so events are built
        while one is watching.
        """
        if not callable(fn):
            raise TypeError(f"watch() takes a callable, got {type(fn).__name__}")
        self._watchers = self._watchers + (fn,)
        self.subscribers = self.subscribers + (fn,)  # type: ignore[operator]

        def unwatch() -> None:
            self.drop(fn)  # type: ignore[arg-type]

        return unwatch

    def drop(self, fn: Subscriber) -> None:
        """Stop calling `fn` at once, delivering nothing still queued (`unsubscribe` delivers it first).

        For a forked child that inherited its parent's subscriber: what is
        queued is the parent's, and its device timings cannot be read here.
        """
        self.subscribers = tuple(s for s in self.subscribers if s is not fn)
        self.fingerprinting = tuple(s for s in self.fingerprinting if s is not fn)
        self._events = tuple(s for s in self._events if s is not fn)
        self._rows = tuple(s for s in self._rows if s is not fn)
        self._watchers = tuple(s for s in self._watchers if s is not fn)

    def emit(self, event: Event) -> None:
        row: Row = _as_row(event)
        if self._watchers:
            self._issued(row)
        if self._pending:
            self._pending.append((row, _READY))
            return
        self._deliver(row, event)

    def emit_row(self, row: Row) -> None:
        """Emit an event given as a `Row` (the launch path's way: no `Event` unless a subscriber wants one)."""
        if self._watchers:
            self._issued(row)
        if self._pending:
            self._pending.append((row, _READY))
            return
        self._deliver(row, None)

    def emit_timed(self, timing: Timing, **fields: object) -> None:
        """Emit an event whose start and duration come from `timing`."""
        row = _row_of(fields)
        if self._watchers:
            self._issued(row)
        if not self._pending and timing.ready():
            self._deliver(_timed(row, *timing.resolve()), None)
            return
        self._pending.append((row, timing))
        if len(self._pending) > PENDING_SOFT_LIMIT:
            # A long loop of asynchronous launches never syncs: deliver what the
            # device has finished, and past the hard limit wait for the oldest,
            # so the queue (and the device events it holds) stays bounded.
            self._deliver_ready()
            if len(self._pending) > PENDING_HARD_LIMIT:
                while len(self._pending) > PENDING_SOFT_LIMIT:
                    self._deliver_first()

    def _issued(self, row: Row) -> None:
        for fn in self._watchers:
            self._call(fn, row)

    def poll(self) -> None:
        """Deliver the queued events whose timings are known, without waiting."""
        if self._pending:
            self._deliver_ready()

    def _deliver_ready(self) -> None:
        while self._pending and self._pending[0][1].ready():
            self._deliver_first()

    def _deliver_first(self) -> None:
        row, timing = self._pending.popleft()
        if timing is not _READY:
            row = _timed(row, *timing.resolve())
        self._deliver(row, None)

    def flush(self) -> None:
        """Deliver every queued event, waiting for device timings as needed."""
        while self._pending:
            self._deliver_first()

    def _deliver(self, row: Row, event: Event | None) -> None:
        for fn in self._rows:
            self._call(fn, row)
        if self._events:
            if event is None:
                event = Event(*row)  # type: ignore[arg-type]
            for fn in self._events:
                self._call(fn, event)

    def _call(self, fn: Callable[[Any], None], what: Any) -> None:
        try:
            fn(what)
        except Exception as exc:  # a broken observer must not break the computation
            self.drop(fn)
            warnings.warn(
                f"offload_core.events: subscriber {getattr(fn, '__qualname__', fn)!r} raised "
                f"{type(exc).__name__}: {exc}; it has been unsubscribed",
                RuntimeWarning,
                stacklevel=3,
            )


class _Ready:
    def ready(self) -> bool:
        return True

    def resolve(self) -> tuple[int, int]:  # pragma: no cover - never resolved, used as a marker
        raise AssertionError


_READY = _Ready()


def _row_of(fields: dict[str, object]) -> Row:
    """A row from keyword fields (`emit_timed`'s), the rest at `Event`'s defaults."""
    get = fields.get
    return tuple(get(name, default) for name, default in zip(ROW_FIELDS, _DEFAULTS))


def _timed(row: Row, start: int, duration: int) -> Row:
    return (*row[:_START], start, duration, *row[_DURATION + 1:])


BUS = Bus()
if hasattr(os, "register_at_fork"):
    # A forked child starts with its parent's queue: events whose device timings
    # belong to the parent's device context, and which the parent delivers itself.
    os.register_at_fork(after_in_child=BUS._pending.clear)


def subscribe(fn: Subscriber, *, fingerprints: bool = False, rows: bool = False) -> Callable[[], None]:
    """Call `fn(event)` for every event from now on; returns the unsubscribe function.

    With `fingerprints=True`, H2D and D2H events carry a digest of the host
    data (see `Event.fingerprint`). With `rows=True`, `fn` gets each event
    as a plain tuple in `Event`'s field order (`ROW_FIELDS`) instead of an
    `Event`: the same facts at a fraction of the cost per event, for a
    recorder that keeps them and reads them later (the profiler's). Unsubscribing first delivers any events
    still waiting for device timings. A subscriber that raises is
    unsubscribed with a `RuntimeWarning`, so that a broken observer cannot
    corrupt the computation it observes.
    """
    return BUS.subscribe(fn, fingerprints, rows)


def watch(fn: Callable[[Row], None]) -> Callable[[], None]:
    """Call `fn(row)` as each event is issued, on the issuing thread, before device timings are known.

    See `Bus.watch`: for code that must act while the caller is still at
    the line that issued the operation. Returns the function that stops
    watching. A watcher that raises is dropped with a `RuntimeWarning`, as
    a subscriber is.
    """
    return BUS.watch(fn)


def flush() -> None:
    """Deliver events still waiting for device timings (waits for the device)."""
    BUS.flush()


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SUITE_DIR = os.path.join(_PACKAGE_DIR, "suite")


def _internal(code: CodeType) -> bool:
    # offload_core's own frames are skipped, except the suite: its drivers are
    # the "user code" whose call sites a profile of the suite should name.
    filename = code.co_filename
    return filename.startswith(_PACKAGE_DIR) and not filename.startswith(_SUITE_DIR)


#: file name -> whether it is offload_core's own, and (id of a code object, instruction) ->
#: (the code object, its Site). Every traced operation asks for its call site, and a
#: loop asks for the same few again and again. Code objects are keyed by identity, and
#: held, because equal code in two files compares equal; both caches are cleared when
#: they grow past SITE_CACHE entries, so code made on the fly (exec in a loop) cannot
#: make them grow without bound.
_INTERNAL: dict[str, bool] = {}
_SITES: dict[tuple[int, int], tuple[CodeType, Site]] = {}
SITE_CACHE = 4096


def callsite(depth: int = 1) -> Site | None:
    """The first frame outside offload_core, starting `depth` frames up."""
    frame: FrameType | None = sys._getframe(depth)
    internal = _INTERNAL
    while frame is not None:
        code = frame.f_code
        flag = internal.get(code.co_filename)
        if flag is None:
            if len(internal) >= SITE_CACHE:
                internal.clear()
            flag = internal[code.co_filename] = _internal(code)
        if not flag:
            break
        frame = frame.f_back
    if frame is None:
        return None
    key = (id(code), frame.f_lasti)
    hit = _SITES.get(key)
    if hit is not None and hit[0] is code:
        return hit[1]
    if len(_SITES) >= SITE_CACHE:
        _SITES.clear()
    site = Site(code.co_filename, frame.f_lineno, code.co_name)
    _SITES[key] = (code, site)
    return site
