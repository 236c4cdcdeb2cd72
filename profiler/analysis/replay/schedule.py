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
both replayed without the recording's own cost (`Timeline.recording`):
what the unrecorded program would save. Both replays make the same
assumptions, so what the assumptions get wrong mostly cancels. `replay`
keeps the recording's cost, so that replaying the original gives back
the run's own wall time and every device operation's start (the
inference is built that way); `replayed_wall(t, recorded=True)` is its
wall time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

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


def replayed_wall(timeline: Timeline, fix: Fix = NO_FIX, *, recorded: bool = False) -> int:
    """The wall time of the program with `fix` applied, unrecorded (or as recorded: the recording's cost kept)."""
    return _replay(timeline, fix, None, None, recorded)


def replay(timeline: Timeline, fix: Fix = NO_FIX) -> Schedule:
    """The whole schedule of the program with `fix` applied, the recording's own cost kept (the trace's time base)."""
    n = len(timeline)
    start, end = [0] * n, [0] * n
    wall = _replay(timeline, fix, start, end, True)
    return Schedule(wall, start, end)


def saving(timeline: Timeline, fix: Fix) -> int:
    """Wall time the fix saves the unrecorded program: replayed(original) - replayed(fixed); negative if it costs."""
    return replayed_wall(timeline) - replayed_wall(timeline, fix)


def _replay(t: Timeline, fix: Fix, starts: list[int] | None, ends: list[int] | None, recorded: bool) -> int:
    role, duration, gap, offset = t.role, t.duration, t.gap, t.offset
    device_gap, lane, stream, blocking = t.device_gap, t.lane, t.stream, t.blocking
    waits, cost, joined, recording = t.waits, t.cost, t.joined, t.recording
    drop, durations, nonblocking, host_cut = fix.drop, fix.durations, fix.nonblocking, fix.host_cut
    lane_end = [NEVER] * len(t.lane_engine)
    stream_end = [NEVER] * t.streams
    f = 0
    for i in range(len(role)):
        r = role[i]
        own = gap[i] - recording[i]  # the program's own host work before the record
        if not joined[i] or i not in drop:
            cut = host_cut.get(i, 0) if host_cut else 0
            f += own - cut if own > cut else 0
        if recorded:  # the recording's cost, which no fix takes away
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
        elif r == HOST:
            e = f = f + durations.get(i, duration[i])
        elif r == WAIT:
            ready = f
            for k in waits[i]:
                if stream_end[k] > ready:
                    ready = stream_end[k]
            e = f = ready + cost[i]
        if starts is not None and ends is not None:
            starts[i], ends[i] = s, e
    device_done = max(stream_end, default=f)
    return (device_done if device_done > f else f) + t.end_cost
