"""The event bus: fields, call sites, ordering with deferred device timings, broken subscribers."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

from offload_core import events, offload, region
from offload_core.events import BUS, Event

from ..conftest import Recorder
from .kit import daxpy, fill

# The whole module runs on every backend: NumPy here, CuPy too where there is a GPU.
pytestmark = pytest.mark.usefixtures("backend")


def test_events_are_frozen_records_with_the_design_fields(rec: Recorder) -> None:
    offload(fill, np.zeros(4), 1.0)
    e = rec.of("d2h")[0]
    names = {f.name for f in dataclasses.fields(Event)}
    assert {"kind", "nbytes", "pinned", "start_ns", "duration_ns", "kernel", "launch", "param", "array",
            "callsite", "mode"} <= names
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.nbytes = 0  # type: ignore[misc]
    assert set(rec.kinds()) <= set(events.KINDS)


def test_copy_events_carry_kernel_launch_param_and_buffer_identity(rec: Recorder) -> None:
    y, x = np.zeros(16), np.ones(16)
    offload(daxpy, y, x, 1.0)
    offload(daxpy, y, x, 1.0)
    first, second = rec.of("h2d", "y")
    assert (first.kernel, first.launch, first.param) == ("daxpy", second.launch - 1, "y")
    assert first.array == second.array == y.__array_interface__["data"][0]
    assert rec.of("h2d", "x")[0].array != first.array
    assert all(e.mode == "batched" and e.region is None for e in rec.events)
    assert all(e.start_ns > 0 and e.duration_ns >= 0 for e in rec.events)


def test_callsite_is_the_users_line(rec: Recorder) -> None:
    y = np.zeros(4)
    line = sys._getframe().f_lineno + 1
    offload(fill, y, 1.0)
    sites = {e.callsite for e in rec.events}
    assert len(sites) == 1
    site = sites.pop()
    assert site is not None
    assert (site.file, site.line, site.function) == (__file__, line, "test_callsite_is_the_users_line")
    assert str(site) == f"{__file__}:{line} in test_callsite_is_the_users_line"


def test_region_events_carry_the_with_line(rec: Recorder) -> None:
    u = np.zeros(4)
    line = sys._getframe().f_lineno + 1
    with region(u):
        offload(fill, u, 1.0)
    assert rec.of("region_enter")[0].callsite.line == line  # type: ignore[union-attr]
    assert rec.of("h2d")[0].param == "u", "region copies are named after the caller's variable"
    assert rec.of("d2h")[0].launch is None and rec.of("d2h")[0].region is not None


def test_unsubscribe_stops_delivery() -> None:
    got: list[Event] = []
    unsubscribe = events.subscribe(got.append)
    offload(fill, np.zeros(4), 1.0)
    n = len(got)
    unsubscribe()
    offload(fill, np.zeros(4), 1.0)
    assert n > 0 and len(got) == n
    assert BUS.subscribers == ()


def test_a_raising_subscriber_is_removed_with_a_warning() -> None:
    def broken(event: Event) -> None:
        raise ValueError("observer bug")

    unsubscribe = events.subscribe(broken)
    y = np.zeros(4)
    with pytest.warns(RuntimeWarning, match="subscriber .*broken.* raised ValueError: observer bug; it has been unsubscribed"):
        offload(fill, y, 2.0)
    assert np.all(y == 2.0), "the computation completed regardless"
    assert broken not in BUS.subscribers
    unsubscribe()


def test_subscribe_takes_a_callable() -> None:
    with pytest.raises(TypeError, match="subscribe\\(\\) takes a callable"):
        events.subscribe(42)  # type: ignore[arg-type]


class LateTiming:
    """A device timing that becomes readable only when the test says so."""

    def __init__(self) -> None:
        self.done = False

    def ready(self) -> bool:
        return self.done

    def resolve(self) -> tuple[int, int]:
        self.done = True  # resolving waits for the device
        return 100, 5


def test_events_wait_in_issue_order_for_deferred_timings(rec: Recorder) -> None:
    late = LateTiming()
    BUS.emit_timed(late, kind="launch", kernel="k")
    BUS.emit(Event(kind="sync"))
    assert rec._events == [], "the ready event waits behind the pending one"
    events.flush()
    assert [e.kind for e in rec.events] == ["launch", "sync"]
    assert (rec.events[0].start_ns, rec.events[0].duration_ns) == (100, 5)


def test_unsubscribing_flushes_pending_events() -> None:
    got: list[Event] = []
    unsubscribe = events.subscribe(got.append)
    BUS.emit_timed(LateTiming(), kind="h2d", nbytes=8)
    assert got == []
    unsubscribe()
    assert [e.kind for e in got] == ["h2d"]


def test_launch_indices_count_every_launch_even_unobserved() -> None:
    start = BUS.launches
    offload(fill, np.zeros(2), 1.0)
    offload(fill, np.zeros(2), 1.0)
    assert BUS.launches == start + 2


def test_fingerprints_only_when_asked_and_they_follow_the_content() -> None:
    plain: list[Event] = []
    with_fp: list[Event] = []
    u1 = events.subscribe(plain.append)
    u2 = events.subscribe(with_fp.append, fingerprints=True)
    y, x = np.zeros(16), np.ones(16)
    offload(daxpy, y, x, 1.0)  # y: 0 -> 1
    offload(daxpy, y, x, 0.0)  # y unchanged: the re-upload carries the same fingerprint as the last download
    u1()
    u2()
    h2d_y = [e.fingerprint for e in with_fp if e.kind == "h2d" and e.param == "y"]
    d2h_y = [e.fingerprint for e in with_fp if e.kind == "d2h" and e.param == "y"]
    h2d_x = [e.fingerprint for e in with_fp if e.kind == "h2d" and e.param == "x"]
    assert h2d_y[0] != h2d_y[1] and h2d_y[1] == d2h_y[0] == d2h_y[1]
    assert h2d_x[0] == h2d_x[1] and len(h2d_x[0]) == 16  # type: ignore[arg-type]
    assert all(e.fingerprint is None for e in with_fp if e.kind not in ("h2d", "d2h"))
    assert BUS.fingerprinting == ()
    # the other subscriber sees the same events (the fingerprint is a field of the shared record)
    assert [e.kind for e in plain] == [e.kind for e in with_fp]


def test_the_queue_of_pending_events_stays_bounded(rec: Recorder) -> None:
    from offload_core.events import PENDING_HARD_LIMIT, PENDING_SOFT_LIMIT

    first = LateTiming()
    BUS.emit_timed(first, kind="launch", kernel="k0")
    for i in range(PENDING_HARD_LIMIT + 10):
        BUS.emit_timed(LateTiming(), kind="launch", kernel=f"k{i + 1}")
    assert PENDING_SOFT_LIMIT <= len(BUS._pending) <= PENDING_HARD_LIMIT, "past the hard limit the oldest are waited for"
    assert [e.kernel for e in rec._events[:3]] == ["k0", "k1", "k2"], "still in issue order"
    events.flush()
    assert len(rec.events) == PENDING_HARD_LIMIT + 11


def test_call_site_caches_stay_bounded_with_code_made_on_the_fly(monkeypatch: pytest.MonkeyPatch) -> None:
    from offload_core import events as ev

    monkeypatch.setattr(ev, "SITE_CACHE", 16)
    ev._SITES.clear()
    ev._INTERNAL.clear()
    sites = []
    for i in range(50):  # each exec makes a new code object, as generated code in a loop would
        scope: dict[str, object] = {"ev": ev}
        exec(compile(f"site = ev.callsite(1)  # {i}", f"<generated {i}>", "exec"), scope)
        sites.append(scope["site"])
    assert len(ev._SITES) <= 16 and len(ev._INTERNAL) <= 16
    assert [s.file for s in sites] == [f"<generated {i}>" for i in range(50)]  # type: ignore[attr-defined]
    twice = [ev.callsite(1) for _ in range(2)]  # one instruction, twice: the cached record
    assert twice[0] is twice[1]


def test_row_subscribers_get_the_same_events_as_tuples() -> None:
    got: list[Event] = []
    rows: list[tuple[object, ...]] = []
    stop_events = events.subscribe(got.append)
    stop_rows = events.subscribe(rows.append, rows=True)
    try:
        y, x = np.zeros(8), np.ones(8)
        offload(daxpy, y, x, 1.0)
        with region(x, y):
            offload(daxpy, y, x, 1.0)
        n = len(rows)
        BUS.emit_timed(LateTiming(), kind="launch", kernel="late")
        assert len(rows) == n, "a timing the device has not reached holds rows back too"
    finally:
        stop_events()
        stop_rows()
    assert events.ROW_FIELDS == tuple(f.name for f in dataclasses.fields(Event))
    assert [tuple(getattr(e, n) for n in events.ROW_FIELDS) for e in got] == rows
    assert all(type(r) is tuple for r in rows) and rows[-1][5] == "late" and rows[-1][3:5] == (100, 5), \
        "the late timing filled in on flush"
    assert {r[0] for r in rows} >= {"alloc", "h2d", "launch", "d2h", "sync", "free", "region_enter", "region_exit"}


def test_watchers_see_each_event_as_it_is_issued_even_while_timings_wait() -> None:
    seen: list[tuple[object, ...]] = []
    delivered: list[Event] = []
    stop_rows = events.subscribe(delivered.append)
    stop = events.watch(seen.append)
    try:
        assert seen.append in BUS.subscribers, "a watcher counts as a subscriber, so launches build their events"
        BUS.emit_timed(LateTiming(), kind="h2d", nbytes=8, param="x")
        BUS.emit(Event(kind="sync"))
        assert [(r[0], r[1], r[7]) for r in seen] == [("h2d", 8, "x"), ("sync", 0, None)], "at once, in issue order"
        assert delivered == [], "subscribers still wait for the device timing"
        events.flush()
        assert [e.kind for e in delivered] == ["h2d", "sync"] and len(seen) == 2, "a watcher sees each event once"
        y, x = np.zeros(8), np.ones(8)
        offload(daxpy, y, x, 1.0)
        assert [r[0] for r in seen[2:] if r[0] in ("h2d", "d2h")] == ["h2d", "h2d", "d2h"]
    finally:
        stop()
        stop_rows()
    assert seen.append not in BUS.subscribers
    n = len(seen)
    offload(daxpy, np.zeros(8), np.ones(8), 1.0)
    assert len(seen) == n, "stopped"
    with pytest.raises(TypeError, match="watch\\(\\) takes a callable"):
        events.watch(3)  # type: ignore[arg-type]
