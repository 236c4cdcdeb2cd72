"""Re-timing a `Timeline`, with or without a `Fix`: the replayed wall time, and when each record ran.

One pass in issue order, keeping where the host is, when each lane
(engine) and each stream is next free, and nothing else: a device
operation starts when the host has issued it and its lane and stream are
free; a blocking one holds the host until it ends; a sync holds the host
until the streams it waits for are done; the end of the run waits for
the device. A dropped record costs nothing but the host's own work
before it (the replay cannot tell a program's work from the cost of
preparing the dropped operation, so that part of a saving is left out);
its successors on the stream then follow its predecessor.

The saving of a fix is `replayed_wall(original) - replayed_wall(fixed)`,
both replayed without the recording's own cost (`Timeline.recording`,
and `Timeline.cost_recording` within a sync's span):
what the unrecorded program would save. Both replays make the same
assumptions, so what the assumptions get wrong mostly cancels. `replay`
keeps the recording's cost, so that replaying the original gives back
the run's own wall time and every device operation's start (the
inference is built that way); `replayed_wall(t, recorded=True)` is its
wall time.

A report replays the same timeline once per finding, and a fix changes
records from some index on: everything before its first changed record
replays exactly as the unfixed program did. So the unfixed replay keeps
its state (the host's position, when each lane and stream is next free)
every `CHECKPOINT_EVERY` records, and a fixed replay starts from the
last checkpoint before the fix's first record. A fix of the copies of a
checkpoint save at the end of a training run then replays only the end.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Final, Mapping

from .timeline import DEVICE, HOST, NEVER, WAIT, Timeline


@dataclass(frozen=True)
class Fix:
    """A change of records: what the program would do with a finding's advice applied.

    `drop`: records that no longer happen (copies kept resident or
    hoisted, syncs no longer made). `durations`: records that still happen
    but take this long (a copy from page-locked memory, several small
    copies packed into one). `nonblocking`: copies the host no longer
    waits for (the sync that made it wait is gone). `host_cut`: how much
    of the host work before a record goes too, because it was the cost of
    issuing what no longer happens (`ALL`: all of it, as for launches fused
    into one). `action` names the advice in a few words ("keep resident",
    "page-lock", ...).
    """

    action: str
    drop: frozenset[int] = frozenset()
    durations: Mapping[int, int] = field(default_factory=dict)
    nonblocking: frozenset[int] = frozenset()
    host_cut: Mapping[int, int] = field(default_factory=dict)

    @property
    def records(self) -> frozenset[int]:
        """Every record the fix changes."""
        return self.drop | frozenset(self.durations) | self.nonblocking | frozenset(self.host_cut)

    def __or__(self, other: Fix) -> Fix:
        """Both fixes applied (a dropped record stays dropped)."""
        action = self.action if self.action == other.action else f"{self.action} + {other.action}"
        return Fix(action, self.drop | other.drop, {**self.durations, **other.durations},
                   self.nonblocking | other.nonblocking, {**self.host_cut, **other.host_cut})


NO_FIX = Fix("none")
#: a `host_cut` that takes all the host work before a record
ALL = 1 << 62


@dataclass(frozen=True)
class Schedule:
    """A replay's outcome: the wall time, and each record's start and end (host time for host-side records).

    Dropped records and markers have start == end == where the host was.
    """

    wall_ns: int
    start: list[int]
    end: list[int]


#: records between two saved states of an unfixed replay
CHECKPOINT_EVERY: Final = 4096
#: (index, host position, lane ends, stream ends, latest end of the uploads the host has yet to wait for) before that
#: index of the unfixed replay
_State = tuple[int, int, list[int], list[int], int]
#: timeline -> recorded -> the unfixed replay's saved states, in index order (dropped with the timeline)
_CHECKPOINTS: weakref.WeakKeyDictionary[Timeline, dict[bool, list[_State]]] = weakref.WeakKeyDictionary()


def replayed_wall(timeline: Timeline, fix: Fix = NO_FIX, *, recorded: bool = False) -> int:
    """The wall time of the program with `fix` applied, unrecorded (or as recorded: the recording's cost kept)."""
    changed = fix.records
    if not changed:
        return _replay(timeline, fix, None, None, recorded, save=True)
    states = _CHECKPOINTS.get(timeline, {}).get(recorded)
    if states is None:  # the unfixed replay saves them; a report makes it first anyway
        replayed_wall(timeline, recorded=recorded)
        states = _CHECKPOINTS.get(timeline, {}).get(recorded, [])
    first = min(changed)
    start = None
    for state in states:
        if state[0] > first:
            break
        start = state
    return _replay(timeline, fix, None, None, recorded, start=start)


def replay(timeline: Timeline, fix: Fix = NO_FIX) -> Schedule:
    """The whole schedule of the program with `fix` applied, the recording's own cost kept (the trace's time base)."""
    n = len(timeline)
    start, end = [0] * n, [0] * n
    wall = _replay(timeline, fix, start, end, True)
    return Schedule(wall, start, end)


def saving(timeline: Timeline, fix: Fix) -> int:
    """Wall time the fix saves the unrecorded program: replayed(original) - replayed(fixed); negative if it costs."""
    return replayed_wall(timeline) - replayed_wall(timeline, fix)


def _replay(t: Timeline, fix: Fix, starts: list[int] | None, ends: list[int] | None, recorded: bool, *,
            start: _State | None = None, save: bool = False) -> int:
    """The replayed wall time, from `start` (a saved state of the unfixed replay) or from the first record;
    with `save`, the states every `CHECKPOINT_EVERY` records are kept for later replays of `t`."""
    if start is None:
        lane_end = [NEVER] * len(t.lane_engine)
        stream_end = [NEVER] * t.streams
        begin, f, pending = 0, 0, NEVER
    else:
        begin, f, lane_end, stream_end, pending = start[0], start[1], list(start[2]), list(start[3]), start[4]
    n = len(t.role)
    states: list[_State] | None = [] if save else None
    for chunk in range(begin, n, CHECKPOINT_EVERY):
        if states is not None:
            states.append((chunk, f, list(lane_end), list(stream_end), pending))
        f, pending = _replay_range(t, fix, starts, ends, recorded, chunk, min(chunk + CHECKPOINT_EVERY, n), f,
                                   lane_end, stream_end, pending)
    if states is not None:
        _CHECKPOINTS.setdefault(t, {})[recorded] = states
    device_done = max(stream_end, default=f)
    return (device_done if device_done > f else f) + t.end_cost


def _replay_range(t: Timeline, fix: Fix, starts: list[int] | None, ends: list[int] | None, recorded: bool,
                  begin: int, stop: int, f: int, lane_end: list[int], stream_end: list[int],
                  pending: int) -> tuple[int, int]:
    """Replay records `begin` to `stop` from host position `f`, updating `lane_end` and `stream_end` in place;
    the host's position after them, and the latest end of the settling uploads it has yet to wait for."""
    role, duration, gap, offset = t.role, t.duration, t.gap, t.offset
    device_gap, lane, stream, blocking = t.device_gap, t.lane, t.stream, t.blocking
    waits, cost, joined, recording = t.waits, t.cost, t.joined, t.recording
    settles, settle_wait, cost_recording = t.settles, t.settle_wait, t.cost_recording
    drop, durations, nonblocking, host_cut = fix.drop, fix.durations, fix.nonblocking, fix.host_cut
    for i in range(begin, stop):
        r = role[i]
        own = gap[i] - recording[i]  # the program's own host work before the record
        waited = settle_wait[i]
        if waited >= 0:  # the call before returned here, once its uploads had landed: after the recording's cost
            if recorded:
                f += recording[i]
            if pending > f:
                f = pending
            pending = NEVER
            own -= waited  # the trace's wait is not the program's work
        if not joined[i] or i not in drop:
            cut = host_cut.get(i, 0) if host_cut else 0
            f += own - cut if own > cut else 0
        if recorded and waited < 0:  # the recording's cost, which no fix takes away
            f += recording[i]
        if i in drop:
            if starts is not None and ends is not None:
                starts[i] = ends[i] = f
            continue
        s = e = f
        if r == DEVICE:
            ln, st = lane[i], stream[i]
            ready = (lane_end[ln] if lane_end[ln] > stream_end[st] else stream_end[st]) + device_gap[i]
            release = f + offset[i]
            s = release if release > ready else ready
            e = s + durations.get(i, duration[i])
            lane_end[ln] = stream_end[st] = e
            if blocking[i] and e > f and i not in nonblocking:
                f = e
            if settles[i] and e > pending:
                pending = e
        elif r == HOST:
            e = f = f + durations.get(i, duration[i])
        elif r == WAIT:
            ready = f
            for k in waits[i]:
                if stream_end[k] > ready:
                    ready = stream_end[k]
            e = f = ready + cost[i] - (0 if recorded else cost_recording[i])
        if starts is not None and ends is not None:
            starts[i], ends[i] = s, e
    return f, pending
