"""The run as a program to replay: who did what, in which order, waiting for whom.

A trace says when each operation ran, not why it ran then. To ask "what
if this copy were not made", the replay needs the why: the *resources*
(the host thread; the copy engines, one per direction; the compute
stream) and the *edges* between operations (program order on the host,
stream order on the device, the host waiting for the device in a sync or
a blocking copy, the host issuing device work). `Timeline.of(run)` infers
them from the records, in issue order, once; `profiler.analysis.replay.schedule`
then re-times the program with a change applied.

What a trace does not record, the inference assumes, and docs/profiler.md
lists the assumptions:

* **Host work is the time between host-side events.** Allocations,
  frees and syncs carry host times. A device operation (copy, kernel)
  carries its device start; when the device was idle just before it (its
  engine and its stream were done more than `IDLE_NS` earlier), it ran
  as soon as it was issued, so the host issued it then; when it was
  queued behind other work, the host issued it earlier, at the latest
  point the inference knows the host was at (so host work in a queued
  stretch is charged to the next host-side event, which is where it shows
  when the device gets faster).
* **Blocking.** On a backend that runs everything on the host thread
  (NumPy), every copy and kernel holds the host; elsewhere a copy from or
  to pageable memory does (CUDA stages it through the host and completes
  a pageable download before returning), a pinned copy and a kernel do
  not. A blocking copy that was queued holds the host from the point the
  host is known to have reached (the call's own entry is not recorded).
* **Streams.** The trace names no streams. Operations that never
  overlapped are taken to be in order on one stream (the default stream,
  as CuPy and PyTorch use it); one that overlapped earlier work runs on
  another (an asynchronous copy on a side stream), so it neither waits for
  that work nor holds it up. Engines are likewise split into lanes where
  two copies of one direction overlapped.
* **The machinery of one call.** Host time between two records of the
  same `offload()` call (one launch index), or of the same region's
  entry (or exit, or `update_host`), is offload_core's own work for that
  call (checks, allocation, staging), not the program's: it belongs to
  the record that follows it and goes when that record is dropped
  (`joined`). Host time between records of different calls is the
  program's and stays, and so does the time after a copy recorded with a
  fingerprint: that is the recorder digesting the copied bytes, which an
  unrecorded run does not do at all. A region's entry marks where the
  host was (its exit record spans the copies it made and marks nothing).
* **Syncs** wait for the streams that were done when the host resumed;
  what the sync cost beyond that (its own call, the wake-up) stays.
* **offload_core settles its uploads.** An upload from page-locked
  memory runs asynchronously, but offload_core waits for it to land
  before control returns to the program (`settle_uploads`: the program
  may write the host bytes next), at the end of the region call that made
  it or, for a launch's own upload, after the kernel is issued. No record
  marks that wait; a recorder's digest of the copied bytes usually hides
  it. So such an upload (`settles`) holds the host at the first record of
  the next call, or at its launch's next host-side record after the
  kernel: the host waits there for it after the recording's cost in that
  gap (the digest ran while the copy did) and before the program's own
  work (`settle_wait`: the part of the gap the trace shows it waited).
  A trace whose host was there before the copy ended shows no such wait,
  and none is assumed.
* **The end of the run** waits for the device (the recording flushes
  device timings before it stops).
* **The recording's own cost.** Recording a launch or an event costs the
  host time an unrecorded program does not spend: offload_core's
  recorder finds the call site, times the launch and delivers the event;
  CUPTI's kernel records cost the driver time in every launch, and its
  callbacks on copies and syncs cost Python time in every such call.
  Digesting a copy's bytes for its fingerprint costs time in proportion
  to them. Where the run's link profile says how much (`offload-prof
  calibrate` measures `recorded_launch_us`, `recorded_event_us`,
  `cupti_launch_us`, `cupti_event_us` and `digest_gbps`), that much of
  the host's time around each record is the recording's (`recording`:
  before a record, or after one that held the host or was digested; what
  a gap cannot hold is charged to the next ones). CUPTI calls back where
  the call is made: a copy's callbacks (and their walk of the Python
  stack) run on its entry, before it, whether or not it then holds the
  host (only its digest lies after it); a sync is timed from its entry
  callback's return to its exit callback, so its span holds the callbacks
  of the driver call nested in it (on an idle device a sync that costs a
  fraction of a microsecond unrecorded spans 9-13 µs recorded, H100,
  2026-12-06): its cost lies first in its own span beyond the wait
  (`cost_recording`, taken off its `cost`), the rest after it. What lies
  after a sync's or a held copy's wait (the exit callbacks) the tracer
  times in the run (`Meta.exits_ns`); where it did, that figure lies
  after the record, beyond the calibrated average if need be, and the
  average's rest before it. A fix that
  drops the copy and the sync of a scalar read then takes their
  recording's cost with it rather than counting it as saved (CuPy's
  per-step `float(res)`, host-bound, was priced 67% high). A fix is
  priced on the program without it (`schedule.replayed_wall`): the
  saving is what the unrecorded program would save, whether the
  recording's cost lay on the critical path (a scalar read's callbacks
  while the device idles) or not. Without the figures nothing is set
  aside, and a fix that removes
  many launches of a host-bound loop is over-priced by the recording's
  cost of each.

The parameters are chosen so that replaying the unchanged program gives
back every device operation's start and the run's wall time exactly; the
tests check this on hand-built timelines, recorded programs and the
suite's recordings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np

from ...trace.columns import NULL
from ...trace.model import Run
from ...trace.records import KINDS

if TYPE_CHECKING:
    from ...trace.columns import Columns

#: what a record is to the replay
MARKER, HOST, WAIT, DEVICE = 0, 1, 2, 3
#: device engines; a lane is one engine of a kind (two overlapping H2D copies need two)
ENGINES: Final = {"h2d": 0, "d2h": 1, "launch": 2}
ENGINE_NAMES: Final = ("H2D copy engine", "D2H copy engine", "compute")
#: a device operation that started within this long after its engine and stream were free was queued
IDLE_NS: Final = 2_000
#: backends on which the host thread itself does every copy and kernel
HOST_EXECUTED: Final = frozenset({"numpy"})
#: stands for "never": a lane or stream with nothing on it yet
NEVER: Final = -(1 << 62)

# device-to-device copies, memsets and NCCL's collectives run on the device beside kernels (torch.distributed's calls
# hold the host instead: `Timeline.of`)
_ROLE_OF_KIND = {"h2d": DEVICE, "d2h": DEVICE, "launch": DEVICE, "sync": WAIT, "alloc": HOST, "free": HOST,
                 "region_enter": HOST, "region_exit": MARKER, "d2d": DEVICE, "memset": DEVICE, "collective": DEVICE}
_ENGINE_OF_KIND = np.array([ENGINES.get(k, ENGINES["launch"] if _ROLE_OF_KIND[k] == DEVICE else -1) for k in KINDS],
                           dtype=np.int8)
_ROLES = np.array([_ROLE_OF_KIND[k] for k in KINDS], dtype=np.int8)
_ASYNC = [KINDS.index(k) for k in ("launch", "d2d", "memset", "collective")]


@dataclass(frozen=True, eq=False)
class Timeline:
    """A run as a program: one entry per record, in issue order, as Python lists (the replay walks them).

    `role` is MARKER, HOST, WAIT or DEVICE. `gap` is the host's own work
    before the record (ns). HOST records hold the host for `duration`.
    DEVICE records run for `duration` on `lane` (an engine) and `stream`,
    released `offset` ns (<= 0) from the host's position when it reaches
    them, no sooner than `device_gap` after their lane and stream were
    free; `blocking` ones hold the host until they end. WAIT records wait
    for the streams in `waits`, then cost `cost` more (`cost_recording` of
    it the recording's). `end_cost` is what
    the end of the run costs after the last record and the device are done.
    `lane_engine` gives each lane's engine (an index into `ENGINE_NAMES`).
    """

    role: list[int]
    duration: list[int]
    gap: list[int]
    offset: list[int]
    device_gap: list[int]
    lane: list[int]
    stream: list[int]
    blocking: list[bool]
    waits: list[tuple[int, ...]]
    cost: list[int]
    end_cost: int
    lane_engine: tuple[int, ...]
    streams: int
    wall_ns: int
    #: the host position the inference reached after each record (for attribution and tests)
    host_after: list[int]
    #: device operations that waited on the device for earlier work (False: started as soon as issued)
    queued: list[bool]
    #: records of the same launch as the record before them: their `gap` is that launch's machinery
    joined: list[bool]
    #: the part of each `gap` that is the recording's own cost, which fixes are priced without (module docstring)
    recording: list[int]
    #: offload_core uploads that hold the host until they land, at their call's end (module docstring)
    settles: list[bool]
    #: per record, -1, or: the host first waits for the settling uploads before it (after the recording's cost in
    #: its gap), and this much of the gap was that wait in the trace
    settle_wait: list[int]
    #: per record, the part of a WAIT's `cost` that is the recording's own (a CUPTI sync's span holds the callbacks
    #: of the driver call nested in it): a fix is priced without it, as without `recording`
    cost_recording: list[int]

    def __len__(self) -> int:
        return len(self.role)

    @classmethod
    def of(cls, run: Run) -> Timeline:
        """Infer the program of `run` (see the module docstring for what is assumed)."""
        c = run.columns
        n = len(c)
        role_codes = _ROLES[c.kind] if n else np.zeros(0, dtype=np.int8)
        engine_codes = _ENGINE_OF_KIND[c.kind] if n else np.zeros(0, dtype=np.int8)
        calls = _collective_calls(c)
        if calls.any():  # torch.distributed's calls hold the host; NCCL's kernels run on the device
            role_codes = np.where(calls, HOST, role_codes)
            engine_codes = np.where(calls, -1, engine_codes)
        roles, engines = role_codes.tolist(), engine_codes.tolist()
        starts = c.start_ns.tolist()
        durations = c.duration_ns.tolist()
        host_run = run.meta.backend in HOST_EXECUTED
        blocking = (np.ones(n, dtype=bool) if host_run else ~np.isin(c.kind, _ASYNC) & ~c.pinned).tolist()
        same_call = _same_call(run)
        settles = ((c.kind == KINDS.index("h2d")) & c.pinned & ((c.launch != NULL) | (c.region != NULL))
                   if not host_run and run.meta.backend != "cupti" and n else np.zeros(n, dtype=bool))
        return _infer(roles, engines, starts, durations, blocking, run.meta.wall_ns, _joined(run, same_call).tolist(),
                      recording_costs(run).tolist(), (c.fingerprint >= 0).tolist(), c.process.tolist(),
                      digest_costs(run).tolist() if run.meta.backend == "cupti" else None,
                      settles.tolist(), same_call.tolist(), (c.kind == KINDS.index("launch")).tolist(),
                      run.meta.exits_ns)


def recording_costs(run: Run) -> np.ndarray:
    """Per record, the host time recording it cost (ns), from the run's link profile; zeros where unknown."""
    c = run.columns
    costs = np.zeros(len(c), dtype=np.int64)
    link = run.meta.link
    if link is None or not len(c):
        return costs
    cupti = run.meta.backend == "cupti"
    launch_us = link.cupti_launch_us if cupti else link.recorded_launch_us
    event_us = link.cupti_event_us if cupti else link.recorded_event_us
    launches = c.kind == KINDS.index("launch")
    if launch_us:
        costs[launches] = int(launch_us * 1e3)
    if event_us:  # torch.distributed's calls come from offload_core's bus, not from CUPTI's callbacks
        others = ~launches & (c.kind != KINDS.index("collective")) if cupti else ~launches
        costs[others] = int(event_us * 1e3)
    return costs + digest_costs(run)


def digest_costs(run: Run) -> np.ndarray:
    """Per record, the part of its recording cost that is the digest of its bytes (ns; zeros where unknown), at the
    rate the link gives a buffer of its size (`Link.digest_ns`)."""
    c = run.columns
    costs = np.zeros(len(c), dtype=np.int64)
    link = run.meta.link
    if link is not None and (link.digest_gbps or link.digest_small_gbps) and len(c):
        digested = c.fingerprint >= 0
        sizes, where = np.unique(c.nbytes[digested], return_inverse=True)
        costs[digested] = np.array([link.digest_ns(int(b)) for b in sizes], dtype=np.int64)[where]
    return costs


def _collective_calls(c: Columns) -> np.ndarray:
    """The collective records that are a host's call (torch.distributed's) rather than NCCL's kernels."""
    nccl = [i for i, name in enumerate(c.kernels) if name.startswith("nccl")]
    return (c.kind == KINDS.index("collective")) & ~np.isin(c.kernel, nccl)


def _same_call(run: Run) -> np.ndarray:
    """Records of the same offload_core call as the record before them: one launch index, or one region's entry
    (or exit, or `update_host`) with no launch index."""
    c = run.columns
    out = np.zeros(len(c), dtype=bool)
    if len(c) < 2:
        return out
    launch, region, kind = c.launch, c.region, c.kind
    same_launch = (launch[1:] == launch[:-1]) & (launch[1:] != NULL)
    codes = {k: KINDS.index(k) for k in KINDS}
    entering = np.isin(kind[:-1], [codes["region_enter"], codes["alloc"], codes["h2d"]])
    leaving = np.isin(kind[1:], [codes["d2h"], codes["sync"], codes["free"], codes["region_exit"]])
    same_region = ((launch[1:] == NULL) & (launch[:-1] == NULL) & (region[1:] == region[:-1]) & (region[1:] != NULL)
                   & ~(entering & leaving))  # from a region's entry to its exit lies the program's body
    out[1:] = same_launch | same_region
    return out


def _joined(run: Run, same_call: np.ndarray | None = None) -> np.ndarray:
    """Records whose preceding host time was their own call's machinery (see the module docstring)."""
    c = run.columns
    out = _same_call(run) if same_call is None else same_call.copy()
    if len(c) < 2:
        return out
    digested = np.isin(c.kind[:-1], [KINDS.index("h2d"), KINDS.index("d2h")]) & (c.fingerprint[:-1] >= 0)
    out[1:] &= ~digested  # the recorder's digest of the copy before is no machinery
    return out


def _infer(roles: list[int], engines: list[int], starts: list[int], durations: list[int], blocking: list[bool],
           wall_ns: int, joined: list[bool], costs: list[int], digested: list[bool], processes: list[int],
           digests: list[int] | None = None, settles: list[bool] | None = None, same_call: list[bool] | None = None,
           launches: list[bool] | None = None, exits: tuple[int, int] = (0, 0)) -> Timeline:
    """The inference of `Timeline.of`; `digests`: the digest part of each record's cost, where the rest of it is
    the call's, spent as the call is made (CUPTI's callbacks; a sync's first within its own span), not where the
    digest lies; `settles`: uploads the host waits for at the end of their call (`same_call`: records of the call
    of the record before them; `launches`: kernel launches, after which a launch's own host-side record ends it);
    `exits`: what the tracer timed of its exit callbacks after a sync's and a held copy's wait (`Meta.exits_ns`),
    which lies after the record whatever the calibration says (0: not timed, the calibrated rest lies there)."""
    n = len(roles)
    settles = [False] * n if settles is None else list(settles)
    same_call = [False] * n if same_call is None else same_call
    launches = [False] * n if launches is None else launches
    settle_at = [NEVER] * n  # where the host waits for settling uploads: the latest end of them (trace time)
    before = [0] * n  # the host's position before each record's gap
    pending, launched = NEVER, False
    pending_uploads: list[int] = []
    gap, offset, device_gap = [0] * n, [0] * n, [0] * n
    lane, stream = [-1] * n, [-1] * n
    waits: list[tuple[int, ...]] = [()] * n
    cost = [0] * n
    host_after = [0] * n
    queued = [False] * n
    lane_end: list[int] = []
    lane_engine: list[int] = []
    engine_lanes: list[list[int]] = [[] for _ in ENGINES]
    stream_end: list[int] = []
    all_streams: list[int] = []
    issued_by = _issued_by(roles, starts, processes)
    f = 0  # where the host is
    for i in range(n):
        role, s, d = roles[i], starts[i], durations[i]
        before[i] = f
        if pending != NEVER and role != MARKER and (not same_call[i] or (launched and role != DEVICE)):  # call ends
            bound = s if role != DEVICE else s if s < issued_by[i] else issued_by[i]
            if pending <= bound:  # the host reached this record after the uploads landed, as offload_core waited
                settle_at[i] = pending
            else:  # the trace says otherwise: no wait is assumed
                for j in pending_uploads:
                    settles[j] = False
            pending, pending_uploads, launched = NEVER, [], False
        if role == HOST:
            a = s if s > f else f
            gap[i] = a - f
            f = a + d
        elif role == WAIT:
            a = s if s > f else f
            b = s + d if s + d > a else a
            gap[i] = a - f
            done = tuple(k for k, end in enumerate(stream_end) if end <= b)
            waits[i] = done
            ready = max((stream_end[k] for k in done), default=a)
            cost[i] = b - (ready if ready > a else a)
            f = b
        elif role == DEVICE:
            engine = engines[i]
            lane[i] = ln = _pick(lane_end, s, engine_lanes[engine])
            if ln == len(lane_end):
                lane_end.append(NEVER)
                lane_engine.append(engine)
                engine_lanes[engine].append(ln)
            stream[i] = st = _pick(stream_end, s, all_streams)
            if st == len(stream_end):
                stream_end.append(NEVER)
                all_streams.append(st)
            ready = lane_end[ln] if lane_end[ln] > stream_end[st] else stream_end[st]
            latest = issued_by[i]
            if s - ready > IDLE_NS and latest > ready:  # the device was idle: issued when it started (or by `latest`)
                issue = s if s < latest else latest
                if issue >= f:
                    gap[i] = issue - f
                    f = issue
                offset[i] = s - f
            else:  # queued behind earlier work (or issued before that work ended): issued no later than the host was
                queued[i] = True
                device_gap[i] = s - ready
                if settle_at[i] > f:  # issued after the host waited for its call's uploads
                    gap[i] = settle_at[i] - f
                    f = settle_at[i]
                if blocking[i] and f < latest < s + d:  # the host entered the call at `latest` and waited in it
                    gap[i] = latest - f
                    f = latest
                offset[i] = s - f if s < f else 0
            end = s + d
            lane_end[ln] = stream_end[st] = end
            if blocking[i] and end > f:
                f = end
            if settles[i]:
                pending = end if end > pending else pending
                pending_uploads.append(i)
            elif launches[i] and pending != NEVER:
                launched = True
        host_after[i] = f
    for j in pending_uploads:  # the run ended first: nothing waited for them
        settles[j] = False
    device_done = max(stream_end, default=f)
    end_cost = wall_ns - (device_done if device_done > f else f)
    holds = [bool(b) and r == DEVICE for b, r in zip(blocking, roles)]
    when = [_placement(h or r == WAIT, d, e) for h, r, d, e in zip(holds, roles, digested, engines)]
    late = [0 if w == _BEFORE else c for w, c in zip(when, costs)]
    inside = [0] * n
    if digests is not None:  # CUPTI: a copy's callbacks ran at its call, a sync's nested ones within its span
        sync_exit, copy_exit = exits
        inside = [(c if c < k else k) if r == WAIT else 0 for r, c, k in zip(roles, costs, cost)]
        late = [(sync_exit or c - k) if r == WAIT else (x if x < c else c) + (copy_exit if h else 0)
                if w != _BEFORE else 0 for w, r, h, c, k, x in zip(when, roles, holds, costs, inside, digests)]
    early = [c - x - k if c > x + k else 0 for c, x, k in zip(costs, late, inside)]
    recording = _set_aside(gap, early, late, when, roles)
    settle_wait = [-1] * n
    for i, at in enumerate(settle_at):
        if at != NEVER:  # after the recording's cost in the gap (a digest ran while the copy did), the wait
            waited = at - before[i] - recording[i]
            room = gap[i] - recording[i]
            settle_wait[i] = 0 if waited < 0 else room if waited > room else waited
    return Timeline(roles, list(durations), gap, offset, device_gap, lane, stream, holds, waits, cost, end_cost,
                    tuple(lane_engine), len(stream_end), wall_ns, host_after, queued, joined, recording, settles,
                    settle_wait, inside)


def _issued_by(roles: list[int], starts: list[int], processes: list[int]) -> list[int]:
    """Per record, the latest host time by which it was issued: the earliest start of a host-side record after it.

    Records are in issue order, so the host issued a device operation
    before it reached any host-side record that follows it (a sync, an
    allocation), whose start is a host time. A CUPTI trace thus shows that
    a scalar read's download was issued when its call began (the sync
    that spans the call starts then), although the copy started on the
    device later, after the kernels before it: without the bound, the
    host's wait for those kernels would be taken for host work.
    `-NEVER` where no host-side record follows. Only records of the same
    process count: another process's records are in order of time, not of
    this process's issue.
    """
    out = [-NEVER] * len(roles)
    latest: dict[int, int] = {}
    for i in range(len(roles) - 1, -1, -1):
        process = processes[i]
        bound = latest.get(process, -NEVER)
        out[i] = bound
        if roles[i] in (HOST, WAIT) and starts[i] < bound:
            latest[process] = starts[i]
    return out


#: where a record's recording cost lies (`_set_aside`)
_BEFORE, _AFTER, _AFTER_WAIT = 0, 1, 2


def _placement(held: bool, digested: bool, engine: int) -> int:
    """Where a record's recording cost lies (see `_set_aside`)."""
    if held:
        return _AFTER
    if digested:
        return _AFTER_WAIT if engine == ENGINES["d2h"] else _AFTER
    return _BEFORE


def _set_aside(gap: list[int], early: list[int], late: list[int], when: list[int], roles: list[int]) -> list[int]:
    """The recording's cost within each gap: what records cost that earlier gaps could not hold.

    A record's cost lies in its own gap (`_BEFORE`: its call was made
    there); a record that held the host (a sync, a blocking copy) is
    recorded when the wait ends (the call's exit callback, the event's
    delivery), and a copy's bytes are digested once it is made, so their
    cost lies in the gaps after them (`_AFTER`), where the device may be
    idle; an asynchronous download's bytes are final, and digested, only
    when the next sync returns (`_AFTER_WAIT`). `early` is the part of a
    record's cost that lies in its own gap whatever `when` says (a CUPTI
    copy's callbacks, made as its call is, blocking or not: only its
    digest lies later), `late` the part `when` places; a CUPTI sync's cost
    that its own span held (`Timeline.cost_recording`) is in neither.
    """
    out = [0] * len(gap)
    owed = waiting = 0
    for i, g in enumerate(gap):
        owed += early[i]
        if owed and g:
            take = owed if owed < g else g
            out[i] = take
            owed -= take
        if when[i] == _AFTER:
            owed += late[i]
        elif when[i] == _AFTER_WAIT:
            waiting += late[i]
        if roles[i] == WAIT and waiting:
            owed += waiting
            waiting = 0
    return out  # what is still owed or waiting at the end has no host time after it to lie in


def _pick(ends: list[int], start: int, candidates: list[int]) -> int:
    """The lane (or stream) an operation starting at `start` followed: the one free latest but by then.

    None free by then (the operation overlapped all of them): a new one, `len(ends)`.
    """
    if len(candidates) == 1 and ends[candidates[0]] <= start:
        return candidates[0]
    best, best_end = len(ends), NEVER - 1
    for k in candidates:
        e = ends[k]
        if best_end < e <= start:
            best, best_end = k, e
    return best
